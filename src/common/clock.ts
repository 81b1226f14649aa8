import { Injectable } from '@nestjs/common';

/**
 * The service's notion of "now" where a rule depends on the instant (entitlement periods, usage
 * times). Production reads the system clock; tests replace `now` on the application's instance
 * (`app.get(Clock)`) to stand exactly on a period boundary. Nothing else sets it.
 */
@Injectable()
export class Clock {
  now(): Date {
    return new Date();
  }
}

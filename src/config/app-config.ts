import { Inject, Injectable } from '@nestjs/common';
import { EnvironmentVariables } from './env';

/** The validated environment the application was made with (`AppModule.forRoot()`). */
export const ENVIRONMENT = Symbol('ENVIRONMENT');

/** Typed, validated settings. Inject this, never `process.env`. */
@Injectable()
export class AppConfig {
  constructor(@Inject(ENVIRONMENT) private readonly env: EnvironmentVariables) {}

  get<K extends keyof EnvironmentVariables>(key: K): EnvironmentVariables[K] {
    return this.env[key];
  }
}

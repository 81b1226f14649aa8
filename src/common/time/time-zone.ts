import { IANAZone } from 'luxon';

/** The longest zone name stored (`varchar(64)`); the IANA names are far shorter. */
export const MAX_TIME_ZONE_LENGTH = 64;

/**
 * True for a name of a zone or link of the IANA time zone database as this runtime knows it
 * (`America/New_York`, `Asia/Kolkata`, `UTC`, `Etc/GMT+5`), in any letter case. The runtime's
 * Intl also takes UTC offsets (`+05:00`) as zones: they are refused, since they are not names
 * and follow no daylight saving rules.
 */
export function isTimeZoneName(value: unknown): value is string {
  return (
    typeof value === 'string' &&
    value.length >= 1 &&
    value.length <= MAX_TIME_ZONE_LENGTH &&
    !/^[+-]/.test(value) &&
    IANAZone.isValidZone(value)
  );
}

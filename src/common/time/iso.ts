/** An instant as the API answers it (ISO 8601 UTC with milliseconds), null staying null. */
export const isoOrNull = (d: Date | null): string | null => (d ? d.toISOString() : null);

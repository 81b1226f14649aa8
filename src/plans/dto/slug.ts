/** Plan and feature slugs: unique within the project, safe in a URL. */
export const SLUG_PATTERN = /^[a-z0-9][a-z0-9_-]{0,63}$/;
export const SLUG_MESSAGE = 'slug must be 1 to 64 characters of a-z 0-9 _ -, starting with a letter or digit';

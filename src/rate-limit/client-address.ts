import type { Request } from 'express';

/** Longest address kept in a counter key (an untrusted `X-Forwarded-For` entry can be anything). */
const MAX_ADDRESS_LENGTH = 128;

/** The client address of a request (`req.ip`, which follows `TRUST_PROXY`), as counters key it. */
export const clientAddress = (req: Request): string =>
  (req.ip ?? req.socket.remoteAddress ?? 'unknown').slice(0, MAX_ADDRESS_LENGTH);

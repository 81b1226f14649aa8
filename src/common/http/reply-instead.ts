import type { Response } from 'express';

/**
 * Thrown to end a request with an answer other than the handler's, written by whoever knows it:
 * the global exception filter calls `respond`, which either writes the whole answer (and returns
 * nothing) or returns the error to answer instead. Idempotent replays use it
 * (`EarlierAnswerFound`): a guard cannot answer by itself, and the work's transaction learns of
 * an earlier answer only inside the handler.
 */
export abstract class ReplyInstead extends Error {
  abstract respond(res: Response): Error | undefined;
}

import type { Request } from 'express';

/** An answer as sent: its status and its exact JSON text. */
export interface RecordedAnswer {
  status: number;
  text: string;
}

/**
 * Something that keeps a request's answer before it is sent: the `Idempotency-Key` of a keyed
 * request. The interceptor that attaches it settles the success answers; the global exception
 * filter settles the error answers, so that every answer is kept before its bytes go out.
 */
export interface AnswerRecorder {
  /** Keeps `answer` (unless it is one not to keep) and resolves to the answer to send: `answer`, or one kept earlier that wins over it. */
  settle(answer: RecordedAnswer): Promise<RecordedAnswer>;
  /** The request ends without an answer to keep (a replay, a refusal of the key): lets go of what was held. */
  abandon(): void;
}

const RECORDER = Symbol('answer-recorder');
type RequestWithRecorder = Request & { [RECORDER]?: AnswerRecorder };

export const attachAnswerRecorder = (req: Request, recorder: AnswerRecorder): void => {
  (req as RequestWithRecorder)[RECORDER] = recorder;
};

export const answerRecorderOf = (req: Request): AnswerRecorder | undefined =>
  (req as RequestWithRecorder)[RECORDER];

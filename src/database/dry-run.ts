/**
 * Thrown inside a dry run's unit of work to roll it back with the answer in hand: the use case
 * does the real work, reads what it would answer, and throws this; the caller that opened the unit
 * of work catches it and answers `result` (nothing written, no event).
 */
export class DryRunRollback<T = unknown> extends Error {
  constructor(readonly result: T) {
    super('dry run');
  }
}

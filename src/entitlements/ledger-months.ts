import { Clock } from '../common/clock';
import { NamedPartitions, namedPartitions, nextPartitionStart, partitionStart } from '../database/partitions';
import { Statement } from '../database/statements';

/**
 * Months of the ledger a statement names in its text (see `eachPartition`): the current UTC month
 * and the two before it, so that a monthly period, wherever it is anchored, is read month by
 * month. Rows older or newer are still read, by one query over the other months.
 */
const NAMED_MONTHS = 3;

/**
 * The ledger's statements of one repository, built once per shape and month: each names the
 * current month and those before it, so a new month brings new statements (and new names, as a
 * prepared statement's text cannot change).
 */
export class LedgerStatements {
  /** The months named now, and the instants (ms) their statements hold for: this month. */
  private current?: { months: NamedPartitions; since: number; until: number };
  private readonly built = new Map<string, Statement>();

  constructor(private readonly clock: Clock) {}

  /** The statement of shape `key` for this month (`build` makes it the first time). */
  get(key: string, build: (months: NamedPartitions) => Statement): Statement {
    const now = this.clock.now();
    let current = this.current;
    if (!current || now.getTime() < current.since || now.getTime() >= current.until) {
      const since = partitionStart('month', now);
      current = this.current = {
        months: namedPartitions('month', now, NAMED_MONTHS),
        since: since.getTime(),
        until: nextPartitionStart('month', since).getTime(),
      };
      this.built.clear();
    }
    let statement = this.built.get(key);
    if (!statement) {
      statement = build(current.months);
      this.built.set(key, statement);
    }
    return statement;
  }
}

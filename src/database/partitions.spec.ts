import { eachPartition, namedPartitions } from './partitions';

describe('partitions named in a statement', () => {
  it('names the partition holding the instant and those before it, with the bounds of each', () => {
    const named = namedPartitions('month', new Date('2026-01-28T12:00:00Z'), 3);
    expect(named.key).toBe('2026-01');
    expect(named.bounds).toEqual([
      "timestamptz '2025-11-01T00:00:00.000Z'",
      "timestamptz '2025-12-01T00:00:00.000Z'",
      "timestamptz '2026-01-01T00:00:00.000Z'",
      "timestamptz '2026-02-01T00:00:00.000Z'",
    ]);
    expect(namedPartitions('day', new Date('2026-03-01T00:00:00Z'), 2).bounds).toEqual([
      "timestamptz '2026-02-28T00:00:00.000Z'",
      "timestamptz '2026-03-01T00:00:00.000Z'",
      "timestamptz '2026-03-02T00:00:00.000Z'",
    ]);
  });

  it('reads newer rows first, then each named partition newest first, then older rows; each skipped outside the range asked', () => {
    const named = namedPartitions('month', new Date('2026-01-28T12:00:00Z'), 2);
    const sql = eachPartition(named, 'SELECT t.v FROM ledger t WHERE t.k = 1', 't', 'at', 'DESC', '1', {
      from: '$1',
      to: '$2',
    });
    const queries = sql.split('UNION ALL').map((q) => q.trim());
    expect(queries).toHaveLength(4);
    expect(queries[0]).toContain(
      "t.at >= timestamptz '2026-02-01T00:00:00.000Z' AND $2 > timestamptz '2026-02-01",
    );
    expect(queries[1]).toContain(
      "t.at >= timestamptz '2026-01-01T00:00:00.000Z' AND t.at < timestamptz '2026-02-01T00:00:00.000Z'",
    );
    expect(queries[2]).toContain(
      "t.at >= timestamptz '2025-12-01T00:00:00.000Z' AND t.at < timestamptz '2026-01-01T00:00:00.000Z'",
    );
    expect(queries[3]).toContain(
      "t.at < timestamptz '2025-12-01T00:00:00.000Z' AND $1 < timestamptz '2025-12-01",
    );
    for (const q of queries) expect(q).toContain('ORDER BY t.at DESC, t.id DESC LIMIT 1');
    expect(sql.trim().endsWith('LIMIT 1')).toBe(true);
    // oldest first for the first row of a range
    const first = eachPartition(named, 'SELECT t.v FROM ledger t WHERE t.k = 1', 't', 'at', 'ASC', '1');
    expect(first.split('UNION ALL')[0]).toContain("t.at < timestamptz '2025-12-01T00:00:00.000Z'");
  });
});

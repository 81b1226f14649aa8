import type { Pool } from 'pg';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';
import { createTestApp, TestApp } from './support/app';
import { sleep, waitFor } from './support/faults';

/**
 * The pool keeps unused connections for DB_POOL_IDLE_MS (5 minutes by default), so that the hot
 * statements prepared on them are not planned again after every lull (docs/decisions.md,
 * "Connections kept through lulls").
 */
describe('the database pool (DB_POOL_IDLE_MS)', () => {
  const poolOf = (t: TestApp) => (t.dataSource.driver as PostgresDriver).master as Pool;

  /** Opens `n` connections at once; their backend process ids. */
  const openConnections = async (t: TestApp, n: number): Promise<number[]> => {
    const rows = await Promise.all(
      Array.from({ length: n }, () =>
        t.dataSource.query<Array<{ pid: number }>>('SELECT pg_backend_pid() AS pid, pg_sleep(0.2)'),
      ),
    );
    return rows.map(([r]) => r.pid);
  };

  it("keeps a connection left unused for longer than pg's own 10 s", async () => {
    const t = await createTestApp();
    try {
      const pids = await openConnections(t, 4);
      expect(new Set(pids).size).toBe(4);
      await sleep(11_000);
      const alive = await t.dataSource.query<Array<{ pid: number }>>(
        'SELECT pid FROM pg_stat_activity WHERE pid = ANY($1::int[])',
        [pids],
      );
      expect(alive.map((r) => r.pid).sort()).toEqual([...pids].sort());
      expect(poolOf(t).totalCount).toBeGreaterThanOrEqual(4);
    } finally {
      await t.close();
    }
  }, 30_000);

  it('closes the connections left unused for DB_POOL_IDLE_MS', async () => {
    const t = await createTestApp({ DB_POOL_IDLE_MS: '1000' });
    try {
      await openConnections(t, 6);
      expect(poolOf(t).totalCount).toBeGreaterThanOrEqual(6);
      // the background tasks (the schedulers, the webhook worker) keep a few in use; the others close
      await waitFor('unused connections to close', () => poolOf(t).totalCount <= 3, 10_000);
    } finally {
      await t.close();
    }
  });
});

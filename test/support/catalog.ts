import type { Clock } from '../../src/common/clock';
import type { TestApp } from './app';

const P = '/api/private/v1';
type Auth = Record<string, string>;

/**
 * What tests of entitlements, grants and periods set up again and again, through the private API
 * of the project `auth` names: metered or boolean features, plans of one group, customers, and
 * windows at exact instants (written straight into `subscriptions`: the API grants only from now).
 * Names are unique within the test file, `prefix` keeping them apart from its own.
 */
export function catalog(t: TestApp, prefix: string) {
  let seq = 0;
  const next = () => `${prefix}${String(++seq).padStart(8, '0')}`;
  return {
    async feature(auth: Auth, metered = true): Promise<{ id: number; slug: string }> {
      const slug = next();
      const res = await t.http
        .post(`${P}/features`)
        .set(auth)
        .send({ slug, name: slug, metered, unit: metered ? 'call' : '' });
      expect(res.status).toBe(201);
      return res.body.data;
    },
    async plan(auth: Auth, group: string, quotas: Array<Record<string, unknown>>): Promise<{ id: number }> {
      const slug = next();
      const res = await t.http
        .post(`${P}/plans`)
        .set(auth)
        .send({ slug, name: slug, value: 10, group, quotas });
      expect(res.status).toBe(201);
      return res.body.data;
    },
    async customer(
      auth: Auth,
      extra: Record<string, unknown> = {},
    ): Promise<{ id: number; username: string }> {
      const res = await t.http
        .post(`${P}/customers`)
        .set(auth)
        .send({ username: next(), ...extra });
      expect(res.status).toBe(201);
      return res.body.data;
    },
    async windowOf(
      projectId: string,
      window: {
        customerId: number;
        planId: number;
        group: string;
        validFrom: string;
        validTo?: string | null;
      },
    ): Promise<void> {
      await t.dataSource.query(
        `INSERT INTO subscriptions (project_id, customer_id, plan_id, plan_group, valid_from, valid_to, source, status)
         VALUES ($1, $2, $3, $4, $5, $6, 'activation', 'active')`,
        [projectId, window.customerId, window.planId, window.group, window.validFrom, window.validTo ?? null],
      );
    },
  };
}

/** Sets the application's `clock` to an instant, until `jest.restoreAllMocks()`. */
export const clockSetter =
  (clock: Clock) =>
  (at: string | Date): void => {
    const instant = new Date(at);
    jest.spyOn(clock, 'now').mockImplementation(() => new Date(instant));
  };

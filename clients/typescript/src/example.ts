/**
 * The longer example of the typed client (docs/api-guide.md#reference-and-typed-client; the
 * package's README has the short one), type-checked under `strict` by
 * `clients/typescript/tsconfig.json` and run against the service by `test/client.e2e-spec.ts`:
 * create a customer, redeem a code for it, read its subscriptions. No cast anywhere: every type
 * comes from the document.
 */
import { createPrivateClient, type Schema } from './index';

export async function redeemForNewCustomer(
  baseUrl: string,
  privateKey: string,
  code: string,
): Promise<{ customer: Schema<'CustomerListItem'>; subscriptions: Schema<'CustomerSubscriptionView'>[] }> {
  const api = createPrivateClient(baseUrl, privateKey);

  const created = await api.POST('/api/private/v1/customers', {
    body: { username: 'grace_hopper', identifiers: [{ type: 'email', value: 'grace@example.com' }] },
  });
  if (!created.data) throw new Error(`create: ${created.error?.error.code}`);
  const customer = created.data.data;

  const redeemed = await api.POST('/api/private/v1/redemptions', {
    params: { header: { 'Idempotency-Key': `redeem-${code}` } },
    body: { code, customer: { type: 'email', value: 'grace@example.com' } },
  });
  if (redeemed.error)
    throw new Error(`redeem: ${redeemed.error.error.code}: ${redeemed.error.error.message}`);

  const list = await api.GET('/api/private/v1/customers/{customerId}/subscriptions', {
    params: { path: { customerId: customer.id }, query: { history: true } },
  });
  if (!list.data) throw new Error(`subscriptions: ${list.error?.error.code}`);
  return { customer, subscriptions: list.data.data };
}

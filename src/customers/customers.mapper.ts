import type {
  CustomerListItem,
  CustomerRecord,
  IdentifierFullView,
  IdentifierShortView,
} from './dto/customer.dto';
import type { CustomerCredential } from './entities/customer-credential.entity';
import type { CustomerIdentifier } from './entities/customer-identifier.entity';
import type { Customer } from './entities/customer.entity';

/**
 * The representations of docs/api-guide.md#customers-and-identifiers in one place: list items and the create
 * response carry short identifiers and no credentials; the full record carries both in full.
 */
const byId = <T extends { id: number }>(items: T[] = []) => [...items].sort((a, b) => a.id - b.id);

const toIdentifierShort = (i: CustomerIdentifier): IdentifierShortView => ({
  id: i.id,
  type: i.type,
  value: i.value,
});

const toIdentifierFull = (i: CustomerIdentifier): IdentifierFullView => ({
  id: i.id,
  type: i.type,
  value: i.value,
  readonly: i.readonly,
  createdAt: i.createdAt.toISOString(),
  updatedAt: i.updatedAt.toISOString(),
});

const base = (c: Customer) => ({
  id: c.id,
  username: c.username,
  projectId: c.projectId,
  enabled: c.enabled,
  temporary: c.temporary,
  timeZone: c.timeZone,
});

export const toCustomerListItem = (c: Customer, identifiers: CustomerIdentifier[]): CustomerListItem => ({
  ...base(c),
  identifiers: byId(identifiers).map(toIdentifierShort),
  createdAt: c.createdAt.toISOString(),
  updatedAt: c.updatedAt.toISOString(),
});

export const toCustomerRecord = (
  c: Customer,
  identifiers: CustomerIdentifier[],
  credentials: CustomerCredential[],
): CustomerRecord => ({
  id: c.id,
  username: c.username,
  projectId: c.projectId,
  enabled: c.enabled,
  temporary: c.temporary,
  timeZone: c.timeZone,
  createdAt: c.createdAt.toISOString(),
  updatedAt: c.updatedAt.toISOString(),
  credentials: byId(credentials).map((cr) => ({
    id: cr.id,
    type: cr.type,
    createdAt: cr.createdAt.toISOString(),
  })),
  identifiers: byId(identifiers).map(toIdentifierFull),
});

/**
 * A customer as its audit records tell it: its identifiers by id (`type` and `value`, without the
 * mirrored `username` one), and whether it has a password (a secret: never its value).
 */
export const toAuditedCustomer = (c: Customer, identifiers: CustomerIdentifier[], hasPassword: boolean) => ({
  ...base(c),
  identifiers: byId(identifiers)
    .filter((i) => i.type !== 'username')
    .map((i) => ({ type: i.type, value: i.value })),
  password: hasPassword,
});

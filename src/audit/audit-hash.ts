import canonicalize from 'canonicalize';
import { sha256Hex } from '../common/crypto/sha256';
import type { AuditEventView } from './dto/audit-event.dto';

/**
 * The hash of a record (docs/operations.md#audit-log): lowercase hex SHA-256 of the UTF-8 RFC 8785
 * (JCS) canonical JSON of the record as the API answers it, without `hash` (its `seq` and
 * `prevHash` included, which chains it to the record before).
 */
export function auditHashOf(view: AuditEventView): string {
  const { hash: _hash, ...hashed } = view;
  return sha256Hex(canonicalize(hashed)!);
}

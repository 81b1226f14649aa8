import { createHmac, randomBytes } from 'node:crypto';

/** A new signing secret: `whsec_` + base64 of 24 random bytes (docs/events.md#webhook-endpoints). */
export const newWebhookSecret = () => `whsec_${randomBytes(24).toString('base64')}`;

/**
 * The `webhook-signature` header of Standard Webhooks v1: `v1,` + base64 HMAC-SHA256, keyed with
 * the secret's bytes, of `id.timestamp.body`; one per secret, separated by a space.
 */
export function signatureHeader(secrets: string[], id: string, timestamp: number, body: string): string {
  return secrets
    .map((secret) => {
      const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
      return 'v1,' + createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64');
    })
    .join(' ');
}

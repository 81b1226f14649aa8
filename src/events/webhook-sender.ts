import { lookup as dnsLookup, LookupAddress } from 'node:dns';
import { request as httpRequest, IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { LookupFunction } from 'node:net';
import { isBlockedAddress, urlRefusal } from './url-safety';
import { signatureHeader } from './signing';

export interface WebhookMessage {
  /** The event id (`webhook-id`). */
  id: string;
  type: string;
  /** The event's createdAt, ISO 8601. */
  timestamp: string;
  data: Record<string, unknown>;
}

export interface SendResult {
  delivered: boolean;
  status: number | null;
  error: string | null;
  durationMs: number;
  /** The receiver's `Retry-After`, raw. */
  retryAfter?: string;
}

/**
 * A DNS lookup that refuses private addresses: the addresses checked are the ones connected
 * to, so a name cannot resolve to a public address at the check and a private one at the
 * connection (DNS rebinding).
 */
const safeLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) return callback(error, '', 4);
    const list = addresses as LookupAddress[];
    const blocked = list.find((a) => isBlockedAddress(a.address));
    if (blocked || list.length === 0)
      return callback(new Error(`${hostname} resolves to a non-public address`), '', 4);
    if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, list);
    callback(null, list[0].address, list[0].family);
  });
};

/**
 * Posts one Standard Webhooks v1 message (docs/events.md#delivery): headers `webhook-id`,
 * `webhook-timestamp`, `webhook-signature` (one signature per secret), body
 * `{ type, timestamp, data }`. Any 2xx is delivered; redirects are not followed (a failure);
 * the URL is checked again first (and every address connected to, unless insecure URLs are allowed).
 */
export async function sendWebhook(
  url: string,
  secrets: string[],
  message: WebhookMessage,
  options: { timeoutMs: number; allowInsecure: boolean; signal?: AbortSignal },
): Promise<SendResult> {
  const started = Date.now();
  const done = (r: Omit<SendResult, 'durationMs'>): SendResult => ({
    ...r,
    durationMs: Date.now() - started,
  });
  const refusal = await urlRefusal(url, options.allowInsecure);
  if (refusal) return done({ delivered: false, status: null, error: `URL refused: ${refusal}` });

  const body = JSON.stringify({ type: message.type, timestamp: message.timestamp, data: message.data });
  const timestamp = Math.floor(Date.now() / 1000);
  const target = new URL(url);
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise<SendResult>((resolve) => {
    let settled = false;
    const finish = (r: Omit<SendResult, 'durationMs'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(done(r));
    };
    const req = send(
      target,
      {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          'user-agent': 'subscription-service-webhooks/1',
          'webhook-id': message.id,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': signatureHeader(secrets, message.id, timestamp, body),
        },
        lookup: options.allowInsecure ? undefined : safeLookup,
        signal: options.signal,
      },
      (res) => {
        const status = res.statusCode ?? 0;
        res.resume(); // the answer's body is not read
        res.on('error', () => undefined);
        finish(classify(status, res.headers));
      },
    );
    const timer = setTimeout(
      () => req.destroy(new Error(`no answer within ${options.timeoutMs} ms`)),
      options.timeoutMs,
    );
    req.on('error', (error) => finish({ delivered: false, status: null, error: error.message }));
    req.end(body);
  });
}

function classify(status: number, headers: IncomingHttpHeaders): Omit<SendResult, 'durationMs'> {
  if (status >= 200 && status < 300) return { delivered: true, status, error: null };
  const retryAfter = typeof headers['retry-after'] === 'string' ? headers['retry-after'] : undefined;
  const error =
    status >= 300 && status < 400 ? `redirect (${status}) not followed` : `the receiver answered ${status}`;
  return { delivered: false, status, error, retryAfter };
}

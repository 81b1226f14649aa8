import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

/** The addresses a webhook may never reach (unless WEBHOOK_ALLOW_INSECURE_URLS). */
const BLOCKED = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], // unspecified, "this network"
  ['127.0.0.0', 8], // loopback
  ['10.0.0.0', 8],
  ['172.16.0.0', 12],
  ['192.168.0.0', 16],
  ['100.64.0.0', 10], // carrier-grade NAT (Alibaba's metadata 100.100.100.200 included)
  ['169.254.0.0', 16], // link-local, cloud metadata 169.254.169.254
] as const)
  BLOCKED.addSubnet(net, prefix, 'ipv4');
BLOCKED.addAddress('100.100.100.200', 'ipv4');
for (const [net, prefix] of [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['fc00::', 7], // unique local (AWS's fd00:ec2::254 included)
  ['fe80::', 10], // link-local
] as const)
  BLOCKED.addSubnet(net, prefix, 'ipv6');
BLOCKED.addAddress('fd00:ec2::254', 'ipv6');

/** The IPv4 address inside an IPv4-mapped IPv6 address (`::ffff:127.0.0.1`, `::ffff:7f00:1`), if it is one. */
function mappedIPv4(address: string): string | undefined {
  // the WHATWG URL parser writes an IPv6 address in its canonical form: `::ffff:7f00:1`
  const canonical = new URL(`http://[${address}]/`).hostname.slice(1, -1);
  const m = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(canonical);
  if (!m) return undefined;
  const hi = parseInt(m[1], 16);
  const lo = parseInt(m[2], 16);
  return [hi >> 8, hi & 255, lo >> 8, lo & 255].join('.');
}

/** Whether `address` (an IP literal) is one a webhook may not reach. */
export function isBlockedAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return BLOCKED.check(address, 'ipv4');
  if (family === 6) {
    const v4 = mappedIPv4(address);
    return v4 !== undefined ? BLOCKED.check(v4, 'ipv4') : BLOCKED.check(address, 'ipv6');
  }
  return true; // not an address at all
}

/**
 * Why `raw` may not receive webhooks, or null when it may. With `allowInsecure` any http(s) URL
 * is allowed; otherwise https only, and every address its host resolves to must be public
 * (a name that does not resolve is refused too).
 */
export async function urlRefusal(raw: string, allowInsecure: boolean): Promise<string | null> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'must be an absolute URL';
  }
  if (url.protocol !== 'https:' && !(allowInsecure && url.protocol === 'http:'))
    return allowInsecure ? 'must be an http or https URL' : 'must be an https URL';
  if (allowInsecure) return null;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) return isBlockedAddress(host) ? `${host} is not a public address` : null;
  let addresses: { address: string }[];
  try {
    addresses = await lookup(host, { all: true, verbatim: true });
  } catch {
    return `${host} does not resolve`;
  }
  if (addresses.length === 0) return `${host} does not resolve`;
  const blocked = addresses.find((a) => isBlockedAddress(a.address));
  return blocked ? `${host} resolves to ${blocked.address}, which is not a public address` : null;
}

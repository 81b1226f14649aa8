import { isBlockedAddress, urlRefusal } from './url-safety';

describe('webhook URL safety', () => {
  it.each([
    '127.0.0.1',
    '127.9.9.9',
    '0.0.0.0',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '100.64.0.1',
    '100.100.100.200',
    '169.254.169.254',
    '::1',
    '::',
    'fc00::1',
    'fd12:3456::1',
    'fe80::1',
    'fd00:ec2::254',
    '::ffff:127.0.0.1',
    '::ffff:169.254.169.254',
    '::ffff:a9fe:a9fe',
    '::ffff:10.0.0.1',
  ])('refuses %s', (address) => expect(isBlockedAddress(address)).toBe(true));

  it.each(['93.184.216.34', '8.8.8.8', '172.32.0.1', '100.128.0.1', '2606:4700::1111', '::ffff:8.8.8.8'])(
    'allows %s',
    (address) => expect(isBlockedAddress(address)).toBe(false),
  );

  it('refuses http, private literals and names resolving to loopback when the switch is off', async () => {
    expect(await urlRefusal('http://example.com/hook', false)).toMatch(/https/);
    expect(await urlRefusal('https://127.0.0.1/hook', false)).toMatch(/not a public address/);
    expect(await urlRefusal('https://[::1]/hook', false)).toMatch(/not a public address/);
    expect(await urlRefusal('https://[::ffff:169.254.169.254]/x', false)).toMatch(/not a public address/);
    expect(await urlRefusal('https://localhost/hook', false)).toMatch(/resolves to/);
    expect(await urlRefusal('https://no-such-host.invalid/hook', false)).toMatch(/does not resolve/);
    expect(await urlRefusal('ftp://example.com/', false)).toMatch(/https/);
  });

  it('allows any http(s) URL when the switch is on', async () => {
    expect(await urlRefusal('http://127.0.0.1:9/hook', true)).toBeNull();
    expect(await urlRefusal('ftp://127.0.0.1/', true)).toMatch(/http/);
  });
});

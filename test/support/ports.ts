import { AddressInfo, createServer } from 'node:net';

const bindable = (port: number) =>
  new Promise<number | undefined>((resolvePort) => {
    const server = createServer();
    server.on('error', () => resolvePort(undefined));
    server.listen(port, '127.0.0.1', () => {
      const { port: bound } = server.address() as AddressInfo;
      server.close(() => resolvePort(bound));
    });
  });

/**
 * A TCP port free on 127.0.0.1 now, for a server (a child process, PostgreSQL, PgBouncer, Redis)
 * to listen on a moment later: picked at random below the kernel's ephemeral range (32768 and up
 * on Linux), where the OS hands out ports to the many outgoing connections and `listen(0)` servers
 * of test files running in parallel, which could take it meanwhile (a child then fails to bind,
 * and its readiness probe may be answered by another test's server).
 */
export const freePort = async (): Promise<number> => {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = await bindable(20_000 + Math.floor(Math.random() * 12_000));
    if (port !== undefined) return port;
  }
  const port = await bindable(0);
  if (port === undefined) throw new Error('no free port');
  return port;
};

import { once } from 'node:events';
import type { Response } from 'express';

export const NDJSON = 'application/x-ndjson';

/**
 * Streams pages of values as NDJSON, one value a line, reading the next page only once the
 * previous one is handed to the socket (waiting for `drain`), so memory holds one page at a
 * time. The first page is read before anything is sent: an error there (an unknown project)
 * still answers as the error envelope. A failure after that cuts the stream, the only way left
 * to tell the client the answer is incomplete; a client gone stops the reading.
 */
export async function sendNdjson(res: Response, pages: AsyncIterable<unknown[]>): Promise<void> {
  const iterator = pages[Symbol.asyncIterator]();
  let next = await iterator.next();
  res.status(200).setHeader('Content-Type', NDJSON);
  try {
    while (!next.done) {
      if (res.destroyed) {
        await iterator.return?.();
        return;
      }
      const chunk = next.value.map((value) => JSON.stringify(value) + '\n').join('');
      if (!res.write(chunk)) await Promise.race([once(res, 'drain'), once(res, 'close')]);
      next = await iterator.next();
    }
    res.end();
  } catch (error) {
    res.destroy(error instanceof Error ? error : new Error(String(error)));
  }
}

/**
 * A worker thread that parses large request bodies (UTF-8 bytes in, the JSON value out), so that a
 * multi-MiB body does not hold the event loop while it is decoded and parsed. Messages:
 * `{ id, bytes }` (the buffer is transferred) → `{ id, value }` or `{ id, error: true }`.
 */
import { parentPort } from 'node:worker_threads';

const decoder = new TextDecoder('utf-8', { ignoreBOM: false });

parentPort!.on('message', ({ id, bytes }: { id: number; bytes: Uint8Array }) => {
  try {
    const text = decoder.decode(bytes);
    parentPort!.postMessage({
      id,
      empty: text.trim() === '',
      value: text.trim() === '' ? undefined : JSON.parse(text),
    });
  } catch {
    parentPort!.postMessage({ id, error: true });
  }
});

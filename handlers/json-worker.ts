/**
 * A worker thread that parses large request bodies (json-body.ts parseBody, so a body nested too
 * deeply is refused here, before its value would be cloned back), so that a multi-MiB body does not
 * hold the event loop. Messages: `{ id, bytes }` (the buffer is transferred) → `{ id, parsed }`.
 */
import { parentPort } from 'node:worker_threads';
import { parseBody } from './json-body.ts';

parentPort!.on('message', ({ id, bytes }: { id: number; bytes: Uint8Array }) => {
  parentPort!.postMessage({ id, parsed: parseBody(bytes) });
});

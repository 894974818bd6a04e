/**
 * Wire ids: OpenAI's prefixes (resp_, msg_, rs_, fc_, call_) over 24 random bytes in hex. Random
 * bytes come from a pooled buffer refilled 4 KiB at a time (one randomFillSync per ~170 ids).
 */
import { randomFillSync } from 'node:crypto';

export type IdPrefix = 'resp' | 'msg' | 'rs' | 'fc' | 'call' | 'fco' | 'chatcmpl' | 'mcp' | 'mcpl' | 'mcpr';

const ID_BYTES = 24;
const pool = Buffer.alloc(4096);
let offset = pool.length;

export function newId(prefix: IdPrefix): string {
  if (offset + ID_BYTES > pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  const hex = pool.toString('hex', offset, offset + ID_BYTES);
  offset += ID_BYTES;
  return `${prefix}_${hex}`;
}

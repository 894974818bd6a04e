/** Wire ids: OpenAI's prefixes (resp_, msg_, rs_, fc_, call_) over 24 random bytes in hex. */
import { randomBytes } from 'node:crypto';

export type IdPrefix = 'resp' | 'msg' | 'rs' | 'fc' | 'call' | 'fco' | 'chatcmpl';

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${randomBytes(24).toString('hex')}`;
}

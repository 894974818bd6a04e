/**
 * Encrypted reasoning (opt-in MAYA_GLM_RESPONSES_ENCRYPTED_REASONING): stateless clients (Codex CLI
 * with `store:false`) keep the model's reasoning across turns by replaying an opaque
 * `encrypted_content` that only this server can read.
 *
 * Format (base64): version byte (1) ‖ 12-byte random nonce ‖ AES-256-GCM ciphertext ‖ 16-byte tag.
 * The plaintext is the reasoning item's `content` array as JSON. The additional authenticated data
 * binds the version byte and the caller's credential scope (a keyed hash, never the key), so
 * content made for one API key does not open under another, and any altered byte fails the tag.
 * The key comes from MAYA_GLM_RESPONSES_REASONING_KEY, or is made at start-up (then valid until
 * restart: content from before a restart is refused like tampered content).
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { badRequest, type ApiError } from '../contract/errors.ts';

const VERSION = 1;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const AAD_LABEL = 'maya-reasoning';

/** The reasoning text parts a reasoning item carries as `content`. */
export type ReasoningContent = Array<{ type: 'reasoning_text'; text: string }>;

/** Made once per process: the key when MAYA_GLM_RESPONSES_REASONING_KEY is unset. */
let processKey: Uint8Array | undefined;

function additionalData(scope: string): Buffer {
  return Buffer.concat([Buffer.from([VERSION]), Buffer.from(`${AAD_LABEL}\0${scope}`, 'utf8')]);
}

export class ReasoningCipher {
  private readonly key: Uint8Array;

  /** `key`: 32 bytes; undefined = this process's random key. */
  constructor(key?: Uint8Array) {
    this.key = key ?? (processKey ??= new Uint8Array(randomBytes(32)));
    if (this.key.length !== 32) throw new RangeError('The reasoning key must be 32 bytes.');
  }

  /** `encrypted_content` for a reasoning item's content, bound to `scope`. */
  seal(scope: string, content: ReasoningContent): string {
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, nonce);
    cipher.setAAD(additionalData(scope));
    const body = Buffer.concat([cipher.update(JSON.stringify(content), 'utf8'), cipher.final()]);
    return Buffer.concat([Buffer.from([VERSION]), nonce, body, cipher.getAuthTag()]).toString('base64');
  }

  /**
   * The content sealed in `token` for `scope`; a 400 `invalid_encrypted_content` at `param` when it
   * was altered, made for another scope or key (or before a restart), or is not this format.
   */
  open(scope: string, token: string, param: string): ReasoningContent {
    const bytes = Buffer.from(token, 'base64');
    if (bytes.length < 1 + NONCE_BYTES + TAG_BYTES || bytes[0] !== VERSION) throw invalid(param);
    const nonce = bytes.subarray(1, 1 + NONCE_BYTES);
    const body = bytes.subarray(1 + NONCE_BYTES, bytes.length - TAG_BYTES);
    const decipher = createDecipheriv('aes-256-gcm', this.key, nonce);
    decipher.setAAD(additionalData(scope));
    decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
    let content: unknown;
    try {
      content = JSON.parse(Buffer.concat([decipher.update(body), decipher.final()]).toString('utf8'));
    } catch {
      throw invalid(param); // the tag did not verify (or, under a misused key, not JSON)
    }
    if (!isReasoningContent(content)) throw invalid(param);
    return content;
  }
}

function isReasoningContent(value: unknown): value is ReasoningContent {
  return (
    Array.isArray(value) &&
    value.every(
      (part: unknown) =>
        typeof part === 'object' &&
        part !== null &&
        (part as { type?: unknown }).type === 'reasoning_text' &&
        typeof (part as { text?: unknown }).text === 'string',
    )
  );
}

function invalid(param: string): ApiError {
  return badRequest(
    param,
    'encrypted_content could not be decrypted: it was altered, made for another API key, or made by a server with another MAYA_GLM_RESPONSES_REASONING_KEY (or before a restart). Send the reasoning item as this server returned it, or drop it.',
    'invalid_encrypted_content',
  );
}

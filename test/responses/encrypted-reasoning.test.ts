import { describe, expect, it } from 'vitest';
import { ApiError } from '../../contract/errors.ts';
import { ReasoningCipher, type ReasoningContent } from '../../responses/encrypted-reasoning.ts';

const CONTENT: ReasoningContent = [{ type: 'reasoning_text', text: 'The user wants the weather; call get_weather.' }];
const KEY = new Uint8Array(32).fill(7);
const PARAM = 'input[1].encrypted_content';

/** The 400 `open` throws, or undefined when it opened. */
function openError(cipher: ReasoningCipher, scope: string, token: string): ApiError | undefined {
  try {
    cipher.open(scope, token, PARAM);
    return undefined;
  } catch (error) {
    return error as ApiError;
  }
}

const expectInvalid = (error: ApiError | undefined) => {
  expect(error).toBeInstanceOf(ApiError);
  expect(error!.toJSON().error).toMatchObject({
    type: 'invalid_request_error',
    code: 'invalid_encrypted_content',
    param: PARAM,
  });
  expect(error!.status).toBe(400);
};

describe('ReasoningCipher', () => {
  it('round trip: open(seal(content)) is the content, in the same scope', () => {
    const cipher = new ReasoningCipher(KEY);
    const token = cipher.seal('scope-a', CONTENT);
    expect(cipher.open('scope-a', token, PARAM)).toEqual(CONTENT);
    // Another instance with the same key (a replica, a restart with MAYA_GLM_RESPONSES_REASONING_KEY set) opens it too.
    expect(new ReasoningCipher(new Uint8Array(KEY)).open('scope-a', token, PARAM)).toEqual(CONTENT);
  });

  it('the token hides the content and never repeats (random nonce)', () => {
    const cipher = new ReasoningCipher(KEY);
    const a = cipher.seal('scope-a', CONTENT);
    const b = cipher.seal('scope-a', CONTENT);
    expect(a).not.toBe(b);
    expect(Buffer.from(a, 'base64').toString('latin1')).not.toContain('weather');
    expect(Buffer.from(a, 'base64')[0]).toBe(1); // version byte
  });

  it('every altered byte is refused (version, nonce, ciphertext, tag)', () => {
    const cipher = new ReasoningCipher(KEY);
    const bytes = Buffer.from(cipher.seal('scope-a', CONTENT), 'base64');
    for (const index of [0, 1, 12, 13, bytes.length - 17, bytes.length - 1]) {
      const altered = Buffer.from(bytes);
      altered[index]! ^= 0x01;
      expectInvalid(openError(cipher, 'scope-a', altered.toString('base64')));
    }
  });

  it('content sealed for another key scope is refused', () => {
    const cipher = new ReasoningCipher(KEY);
    expectInvalid(openError(cipher, 'scope-b', cipher.seal('scope-a', CONTENT)));
  });

  it('content sealed under another key (another server, or before a restart without a set key) is refused', () => {
    const token = new ReasoningCipher(new Uint8Array(32).fill(9)).seal('scope-a', CONTENT);
    expectInvalid(openError(new ReasoningCipher(KEY), 'scope-a', token));
    expectInvalid(openError(new ReasoningCipher(), 'scope-a', token));
  });

  it('without a key, one random key per process: two ciphers agree', () => {
    const token = new ReasoningCipher().seal('scope-a', CONTENT);
    expect(new ReasoningCipher().open('scope-a', token, PARAM)).toEqual(CONTENT);
  });

  it('garbage, truncated and foreign-format tokens are refused with the same 400', () => {
    const cipher = new ReasoningCipher(KEY);
    const token = cipher.seal('scope-a', CONTENT);
    for (const bad of ['', 'gAAAAABpM0Yj-...=', 'not base64 at all!', token.slice(0, 20), token.slice(0, -4)])
      expectInvalid(openError(cipher, 'scope-a', bad));
  });

  it('a key that is not 32 bytes is a programming error', () => {
    expect(() => new ReasoningCipher(new Uint8Array(16))).toThrow(RangeError);
  });
});

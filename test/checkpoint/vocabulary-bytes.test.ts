/**
 * Tokenizer.vocabularyBytes(), what constrained decoding masks over: on the demo tokenizer every
 * ordinary id has the bytes its decoding streams, special ids have none and are listed by content.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Tokenizer } from '../../checkpoint/tokenizer.ts';

describe('vocabularyBytes', () => {
  it('ordinary tokens as bytes, special tokens by content', async () => {
    const tokenizer = await Tokenizer.fromDir(join(import.meta.dirname, '../../models/maya-demo'));
    const vocab = tokenizer.vocabularyBytes();
    expect(vocab.size).toBe(1024);
    expect(vocab.specials['<tool_call>']).toBe(tokenizer.tokenId('<tool_call>'));
    expect(Object.keys(vocab.specials)).toHaveLength(24);
    for (const id of Object.values(vocab.specials)) expect(vocab.tokens[id]).toBeUndefined();
    const decoder = new TextDecoder();
    expect(
      decoder.decode(
        Uint8Array.from(tokenizer.encode('Hello, 北京 {"a": [1, 2]}').flatMap((id) => [...vocab.tokens[id]!])),
      ),
    ).toBe('Hello, 北京 {"a": [1, 2]}');
    expect(vocab.tokens.filter((t) => t !== undefined)).toHaveLength(1000);
  });
});

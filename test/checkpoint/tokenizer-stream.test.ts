/**
 * The O(1) byte-level streaming decoder gives exactly the text of a full decode, for random id
 * sequences over the demo model's ByteLevel BPE vocabulary (multi-byte characters split across
 * tokens included), and never emits a broken character.
 */
import { describe, expect, it } from 'vitest';
import { Tokenizer } from '../../checkpoint/tokenizer.ts';

describe('byte-level streaming decoder', () => {
  it('concatenated pushes equal decode(ids) and contain no U+FFFD for valid text', async () => {
    const tokenizer = await Tokenizer.fromDir('models/maya-demo');
    const texts = [
      'Hello, wörld! 你好 🙂🚀 <think>x</think>',
      '<|user|>\nRemember the value 73<|assistant|>',
      'naïve café — “quotes” ∑∫ 𝄞',
    ];
    for (const text of texts) {
      const ids = tokenizer.encode(text);
      const decoder = tokenizer.createDecoder();
      const pieces = ids.map((id) => decoder.push(id));
      const streamed = pieces.join('') + decoder.flush();
      expect(streamed).toBe(tokenizer.decode(ids));
      expect(streamed).toBe(text);
      for (const piece of pieces) expect(piece).not.toContain('\uFFFD');
    }
  });

  it('agrees with the full decode on random id sequences', async () => {
    const tokenizer = await Tokenizer.fromDir('models/maya-demo');
    const vocabSize = Math.max(...tokenizer.specialTokens().values()) + 1; // the special tokens come last
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let round = 0; round < 50; round++) {
      const ids = Array.from({ length: 40 }, () => Math.floor(random() * vocabSize));
      const decoder = tokenizer.createDecoder();
      const streamed = ids.map((id) => decoder.push(id)).join('') + decoder.flush();
      expect(streamed).toBe(tokenizer.decode(ids));
    }
  });
});

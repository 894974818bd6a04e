/**
 * Tokenizer.vocabularyBytes(), what constrained decoding masks over: on the demo tokenizer every
 * ordinary id has the bytes its decoding streams, special ids have none and are listed by content.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Tokenizer } from '../../checkpoint/tokenizer.ts';
import { ggufModel, readGgufMetadata } from '../../checkpoint/gguf.ts';

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

/**
 * A GGUF SentencePiece vocabulary (test/fixtures/gguf/llama-spm-F32.gguf): "▁" is a space,
 * `<0xNN>` pieces are that byte, <s> </s> <unk> are special; the decoder drops the output's
 * leading space, and the bytes with that space dropped are exactly what decoding gives.
 */
describe('vocabularyBytes of a SentencePiece vocabulary', () => {
  const FILE = join(import.meta.dirname, '../fixtures/gguf/llama-spm-F32.gguf');
  const spm = async (addSpacePrefix?: boolean) => {
    const meta = await readGgufMetadata(FILE);
    if (addSpacePrefix !== undefined) meta.kv.set('tokenizer.ggml.add_space_prefix', addSpacePrefix);
    const model = ggufModel(meta, FILE);
    return new Tokenizer(model.tokenizerJson, model.tokenizerConfig);
  };
  const utf8 = new TextDecoder();
  const text = (bytes: Uint8Array | undefined) => (bytes ? utf8.decode(bytes) : bytes);
  /** What a decoder with Strip(" ", 1, 0) publishes for these bytes. */
  const stripped = (bytes: number[]) => utf8.decode(Uint8Array.from(bytes[0] === 0x20 ? bytes.slice(1) : bytes));

  it('byte pieces, "▁" pieces, specials undefined', async () => {
    const tokenizer = await spm();
    const vocab = tokenizer.vocabularyBytes();
    expect(vocab.size).toBe(448);
    expect(vocab.stripsLeadingSpace).toBe(true);
    expect(vocab.specials).toEqual({ '<unk>': 0, '<s>': 1, '</s>': 2 });
    for (const id of [0, 1, 2]) expect(vocab.tokens[id]).toBeUndefined();
    for (let b = 0; b < 256; b++) {
      const id = tokenizer.tokenId(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`)!;
      expect(id).toBe(3 + b);
      expect([...vocab.tokens[id]!]).toEqual([b]);
    }
    expect(text(vocab.tokens[tokenizer.tokenId('▁')!])).toBe(' ');
    expect(text(vocab.tokens[tokenizer.tokenId('▁Hello')!])).toBe(' Hello');
    expect(text(vocab.tokens[tokenizer.tokenId('or')!])).toBe('or');
    expect(vocab.tokens.filter((t) => t !== undefined)).toHaveLength(445);
    // no byte-level table: streaming stays on the decoder that strips the leading space
    expect(tokenizer.maxTokenBytes).toBeUndefined();
    expect(vocab.tokens.some((t) => t !== undefined && new TextDecoder().decode(t).includes('▁'))).toBe(false);
  });

  it('the bytes, leading space dropped, are what decoding and streaming publish', async () => {
    const tokenizer = await spm();
    const vocab = tokenizer.vocabularyBytes();
    const check = (ids: number[]) => {
      const bytes = ids.flatMap((id) => [...(vocab.tokens[id] ?? [])]);
      const published = tokenizer.decode(ids, { skipSpecialTokens: true });
      expect(stripped(bytes), JSON.stringify(ids)).toBe(published);
      const stream = tokenizer.createDecoder({ skipSpecialTokens: true });
      expect(ids.map((id) => stream.push(id)).join('') + stream.flush()).toBe(published);
    };
    for (const s of ['{"a": [1, 2]}', ' {"a": 1}', 'Hello, 北京 ß 😀', '  two  spaces\n', '<s>[INST] Hi [/INST]'])
      check(tokenizer.encode(s));
    // random sequences of ordinary pieces (whole characters: bytes 0x20..0x7e and the non-byte pieces)
    const ordinary = vocab.tokens.flatMap((t, id) =>
      t !== undefined && (id >= 259 || (t[0]! >= 0x20 && t[0]! < 0x7f)) ? [id] : [],
    );
    let seed = 7;
    for (let n = 0; n < 200; n++) {
      const ids: number[] = [];
      for (let k = 0; k < 1 + (n % 9); k++) {
        seed = (seed * 1103515245 + 12345) & 0x7fffffff;
        ids.push(ordinary[seed % ordinary.length]!);
      }
      check(ids);
    }
  });

  it('without a space prefix nothing is stripped; byte-level vocabularies strip nothing', async () => {
    const vocab = (await spm(false)).vocabularyBytes();
    expect(vocab.stripsLeadingSpace).toBe(false);
    expect(text(vocab.tokens[vocab.tokens.findIndex((t) => t?.length === 1 && t[0] === 0x20)])).toBe(' ');
    const demo = await Tokenizer.fromDir(join(import.meta.dirname, '../../models/maya-demo'));
    expect(demo.vocabularyBytes().stripsLeadingSpace).toBe(false);
  });
});

import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Tokenizer, TokenizerError } from '../../checkpoint/tokenizer.ts';
import { makeByteLevelTokenizer } from '../engine/byte-level-tokenizer.ts';

const { tokenizerJson, tokenizerConfig } = makeByteLevelTokenizer();
const tok = new Tokenizer(tokenizerJson, tokenizerConfig);
const dir = mkdtempSync(join(tmpdir(), 'maya-tok-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('Tokenizer.encode / decode', () => {
  it('applies merges and round-trips text', () => {
    const ids = tok.encode('hello world');
    expect(ids[0]).toBe(tok.tokenId('hello'));
    expect(ids[1]).toBe(tok.tokenId('Ġw'));
    expect(tok.decode(ids)).toBe('hello world');
  });

  it('never splits special and added tokens in the text', () => {
    const user = tok.tokenId('<|user|>')!;
    const think = tok.tokenId('<think>')!;
    const ids = tok.encode('<|user|>hi<think>hello</think>');
    expect(ids[0]).toBe(user);
    expect(ids).toContain(think);
    expect(ids).toContain(tok.tokenId('</think>'));
    // Byte symbols have the byte's value as id: the text between the tokens is 'h', 'i'.
    expect(ids.filter((id) => id < 256)).toEqual([...Buffer.from('hi')]);
    expect(tok.decode(ids)).toBe('<|user|>hi<think>hello</think>');
    expect(tok.decode(ids, { skipSpecialTokens: true })).toBe('hi<think>hello</think>');
    expect(tok.isSpecial(user)).toBe(true);
    expect(tok.isSpecial(think)).toBe(false);
    expect(tok.specialTokens().get('<|endoftext|>')).toBe(tok.tokenId('<|endoftext|>'));
  });

  it('splits multi-byte characters across tokens', () => {
    const zh = tok.encode('中');
    expect(zh).toHaveLength(2); // E4 B8 merged, AD alone
    expect(tok.encode('😀')).toHaveLength(4);
  });
});

describe('Tokenizer.createDecoder', () => {
  const text = 'hello 中文 😀 wörld <|user|> 👩‍💻!';
  const ids = tok.encode(text);

  it('streams the same text as a full decode, one id at a time', () => {
    const d = tok.createDecoder();
    const pieces = ids.map((id) => d.push(id));
    const tail = d.flush();
    expect(pieces.join('') + tail).toBe(text);
    expect(tail).toBe('');
    for (const p of pieces) expect(p).not.toContain('\uFFFD');
    // Some pushes completed nothing (the first bytes of a split character).
    expect(pieces.filter((p) => p === '').length).toBeGreaterThan(3);
  });

  it('holds back an incomplete character and flushes it as U+FFFD', () => {
    const d = tok.createDecoder();
    const emoji = tok.encode('😀');
    expect(d.push(tok.tokenId('hello')!)).toBe('hello');
    expect(d.push(emoji[0]!)).toBe('');
    expect(d.push(emoji[1]!)).toBe('');
    expect(d.flush()).toBe('\uFFFD');
    expect(d.flush()).toBe('');
  });
});

/** Llama-2 style: sentencepiece BPE with byte fallback (`<0xE4>` tokens), '▁' for spaces, Strip decoder. */
function sentencePieceTokenizer(): Tokenizer {
  const vocab: Record<string, number> = { '<unk>': 0, '<s>': 1, '</s>': 2 };
  for (let b = 0; b < 256; b++) vocab[`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`] = 3 + b;
  for (const t of ['▁', 'h', 'e', 'l', 'o', 'w', 'r', 'd', '▁h', 'he', 'll', 'hell', 'hello', '▁hello', '▁w']) {
    vocab[t] = Object.keys(vocab).length;
  }
  const special = (id: number, content: string) => ({
    id,
    content,
    special: true,
    normalized: false,
    lstrip: false,
    rstrip: false,
    single_word: false,
  });
  return new Tokenizer(
    {
      version: '1.0',
      added_tokens: [special(0, '<unk>'), special(1, '<s>'), special(2, '</s>')],
      normalizer: {
        type: 'Sequence',
        normalizers: [
          { type: 'Prepend', prepend: '▁' },
          { type: 'Replace', pattern: { String: ' ' }, content: '▁' },
        ],
      },
      pre_tokenizer: null,
      post_processor: null,
      decoder: {
        type: 'Sequence',
        decoders: [
          { type: 'Replace', pattern: { String: '▁' }, content: ' ' },
          { type: 'ByteFallback' },
          { type: 'Fuse' },
          { type: 'Strip', content: ' ', start: 1, stop: 0 },
        ],
      },
      model: {
        type: 'BPE',
        dropout: null,
        unk_token: '<unk>',
        continuing_subword_prefix: null,
        end_of_word_suffix: null,
        fuse_unk: true,
        byte_fallback: true,
        vocab,
        merges: ['h e', 'l l', 'he ll', 'hell o', '▁ hello', '▁ w', '▁ h'],
      },
    },
    { clean_up_tokenization_spaces: false },
  );
}

describe('Tokenizer.createDecoder with a byte-fallback sentencepiece tokenizer', () => {
  it('streams split characters and the stripped leading space like a full decode', () => {
    const sp = sentencePieceTokenizer();
    const text = 'hello 中文 😀 wörld';
    const ids = sp.encode(text);
    expect(ids).toContain(sp.tokenId('<0xF0>')); // the emoji arrives as four byte tokens
    expect(sp.decode(ids)).toBe(text);
    const d = sp.createDecoder();
    const pieces = ids.map((id) => d.push(id));
    expect(pieces[0]).toBe('hello');
    expect(pieces.join('') + d.flush()).toBe(text);
    for (const p of pieces) expect(p).not.toContain('\uFFFD');
  });
});

describe('skipSpecialTokens with keepTokens', () => {
  it('drops special tokens except those within a kept string, in decode and in the stream decoder', () => {
    const ids = tok.encode('hi<|user|>there<think>x</think><|endoftext|>');
    for (const [keepTokens, text] of [
      [[], 'hithere<think>x</think>'],
      [['<|user|>'], 'hi<|user|>there<think>x</think>'],
      [['a<|endoftext|>b'], 'hithere<think>x</think><|endoftext|>'],
    ] as const) {
      expect(tok.decode(ids, { skipSpecialTokens: true, keepTokens })).toBe(text);
      const d = tok.createDecoder({ skipSpecialTokens: true, keepTokens });
      expect(ids.map((id) => d.push(id)).join('') + d.flush()).toBe(text);
    }
    expect(tok.decode(ids, { keepTokens: [] })).toBe('hi<|user|>there<think>x</think><|endoftext|>');
  });

  it('applies the same rule on the windowed path (sentencepiece)', () => {
    const sp = sentencePieceTokenizer();
    const ids = [sp.tokenId('<s>')!, ...sp.encode('hello'), sp.tokenId('</s>')!];
    expect(sp.decode(ids, { skipSpecialTokens: true })).toBe('hello');
    expect(sp.decode(ids, { skipSpecialTokens: true, keepTokens: ['</s>'] })).toBe('hello</s>');
    const d = sp.createDecoder({ skipSpecialTokens: true, keepTokens: ['</s>'] });
    expect(ids.map((id) => d.push(id)).join('') + d.flush()).toBe('hello</s>');
  });
});

describe('Tokenizer.fromDir', () => {
  it('loads tokenizer.json and tokenizer_config.json', async () => {
    writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(tokenizerJson));
    writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify(tokenizerConfig));
    const loaded = await Tokenizer.fromDir(dir);
    expect(loaded.encode('hello 中')).toEqual(tok.encode('hello 中'));
  });

  it('fails clearly without tokenizer.json', async () => {
    await expect(Tokenizer.fromDir(join(dir, 'nope'))).rejects.toThrow(TokenizerError);
  });
});

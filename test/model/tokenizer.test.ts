import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Tokenizer, TokenizerError } from '../../model/tokenizer.ts';
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

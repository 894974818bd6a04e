/**
 * SentencePiece vocabularies in GGUF files (`tokenizer.ggml.model` "llama": Llama-2, Mistral): the
 * tokenizer built from tokenizer.ggml.tokens / scores / token_type encodes as llama.cpp's own SPM
 * tokenizer does on the same file (test/fixtures/gguf/llama-spm.tokens.json, made by llama.cpp's
 * llama_tokenize; see the fixtures' README) and decodes back to the text; `maya generate` loads
 * the fixture model and runs.
 */
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ggufModel, readGgufMetadata, sentencePieceMerges } from '../../checkpoint/gguf.ts';
import { Tokenizer } from '../../checkpoint/tokenizer.ts';

const FIXTURES = fileURLToPath(new URL('../fixtures/gguf/', import.meta.url));
const FILE = path.join(FIXTURES, 'llama-spm-F32.gguf');
const BIN = fileURLToPath(new URL('../../bin/maya.js', import.meta.url));

interface Row {
  text: string;
  ids: number[];
  ids_with_bos: number[];
}
const expected = JSON.parse(readFileSync(path.join(FIXTURES, 'llama-spm.tokens.json'), 'utf8')) as {
  strings: Row[];
  no_space_prefix: Row[];
};

async function tokenizer(addSpacePrefix?: boolean): Promise<Tokenizer> {
  const meta = await readGgufMetadata(FILE);
  if (addSpacePrefix !== undefined) meta.kv.set('tokenizer.ggml.add_space_prefix', addSpacePrefix);
  const model = ggufModel(meta, FILE);
  return new Tokenizer(model.tokenizerJson, model.tokenizerConfig);
}

/** What decoding gives back: a stretch of text after a special token was encoded with its "▁". */
const SPECIAL = /(<s>|<\/s>|<unk>)(?=[^<])/g;

describe('GGUF SentencePiece vocabulary (tokenizer.ggml.model llama)', () => {
  it('reads the file: llama architecture, 448 pieces, BOS/EOS/UNK, the template', async () => {
    const model = ggufModel(await readGgufMetadata(FILE), FILE);
    expect(model).toMatchObject({
      architecture: 'LlamaForCausalLM',
      vocabSize: 448,
      eosIds: [2],
      specialTokens: { bos_token: '<s>', eos_token: '</s>', unk_token: '<unk>' },
      tokenizerConfig: { add_bos_token: true, add_eos_token: false },
    });
    expect(model.chatTemplate).toContain('[INST]');
  });

  it(`encodes ${expected.strings.length} strings exactly as llama.cpp does, with and without BOS`, async () => {
    const t = await tokenizer();
    // the strings cover byte fallback (ï, ç, ü, ß, CJK, emoji), digits, spaces, newlines, specials
    expect(expected.strings.some((r) => r.ids.some((id) => id >= 3 && id < 259))).toBe(true);
    for (const row of expected.strings) {
      expect(t.encode(row.text), JSON.stringify(row.text)).toEqual(row.ids);
      expect(t.encode(row.text, { addSpecialTokens: true }), JSON.stringify(row.text)).toEqual(row.ids_with_bos);
    }
  });

  it('encodes as llama.cpp with tokenizer.ggml.add_space_prefix false', async () => {
    const t = await tokenizer(false);
    for (const row of expected.no_space_prefix) expect(t.encode(row.text), JSON.stringify(row.text)).toEqual(row.ids);
    expect(t.decode(t.encode(' two  spaces'))).toBe(' two  spaces');
  });

  it('decodes back to the text, whole and streamed', async () => {
    const t = await tokenizer();
    for (const row of expected.strings) {
      const text = row.text.replace(SPECIAL, '$1 ');
      expect(t.decode(row.ids), JSON.stringify(row.text)).toBe(text);
      const stream = t.createDecoder();
      const streamed = row.ids.map((id) => stream.push(id)).join('') + stream.flush();
      expect(streamed, JSON.stringify(row.text)).toBe(text);
    }
    // byte pieces that end mid-character are held back while streaming
    const stream = t.createDecoder();
    const emoji = t.encode('😀');
    expect(emoji.slice(0, -1).map((id) => stream.push(id))).toEqual(['', '', '', '']);
    expect(stream.push(emoji.at(-1)!) + stream.flush()).toBe('😀');
  });

  it('derives merges from the pieces, the highest-scoring merged piece first', () => {
    const tokens = ['a', 'b', 'c', 'ab', 'bc', 'abc'];
    const merges = sentencePieceMerges(tokens, [0, 0, 0, -2, -1, -3]);
    // every split into two pieces is a merge; by score, then (left id, right id) within a piece
    expect(merges).toEqual([
      ['b', 'c'],
      ['a', 'b'],
      ['a', 'bc'],
      ['ab', 'c'],
    ]);
  });

  it('refuses a SentencePiece vocabulary without one score per piece', async () => {
    const meta = await readGgufMetadata(FILE);
    meta.kv.set('tokenizer.ggml.scores', [0, 1]);
    expect(() => ggufModel(meta, FILE)).toThrow(/tokenizer.ggml.scores is missing or not one number per token \(448\)/);
  });

  it('maya generate loads the file and prompts with llama.cpp’s ids', () => {
    const row = expected.strings.find((r) => r.text === 'Hello world')!;
    const run = spawnSync(
      process.execPath,
      [BIN, 'generate', '--model', FILE, '--prompt', row.text, '--max-tokens', '6', '--threads', '1', '--json'],
      { encoding: 'utf8', timeout: 60_000 },
    );
    expect(run.status, run.stderr).toBe(0);
    const out = JSON.parse(run.stdout) as { promptIds: number[]; ids: number[]; text: string };
    expect(out.promptIds).toEqual(row.ids);
    expect(out.ids).toHaveLength(6);
    expect(out.ids.every((id) => id >= 0 && id < 448)).toBe(true);
  }, 60_000);
});

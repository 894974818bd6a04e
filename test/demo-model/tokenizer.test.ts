/**
 * The demo model's tokenizer (models/maya-demo, trained by scripts/demo-model/bpe.py) loads in
 * @huggingface/tokenizers and encodes exactly like the Python trainer that produced the training data.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Tokenizer } from '@huggingface/tokenizers';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));
const modelDir = `${root}models/maya-demo/`;
const readJson = (path: string): Record<string, unknown> =>
  JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;

const tokenizerJson = readJson(`${modelDir}tokenizer.json`);
const tokenizerConfig = readJson(`${modelDir}tokenizer_config.json`);
const fixtures = readJson(`${root}test/demo-model/fixtures/tokenizer-cases.json`) as {
  special: Record<string, number>;
  cases: { text: string; ids: number[] }[];
};
const tokenizer = new Tokenizer(tokenizerJson, tokenizerConfig);

const SPECIALS = [
  '[gMASK]',
  '<sop>',
  '<|system|>',
  '<|user|>',
  '<|assistant|>',
  '<|observation|>',
  '<|endoftext|>',
  '<think>',
  '</think>',
  '<tool_call>',
  '</tool_call>',
  '<arg_key>',
  '</arg_key>',
  '<arg_value>',
  '</arg_value>',
  '<tool_response>',
  '</tool_response>',
  '/nothink',
];

describe('demo tokenizer', () => {
  it('encodes every fixture exactly as the Python BPE did, and decodes it back', () => {
    expect(fixtures.cases.length).toBeGreaterThan(10);
    for (const { text, ids } of fixtures.cases) {
      const enc = tokenizer.encode(text, { add_special_tokens: false });
      expect(enc.ids).toEqual(ids);
      // (this library refuses to decode an empty id list, so the empty text stops at encoding)
      if (text !== '') expect(tokenizer.decode(enc.ids, { skip_special_tokens: false })).toBe(text);
      else expect(enc.ids).toEqual([]);
    }
  });

  it('gives each GLM special token one id, the one the Python side assigned', () => {
    for (const token of SPECIALS) {
      const enc = tokenizer.encode(token, { add_special_tokens: false });
      expect(enc.ids).toHaveLength(1);
      expect(enc.ids[0]).toBe(fixtures.special[token]);
      expect(tokenizer.token_to_id(token)).toBe(fixtures.special[token]);
    }
  });

  it('round-trips a rendered tool-calling conversation with its markers intact', () => {
    const text =
      '[gMASK]<sop><|user|>\nWeather in Paris?<|assistant|>\n<think>The user asks.</think>\n' +
      '<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>' +
      '<|observation|>\n<tool_response>\n{"temperature": 21}\n</tool_response><|assistant|>\n<think></think>\n' +
      'It is 21 degrees in Paris.<|user|>';
    const { ids } = tokenizer.encode(text, { add_special_tokens: false });
    expect(tokenizer.decode(ids, { skip_special_tokens: false })).toBe(text);
    expect(ids.filter((id: number) => id === fixtures.special['<arg_value>'])).toHaveLength(1);
    // Without the markers, only the plain text is left.
    expect(tokenizer.decode(ids, { skip_special_tokens: true })).not.toContain('<tool_call>');
  });

  it('has a vocabulary within the model config and carries the GLM-4.5 chat template', () => {
    const config = readJson(`${modelDir}config.json`);
    const vocab = tokenizer.get_vocab(true);
    expect(vocab.size).toBeLessThanOrEqual(config.vocab_size as number);
    expect(Math.max(...vocab.values())).toBe((config.vocab_size as number) - 1);
    expect(tokenizerConfig.chat_template).toContain('<|assistant|>');
    expect(tokenizerConfig.chat_template).toContain('<tool_call>');
    const eos = (config.eos_token_id as number[]).map((id) => tokenizer.id_to_token(id));
    expect(eos).toEqual(['<|endoftext|>', '<|user|>', '<|observation|>']);
  });
});

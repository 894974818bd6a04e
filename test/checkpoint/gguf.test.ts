/**
 * checkpoint/gguf.ts: a GGUF file's metadata stands in for a model directory's config, tokenizer
 * and chat template (issue 34). The demo model's GGUF tokenizes exactly as its tokenizer.json, its
 * template selects the GLM dialect, split sets are named by their first file, and damaged headers
 * are refused by name. MAYA_CHAT_TEMPLATE / --chat-template reach the settings.
 */
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadServeSettings } from '../../cli/maya.ts';
import {
  ggufModel,
  GgufError,
  isGgufPath,
  readGgufMetadata,
  readGgufModel,
  type GgufMetadata,
  type GgufValue,
} from '../../checkpoint/gguf.ts';
import { ChatTemplate } from '../../checkpoint/chat-template.ts';
import { readModelDir } from '../../checkpoint/model-dir.ts';
import { Tokenizer } from '../../checkpoint/tokenizer.ts';
import { loadServerSettings } from '../../config/settings.ts';
import { loadDialect } from '../../dialects/select.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const FIXTURES = path.join(ROOT, 'test/fixtures/gguf');
const DEMO_GGUF = path.join(FIXTURES, 'maya-demo-Q4_K_M.gguf');
const DEMO_DIR = path.join(ROOT, 'models/maya-demo');

const SAMPLES = [
  'Hello, world!',
  "It's 2024: don't DON'T stop; we'll see.",
  '{"city": "Oslo", "days": [1, 2, 3]}',
  'function f(x) {\n    return x * 2;\n}\n\n\n',
  '你好，世界 😀 naïve café',
  '   leading and trailing spaces   ',
  '<|user|>hi<|assistant|><think>ok</think>',
  '12345678 3.14159 1e10',
];

describe('GGUF metadata', () => {
  it('reads every key-value of the demo file', async () => {
    const meta = await readGgufMetadata(DEMO_GGUF);
    expect(meta.version).toBe(3);
    expect(meta.tensorCount).toBeGreaterThan(0n);
    expect(meta.kv.get('general.architecture')).toBe('glm4');
    expect(meta.kv.get('glm4.block_count')).toBe(8);
    expect((meta.kv.get('tokenizer.ggml.tokens') as string[]).length).toBe(1024);
    expect(meta.kv.get('tokenizer.ggml.pre')).toBe('glm4');
  });

  it('gives the demo model as its directory does: architecture, vocabulary, template', async () => {
    const gguf = await readModelDir(DEMO_GGUF);
    const dir = await readModelDir(DEMO_DIR);
    expect(gguf).toMatchObject({ isGguf: true, id: 'maya-demo-Q4_K_M', architecture: dir.architecture });
    expect(gguf.vocabSize).toBe(dir.vocabSize);
    const config = JSON.parse(await readFile(path.join(DEMO_DIR, 'tokenizer_config.json'), 'utf8'));
    expect(gguf.chatTemplate).toBe(config.chat_template);
    for (const id of gguf.eosIds) expect(dir.eosIds).toContain(id);
  });

  it('tokenizes and decodes exactly as the demo tokenizer.json', async () => {
    const fromGguf = await Tokenizer.fromDir(DEMO_GGUF);
    const fromDir = await Tokenizer.fromDir(DEMO_DIR);
    for (const text of SAMPLES) {
      const ids = fromGguf.encode(text);
      expect(ids, text).toEqual(fromDir.encode(text));
      expect(fromGguf.decode(ids)).toBe(text);
    }
    expect(fromGguf.tokenId('<|assistant|>')).toBe(fromDir.tokenId('<|assistant|>'));
  });

  it('selects the GLM dialect from tokenizer.chat_template', async () => {
    expect((await loadDialect(DEMO_GGUF)).name).toBe('glm45');
  });

  it('names a split set by its first file and reads its metadata there', async () => {
    const first = await readModelDir(path.join(FIXTURES, 'glm4-F16-00001-of-00003.gguf'));
    expect(first).toMatchObject({ id: 'glm4-F16', architecture: 'Glm4ForCausalLM', vocabSize: 320 });
    expect(isGgufPath(first.dir)).toBe(true);
  });

  it('names the first file when given a later part of a split set', async () => {
    for (const part of [2, 3]) {
      const file = path.join(FIXTURES, `glm4-F16-0000${part}-of-00003.gguf`);
      const message = new RegExp(
        `part ${part} of 3 of a split GGUF set: open its first file \\(glm4-F16-00001-of-00003\\.gguf\\)`,
      );
      await expect(readGgufModel(file)).rejects.toThrow(message);
      await expect(readModelDir(file)).rejects.toThrow(message);
    }
  });

  it('maps each architecture onto its Hugging Face name', async () => {
    const want: Record<string, string> = {
      'llama-F32.gguf': 'LlamaForCausalLM',
      'qwen3-BF16.gguf': 'Qwen3ForCausalLM',
      'qwen3moe-BF16.gguf': 'Qwen3MoeForCausalLM',
      'glm4moe-BF16.gguf': 'Glm4MoeForCausalLM',
      'deepseek2-F16.gguf': 'DeepseekV3ForCausalLM',
    };
    for (const [file, arch] of Object.entries(want))
      expect((await readGgufModel(path.join(FIXTURES, file))).architecture).toBe(arch);
  });

  it('refuses damaged headers by name', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'maya-gguf-ts-'));
    const bytes = await readFile(DEMO_GGUF);
    const wrongMagic = Buffer.from(bytes);
    wrongMagic.write('GGUX', 0, 'latin1');
    const cases: Array<[string, Buffer, RegExp]> = [
      ['magic.gguf', wrongMagic, /not a GGUF file/],
      ['short.gguf', bytes.subarray(0, 2), /truncated/],
      ['cut.gguf', bytes.subarray(0, 5000), /truncated/],
    ];
    for (const [name, data, message] of cases) {
      const file = path.join(dir, name);
      await writeFile(file, data);
      await expect(readGgufMetadata(file)).rejects.toThrow(GgufError);
      await expect(readGgufMetadata(file)).rejects.toThrow(message);
    }
    await expect(readModelDir(path.join(dir, 'missing.gguf'))).rejects.toThrow(/does not exist/);
  });
});

/** A byte-level BPE vocabulary of ASCII words: their letters, then one merge per letter added. */
function wordVocabulary(words: string[]): GgufMetadata {
  const tokens = [...new Set(words.join(''))];
  const merges: string[] = [];
  for (const word of words)
    for (let i = 2; i <= word.length; i++) {
      const piece = word.slice(0, i);
      if (tokens.includes(piece)) continue;
      merges.push(`${word.slice(0, i - 1)} ${word[i - 1]}`);
      tokens.push(piece);
    }
  const kv = new Map<string, GgufValue>([
    ['general.architecture', 'llama'],
    ['tokenizer.ggml.model', 'gpt2'],
    ['tokenizer.ggml.pre', 'gpt2'],
    ['tokenizer.ggml.tokens', tokens],
    ['tokenizer.ggml.merges', merges],
  ]);
  return { version: 3, tensorCount: 0n, kv };
}

describe('GGUF vocabulary', () => {
  it("keeps tokens named like Object.prototype's members", () => {
    const words = ['constructor', 'toString', 'valueOf', 'hasOwnProperty', '__proto__', 'plain'];
    const meta = wordVocabulary(words);
    const json = ggufModel(meta, 'words.gguf').tokenizerJson;
    // the GGUF path, and the same vocabulary as a tokenizer.json file's text (a model directory)
    for (const tokenizer of [new Tokenizer(json), new Tokenizer(JSON.parse(JSON.stringify(json)) as object)]) {
      expectWords(tokenizer, meta, words);
    }
  });
});

function expectWords(tokenizer: Tokenizer, meta: GgufMetadata, words: string[]): void {
  const tokens = meta.kv.get('tokenizer.ggml.tokens') as string[];
  for (const word of words) {
    const id = tokens.indexOf(word);
    expect(tokenizer.tokenId(word), word).toBe(id);
    expect(tokenizer.idToToken(id), word).toBe(word);
    expect(tokenizer.decode([id, id]), word).toBe(`${word}${word}`);
    // the pre-tokenizer splits __proto__ at its underscores; the letter words are one token each
    if (/^\p{L}+$/u.test(word)) expect(tokenizer.encode(word), word).toEqual([id]);
  }
}

describe('GGUF BOS and EOS (tokenizer.ggml.add_bos_token)', () => {
  it('puts BOS before the text when asked for special tokens, as llama.cpp does', async () => {
    for (const file of ['llama-F32.gguf', 'deepseek2-F16.gguf']) {
      const gguf = await readGgufModel(path.join(FIXTURES, file));
      const tokenizer = await Tokenizer.fromDir(path.join(FIXTURES, file));
      const bos = tokenizer.tokenId(gguf.specialTokens.bos_token!)!;
      expect(bos, file).toBe(304);
      expect(tokenizer.encode('a', { addSpecialTokens: true }), file).toEqual([bos, ...tokenizer.encode('a')]);
      expect(tokenizer.encode('a b c', { addSpecialTokens: true }), file).toEqual([bos, ...tokenizer.encode('a b c')]);
      expect(tokenizer.encode('a'), file).toEqual([97]);
    }
    // add_bos_token false (qwen3), GLM-4 (llama.cpp gives it no BOS) and the demo model: no BOS
    for (const file of ['qwen3-BF16.gguf', 'glm4-Q4_K_M.gguf', 'maya-demo-Q4_K_M.gguf']) {
      const tokenizer = await Tokenizer.fromDir(path.join(FIXTURES, file));
      expect(tokenizer.encode('a b', { addSpecialTokens: true }), file).toEqual(tokenizer.encode('a b'));
    }
  });

  it('follows llama.cpp when the flag is absent or asks for EOS', () => {
    const meta = wordVocabulary(['ab']);
    const tokens = meta.kv.get('tokenizer.ggml.tokens') as string[];
    tokens.push('<s>', '</s>');
    meta.kv.set('tokenizer.ggml.token_type', [...tokens.map(() => 1).slice(0, -2), 3, 3]);
    meta.kv.set('tokenizer.ggml.bos_token_id', tokens.length - 2);
    meta.kv.set('tokenizer.ggml.eos_token_id', tokens.length - 1);
    const encode = (kv: Array<[string, GgufValue]>) => {
      const m = { ...meta, kv: new Map([...meta.kv, ...kv]) };
      return new Tokenizer(ggufModel(m, 'x.gguf').tokenizerJson).encode('ab', { addSpecialTokens: true });
    };
    const [ab, bos, eos] = [tokens.indexOf('ab'), tokens.length - 2, tokens.length - 1];
    expect(encode([])).toEqual([ab]); // gpt2 pre-tokenizer: no BOS by default
    expect(encode([['tokenizer.ggml.pre', 'llama-bpe']])).toEqual([bos, ab]); // Llama 3: BOS by default
    expect(encode([['tokenizer.ggml.add_bos_token', true]])).toEqual([bos, ab]);
    expect(encode([['tokenizer.ggml.add_eos_token', true]])).toEqual([ab, eos]);
    expect(
      encode([
        ['tokenizer.ggml.pre', 'llama-bpe'],
        ['tokenizer.ggml.add_bos_token', false],
      ]),
    ).toEqual([ab]);
  });

  it('leaves BOS to the chat template: a rendered prompt starts with exactly one', async () => {
    const file = path.join(FIXTURES, 'llama-F32.gguf');
    const gguf = await readGgufModel(file);
    const tokenizer = await Tokenizer.fromDir(file);
    const template = new ChatTemplate(
      '{{ bos_token }}{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}',
      gguf.specialTokens,
    );
    const text = template.render([{ role: 'user', content: 'hi' }], { addGenerationPrompt: false });
    const ids = tokenizer.encodePrompt(text, ['hi']);
    expect(ids[0]).toBe(304);
    expect(ids.filter((id) => id === 304)).toHaveLength(1);
  });
});

describe('MAYA_CHAT_TEMPLATE / --chat-template', () => {
  it('is undefined by default and passes a path through, the flag over the environment', () => {
    expect(loadServerSettings({}).chatTemplate).toBeUndefined();
    expect(loadServerSettings({ MAYA_CHAT_TEMPLATE: '/t.jinja' }).chatTemplate).toBe('/t.jinja');
    const { server } = loadServeSettings({ 'chat-template': '/flag.jinja' }, { MAYA_CHAT_TEMPLATE: '/env.jinja' });
    expect(server.chatTemplate).toBe('/flag.jinja');
  });

  it('replaces the model template, and names an unreadable file', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'maya-template-'));
    const file = path.join(dir, 'chat_template.jinja');
    await writeFile(file, '{% for m in messages %}<|im_start|>{{ m.content }}<|im_end|>{% endfor %}<tool_call>');
    expect((await readModelDir(DEMO_GGUF, file)).chatTemplate).toContain('<|im_start|>');
    expect((await loadDialect(DEMO_GGUF, undefined, file)).name).toBe('qwen3');
    await expect(readModelDir(DEMO_GGUF, path.join(dir, 'none.jinja'))).rejects.toThrow(
      /cannot read the chat template/,
    );
  });
});

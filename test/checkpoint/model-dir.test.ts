import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ModelDirError, readModelDir } from '../../checkpoint/model-dir.ts';

const root = mkdtempSync(join(tmpdir(), 'maya-modeldir-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function makeDir(name: string, files: Record<string, unknown>): string {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  for (const [file, content] of Object.entries(files)) {
    writeFileSync(join(dir, file), typeof content === 'string' ? content : JSON.stringify(content));
  }
  return dir;
}

describe('readModelDir', () => {
  it('reads the oracle GLM-4 fixture (eos list from generation_config.json)', async () => {
    const m = await readModelDir('test/fixtures/engine/glm4-bf16');
    expect(m.dir).toBe(resolve('test/fixtures/engine/glm4-bf16'));
    expect(m.id).toBe('glm4-bf16');
    expect(m.architecture).toBe('Glm4ForCausalLM');
    expect(m.eosIds).toEqual([2, 3]);
    expect(m.vocabSize).toBe(384);
    expect(m.hasTokenizer).toBe(false);
    expect(m.chatTemplate).toBeNull();
  });

  it('falls back to config.json eos_token_id and reads tokenizer_config.json chat_template', async () => {
    const dir = makeDir('llama-like', {
      'config.json': {
        architectures: ['LlamaForCausalLM'],
        eos_token_id: 7,
        max_position_embeddings: 2048,
        vocab_size: 100,
      },
      'tokenizer.json': {},
      'tokenizer_config.json': {
        chat_template: '{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}',
        bos_token: '<s>',
      },
    });
    const m = await readModelDir(dir);
    expect(m.eosIds).toEqual([7]);
    expect(m.contextLength).toBe(2048);
    expect(m.hasTokenizer).toBe(true);
    expect(m.chatTemplate).toContain('for m in messages');
    expect(m.specialTokens.bos_token).toBe('<s>');
  });

  it('prefers chat_template.jinja and generation_config.json', async () => {
    const dir = makeDir('jinja', {
      'config.json': { architectures: ['Qwen3ForCausalLM'], eos_token_id: 1 },
      'generation_config.json': { eos_token_id: [5, 6, 5] },
      'tokenizer_config.json': { chat_template: 'from config' },
      'chat_template.jinja': 'from file',
    });
    const m = await readModelDir(dir);
    expect(m.eosIds).toEqual([5, 6]);
    expect(m.chatTemplate).toBe('from file');
  });

  it('names the fault', async () => {
    await expect(readModelDir(join(root, 'absent'))).rejects.toThrow(/does not exist/);
    await expect(readModelDir(makeDir('noconfig', {}))).rejects.toThrow(/no config.json/);
    await expect(readModelDir(makeDir('badjson', { 'config.json': '{nope' }))).rejects.toThrow(ModelDirError);
    await expect(readModelDir(makeDir('noarch', { 'config.json': {} }))).rejects.toThrow(/architectures/);
    await expect(
      readModelDir(makeDir('badeos', { 'config.json': { architectures: ['X'], eos_token_id: 'x' } })),
    ).rejects.toThrow(/eos_token_id/);
  });
});

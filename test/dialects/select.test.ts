import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DialectError } from '../../dialects/dialect.ts';
import { detectDialect, loadDialect, selectDialect } from '../../dialects/select.ts';

const FIXTURES = join(import.meta.dirname, 'fixtures/templates');
const template = (file: string) => readFileSync(join(FIXTURES, file), 'utf8');

describe('detectDialect', () => {
  it('recognises the GLM and DeepSeek templates', () => {
    expect(detectDialect({ chatTemplate: template('glm-4.5.jinja') })).toBe('glm45');
    expect(detectDialect({ chatTemplate: template('glm-4.6.jinja') })).toBe('glm45');
    expect(detectDialect({ chatTemplate: template('glm-4.7.jinja') })).toBe('glm47');
    expect(detectDialect({ chatTemplate: template('deepseek-v3.1.jinja') })).toBe('deepseek-v31');
    expect(detectDialect({ chatTemplate: template('deepseek-v3.2.llama-cpp-community.jinja') })).toBe('deepseek-v32');
  });

  it('recognises DeepSeek V3.2 / V4 / V4.1 from config.json', () => {
    expect(detectDialect({ chatTemplate: null, modelType: 'deepseek_v4' })).toBe('deepseek-v4');
    expect(detectDialect({ chatTemplate: null, modelType: 'deepseek_v41' })).toBe('deepseek-v41');
    expect(detectDialect({ chatTemplate: null, architectures: ['DeepseekV32ForCausalLM'] })).toBe('deepseek-v32');
  });

  it('recognises Qwen templates; any other template is plain; no template is null', () => {
    expect(detectDialect({ chatTemplate: template('qwen3-0.6b.jinja') })).toBe('qwen3');
    expect(detectDialect({ chatTemplate: template('glm-z1-rumination-32b-0414.jinja') })).toBe('plain');
    expect(detectDialect({ chatTemplate: '{% for m in messages %}{{ m.content }}{% endfor %}' })).toBe('plain');
    expect(detectDialect({ chatTemplate: null })).toBeNull();
  });
});

describe('selectDialect', () => {
  it('builds the detected dialect, and an override wins', () => {
    expect(selectDialect({ chatTemplate: template('glm-4.7.jinja') }).name).toBe('glm47');
    expect(selectDialect({ chatTemplate: template('glm-4.7.jinja') }, 'glm45').name).toBe('glm45');
    expect(selectDialect({ chatTemplate: null }, 'deepseek-v41').name).toBe('deepseek-v41');
  });

  it('fails clearly for an unknown name, an unrecognised checkpoint, or a missing template', () => {
    expect(() => selectDialect({ chatTemplate: null }, 'llama3')).toThrow(DialectError);
    expect(() => selectDialect({ chatTemplate: null })).toThrow(/no dialect recognised/);
    expect(() => selectDialect({ chatTemplate: null }, 'glm45')).toThrow(/has none/);
  });
});

describe('loadDialect', () => {
  let dir = '';
  afterEach(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('reads the template and config of a model directory and renders with it', async () => {
    dir = await mkdtemp(join(tmpdir(), 'maya-dialect-'));
    await writeFile(
      join(dir, 'config.json'),
      JSON.stringify({ architectures: ['Glm4ForCausalLM'], model_type: 'glm4' }),
    );
    await writeFile(
      join(dir, 'tokenizer_config.json'),
      JSON.stringify({ chat_template: template('glm-4.5.jinja'), eos_token: '<|endoftext|>' }),
    );
    const dialect = await loadDialect(dir);
    expect(dialect.name).toBe('glm45');
    expect(dialect.renderPrompt([{ role: 'user', content: 'Hi' }], { thinking: false }).text).toBe(
      '[gMASK]<sop><|user|>\nHi/nothink<|assistant|>\n<think></think>',
    );
  });
});

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  ChatTemplate,
  ChatTemplateError,
  readCheckpointTemplate,
  type TemplateMessage,
} from '../../checkpoint/chat-template.ts';

const FIXTURES = join(import.meta.dirname, '../dialects/fixtures/templates');

interface GoldenCase {
  template: string;
  case: string;
  kwargs: Record<string, unknown>;
  messages: TemplateMessage[];
  prompt: string;
}

const golden = JSON.parse(readFileSync(join(FIXTURES, 'rendered-examples.json'), 'utf8')) as { cases: GoldenCase[] };

describe('ChatTemplate renders the reference templates byte-identically to Python jinja2', () => {
  it('has golden cases for every reference template', () => {
    const names = new Set(golden.cases.map((c) => c.template));
    expect(names).toEqual(
      new Set([
        'glm-4.5.jinja',
        'glm-4.6.jinja',
        'glm-4.7.jinja',
        'glm-ocr.multimodal-reference.jinja',
        'deepseek-v3.1.jinja',
      ]),
    );
  });
  for (const c of golden.cases) {
    it(`${c.template} ${c.case}`, () => {
      const template = new ChatTemplate(readFileSync(join(FIXTURES, c.template), 'utf8'), {
        bos_token: '<｜begin▁of▁sentence｜>',
      });
      const { tools, ...kwargs } = c.kwargs as { tools?: never[] };
      const out = template.render(c.messages, { tools, addGenerationPrompt: true, kwargs });
      expect(out).toBe(c.prompt);
    });
  }
});

describe('Python semantics', () => {
  const render = (src: string, vars: Record<string, unknown> = {}) =>
    new ChatTemplate(src).render([], { addGenerationPrompt: false, kwargs: vars });

  it('tojson uses json.dumps separators and keeps non-ASCII (ensure_ascii=False)', () => {
    // Expected strings produced by Python: json.dumps(x, ensure_ascii=False)
    const x = { a: '北京 <&>', b: [1, 2.5, true, null], c: { d: 'é\u0001"\\' } };
    expect(render('{{ x | tojson }}', { x })).toBe(
      '{"a": "北京 <&>", "b": [1, 2.5, true, null], "c": {"d": "é\\u0001\\"\\\\"}}',
    );
    expect(render('{{ x | tojson(ensure_ascii=False) }}', { x: ['ü'] })).toBe('["ü"]');
  });

  it('supports items(), get(), split/strip/endswith and namespace', () => {
    const src =
      '{% set ns = namespace(n=0) %}{% for k, v in d.items() %}{% set ns.n = ns.n + v %}{{ k }}{% endfor %}' +
      "|{{ ns.n }}|{{ d.get('zz', 'none') }}|{{ 'a</think>b'.split('</think>')[-1] }}|{{ '  x\\n'.strip() }}|{{ 'q/nothink'.endswith('/nothink') }}";
    expect(render(src, { d: { a: 1, b: 2 } })).toBe('ab|3|none|b|x|true');
  });

  it("strip/lstrip/rstrip take Python's optional character set", () => {
    // Python: ' \nA b\n '.strip('\n') == ' \nA b\n ', 'xxaxx'.lstrip('x') == 'axx'
    expect(render("[{{ s.strip('\\n') }}]", { s: '\n A b \n\n' })).toBe('[ A b ]');
    expect(
      render("[{{ s.lstrip('x') }}|{{ s.rstrip('xa') }}|{{ s.strip() }}|{{ t.strip() }}]", {
        s: 'xxaxx',
        t: ' \t q \n',
      }),
    ).toBe('[axx||xxaxx|q]');
  });

  it('raise_exception surfaces as ChatTemplateError', () => {
    expect(() => render("{{ raise_exception('roles must alternate') }}")).toThrow(ChatTemplateError);
    expect(() => render("{{ raise_exception('roles must alternate') }}")).toThrow(/roles must alternate/);
  });

  it('a syntax error is a ChatTemplateError at construction', () => {
    expect(() => new ChatTemplate('{% if %}')).toThrow(ChatTemplateError);
  });

  it('exposes special tokens by name', () => {
    expect(new ChatTemplate('{{ bos_token }}x', { bos_token: '<s>' }).render([], { addGenerationPrompt: false })).toBe(
      '<s>x',
    );
  });
});

describe('readCheckpointTemplate', () => {
  let dir = '';
  afterEach(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('prefers chat_template.jinja and reads AddedToken special tokens', async () => {
    dir = await mkdtemp(join(tmpdir(), 'maya-tpl-'));
    await writeFile(
      join(dir, 'tokenizer_config.json'),
      JSON.stringify({
        chat_template: 'from-config',
        bos_token: { content: '<｜begin▁of▁sentence｜>', lstrip: false },
        eos_token: '<|endoftext|>',
      }),
    );
    await writeFile(join(dir, 'chat_template.jinja'), 'from-file');
    const t = await readCheckpointTemplate(dir);
    expect(t.source).toBe('from-file');
    expect(t.specialTokens).toEqual({ bos_token: '<｜begin▁of▁sentence｜>', eos_token: '<|endoftext|>' });
  });

  it('falls back to tokenizer_config.json, including the named-list form', async () => {
    dir = await mkdtemp(join(tmpdir(), 'maya-tpl-'));
    await writeFile(
      join(dir, 'tokenizer_config.json'),
      JSON.stringify({
        chat_template: [
          { name: 'tool_use', template: 'tools' },
          { name: 'default', template: 'plain' },
        ],
      }),
    );
    expect((await readCheckpointTemplate(dir)).source).toBe('plain');
  });

  it('returns null when the checkpoint ships no template', async () => {
    dir = await mkdtemp(join(tmpdir(), 'maya-tpl-'));
    expect((await readCheckpointTemplate(dir)).source).toBeNull();
  });
});

/**
 * Special-token injection: text from users, tools and history is tokenised as plain text, so a
 * user who writes `<|user|>` or `<tool_call>` cannot forge a role or a tool-call marker; only the
 * template's own markup produces those ids. Per dialect: the real templates of
 * test/dialects/fixtures/templates, rendered and tokenised through planResponse, with the demo
 * tokenizer extended by that family's markup as added tokens.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ChatTemplate } from '../../checkpoint/chat-template.ts';
import { Tokenizer } from '../../checkpoint/tokenizer.ts';
import type { Dialect } from '../../dialects/dialect.ts';
import { createDeepseekV31Dialect } from '../../dialects/deepseek.ts';
import { createDsmlDialect } from '../../dialects/dsml.ts';
import { createGlmDialect } from '../../dialects/glm.ts';
import { createQwenDialect } from '../../dialects/hermes.ts';
import { normaliseInput } from '../../responses/input-history.ts';
import { planResponse } from '../../responses/response-plan.ts';
import { pipelineTokenizer } from '../../runtime/load-model-runtime.ts';
import { FakeEngine } from '../helpers/fake-engine.ts';

const ROOT = new URL('../../', import.meta.url);
const TEMPLATES = new URL('test/dialects/fixtures/templates/', ROOT);
const demoJson = JSON.parse(readFileSync(new URL('models/maya-demo/tokenizer.json', ROOT), 'utf8')) as {
  added_tokens: Array<Record<string, unknown>>;
  model: { vocab: Record<string, number> };
};
const template = (name: string) =>
  new ChatTemplate(readFileSync(new URL(name, TEMPLATES), 'utf8'), { bos_token: '<｜begin▁of▁sentence｜>' });

/** The demo tokenizer plus `markup` as special added tokens (ids after the vocabulary). */
function tokenizerWith(markup: readonly string[]): Tokenizer {
  const json = structuredClone(demoJson);
  let next = Math.max(...Object.values(json.model.vocab), ...json.added_tokens.map((t) => t.id as number)) + 1;
  const known = new Set(json.added_tokens.map((t) => t.content));
  for (const content of markup) {
    if (known.has(content)) continue;
    json.added_tokens.push({
      id: next++,
      content,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true,
    });
  }
  return new Tokenizer(json);
}

interface Family {
  name: string;
  dialect: Dialect;
  /** Markup a user must not be able to produce: role and tool-call tokens of this family. */
  markup: string[];
}

const FAMILIES: Family[] = [
  {
    name: 'glm45',
    dialect: createGlmDialect('glm45', template('glm-4.5.jinja')),
    markup: ['<|user|>', '<|assistant|>', '<|observation|>', '<tool_call>', '</tool_call>', '<arg_key>'],
  },
  {
    name: 'glm47',
    dialect: createGlmDialect('glm47', template('glm-4.7.jinja')),
    markup: ['<|user|>', '<|assistant|>', '<|observation|>', '<tool_call>', '</tool_call>'],
  },
  {
    name: 'deepseek-v31',
    dialect: createDeepseekV31Dialect(template('deepseek-v3.1.jinja')),
    markup: [
      '<｜User｜>',
      '<｜Assistant｜>',
      '<｜tool▁calls▁begin｜>',
      '<｜tool▁call▁begin｜>',
      '<｜end▁of▁sentence｜>',
    ],
  },
  {
    name: 'deepseek-v32 (DSML)',
    dialect: createDsmlDialect('v32'),
    markup: ['<｜User｜>', '<｜Assistant｜>', '<｜end▁of▁sentence｜>'],
  },
  {
    name: 'qwen3',
    dialect: createQwenDialect(template('qwen3-0.6b.jinja')),
    markup: ['<|im_start|>', '<|im_end|>', '<tool_call>', '</tool_call>'],
  },
];

function promptIds(family: Family, tokenizer: Tokenizer, input: unknown): number[] {
  const runtime = {
    id: 't',
    contextLength: 8192,
    engine: new FakeEngine({ info: { contextLength: 8192 } }),
    tokenizer: pipelineTokenizer(tokenizer),
    dialect: family.dialect,
  };
  const request = { input: input as string, reasoning: { effort: 'none' as const } };
  return planResponse(runtime, request, normaliseInput(request.input), 0).promptIds;
}

const count = (ids: number[], id: number) => ids.filter((x) => x === id).length;

describe.each(FAMILIES)('$name', (family) => {
  const tokenizer = tokenizerWith(family.markup);

  it('markup written by the user stays text: no extra role or tool-call ids', () => {
    const attack = `Hi ${family.markup.join(' and ')} there`;
    const safe = `Hi ${family.markup.map(() => 'x').join(' and ')} there`;
    const attacked = promptIds(family, tokenizer, attack);
    const baseline = promptIds(family, tokenizer, safe);
    for (const marker of family.markup) {
      const id = tokenizer.tokenId(marker)!;
      expect(count(attacked, id), marker).toBe(count(baseline, id));
    }
    expect(tokenizer.decode(attacked)).toContain(attack);
  });

  it('markup inside a tool result and replayed assistant history stays text too', () => {
    const marker = family.markup[0]!;
    const history = [
      { role: 'user', content: 'Look it up' },
      { type: 'function_call', call_id: 'call_1', name: 'lookup', arguments: `{"q":"${marker}"}` },
      { type: 'function_call_output', call_id: 'call_1', output: `result ${marker} done` },
      { role: 'assistant', content: `It said ${marker}.` },
      { role: 'user', content: 'Thanks' },
    ];
    const plain = history.map(
      (item) => JSON.parse(JSON.stringify(item).replaceAll(JSON.stringify(marker).slice(1, -1), 'zz')) as object,
    );
    const id = tokenizer.tokenId(marker)!;
    expect(count(promptIds(family, tokenizer, history), id)).toBe(count(promptIds(family, tokenizer, plain), id));
  });

  it('a prompt without markup in its text encodes exactly as before', () => {
    const ids = promptIds(family, tokenizer, 'Hello there');
    const runtime = {
      id: 't',
      contextLength: 8192,
      engine: new FakeEngine(),
      tokenizer: pipelineTokenizer(tokenizer),
      dialect: family.dialect,
    };
    const rendered = family.dialect.renderPrompt([{ role: 'user', content: 'Hello there' }], { thinking: false });
    expect(ids).toEqual(tokenizer.encode(rendered.text));
    expect(runtime.id).toBe('t');
  });
});

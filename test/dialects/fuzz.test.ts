/**
 * Chunking independence on random, often malformed outputs: for every dialect parser, a random
 * sequence of marker pieces and text must give the same merged events however it is split, never
 * throw, and keep each call's argument deltas equal to its done arguments.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ChatTemplate } from '../../checkpoint/chat-template.ts';
import { createGlmDialect } from '../../dialects/glm.ts';
import { createDeepseekV31Dialect } from '../../dialects/deepseek.ts';
import { createDsmlDialect } from '../../dialects/dsml.ts';
import { createPlainDialect, createQwenDialect } from '../../dialects/hermes.ts';
import type { Dialect, ParserOptions, ToolSpec } from '../../dialects/dialect.ts';
import type { FinishReason } from '../../engine-cuda/engine.ts';
import { assertInvariants, feed, merge } from './harness.ts';
import { mulberry32 } from '../helpers/mulberry32.ts';

const FIXTURES = join(import.meta.dirname, 'fixtures/templates');
const glmTemplate = new ChatTemplate(readFileSync(join(FIXTURES, 'glm-4.5.jinja'), 'utf8'));
const v31Template = new ChatTemplate(readFileSync(join(FIXTURES, 'deepseek-v3.1.jinja'), 'utf8'));
const qwenTemplate = new ChatTemplate(readFileSync(join(FIXTURES, 'qwen3-0.6b.jinja'), 'utf8'));

const TOOLS: ToolSpec[] = [
  {
    name: 'get_weather',
    parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } } },
  },
  { name: 'get_time', parameters: { type: 'object', properties: {} } },
];
const COMMON = [
  '\n',
  '\n\n',
  ' ',
  'a',
  'Hi',
  '北京',
  '😀',
  '<',
  '>',
  '"',
  'get_weather',
  'get_time',
  'city',
  'days',
  '2',
  'true',
  '{"city": "x"}',
  '</think>',
  '<think>',
];
const PIECES: Record<string, string[]> = {
  glm: [
    ...COMMON,
    '<tool_call>',
    '</tool_call>',
    '<arg_key>',
    '</arg_key>',
    '<arg_value>',
    '</arg_value>',
    '<tool',
    '</arg',
    '<|user|>',
    '<|obs',
  ],
  v31: [
    ...COMMON,
    '<｜tool▁calls▁begin｜>',
    '<｜tool▁call▁begin｜>',
    '<｜tool▁sep｜>',
    '<｜tool▁call▁end｜>',
    '<｜tool▁calls▁end｜>',
    '<｜tool',
    '<｜end▁of▁sentence｜>',
  ],
  dsml: [
    ...COMMON,
    '<｜DSML｜function_calls>',
    '</｜DSML｜function_calls>',
    '<｜DSML｜invoke',
    ' name="get_time">',
    ' name="get_weather">',
    '</｜DSML｜invoke>',
    '<｜DSML｜parameter',
    ' name="city" string="true">',
    ' name="days" string="false">',
    '</｜DSML｜parameter>',
    '<｜DSML',
    '<｜end▁of▁sentence｜>',
  ],
  dsml41: [
    ...COMMON,
    '<｜DSML｜ calls>',
    '</｜DSML｜ calls>',
    '<｜DSML｜ invoke',
    ' name="get_time">',
    '</｜DSML｜ invoke>',
    '<｜DSML｜ parameter',
    ' name="city" string="true">',
    ' name="days" string="false">',
    '</｜DSML｜ parameter>',
    '<｜DSML｜',
    '<｜end▁of▁sentence｜>',
  ],
  qwen: [
    ...COMMON,
    '<tool_call>',
    '</tool_call>',
    '{"name": "get_time", "arguments": ',
    '{"name": "get_weather", "arguments": ',
    '{',
    '}',
    '[',
    ']',
    '"city": "x"',
    ', ',
    '\\',
    '"{\\"a\\": 1}"',
    '<|im_end|>',
    '<tool',
  ],
};
const DIALECTS: [string, Dialect, string][] = [
  ['glm45', createGlmDialect('glm45', glmTemplate), 'glm'],
  ['deepseek-v31', createDeepseekV31Dialect(v31Template), 'v31'],
  ['deepseek-v32', createDsmlDialect('v32'), 'dsml'],
  ['deepseek-v41', createDsmlDialect('v41'), 'dsml41'],
  ['glm47', createGlmDialect('glm47', glmTemplate), 'glm'],
  ['qwen3', createQwenDialect(qwenTemplate), 'qwen'],
  ['plain', createPlainDialect(new ChatTemplate('{{ messages }}', { eos_token: '<|im_end|>' })), 'qwen'],
];

function randomSplit(text: string, rand: () => number): string[] {
  const points = Array.from(text);
  const chunks: string[] = [];
  let current = '';
  for (const p of points) {
    current += p;
    if (rand() < 0.35) {
      chunks.push(current);
      current = '';
    }
  }
  chunks.push(current);
  return chunks;
}

describe('parsers are chunking-independent on random outputs', () => {
  for (const [name, dialect, kind] of DIALECTS) {
    it(name, () => {
      const rand = mulberry32(name.length * 7919 + 17);
      const pieces = PIECES[kind]!;
      for (let n = 0; n < 150; n++) {
        const length = 1 + Math.floor(rand() * 24);
        const output = Array.from({ length }, () => pieces[Math.floor(rand() * pieces.length)]).join('');
        const options: ParserOptions = { tools: TOOLS, startInReasoning: rand() < 0.3 };
        const reason: FinishReason = rand() < 0.5 ? 'stop' : 'length';
        const expected = merge(feed(dialect.createParser(options), [output], reason));
        for (let k = 0; k < 8; k++) {
          const events = feed(dialect.createParser(options), randomSplit(output, rand), reason);
          assertInvariants(events, []);
          const got = merge(events);
          if (JSON.stringify(got) !== JSON.stringify(expected))
            expect({ output, got }).toEqual({ output, got: expected });
        }
      }
    });
  }
});

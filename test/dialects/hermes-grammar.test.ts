/**
 * The Qwen/Hermes output grammar (dialects/hermes-grammar.ts) against the parser's golden outputs
 * (test/dialects/hermes.test.ts): the canonical call texts are admitted, malformed and disallowed
 * ones are not. The parser's tolerances (arguments before the name, string-encoded arguments) are
 * read but never generated under constraint, so the grammar leaves them out.
 */
import { describe, expect, it } from 'vitest';
import type { GrammarOptions, ParserOptions, ToolSpec } from '../../dialects/dialect.ts';
import { plainOutputGrammar, qwenOutputGrammar } from '../../dialects/hermes-grammar.ts';
import { CompiledGrammar } from '../../grammar/matcher.ts';

const TOOLS: ToolSpec[] = [
  {
    name: 'get_weather',
    parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } } },
  },
  { name: 'get_time', parameters: { type: 'object', properties: {} } },
  {
    name: 'set_mode',
    strict: true,
    parameters: {
      type: 'object',
      properties: { mode: { type: 'string', enum: ['eco', 'max'] }, level: { type: ['integer', 'null'] } },
      required: ['mode', 'level'],
      additionalProperties: false,
    },
  },
];

function admits(parser: Partial<ParserOptions>, json?: GrammarOptions['json']) {
  const run = new CompiledGrammar(
    qwenOutputGrammar({ parser: { tools: TOOLS, startInReasoning: false, ...parser }, ...(json ? { json } : {}) }),
    new Map(),
  ).createRun();
  return (text: string) => run.matches(text);
}

describe('Qwen/Hermes output grammar', () => {
  it('admits the committed golden outputs (reasoning, text, two calls; forced named; forced required)', () => {
    expect(
      admits({})(
        '<think>\nNeed 北京 weather.\n</think>\n\nChecking.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "北京 \\"x\\"", "days": 2}}\n</tool_call>\n' +
          '<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>',
      ),
    ).toBe(true);
    expect(admits({ startInToolCall: { name: 'get_weather' } })('{"city": "Oslo"}}\n</tool_call>')).toBe(true);
    expect(
      admits({ startInToolCall: {} })(
        '{"name": "set_mode", "arguments": {"mode": "eco", "level": null}}\n</tool_call>',
      ),
    ).toBe(true);
    expect(admits({ startInReasoning: true })('hm\n</think>\n\nAnswer: 4')).toBe(true);
  });

  it('rejects undeclared names, undeclared keys, wrong types, strict schema misses and spelled-out markup', () => {
    const ok = admits({});
    for (const bad of [
      '<tool_call>\n{"name": "rm", "arguments": {}}\n</tool_call>',
      '<tool_call>\n{"name": "get_weather", "arguments": {"town": "Oslo"}}\n</tool_call>',
      '<tool_call>\n{"name": "get_weather", "arguments": {"city": 5}}\n</tool_call>',
      '<tool_call>\n{"name": "set_mode", "arguments": {"mode": "turbo", "level": 1}}\n</tool_call>',
      '<tool_call>\n{"name": "set_mode", "arguments": {"mode": "eco"}}\n</tool_call>',
      '<tool_call>not json</tool_call>',
      'Say <|im_end|> now',
    ])
      expect(ok(bad)).toBe(false);
    expect(admits({ tools: [] })('<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>')).toBe(false);
  });

  it('json answers and the plain dialect (no calls; the call markup is ordinary text there)', () => {
    expect(
      admits(
        { tools: [] },
        { schema: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] } },
      )('<think>\nx\n</think>\n\n{"n": 1}'),
    ).toBe(true);
    const plain = new CompiledGrammar(
      plainOutputGrammar(['</s>'], { parser: { tools: TOOLS, startInReasoning: false } }),
      new Map(),
    ).createRun();
    expect(plain.matches('a <tool_call>x</tool_call>')).toBe(true);
    expect(plain.matches('a </s> b')).toBe(false);
  });
});

/**
 * The GLM output grammar (dialects/glm-grammar.ts) against the parser's golden outputs
 * (test/dialects/glm.test.ts): every committed GLM-4.5 / GLM-4.7 tool-call text is admitted with
 * the tools it declares, and malformed or disallowed ones are not: undeclared names, undeclared
 * or missing required parameters, wrong value types, markup spelled out in text, calls when no
 * tools are allowed, forced-call prompts. Markers are matched as text here (no vocabulary), as the
 * parser reads them; with the demo vocabulary they are single special ids.
 */
import { describe, expect, it } from 'vitest';
import { glmOutputGrammar } from '../../dialects/glm-grammar.ts';
import type { GrammarOptions, ParserOptions, ToolSpec } from '../../dialects/dialect.ts';
import { CompiledGrammar } from '../../grammar/matcher.ts';

const WEATHER: ToolSpec = {
  name: 'get_weather',
  description: 'Get weather',
  parameters: {
    type: 'object',
    properties: {
      city: { type: 'string' },
      days: { type: 'integer' },
      units: { type: 'array', items: { type: 'string' } },
    },
    required: ['city'],
  },
};
const TIME: ToolSpec = { name: 'get_time', parameters: { type: 'object', properties: { tz: { type: 'string' } } } };
const TOOLS = [WEATHER, TIME];

function admits(parser: Partial<ParserOptions>, json?: GrammarOptions['json']) {
  const grammar = glmOutputGrammar({
    parser: { tools: TOOLS, startInReasoning: false, ...parser },
    ...(json ? { json } : {}),
  });
  const run = new CompiledGrammar(grammar, new Map()).createRun();
  return (text: string) => run.matches(text);
}

const GOLDEN_45 = [
  '\n<think>Need the tool.</think>\nLet me check 北京 ☀️ weather 😀.\n' +
    '<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>北京 "east"</arg_value>\n' +
    '<arg_key>days</arg_key>\n<arg_value>2</arg_value>\n<arg_key>units</arg_key>\n<arg_value>["C", "F"]</arg_value>\n</tool_call>\n' +
    '<tool_call>get_time\n<arg_key>tz</arg_key>\n<arg_value>Asia/Shanghai</arg_value>\n</tool_call>',
  'Ok.\n<tool_call>get_time\n<arg_key>tz</arg_key>\n<arg_value>ß/Z</arg_value>\n</tool_call>',
  '\nHello there, 世界!',
  '<think>Plan: call it.<tool_call>get_time\n</tool_call>',
];
const GOLDEN_47_REASONING =
  'Need tool, ü.</think>Checking.<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value>' +
  '<arg_key>days</arg_key><arg_value>3</arg_value></tool_call><tool_call>get_time</tool_call>';

describe('GLM output grammar: golden texts', () => {
  it('admits every committed GLM-4.5 output with its tools', () => {
    const ok = admits({});
    for (const text of GOLDEN_45) expect(ok(text)).toBe(true);
  });

  it('admits the GLM-4.7 outputs (prompt ending inside reasoning; stray </think>; zero-argument call)', () => {
    expect(admits({ startInReasoning: true })(GOLDEN_47_REASONING)).toBe(true);
    expect(admits({})('</think><tool_call>get_time</tool_call>')).toBe(true);
    expect(admits({})('The answer is 4.')).toBe(true);
  });

  it('forced calls start inside the call: required (name first) and named (arguments first)', () => {
    expect(
      admits({ startInToolCall: {} })('get_time\n<arg_key>tz</arg_key>\n<arg_value>UTC</arg_value>\n</tool_call>\n'),
    ).toBe(true);
    expect(
      admits({ startInToolCall: { name: 'get_weather' } })(
        '<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>',
      ),
    ).toBe(true);
    expect(admits({ startInToolCall: { name: 'get_weather' } })('</tool_call>')).toBe(false); // city is required
    expect(admits({ startInToolCall: {} })('Sure.<tool_call>get_time</tool_call>')).toBe(false);
  });
});

describe('GLM output grammar: malformed and disallowed', () => {
  const ok = admits({});
  const call = (body: string) => `Ok.\n<tool_call>${body}</tool_call>`;
  it('rejects undeclared tools, undeclared or missing parameters, wrong types and order', () => {
    expect(ok(call('get_time\n'))).toBe(true);
    for (const bad of [
      call('rm_rf\n<arg_key>path</arg_key>\n<arg_value>/</arg_value>\n'),
      call('get_tim\n'),
      call('get_timer\n'),
      call('get_time\n<arg_key>zone</arg_key>\n<arg_value>UTC</arg_value>\n'),
      call('get_weather\n<arg_key>days</arg_key>\n<arg_value>2</arg_value>\n'),
      call(
        'get_weather\n<arg_key>city</arg_key>\n<arg_value>Rome</arg_value>\n<arg_key>days</arg_key>\n<arg_value>two</arg_value>\n',
      ),
      call(
        'get_weather\n<arg_key>city</arg_key>\n<arg_value>Rome</arg_value>\n<arg_key>units</arg_key>\n<arg_value>C</arg_value>\n',
      ),
      call(
        'get_weather\n<arg_key>days</arg_key>\n<arg_value>2</arg_value>\n<arg_key>city</arg_key>\n<arg_value>Rome</arg_value>\n',
      ),
      'Ok.\n<tool_call>get_time\n',
      'Text <tool_call spelled <|user|> out',
    ])
      expect(ok(bad)).toBe(false);
  });

  it('with no tools allowed (tool_choice none / none declared) the call markup is never admitted', () => {
    const none = admits({ tools: [] });
    expect(none('\n<think>hm</think>\nPlain answer.')).toBe(true);
    expect(none('Ok.\n<tool_call>get_time\n</tool_call>')).toBe(false);
    expect(none('<think>x<tool_call>get_time\n</tool_call>')).toBe(false);
  });

  it('json answers: reasoning free, then JSON of the schema only', () => {
    const json = admits(
      { tools: [] },
      {
        schema: {
          type: 'object',
          properties: { n: { type: 'integer' } },
          required: ['n'],
          additionalProperties: false,
        },
      },
    );
    expect(json('\n<think>any {text} here</think>\n{"n": 3}')).toBe(true);
    expect(json('{"n": 3}\n')).toBe(true);
    expect(json('\n<think>x</think>\nHere: {"n": 3}')).toBe(false);
    expect(json('{"n": "3"}')).toBe(false);
    expect(admits({ tools: [] }, {})('{"any": [1, {"x": null}]}')).toBe(true);
    expect(admits({ tools: [] }, {})('[1]')).toBe(false);
  });
});

/**
 * The DeepSeek-V3.1 output grammar (dialects/deepseek-grammar.ts) against the parser's golden
 * outputs (test/dialects/deepseek.test.ts): canonical call blocks are admitted (chained calls,
 * a block ending reasoning, forced calls), malformed and disallowed ones are not. The tolerated
 * misspellings of the block opener are read by the parser but never generated.
 */
import { describe, expect, it } from 'vitest';
import { deepseekV31OutputGrammar } from '../../dialects/deepseek-grammar.ts';
import type { ParserOptions, ToolSpec } from '../../dialects/dialect.ts';
import { CompiledGrammar } from '../../grammar/matcher.ts';

const WEATHER: ToolSpec = {
  name: 'get_weather',
  description: 'Get weather',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};
const TIME: ToolSpec = { name: 'get_time', parameters: { type: 'object', properties: {} } };
const admits = (parser: Partial<ParserOptions>) => {
  const run = new CompiledGrammar(
    deepseekV31OutputGrammar({ parser: { tools: [WEATHER, TIME], startInReasoning: false, ...parser } }),
    new Map(),
  ).createRun();
  return (text: string) => run.matches(text);
};
const B = '<｜tool▁calls▁begin｜>',
  C = '<｜tool▁call▁begin｜>',
  S = '<｜tool▁sep｜>',
  E = '<｜tool▁call▁end｜>',
  BE = '<｜tool▁calls▁end｜>';

describe('DeepSeek-V3.1 output grammar', () => {
  it('admits the committed golden outputs', () => {
    expect(
      admits({ startInReasoning: true })(
        `Need weather 北京.</think>Checking ${B}${C}get_weather${S}{"city": "北京"}${E}${C}get_time${S}{}${E}${BE}`,
      ),
    ).toBe(true);
    expect(admits({ startInReasoning: true })(`Hmm.${B}${C}get_time${S}{}${E}${BE}`)).toBe(true);
    expect(admits({})('Four — 四.')).toBe(true);
    expect(admits({ startInToolCall: { name: 'get_weather' } })(`{"city": "Rome"}${E}${BE}`)).toBe(true);
    expect(admits({ startInToolCall: {} })(`get_time${S}{}${E}${BE}`)).toBe(true);
  });

  it('rejects undeclared names, missing separators, wrong arguments, unclosed blocks and calls without tools', () => {
    const ok = admits({});
    for (const bad of [
      `${B}${C}shell${S}{}${E}${BE}`,
      `${B}${C}get_time{}${E}${BE}`,
      `${B}${C}get_weather${S}{}${E}${BE}`,
      `${B}${C}get_weather${S}{"town": "Oslo"}${E}${BE}`,
      `${B}${C}get_time${S}{}${E}`,
      `Ok<｜tool_calls_begin｜>${C}get_time${S}{}${E}${BE}`,
    ])
      expect(ok(bad)).toBe(false);
    expect(admits({ tools: [] })(`${B}${C}get_time${S}{}${E}${BE}`)).toBe(false);
  });
});

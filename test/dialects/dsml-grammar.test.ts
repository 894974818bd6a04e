/**
 * The DSML output grammar (dialects/dsml-grammar.ts, DeepSeek V3.2 / V4 / V4.1) against the
 * parser's golden outputs (test/dialects/dsml.test.ts): canonical blocks are admitted with each
 * version's tags; malformed and disallowed ones are not. One golden passes an array to an
 * integer parameter, which the parser reads but the grammar (declared types) does not generate:
 * it is checked with an integer here and rejected as written.
 */
import { describe, expect, it } from 'vitest';
import type { ParserOptions, ToolSpec } from '../../dialects/dialect.ts';
import { createDsmlDialect, type DsmlVersion } from '../../dialects/dsml.ts';
import { CompiledGrammar } from '../../grammar/matcher.ts';

const WEATHER: ToolSpec = {
  name: 'get_weather',
  description: 'Get weather',
  parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } } },
};
const TIME: ToolSpec = { name: 'get_time', parameters: { type: 'object', properties: {} } };
const admits = (version: DsmlVersion, parser: Partial<ParserOptions> = {}) => {
  const grammar = createDsmlDialect(version).outputGrammar!({
    parser: { tools: [WEATHER, TIME], startInReasoning: false, ...parser },
  });
  const run = new CompiledGrammar(grammar, new Map()).createRun();
  return (text: string) => run.matches(text);
};

describe('DSML output grammar', () => {
  it('admits the committed golden outputs of V3.2, V4 and V4.1', () => {
    expect(
      admits('v32')(
        'Let me check 北京.\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name="get_weather">\n' +
          '<｜DSML｜parameter name="city" string="true">北京 "x" a<b</｜DSML｜parameter>\n<｜DSML｜parameter name="days" string="false">2</｜DSML｜parameter>\n' +
          '</｜DSML｜invoke>\n<｜DSML｜invoke name="get_time">\n\n</｜DSML｜invoke>\n</｜DSML｜function_calls>',
      ),
    ).toBe(true);
    expect(
      admits('v4', { startInReasoning: true })(
        'Think ü.\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name="get_time">\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>',
      ),
    ).toBe(true);
    expect(
      admits('v41', { startInReasoning: true })(
        'Done thinking.</think>\n\n<｜DSML｜ calls>\n<｜DSML｜ invoke name="get_weather">\n' +
          '<｜DSML｜ parameter name="city" string="true">Rome</｜DSML｜ parameter>\n</｜DSML｜ invoke>\n</｜DSML｜ calls>',
      ),
    ).toBe(true);
    const named = admits('v32', { startInToolCall: { name: 'get_weather' } });
    expect(
      named(
        '<｜DSML｜parameter name="days" string="false">2</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>',
      ),
    ).toBe(true);
    expect(
      named(
        '<｜DSML｜parameter name="days" string="false">[1, 2]</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>',
      ),
    ).toBe(false);
    expect(
      admits('v4', { startInToolCall: {} })(
        '<｜DSML｜invoke name="get_time">\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>',
      ),
    ).toBe(true);
  });

  it("rejects undeclared names and parameters, wrong string attributes, other versions' tags and calls without tools", () => {
    const ok = admits('v4');
    for (const bad of [
      '<｜DSML｜tool_calls>\n<｜DSML｜invoke name="exec">\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>',
      '<｜DSML｜tool_calls>\n<｜DSML｜invoke name="get_weather">\n<｜DSML｜parameter name="town" string="true">x</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>',
      '<｜DSML｜tool_calls>\n<｜DSML｜invoke name="get_weather">\n<｜DSML｜parameter name="days" string="true">2</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>',
      '<｜DSML｜tool_calls>\n<｜DSML｜invoke name="get_time">\n</｜DSML｜invoke>\n',
      'Text <｜DSML｜tool_calls> spelled out',
    ])
      expect(ok(bad)).toBe(false);
    expect(admits('v41')('<｜DSML｜tool_calls> is text for V4.1')).toBe(true);
    expect(
      admits('v4', { tools: [] })(
        '<｜DSML｜tool_calls>\n<｜DSML｜invoke name="get_time">\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>',
      ),
    ).toBe(false);
  });
});

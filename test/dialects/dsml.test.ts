import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createDsmlDialect, type DsmlVersion } from '../../dialects/dsml.ts';
import type { ChatTurn, ParserOptions, ToolSpec } from '../../dialects/dialect.ts';
import { checkStreaming, feed, merge } from './harness.ts';

const BOS = '<｜begin▁of▁sentence｜>';
const EOS = '<｜end▁of▁sentence｜>';
const WEATHER: ToolSpec = {
  name: 'get_weather',
  description: 'Get weather',
  parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } } },
};
const TIME: ToolSpec = { name: 'get_time', parameters: { type: 'object', properties: {} } };
const TOOLS = [WEATHER, TIME];
const SCHEMA_LINE =
  '{"name": "get_weather", "description": "Get weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}';

const toolLoop: ChatTurn[] = [
  { role: 'user', content: 'Weather in Paris?' },
  {
    role: 'assistant',
    content: '',
    reasoning: 'Need tool.',
    toolCalls: [{ id: 'c1', name: 'get_weather', arguments: '{"city":"Paris"}' }],
  },
  { role: 'tool', content: 'sunny', toolCallId: 'c1' },
];
const history: ChatTurn[] = [
  { role: 'user', content: 'Hi' },
  { role: 'assistant', content: 'Hello!', reasoning: 'greeting' },
  { role: 'user', content: '2+2?' },
];

describe('DeepSeek-V3.2 encoder', () => {
  const d = createDsmlDialect('v32');

  it('worked example: thinking, tools, one call and its result (DeepSeek-V3.2 encoding_dsv32.py)', () => {
    const { text, parser } = d.renderPrompt(toolLoop, { tools: [WEATHER], thinking: true });
    expect(
      text.startsWith(
        `${BOS}\n\n## Tools\nYou have access to a set of tools you can use to answer the user's question.\n`,
      ),
    ).toBe(true);
    expect(text).toContain(
      `Here are the functions available in JSONSchema format:\n<functions>\n${SCHEMA_LINE}\n</functions>\n<｜User｜>`,
    );
    expect(
      text.endsWith(
        '</functions>\n<｜User｜>Weather in Paris?<｜Assistant｜><think>Need tool.</think>\n\n<｜DSML｜function_calls>\n' +
          '<｜DSML｜invoke name="get_weather">\n<｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter>\n</｜DSML｜invoke>\n' +
          `</｜DSML｜function_calls>${EOS}\n\n<function_results>\n<result>sunny</result>\n</function_results>\n\n<think>`,
      ),
    ).toBe(true);
    expect(parser.startInReasoning).toBe(true);
  });

  it('chat mode history: every assistant turn after </think>, reasoning never rendered', () => {
    expect(d.renderPrompt(history, { thinking: false }).text).toBe(
      `${BOS}<｜User｜>Hi<｜Assistant｜></think>Hello!${EOS}<｜User｜>2+2?<｜Assistant｜></think>`,
    );
    expect(d.renderPrompt(history, { thinking: true }).text).toBe(
      `${BOS}<｜User｜>Hi<｜Assistant｜></think>Hello!${EOS}<｜User｜>2+2?<｜Assistant｜><think>`,
    );
  });

  it('a group of results follows the call order; non-string arguments are JSON', () => {
    const turns: ChatTurn[] = [
      { role: 'system', content: 'Sys.' },
      { role: 'user', content: 'Both?' },
      {
        role: 'assistant',
        content: 'On it.',
        toolCalls: [
          { id: 'a', name: 'get_weather', arguments: '{"city":"Oslo","days":2}' },
          { id: 'b', name: 'get_time', arguments: '{}' },
        ],
      },
      { role: 'tool', content: '12:00', toolCallId: 'b' },
      { role: 'tool', content: 'rain', toolCallId: 'a' },
    ];
    expect(d.renderPrompt(turns, { thinking: false }).text).toBe(
      `${BOS}Sys.<｜User｜>Both?<｜Assistant｜></think>On it.\n\n<｜DSML｜function_calls>\n` +
        '<｜DSML｜invoke name="get_weather">\n<｜DSML｜parameter name="city" string="true">Oslo</｜DSML｜parameter>\n' +
        '<｜DSML｜parameter name="days" string="false">2</｜DSML｜parameter>\n</｜DSML｜invoke>\n' +
        '<｜DSML｜invoke name="get_time">\n\n</｜DSML｜invoke>\n</｜DSML｜function_calls>' +
        `${EOS}\n\n<function_results>\n<result>rain</result>\n<result>12:00</result>\n</function_results>\n\n</think>`,
    );
  });

  it('forced tool choice opens the block (thinking off)', () => {
    const named = d.renderPrompt(history, { tools: TOOLS, thinking: true, forcedTool: { name: 'get_time' } });
    expect(
      named.text.endsWith(
        '<｜User｜>2+2?<｜Assistant｜></think>\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name="get_time">\n',
      ),
    ).toBe(true);
    expect(named.parser).toEqual({ tools: TOOLS, startInReasoning: false, startInToolCall: { name: 'get_time' } });
    expect(
      d
        .renderPrompt(history, { tools: TOOLS, thinking: false, forcedTool: 'required' })
        .text.endsWith('</think>\n\n<｜DSML｜function_calls>\n'),
    ).toBe(true);
  });
});

describe('DeepSeek-V4 encoder', () => {
  const d = createDsmlDialect('v4');

  it('worked example: tool results merged into a user turn, reasoning kept with tools (deepseek_v4_encoding.py)', () => {
    const text = d.renderPrompt(toolLoop, { tools: [WEATHER], thinking: true }).text;
    expect(
      text.startsWith(
        `${BOS}\n\n## Tools\n\nYou have access to a set of tools to help answer the user's question. You can invoke tools by writing a "<｜DSML｜tool_calls>" block`,
      ),
    ).toBe(true);
    expect(text).toContain(
      `### Available Tool Schemas\n\n${SCHEMA_LINE}\n\nYou MUST strictly follow the above defined tool name and parameter schemas to invoke tool calls.\n<｜User｜>`,
    );
    expect(
      text.endsWith(
        '<｜User｜>Weather in Paris?<｜Assistant｜><think>Need tool.</think>\n\n<｜DSML｜tool_calls>\n' +
          '<｜DSML｜invoke name="get_weather">\n<｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter>\n</｜DSML｜invoke>\n' +
          `</｜DSML｜tool_calls>${EOS}<｜User｜><tool_result>sunny</tool_result><｜Assistant｜><think>`,
      ),
    ).toBe(true);
  });

  it('without tools, reasoning before the last user turn is dropped', () => {
    expect(d.renderPrompt(history, { thinking: true }).text).toBe(
      `${BOS}<｜User｜>Hi<｜Assistant｜></think>Hello!${EOS}<｜User｜>2+2?<｜Assistant｜><think>`,
    );
    const loop: ChatTurn[] = [
      ...history,
      { role: 'assistant', content: 'Let me add.', reasoning: 'easy' },
      { role: 'user', content: 'And 3+3?' },
    ];
    expect(d.renderPrompt(loop, { thinking: false }).text).toBe(
      `${BOS}<｜User｜>Hi<｜Assistant｜></think>Hello!${EOS}<｜User｜>2+2?<｜Assistant｜></think>Let me add.${EOS}<｜User｜>And 3+3?<｜Assistant｜></think>`,
    );
  });

  it('effort xhigh maps to the max preamble; thinking is off by default', () => {
    expect(d.thinkingControl(undefined)).toEqual({ thinking: false });
    const setting = d.thinkingControl('xhigh');
    expect(setting).toEqual({ thinking: true, effort: 'max' });
    const text = d.renderPrompt([{ role: 'user', content: 'Q' }], { thinking: true, effort: setting.effort }).text;
    expect(text.startsWith(`${BOS}Reasoning Effort: Absolute maximum with no shortcuts permitted.\n`)).toBe(true);
    expect(text.endsWith('left unchecked.\n\n<｜User｜>Q<｜Assistant｜><think>')).toBe(true);
  });
});

describe('DeepSeek-V4.1 encoder', () => {
  const d = createDsmlDialect('v41');

  it('System token, numeric reasoning effort at index 0, thinking on by default', () => {
    expect(d.thinkingControl(undefined)).toEqual({ thinking: true });
    expect(d.thinkingControl('low')).toEqual({ thinking: true, effort: 25 });
    const turns: ChatTurn[] = [
      { role: 'system', content: 'You are helpful.' },
      { role: 'user', content: 'Hi' },
    ];
    expect(d.renderPrompt(turns, { thinking: true }).text).toBe(
      `${BOS}<｜System｜>Reasoning Effort: 50 (range 1-100, the higher the value, the more thorough the reasoning)\n\nYou are helpful.<｜User｜>Hi<｜Assistant｜><think>`,
    );
    expect(d.renderPrompt(turns, { thinking: true, effort: 25 }).text).toContain('Reasoning Effort: 25 (range');
    expect(d.renderPrompt(turns, { thinking: false }).text).toBe(
      `${BOS}<｜System｜>You are helpful.<｜User｜>Hi<｜Assistant｜></think>`,
    );
    expect(d.renderPrompt([{ role: 'user', content: 'Hi' }], { thinking: false }).text).toBe(
      `${BOS}<｜User｜>Hi<｜Assistant｜></think>`,
    );
  });

  it('tools attach to the first system message; calls use leading-space tag names', () => {
    const turns: ChatTurn[] = [
      { role: 'system', content: 'Sys.' },
      { role: 'user', content: 'Weather?' },
      {
        role: 'assistant',
        content: '',
        toolCalls: [{ id: 'c1', name: 'get_weather', arguments: '"{\\"city\\": \\"Rome\\", \\"days\\": 2}"' }],
      },
      { role: 'tool', content: 'hot', toolCallId: 'c1' },
    ];
    const text = d.renderPrompt(turns, { tools: [WEATHER], thinking: false }).text;
    expect(
      text.startsWith(
        `${BOS}<｜System｜>Sys.\n\n## Tools\n\nYou have access to a set of tools to help answer the user's question. You can invoke tools by writing a "<｜DSML｜ calls>" block`,
      ),
    ).toBe(true);
    expect(text).toContain(
      '<｜DSML｜ invoke name="$TOOL_NAME">\n<｜DSML｜ parameter name="$PARAMETER_NAME" string="true|false">$PARAMETER_VALUE</｜DSML｜ parameter>',
    );
    expect(
      text.endsWith(
        '<｜User｜>Weather?<｜Assistant｜></think>\n\n<｜DSML｜ calls>\n<｜DSML｜ invoke name="get_weather">\n' +
          '<｜DSML｜ parameter name="city" string="true">Rome</｜DSML｜ parameter>\n<｜DSML｜ parameter name="days" string="false">2</｜DSML｜ parameter>\n' +
          `</｜DSML｜ invoke>\n</｜DSML｜ calls>${EOS}<｜User｜><tool_result>hot</tool_result><｜Assistant｜></think>`,
      ),
    ).toBe(true);
  });
});

const FORBIDDEN = ['<', '>', '｜'];
const parser = (version: DsmlVersion, options: Partial<ParserOptions> = {}) => {
  const d = createDsmlDialect(version);
  return () => d.createParser({ tools: TOOLS, startInReasoning: false, ...options });
};

describe('DSML parsers, streamed at every byte boundary', () => {
  it('V3.2: text then two invokes, typed by the string attribute', () => {
    const output =
      'Let me check 北京.\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name="get_weather">\n' +
      '<｜DSML｜parameter name="city" string="true">北京 "x" a<b</｜DSML｜parameter>\n<｜DSML｜parameter name="days" string="false">2</｜DSML｜parameter>\n' +
      '</｜DSML｜invoke>\n<｜DSML｜invoke name="get_time">\n\n</｜DSML｜invoke>\n</｜DSML｜function_calls>';
    const events = checkStreaming({ makeParser: parser('v32'), output, forbidden: FORBIDDEN });
    expect(events).toEqual([
      { type: 'text_delta', text: 'Let me check 北京.' },
      { type: 'tool_call_start', index: 0, name: 'get_weather' },
      { type: 'tool_args_delta', index: 0, delta: '{"city":"北京 \\"x\\" a<b","days":2}' },
      { type: 'tool_call_done', index: 0, arguments: '{"city":"北京 \\"x\\" a<b","days":2}' },
      { type: 'tool_call_start', index: 1, name: 'get_time' },
      { type: 'tool_args_delta', index: 1, delta: '{}' },
      { type: 'tool_call_done', index: 1, arguments: '{}' },
    ]);
  });

  it('V4: reasoning ended by the call block when </think> is missing', () => {
    const output =
      'Think ü.\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name="get_time">\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>';
    const events = checkStreaming({
      makeParser: parser('v4', { startInReasoning: true }),
      output,
      forbidden: FORBIDDEN,
      pairs: true,
    });
    expect(events.map((e) => e.type)).toEqual([
      'reasoning_delta',
      'reasoning_done',
      'tool_call_start',
      'tool_args_delta',
      'tool_call_done',
    ]);
    expect(events[0]).toEqual({ type: 'reasoning_delta', text: 'Think ü.' });
  });

  it('V4.1: leading-space tag names', () => {
    const output =
      'Done thinking.</think>\n\n<｜DSML｜ calls>\n<｜DSML｜ invoke name="get_weather">\n' +
      '<｜DSML｜ parameter name="city" string="true">Rome</｜DSML｜ parameter>\n</｜DSML｜ invoke>\n</｜DSML｜ calls>';
    const events = checkStreaming({
      makeParser: parser('v41', { startInReasoning: true }),
      output,
      forbidden: FORBIDDEN,
    });
    expect(events).toEqual([
      { type: 'reasoning_delta', text: 'Done thinking.' },
      { type: 'reasoning_done' },
      { type: 'tool_call_start', index: 0, name: 'get_weather' },
      { type: 'tool_args_delta', index: 0, delta: '{"city":"Rome"}' },
      { type: 'tool_call_done', index: 0, arguments: '{"city":"Rome"}' },
    ]);
    // The V4 block name is not a V4.1 call: it stays text.
    expect(merge(feed(parser('v41')(), ['<｜DSML｜tool_calls>']))).toEqual([
      { type: 'text_delta', text: '<｜DSML｜tool_calls>' },
    ]);
  });

  it('truncation, end inside a call, undeclared names', () => {
    const cut =
      '<｜DSML｜function_calls>\n<｜DSML｜invoke name="get_weather">\n<｜DSML｜parameter name="city" string="true">Ro';
    const events = checkStreaming({ makeParser: parser('v32'), output: cut, reason: 'length', forbidden: FORBIDDEN });
    expect(events).toEqual([
      { type: 'tool_call_start', index: 0, name: 'get_weather' },
      { type: 'tool_args_delta', index: 0, delta: '{"city":"Ro' },
      { type: 'tool_call_incomplete', index: 0 },
    ]);
    expect(feed(parser('v32')(), [cut], 'stop').at(-1)).toMatchObject({ type: 'error', code: 'unfinished_tool_call' });
    const undeclared = feed(parser('v4')(), ['<｜DSML｜tool_calls>\n<｜DSML｜invoke name="exec">\n</｜DSML｜invoke>']);
    expect(undeclared).toEqual([{ type: 'error', code: 'undeclared_tool', name: 'exec', message: expect.any(String) }]);
  });

  it('forced calls start inside the block', () => {
    const named = checkStreaming({
      makeParser: parser('v32', { startInToolCall: { name: 'get_weather' } }),
      output:
        '<｜DSML｜parameter name="days" string="false">[1, 2]</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>',
      forbidden: FORBIDDEN,
      pairs: true,
    });
    expect(named.at(-1)).toEqual({ type: 'tool_call_done', index: 0, arguments: '{"days":[1,2]}' });
    const required = merge(
      feed(parser('v4', { startInToolCall: {} })(), [
        '<｜DSML｜invoke name="get_time">\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>',
      ]),
    );
    expect(required[0]).toEqual({ type: 'tool_call_start', index: 0, name: 'get_time' });
  });
});

describe('DSML encoders match the Python reference encoders', () => {
  interface EncoderCase {
    version: DsmlVersion;
    messages: {
      role: string;
      content: string;
      reasoning?: string;
      tool_call_id?: string;
      tool_calls?: { id: string; function: { name: string; arguments: string } }[];
    }[];
    tools: { function: { name: string; description: string; parameters: Record<string, unknown> } }[];
    thinking: boolean;
    effort: 'max' | number | null;
    prompt: string;
  }
  const { cases } = JSON.parse(readFileSync(join(import.meta.dirname, 'fixtures/dsml-encoder-cases.json'), 'utf8')) as {
    cases: EncoderCase[];
  };

  it('covers all three versions, with and without tools and thinking', () => {
    for (const v of ['v32', 'v4', 'v41']) expect(cases.filter((c) => c.version === v).length).toBeGreaterThan(10);
    expect(cases.some((c) => c.tools.length > 0 && c.thinking)).toBe(true);
    expect(cases.some((c) => c.tools.length === 0 && !c.thinking)).toBe(true);
  });

  cases.forEach((c, i) => {
    it(`case ${i} (${c.version}, thinking ${c.thinking}, ${c.tools.length} tools, ${c.messages.length} messages)`, () => {
      const turns: ChatTurn[] = c.messages.map((m) => {
        if (m.role === 'tool') return { role: 'tool', content: m.content, toolCallId: m.tool_call_id };
        const turn: ChatTurn = { role: m.role as ChatTurn['role'], content: m.content };
        if (m.reasoning !== undefined) turn.reasoning = m.reasoning;
        if (m.tool_calls)
          turn.toolCalls = m.tool_calls.map((x) => ({
            id: x.id,
            name: x.function.name,
            arguments: x.function.arguments,
          }));
        return turn;
      });
      const tools: ToolSpec[] = c.tools.map((t) => ({
        name: t.function.name,
        description: t.function.description,
        parameters: t.function.parameters,
      }));
      const text = createDsmlDialect(c.version).renderPrompt(turns, {
        tools,
        thinking: c.thinking,
        effort: c.effort ?? undefined,
      }).text;
      expect(text).toBe(c.prompt);
    });
  });
});

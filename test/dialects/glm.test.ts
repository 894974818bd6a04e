import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ChatTemplate } from '../../checkpoint/chat-template.ts';
import { createGlmDialect, type GlmVariant } from '../../dialects/glm.ts';
import type { ChatTurn, ParserOptions, ToolSpec } from '../../dialects/dialect.ts';
import { checkStreaming, feed, merge } from './harness.ts';

const FIXTURES = join(import.meta.dirname, 'fixtures/templates');
const golden = JSON.parse(readFileSync(join(FIXTURES, 'rendered-examples.json'), 'utf8')) as {
  cases: { template: string; case: string; prompt: string }[];
};
const goldenPrompt = (template: string, name: string) => {
  const c = golden.cases.find((x) => x.template === template && x.case === name);
  if (!c) throw new Error(`no golden case ${template} ${name}`);
  return c.prompt;
};
const dialectFor = (variant: GlmVariant, file: string) =>
  createGlmDialect(variant, new ChatTemplate(readFileSync(join(FIXTURES, file), 'utf8')));

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

const toolLoop: ChatTurn[] = [
  { role: 'system', content: 'You are helpful.' },
  { role: 'user', content: 'Weather in 北京 for 2 days?' },
  {
    role: 'assistant',
    content: '',
    reasoning: 'Need the tool.',
    toolCalls: [{ id: 'c1', name: 'get_weather', arguments: '{"city":"北京","days":2,"units":["C","F"]}' }],
  },
  { role: 'tool', content: 'sunny', toolCallId: 'c1' },
  { role: 'tool', content: 'windy', toolCallId: 'c2' },
];
const history: ChatTurn[] = [
  { role: 'user', content: 'Hi' },
  { role: 'assistant', content: 'Hello!', reasoning: 'greeting' },
  { role: 'user', content: '2+2?' },
];

describe('GLM prompt rendering (history, reasoning replay, tool result groups)', () => {
  const files: [GlmVariant, string][] = [
    ['glm45', 'glm-4.5.jinja'],
    ['glm45', 'glm-4.6.jinja'],
    ['glm47', 'glm-4.7.jinja'],
  ];
  for (const [variant, file] of files) {
    it(`${file}: tool loop with reasoning and two results, thinking on and off`, () => {
      const d = dialectFor(variant, file);
      const on = d.renderPrompt(toolLoop, { tools: [WEATHER], thinking: true });
      expect(on.text).toBe(goldenPrompt(file, 'tool_loop_thinking_default'));
      expect(on.parser.startInReasoning).toBe(variant === 'glm47');
      const off = d.renderPrompt(toolLoop, { tools: [WEATHER], thinking: false });
      expect(off.text).toBe(goldenPrompt(file, 'tool_loop_enable_thinking_false'));
      expect(off.parser.startInReasoning).toBe(false);
    });
    it(`${file}: reasoning of turns before the last user message is dropped`, () => {
      const d = dialectFor(variant, file);
      expect(d.renderPrompt(history, { thinking: true }).text).toBe(goldenPrompt(file, 'history_reasoning_dropped'));
    });
  }

  it('developer turns render as system turns', () => {
    const d = dialectFor('glm45', 'glm-4.5.jinja');
    const text = d.renderPrompt(
      [
        { role: 'developer', content: 'Be brief.' },
        { role: 'user', content: 'Hi' },
      ],
      { thinking: true },
    ).text;
    expect(text).toBe('[gMASK]<sop><|system|>\nBe brief.<|user|>\nHi<|assistant|>');
  });

  it('forced tool choice opens the call in the prompt with thinking off', () => {
    const d45 = dialectFor('glm45', 'glm-4.5.jinja');
    const req = d45.renderPrompt(history, { tools: TOOLS, thinking: true, forcedTool: 'required' });
    expect(req.text.endsWith('<|assistant|>\n<think></think>\n<tool_call>')).toBe(true);
    expect(req.parser).toMatchObject({ startInReasoning: false, startInToolCall: {} });
    expect(req.text).not.toContain('/nothink');
    const off = d45.renderPrompt(history, { tools: TOOLS, thinking: false, forcedTool: 'required' }).text;
    expect(off.endsWith('2+2?/nothink<|assistant|>\n<think></think>\n<tool_call>')).toBe(true);
    const named = d45.renderPrompt(history, { tools: TOOLS, thinking: true, forcedTool: { name: 'get_time' } });
    expect(named.text.endsWith('<|assistant|>\n<think></think>\n<tool_call>get_time\n')).toBe(true);
    expect(named.parser.startInToolCall).toEqual({ name: 'get_time' });
    const d47 = dialectFor('glm47', 'glm-4.7.jinja');
    expect(
      d47
        .renderPrompt(history, { tools: TOOLS, thinking: true, forcedTool: { name: 'get_time' } })
        .text.endsWith('<|assistant|></think><tool_call>get_time'),
    ).toBe(true);
    expect(() => d45.renderPrompt(history, { tools: TOOLS, thinking: true, forcedTool: { name: 'nope' } })).toThrow(
      /nope/,
    );
  });

  it('thinkingControl: effort none turns thinking off, anything else (or nothing) keeps it on', () => {
    const d = dialectFor('glm45', 'glm-4.5.jinja');
    expect(d.thinkingControl('none').thinking).toBe(false);
    expect(d.thinkingControl(undefined).thinking).toBe(true);
    expect(d.thinkingControl('high').thinking).toBe(true);
    expect(d.stopTokens).toEqual(['<|endoftext|>', '<|user|>', '<|observation|>']);
  });
});

const FORBIDDEN = ['<', '>', '|'];
const parserFor = (variant: GlmVariant, options: Partial<ParserOptions> = {}) => {
  const d = dialectFor(variant, variant === 'glm45' ? 'glm-4.5.jinja' : 'glm-4.7.jinja');
  return () => d.createParser({ tools: TOOLS, startInReasoning: false, ...options });
};

describe('GLM-4.5 parser, streamed at every byte boundary', () => {
  it('reasoning, text, then two calls with typed arguments', () => {
    const output =
      '\n<think>Need the tool.</think>\nLet me check 北京 ☀️ weather 😀.\n' +
      '<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>北京 "east"</arg_value>\n' +
      '<arg_key>days</arg_key>\n<arg_value>2</arg_value>\n<arg_key>units</arg_key>\n<arg_value>["C", "F"]</arg_value>\n</tool_call>\n' +
      '<tool_call>get_time\n<arg_key>tz</arg_key>\n<arg_value>Asia/Shanghai</arg_value>\n</tool_call>';
    const events = checkStreaming({ makeParser: parserFor('glm45'), output, forbidden: FORBIDDEN });
    expect(events).toEqual([
      { type: 'reasoning_delta', text: 'Need the tool.' },
      { type: 'reasoning_done' },
      { type: 'text_delta', text: 'Let me check 北京 ☀️ weather 😀.' },
      { type: 'tool_call_start', index: 0, name: 'get_weather' },
      { type: 'tool_args_delta', index: 0, delta: '{"city":"北京 \\"east\\"","days":2,"units":["C","F"]}' },
      { type: 'tool_call_done', index: 0, arguments: '{"city":"北京 \\"east\\"","days":2,"units":["C","F"]}' },
      { type: 'tool_call_start', index: 1, name: 'get_time' },
      { type: 'tool_args_delta', index: 1, delta: '{"tz":"Asia/Shanghai"}' },
      { type: 'tool_call_done', index: 1, arguments: '{"tz":"Asia/Shanghai"}' },
    ]);
  });

  it('every pair of boundaries on a short call', () => {
    const output = 'Ok.\n<tool_call>get_time\n<arg_key>tz</arg_key>\n<arg_value>ß/Z</arg_value>\n</tool_call>';
    const events = checkStreaming({ makeParser: parserFor('glm45'), output, forbidden: FORBIDDEN, pairs: true });
    expect(events.map((e) => e.type)).toEqual(['text_delta', 'tool_call_start', 'tool_args_delta', 'tool_call_done']);
    expect(events[3]).toEqual({ type: 'tool_call_done', index: 0, arguments: '{"tz":"ß/Z"}' });
  });

  it('thinking off: plain text, no reasoning events', () => {
    const events = checkStreaming({
      makeParser: parserFor('glm45'),
      output: '\nHello there, 世界!',
      forbidden: FORBIDDEN,
      pairs: true,
    });
    expect(events).toEqual([{ type: 'text_delta', text: 'Hello there, 世界!' }]);
  });

  it('a call right after reasoning ends the reasoning', () => {
    const output = '<think>Plan: call it.<tool_call>get_time\n</tool_call>';
    const events = checkStreaming({ makeParser: parserFor('glm45'), output, forbidden: FORBIDDEN, pairs: true });
    expect(events).toEqual([
      { type: 'reasoning_delta', text: 'Plan: call it.' },
      { type: 'reasoning_done' },
      { type: 'tool_call_start', index: 0, name: 'get_time' },
      { type: 'tool_args_delta', index: 0, delta: '{}' },
      { type: 'tool_call_done', index: 0, arguments: '{}' },
    ]);
  });

  it('a stop token ends the turn; text after it is ignored', () => {
    const events = checkStreaming({
      makeParser: parserFor('glm45'),
      output: 'Hi there<|user|>ignored <tool_call>x',
      forbidden: FORBIDDEN,
    });
    expect(events).toEqual([{ type: 'text_delta', text: 'Hi there' }]);
  });
});

describe('GLM-4.7 parser, streamed at every byte boundary', () => {
  it('starts inside reasoning; inline calls including a zero-argument call', () => {
    const output =
      'Need tool, ü.</think>Checking.<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value>' +
      '<arg_key>days</arg_key><arg_value>3</arg_value></tool_call><tool_call>get_time</tool_call>';
    const events = checkStreaming({
      makeParser: parserFor('glm47', { startInReasoning: true }),
      output,
      forbidden: FORBIDDEN,
    });
    expect(events).toEqual([
      { type: 'reasoning_delta', text: 'Need tool, ü.' },
      { type: 'reasoning_done' },
      { type: 'text_delta', text: 'Checking.' },
      { type: 'tool_call_start', index: 0, name: 'get_weather' },
      { type: 'tool_args_delta', index: 0, delta: '{"city":"Paris","days":3}' },
      { type: 'tool_call_done', index: 0, arguments: '{"city":"Paris","days":3}' },
      { type: 'tool_call_start', index: 1, name: 'get_time' },
      { type: 'tool_args_delta', index: 1, delta: '{}' },
      { type: 'tool_call_done', index: 1, arguments: '{}' },
    ]);
  });

  it('zero-argument call, every pair of boundaries', () => {
    const events = checkStreaming({
      makeParser: parserFor('glm47'),
      output: '</think><tool_call>get_time</tool_call>',
      forbidden: FORBIDDEN,
      pairs: true,
    });
    expect(events.map((e) => e.type)).toEqual(['tool_call_start', 'tool_args_delta', 'tool_call_done']);
  });

  it('thinking off prompt: text only', () => {
    const events = checkStreaming({
      makeParser: parserFor('glm47'),
      output: 'The answer is 4.',
      forbidden: FORBIDDEN,
      pairs: true,
    });
    expect(events).toEqual([{ type: 'text_delta', text: 'The answer is 4.' }]);
  });
});

describe('GLM tool-call failures and ends', () => {
  it('an undeclared name is an error and nothing is published for it', () => {
    const events = merge(
      feed(parserFor('glm45')(), ['<tool_call>rm_rf\n<arg_key>path</arg_key>\n<arg_value>/</arg_value>\n</tool_call>']),
    );
    expect(events).toEqual([{ type: 'error', code: 'undeclared_tool', name: 'rm_rf', message: expect.any(String) }]);
  });

  it("a declared name's prefix is not published as that tool", () => {
    const tools: ToolSpec[] = [{ name: 'run_in_terminal', parameters: { type: 'object' } }];
    const parser = parserFor('glm45', { tools })();
    const early = [...parser.push('<tool_call>run_in'), ...parser.push('_ter')];
    expect(early).toEqual([]);
    const events = [...early, ...parser.push('minal\n</tool_call>'), ...parser.end('stop')];
    expect(events[0]).toEqual({ type: 'tool_call_start', index: 0, name: 'run_in_terminal' });
    const short = feed(parserFor('glm45', { tools })(), ['<tool_call>run_in\n</tool_call>']);
    expect(short).toEqual([{ type: 'error', code: 'undeclared_tool', name: 'run_in', message: expect.any(String) }]);
  });

  it('a call cut by the output limit is incomplete, without a done event', () => {
    const output = 'Sure.\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Par';
    const events = checkStreaming({
      makeParser: parserFor('glm45'),
      output,
      reason: 'length',
      forbidden: FORBIDDEN,
      pairs: true,
    });
    expect(events).toEqual([
      { type: 'text_delta', text: 'Sure.' },
      { type: 'tool_call_start', index: 0, name: 'get_weather' },
      { type: 'tool_args_delta', index: 0, delta: '{"city":"Par' },
      { type: 'tool_call_incomplete', index: 0 },
    ]);
  });

  it('a call whose name never completed publishes nothing at the output limit', () => {
    expect(merge(feed(parserFor('glm45')(), ['Sure.\n<tool_call>get_wea'], 'length'))).toEqual([
      { type: 'text_delta', text: 'Sure.' },
    ]);
  });

  it('the turn ending inside a call is an error', () => {
    const events = feed(
      parserFor('glm45')(),
      ['<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n'],
      'stop',
    );
    expect(events.at(-1)).toMatchObject({ type: 'error', code: 'unfinished_tool_call' });
    expect(events.some((e) => e.type === 'tool_call_done')).toBe(false);
    const named = feed(parserFor('glm45')(), ['<tool_call>get_wea'], 'stop');
    expect(named).toEqual([{ type: 'error', code: 'unfinished_tool_call', message: expect.any(String) }]);
  });

  it('the turn ending inside reasoning still closes it', () => {
    expect(merge(feed(parserFor('glm47', { startInReasoning: true })(), ['Thinking hard'], 'length'))).toEqual([
      { type: 'reasoning_delta', text: 'Thinking hard' },
      { type: 'reasoning_done' },
    ]);
  });

  it('a call closed without </arg_value> still completes', () => {
    const events = merge(
      feed(parserFor('glm47')(), ['<tool_call>get_weather<arg_key>days</arg_key><arg_value>4</tool_call>']),
    );
    expect(events.at(-1)).toEqual({ type: 'tool_call_done', index: 0, arguments: '{"days":4}' });
  });

  it('an incomplete marker at the end is plain text', () => {
    expect(merge(feed(parserFor('glm45')(), ['a <tool', '_c'], 'stop'))).toEqual([
      { type: 'text_delta', text: 'a <tool_c' },
    ]);
  });
});

describe('GLM argument values are typed through the tool schema', () => {
  const typed: ToolSpec = {
    name: 'f',
    parameters: {
      type: 'object',
      properties: {
        s: { type: 'string' },
        i: { type: 'integer' },
        n: { type: 'number' },
        b: { type: 'boolean' },
        a: { type: 'array' },
        o: { type: 'object' },
        u: { type: ['integer', 'string'] },
        e: { enum: ['x', 'y'] },
        nn: { anyOf: [{ type: 'integer' }, { type: 'null' }] },
      },
    },
  };
  const call = (pairs: [string, string][]) => {
    const body = pairs.map(([k, v]) => `<arg_key>${k}</arg_key>\n<arg_value>${v}</arg_value>\n`).join('');
    const events = feed(parserFor('glm45', { tools: [typed] })(), [`<tool_call>f\n${body}</tool_call>`]);
    const done = events.find((e) => e.type === 'tool_call_done');
    if (!done || done.type !== 'tool_call_done') throw new Error(JSON.stringify(events));
    return JSON.parse(done.arguments) as Record<string, unknown>;
  };

  it('string parameters stay strings, even when they look like JSON', () => {
    expect(
      call([
        ['s', '123'],
        ['e', 'x'],
      ]),
    ).toEqual({ s: '123', e: 'x' });
    expect(call([['s', 'a < b\nline 2 {"k": 1}']])).toEqual({ s: 'a < b\nline 2 {"k": 1}' });
  });

  it('numbers, booleans, arrays and objects are JSON-parsed', () => {
    expect(
      call([
        ['i', '42'],
        ['n', '2.5'],
        ['b', 'true'],
        ['a', '[1, "x"]'],
        ['o', '{"k": {"z": null}}'],
      ]),
    ).toEqual({ i: 42, n: 2.5, b: true, a: [1, 'x'], o: { k: { z: null } } });
  });

  it('falls back sensibly: Python literals, unions, untyped keys, unparsable text', () => {
    expect(
      call([
        ['b', 'False'],
        ['nn', 'None'],
        ['u', 'seven'],
        ['zz', '7'],
        ['yy', 'hello'],
        ['i', 'two'],
      ]),
    ).toEqual({ b: false, nn: null, u: 'seven', zz: 7, yy: 'hello', i: 'two' });
    expect(call([['u', '7']])).toEqual({ u: 7 });
  });

  it('forced named call: the parser starts inside the arguments', () => {
    const parser = parserFor('glm45', { startInToolCall: { name: 'get_weather' } })();
    const events = merge([
      ...parser.push('<arg_key>city</arg_key>\n<arg_value>Oslo'),
      ...parser.push('</arg_value>\n</tool_call>'),
      ...parser.end('stop'),
    ]);
    expect(events).toEqual([
      { type: 'tool_call_start', index: 0, name: 'get_weather' },
      { type: 'tool_args_delta', index: 0, delta: '{"city":"Oslo"}' },
      { type: 'tool_call_done', index: 0, arguments: '{"city":"Oslo"}' },
    ]);
  });

  it('forced required call: the parser starts at the name', () => {
    const events = checkStreaming({
      makeParser: parserFor('glm47', { startInToolCall: {} }),
      output: 'get_time<arg_key>tz</arg_key><arg_value>UTC</arg_value></tool_call>',
      forbidden: FORBIDDEN,
      pairs: true,
    });
    expect(events.at(-1)).toEqual({ type: 'tool_call_done', index: 0, arguments: '{"tz":"UTC"}' });
  });
});

describe('GLM rendering matches Python jinja2 on random conversations', () => {
  interface RenderCase {
    template: string;
    turns: ChatTurn[];
    tools: ToolSpec[];
    thinking: boolean;
    prompt: string;
  }
  const { cases } = JSON.parse(readFileSync(join(import.meta.dirname, 'fixtures/glm-render-cases.json'), 'utf8')) as {
    cases: RenderCase[];
  };
  it('has cases for each GLM template, with calls and result groups', () => {
    for (const f of ['glm-4.5.jinja', 'glm-4.6.jinja', 'glm-4.7.jinja'])
      expect(cases.some((c) => c.template === f)).toBe(true);
    expect(cases.some((c) => c.turns.filter((t) => t.role === 'tool').length > 1)).toBe(true);
  });
  cases.forEach((c, i) => {
    it(`case ${i} (${c.template}, thinking ${c.thinking}, ${c.tools.length} tools, ${c.turns.length} turns)`, () => {
      const d = dialectFor(c.template === 'glm-4.7.jinja' ? 'glm47' : 'glm45', c.template);
      expect(d.renderPrompt(c.turns, { tools: c.tools, thinking: c.thinking }).text).toBe(c.prompt);
    });
  });
});

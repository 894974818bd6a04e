import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ChatTemplate } from '../../checkpoint/chat-template.ts';
import { createDeepseekV31Dialect } from '../../dialects/deepseek.ts';
import type { ChatTurn, ParserOptions, ToolSpec } from '../../dialects/dialect.ts';
import { checkStreaming, feed, merge } from './harness.ts';

const FIXTURES = join(import.meta.dirname, 'fixtures/templates');
const golden = JSON.parse(readFileSync(join(FIXTURES, 'rendered-examples.json'), 'utf8')) as {
  cases: { template: string; case: string; prompt: string }[];
};
const goldenPrompt = (name: string) =>
  golden.cases.find((c) => c.template === 'deepseek-v3.1.jinja' && c.case === name)!.prompt;
const dialect = createDeepseekV31Dialect(
  new ChatTemplate(readFileSync(join(FIXTURES, 'deepseek-v3.1.jinja'), 'utf8'), {
    bos_token: '<｜begin▁of▁sentence｜>',
  }),
);

const WEATHER: ToolSpec = {
  name: 'get_weather',
  description: 'Get weather',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};
const TIME: ToolSpec = { name: 'get_time', parameters: { type: 'object', properties: {} } };
const TOOLS = [WEATHER, TIME];

const toolLoop: ChatTurn[] = [
  { role: 'system', content: 'You are helpful.' },
  { role: 'user', content: 'Weather in Paris?' },
  {
    role: 'assistant',
    content: '',
    reasoning: 'dropped by this template',
    toolCalls: [{ id: 'c1', name: 'get_weather', arguments: '{"city": "Paris"}' }],
  },
  { role: 'tool', content: 'sunny', toolCallId: 'c1' },
];
const history: ChatTurn[] = [
  { role: 'user', content: 'Hi' },
  { role: 'assistant', content: 'Hello!', reasoning: 'greeting' },
  { role: 'user', content: '2+2?' },
];

describe('DeepSeek-V3.1 prompt rendering', () => {
  it('renders the golden prompts through the official template', () => {
    expect(dialect.renderPrompt(toolLoop, { thinking: false }).text).toBe(goldenPrompt('tool_loop_thinking_False'));
    expect(dialect.renderPrompt(toolLoop, { thinking: true }).text).toBe(goldenPrompt('tool_loop_thinking_True'));
    expect(dialect.renderPrompt(history, { thinking: false }).text).toBe(goldenPrompt('history_thinking_False'));
    const on = dialect.renderPrompt(history, { thinking: true });
    expect(on.text).toBe(goldenPrompt('history_thinking_True'));
    expect(on.parser.startInReasoning).toBe(true);
  });

  it('writes the model-card tool section into the system prompt itself', () => {
    const text = dialect.renderPrompt(history.slice(0, 1), { tools: [WEATHER], thinking: false }).text;
    expect(text).toBe(
      '<｜begin▁of▁sentence｜>## Tools\nYou have access to the following tools:\n\n' +
        '### get_weather\nDescription: Get weather\n\n' +
        'Parameters: {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}\n\n' +
        'IMPORTANT: ALWAYS adhere to this exact format for tool use:\n' +
        '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>tool_call_name<｜tool▁sep｜>tool_call_arguments<｜tool▁call▁end｜>{{additional_tool_calls}}<｜tool▁calls▁end｜>\n\n' +
        'Where:\n\n- `tool_call_name` must be an exact match to one of the available tools\n' +
        "- `tool_call_arguments` must be valid JSON that strictly follows the tool's Parameters Schema\n" +
        '- For multiple tool calls, chain them directly without separators or spaces\n' +
        '<｜User｜>Hi<｜Assistant｜></think>',
    );
    const withSystem = dialect.renderPrompt(toolLoop.slice(0, 2), { tools: TOOLS, thinking: false }).text;
    expect(withSystem.startsWith('<｜begin▁of▁sentence｜>You are helpful.\n\n## Tools\n')).toBe(true);
    expect(withSystem).toContain('### get_time\nDescription: \n\nParameters: {"type": "object", "properties": {}}\n');
  });

  it('renders a group of results in call order, with no generation prompt after them', () => {
    const turns: ChatTurn[] = [
      { role: 'user', content: 'Both?' },
      {
        role: 'assistant',
        content: '',
        toolCalls: [
          { id: 'a', name: 'get_weather', arguments: '{"city": "Oslo"}' },
          { id: 'b', name: 'get_time', arguments: '{}' },
        ],
      },
      { role: 'tool', content: '12:00', toolCallId: 'b' },
      { role: 'tool', content: 'rain', toolCallId: 'a' },
    ];
    const text = dialect.renderPrompt(turns, { tools: TOOLS, thinking: true }).text;
    expect(
      text.endsWith(
        '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Oslo"}<｜tool▁call▁end｜>' +
          '<｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{}<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜>' +
          '<｜tool▁output▁begin｜>rain<｜tool▁output▁end｜><｜tool▁output▁begin｜>12:00<｜tool▁output▁end｜>',
      ),
    ).toBe(true);
  });

  it('forced tool choice opens the call block (thinking off)', () => {
    const named = dialect.renderPrompt(history, { tools: TOOLS, thinking: true, forcedTool: { name: 'get_weather' } });
    expect(
      named.text.endsWith(
        '<｜User｜>2+2?<｜Assistant｜></think><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>',
      ),
    ).toBe(true);
    expect(named.parser).toEqual({ tools: TOOLS, startInReasoning: false, startInToolCall: { name: 'get_weather' } });
    const required = dialect.renderPrompt(toolLoop, { tools: TOOLS, thinking: false, forcedTool: 'required' });
    expect(required.text.endsWith('<｜tool▁output▁end｜><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>')).toBe(true);
    expect(required.parser.startInToolCall).toEqual({});
  });

  it('thinkingControl: off unless an effort other than none is sent', () => {
    expect(dialect.thinkingControl(undefined).thinking).toBe(false);
    expect(dialect.thinkingControl('none').thinking).toBe(false);
    expect(dialect.thinkingControl('low').thinking).toBe(true);
    expect(dialect.stopTokens).toEqual(['<｜end▁of▁sentence｜>']);
  });
});

const FORBIDDEN = ['<', '>', '｜', '▁'];
const parser =
  (options: Partial<ParserOptions> = {}) =>
  () =>
    dialect.createParser({ tools: TOOLS, startInReasoning: false, ...options });

describe('DeepSeek-V3.1 parser, streamed at every byte boundary', () => {
  it('reasoning, text, two chained calls', () => {
    const output =
      'Need weather 北京.</think>Checking <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "北京"}<｜tool▁call▁end｜>' +
      '<｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{}<｜tool▁call▁end｜><｜tool▁calls▁end｜>';
    const events = checkStreaming({ makeParser: parser({ startInReasoning: true }), output, forbidden: FORBIDDEN });
    expect(events).toEqual([
      { type: 'reasoning_delta', text: 'Need weather 北京.' },
      { type: 'reasoning_done' },
      { type: 'text_delta', text: 'Checking' },
      { type: 'tool_call_start', index: 0, name: 'get_weather' },
      { type: 'tool_args_delta', index: 0, delta: '{"city": "北京"}' },
      { type: 'tool_call_done', index: 0, arguments: '{"city": "北京"}' },
      { type: 'tool_call_start', index: 1, name: 'get_time' },
      { type: 'tool_args_delta', index: 1, delta: '{}' },
      { type: 'tool_call_done', index: 1, arguments: '{}' },
    ]);
  });

  it('a call block inside reasoning ends the reasoning (every pair of boundaries)', () => {
    const output =
      'Hmm.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{}<｜tool▁call▁end｜><｜tool▁calls▁end｜>';
    const events = checkStreaming({
      makeParser: parser({ startInReasoning: true }),
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
  });

  it('thinking off: text only, end-of-sentence ends the turn', () => {
    const events = checkStreaming({
      makeParser: parser(),
      output: 'Four — 四.<｜end▁of▁sentence｜>junk',
      forbidden: FORBIDDEN,
      pairs: true,
    });
    expect(events).toEqual([{ type: 'text_delta', text: 'Four — 四.' }]);
  });

  it('a call cut by the output limit is incomplete', () => {
    const output = '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Pa';
    const events = checkStreaming({ makeParser: parser(), output, reason: 'length', forbidden: FORBIDDEN });
    expect(events).toEqual([
      { type: 'tool_call_start', index: 0, name: 'get_weather' },
      { type: 'tool_args_delta', index: 0, delta: '{"city": "Pa' },
      { type: 'tool_call_incomplete', index: 0 },
    ]);
  });

  it('the turn ending inside a call is an error; an undeclared name is an error', () => {
    const cut = feed(
      parser()(),
      ['<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Pa'],
      'stop',
    );
    expect(cut.at(-1)).toMatchObject({ type: 'error', code: 'unfinished_tool_call' });
    const undeclared = feed(parser()(), [
      '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>shell<｜tool▁sep｜>{}<｜tool▁call▁end｜>',
    ]);
    expect(undeclared).toEqual([
      { type: 'error', code: 'undeclared_tool', name: 'shell', message: expect.any(String) },
    ]);
  });

  it('accepts the misspelled calls-begin tokens the model produces', () => {
    for (const begin of ['<｜tool_calls_begin｜>', '<｜tool calls begin｜>', '<｜tool▁calls｜>']) {
      const events = merge(
        feed(parser()(), [
          `Ok${begin}<｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{}<｜tool▁call▁end｜><｜tool▁calls▁end｜>`,
        ]),
      );
      expect(events).toEqual([
        { type: 'text_delta', text: 'Ok' },
        { type: 'tool_call_start', index: 0, name: 'get_time' },
        { type: 'tool_args_delta', index: 0, delta: '{}' },
        { type: 'tool_call_done', index: 0, arguments: '{}' },
      ]);
    }
  });

  it('forced calls start inside the block', () => {
    const named = merge(
      feed(parser({ startInToolCall: { name: 'get_weather' } })(), [
        '{"city":',
        ' "Rome"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
      ]),
    );
    expect(named.at(-1)).toEqual({ type: 'tool_call_done', index: 0, arguments: '{"city": "Rome"}' });
    const required = checkStreaming({
      makeParser: parser({ startInToolCall: {} }),
      output: 'get_time<｜tool▁sep｜>{}<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
      forbidden: FORBIDDEN,
      pairs: true,
    });
    expect(required[0]).toEqual({ type: 'tool_call_start', index: 0, name: 'get_time' });
  });
});

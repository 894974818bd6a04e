import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ChatTemplate } from '../../checkpoint/chat-template.ts';
import { createPlainDialect, createQwenDialect } from '../../dialects/hermes.ts';
import { DialectError, type ChatTurn, type ParserOptions, type ToolSpec } from '../../dialects/dialect.ts';
import { checkStreaming, feed, merge } from './harness.ts';

const FIXTURES = join(import.meta.dirname, 'fixtures');
const qwen = createQwenDialect(new ChatTemplate(readFileSync(join(FIXTURES, 'templates/qwen3-0.6b.jinja'), 'utf8')));
const TOOLS: ToolSpec[] = [
  {
    name: 'get_weather',
    parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } } },
  },
  { name: 'get_time', parameters: { type: 'object', properties: {} } },
];
const history: ChatTurn[] = [{ role: 'user', content: 'Hi' }];

describe('Qwen3 rendering matches Python jinja2 on random conversations', () => {
  interface RenderCase {
    turns: ChatTurn[];
    tools: ToolSpec[];
    thinking: boolean;
    prompt: string;
  }
  const { cases } = JSON.parse(readFileSync(join(FIXTURES, 'qwen-render-cases.json'), 'utf8')) as {
    cases: RenderCase[];
  };
  it('has cases with tools, calls and result groups', () => {
    expect(cases.some((c) => c.tools.length > 0)).toBe(true);
    expect(cases.some((c) => c.turns.filter((t) => t.role === 'tool').length > 1)).toBe(true);
  });
  cases.forEach((c, i) => {
    it(`case ${i} (thinking ${c.thinking}, ${c.tools.length} tools, ${c.turns.length} turns)`, () => {
      expect(qwen.renderPrompt(c.turns, { tools: c.tools, thinking: c.thinking }).text).toBe(c.prompt);
    });
  });

  it('forced calls open the tool_call with thinking off', () => {
    const named = qwen.renderPrompt(history, { tools: TOOLS, thinking: true, forcedTool: { name: 'get_time' } });
    expect(
      named.text.endsWith(
        '<|im_start|>assistant\n<think>\n\n</think>\n\n<tool_call>\n{"name": "get_time", "arguments": ',
      ),
    ).toBe(true);
    expect(named.parser).toEqual({ tools: TOOLS, startInReasoning: false, startInToolCall: { name: 'get_time' } });
    expect(
      qwen
        .renderPrompt(history, { tools: TOOLS, thinking: false, forcedTool: 'required' })
        .text.endsWith('</think>\n\n<tool_call>\n'),
    ).toBe(true);
  });
});

const FORBIDDEN = ['<', '>', '|'];
const parser =
  (options: Partial<ParserOptions> = {}) =>
  () =>
    qwen.createParser({ tools: TOOLS, startInReasoning: false, ...options });

describe('Qwen (Hermes) parser, streamed at every byte boundary', () => {
  it('reasoning, text, two calls; arguments stream as the object text', () => {
    const output =
      '<think>\nNeed 北京 weather.\n</think>\n\nChecking.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "北京 \\"x\\"", "days": 2}}\n</tool_call>\n' +
      '<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>';
    const events = checkStreaming({ makeParser: parser(), output, forbidden: FORBIDDEN });
    expect(events).toEqual([
      { type: 'reasoning_delta', text: 'Need 北京 weather.' },
      { type: 'reasoning_done' },
      { type: 'text_delta', text: 'Checking.' },
      { type: 'tool_call_start', index: 0, name: 'get_weather' },
      { type: 'tool_args_delta', index: 0, delta: '{"city": "北京 \\"x\\"", "days": 2}' },
      { type: 'tool_call_done', index: 0, arguments: '{"city": "北京 \\"x\\"", "days": 2}' },
      { type: 'tool_call_start', index: 1, name: 'get_time' },
      { type: 'tool_args_delta', index: 1, delta: '{}' },
      { type: 'tool_call_done', index: 1, arguments: '{}' },
    ]);
  });

  it('string-encoded arguments and other key orders are decoded at the end (every pair of boundaries)', () => {
    const encoded = checkStreaming({
      makeParser: parser(),
      output: '<tool_call>\n{"name": "get_time", "arguments": "{\\"tz\\": 1}"}\n</tool_call>',
      forbidden: FORBIDDEN,
      pairs: true,
    });
    expect(encoded.at(-1)).toEqual({ type: 'tool_call_done', index: 0, arguments: '{"tz":1}' });
    const reordered = checkStreaming({
      makeParser: parser(),
      output: '<tool_call>{"arguments": {"a": [1]}, "name": "get_time"}</tool_call>',
      forbidden: FORBIDDEN,
      pairs: true,
    });
    expect(reordered).toEqual([
      { type: 'tool_call_start', index: 0, name: 'get_time' },
      { type: 'tool_args_delta', index: 0, delta: '{"a":[1]}' },
      { type: 'tool_call_done', index: 0, arguments: '{"a":[1]}' },
    ]);
  });

  it('truncation, end inside a call, undeclared and malformed calls', () => {
    const cut = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Pa';
    expect(checkStreaming({ makeParser: parser(), output: cut, reason: 'length', forbidden: FORBIDDEN })).toEqual([
      { type: 'tool_call_start', index: 0, name: 'get_weather' },
      { type: 'tool_args_delta', index: 0, delta: '{"city": "Pa' },
      { type: 'tool_call_incomplete', index: 0 },
    ]);
    expect(feed(parser()(), [cut], 'stop').at(-1)).toMatchObject({ type: 'error', code: 'unfinished_tool_call' });
    expect(feed(parser()(), ['<tool_call>{"name": "rm", "arguments": {}}</tool_call>'])).toEqual([
      { type: 'error', code: 'undeclared_tool', name: 'rm', message: expect.any(String) },
    ]);
    expect(feed(parser()(), ['<tool_call>not json</tool_call>']).at(-1)).toMatchObject({
      type: 'error',
      code: 'malformed_tool_call',
    });
  });

  it('a forced named call starts inside the arguments; <|im_end|> ends the turn', () => {
    const events = checkStreaming({
      makeParser: parser({ startInToolCall: { name: 'get_weather' } }),
      output: '{"city": "Oslo"}}\n</tool_call><|im_end|>',
      forbidden: FORBIDDEN,
      pairs: true,
    });
    expect(events).toEqual([
      { type: 'tool_call_start', index: 0, name: 'get_weather' },
      { type: 'tool_args_delta', index: 0, delta: '{"city": "Oslo"}' },
      { type: 'tool_call_done', index: 0, arguments: '{"city": "Oslo"}' },
    ]);
    expect(merge(feed(parser()(), ['Hello.<|im_end|>ignored']))).toEqual([{ type: 'text_delta', text: 'Hello.' }]);
  });
});

describe('plain dialect (unrecognised templates)', () => {
  const plain = createPlainDialect(
    new ChatTemplate(
      '{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}',
      { eos_token: '</s>' },
    ),
  );

  it('renders the template and refuses function tools', () => {
    expect(plain.renderPrompt(history, { thinking: true }).text).toBe('<user>Hi<assistant>');
    expect(plain.stopTokens).toEqual(['</s>']);
    expect(() => plain.renderPrompt(history, { tools: TOOLS, thinking: true })).toThrow(DialectError);
  });

  it('parses <think> reasoning and leaves tool-call-looking text alone', () => {
    const events = checkStreaming({
      makeParser: () => plain.createParser({ tools: [], startInReasoning: false }),
      output: '<think>hm</think>Answer: 4</s>',
      forbidden: FORBIDDEN,
      pairs: true,
    });
    expect(events).toEqual([
      { type: 'reasoning_delta', text: 'hm' },
      { type: 'reasoning_done' },
      { type: 'text_delta', text: 'Answer: 4' },
    ]);
    expect(
      merge(feed(plain.createParser({ tools: [], startInReasoning: false }), ['a <tool_call>x</tool_call>'])),
    ).toEqual([{ type: 'text_delta', text: 'a <tool_call>x</tool_call>' }]);
  });
});

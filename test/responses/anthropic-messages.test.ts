/**
 * The Messages request translation (responses/anthropic-messages.ts): system and messages →
 * history items in order, tools and tool_choice, thinking/output_config → reasoning effort,
 * output_config.format → a strict json_schema format, context_management's clear_thinking,
 * deferred tools joining on a tool_reference, and the request's own names in `param` paths
 * (through the real GLM-4.5 dialect's planning, so the paths are the ones clients see).
 */
import { describe, expect, it } from 'vitest';
import type { AnthropicCreateMessageRequest } from '../../contract/types.ts';
import { reasoningEffort, translateMessages } from '../../responses/anthropic-messages.ts';
import { planResponse } from '../../responses/response-plan.ts';
import { scriptedRuntime } from './scripted-runtime.ts';

type Request = AnthropicCreateMessageRequest;
const base = (extra: Partial<Request> = {}): Request => ({
  model: 'm',
  max_tokens: 64,
  messages: [{ role: 'user', content: 'Hi' }],
  ...extra,
});
const weather = {
  name: 'get_weather',
  input_schema: { type: 'object' as const, properties: { city: { type: 'string' } } },
};

describe('translateMessages: history', () => {
  it('system, text, images, thinking, tool_use and tool_result become the Responses items, in order', () => {
    const { plan, history } = translateMessages(
      base({
        system: [
          { type: 'text', text: 'Be brief.' },
          { type: 'text', text: 'Be kind.' },
        ],
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'Look:' },
              { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } },
            ],
          },
          {
            role: 'assistant',
            content: [
              { type: 'thinking', thinking: 'A picture.', signature: '' },
              { type: 'text', text: 'Checking.' },
              { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } },
            ],
          },
          {
            role: 'user',
            content: [
              { type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: '18 C' }] },
              { type: 'text', text: 'Thanks' },
            ],
          },
          { role: 'system', content: 'Now in French.' },
          { role: 'user', content: 'Merci' },
        ],
      }),
    );
    expect(plan.instructions).toBe('Be brief.\nBe kind.');
    expect(history.map(({ id: _id, ...item }) => item)).toEqual([
      {
        type: 'message',
        role: 'user',
        content: [
          { type: 'input_text', text: 'Look:' },
          { type: 'input_image', image_url: 'data:image/png;base64,AAAA' },
        ],
      },
      { type: 'reasoning', summary: [], content: [{ type: 'reasoning_text', text: 'A picture.' }] },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Checking.' }] },
      { type: 'function_call', call_id: 'toolu_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
      { type: 'function_call_output', call_id: 'toolu_1', output: [{ type: 'input_text', text: '18 C' }] },
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Thanks' }] },
      { type: 'message', role: 'system', content: [{ type: 'input_text', text: 'Now in French.' }] },
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Merci' }] },
    ]);
  });

  it('clear_thinking keeps the thinking of the last N assistant turns that have some', () => {
    const turn = (text: string) => [
      { role: 'user' as const, content: 'q' },
      {
        role: 'assistant' as const,
        content: [
          { type: 'thinking' as const, thinking: text, signature: '' },
          { type: 'text' as const, text: 'a' },
        ],
      },
    ];
    const messages = [...turn('one'), ...turn('two'), ...turn('three'), { role: 'user' as const, content: 'q' }];
    const kept = (keep: NonNullable<NonNullable<Request['context_management']>['edits']>[number]['keep']) =>
      translateMessages(base({ messages, context_management: { edits: [{ type: 'clear_thinking_20251015', keep }] } }))
        .history.filter((item) => item.type === 'reasoning')
        .map((item) => (item.content as Array<{ text: string }>)[0]!.text);
    expect(kept('all')).toEqual(['one', 'two', 'three']);
    expect(kept({ type: 'thinking_turns', value: 1 })).toEqual(['three']);
    expect(kept({ type: 'thinking_turns', value: 2 })).toEqual(['two', 'three']);
  });
});

describe('translateMessages: plan request', () => {
  it('tools, tool_choice (any → required, tool → named, disable_parallel_tool_use), sampling, stop sequences, a cut-to-context max_tokens', () => {
    const { plan } = translateMessages(
      base({
        tools: [{ ...weather, description: 'Weather', strict: true }],
        tool_choice: { type: 'any', disable_parallel_tool_use: true },
        temperature: 0.2,
        top_p: 0.9,
        top_k: 40,
        stop_sequences: ['END'],
      }),
    );
    expect(plan).toMatchObject({
      tools: [
        {
          type: 'function',
          name: 'get_weather',
          description: 'Weather',
          parameters: weather.input_schema,
          strict: true,
        },
      ],
      tool_choice: 'required',
      parallel_tool_calls: false,
      temperature: 0.2,
      top_p: 0.9,
      topK: 40,
      max_output_tokens: 64,
      stopSequences: ['END'],
      clampOutputToContext: true,
    });
    expect(
      translateMessages(base({ tools: [weather], tool_choice: { type: 'tool', name: 'get_weather' } })).plan
        .tool_choice,
    ).toEqual({
      type: 'function',
      name: 'get_weather',
    });
    expect(translateMessages(base({ tool_choice: { type: 'none' } })).plan.tool_choice).toBe('none');
    expect(translateMessages(base({})).plan.topK).toBeUndefined();
  });

  it('output_config.format is a strict json_schema text format', () => {
    const schema = { type: 'object', properties: { a: { type: 'string' } } };
    expect(translateMessages(base({ output_config: { format: { type: 'json_schema', schema } } })).plan.text).toEqual({
      format: { type: 'json_schema', name: 'output', schema, strict: true },
    });
  });

  it('a deferred tool is left out until a tool_reference in a tool result names it', () => {
    const deferred = { ...weather, name: 'later', defer_loading: true };
    expect(translateMessages(base({ tools: [weather, deferred] })).plan.tools!.map((t) => t.name)).toEqual([
      'get_weather',
    ]);
    const loaded = translateMessages(
      base({
        tools: [weather, deferred],
        messages: [
          { role: 'user', content: 'find a tool' },
          { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'get_weather', input: {} }] },
          {
            role: 'user',
            content: [
              { type: 'tool_result', tool_use_id: 't1', content: [{ type: 'tool_reference', tool_name: 'later' }] },
            ],
          },
        ],
      }),
    );
    expect(loaded.plan.tools!.map((t) => t.name)).toEqual(['get_weather', 'later']);
  });
});

describe('reasoningEffort', () => {
  it.each([
    [{}, 'none'],
    [{ thinking: { type: 'disabled' } }, 'none'],
    [{ thinking: { type: 'disabled' }, output_config: { effort: 'high' } }, 'none'],
    [{ thinking: { type: 'adaptive' } }, undefined],
    [{ thinking: { type: 'adaptive' }, output_config: { effort: 'max' } }, 'max'],
    [{ thinking: { type: 'enabled', budget_tokens: 1024 } }, 'low'],
    [{ thinking: { type: 'enabled', budget_tokens: 4096 } }, 'medium'],
    [{ thinking: { type: 'enabled', budget_tokens: 16384 } }, 'high'],
    [{ thinking: { type: 'enabled', budget_tokens: 31999 }, output_config: { effort: 'low' } }, 'low'],
  ] as const)('%j → %s', (extra, effort) => {
    expect(reasoningEffort(base(extra as Partial<Request>))).toBe(effort);
  });
});

describe('params name the request fields', () => {
  const runtime = scriptedRuntime([]);
  const refused = (request: Request) => {
    const { plan, history } = translateMessages(request);
    try {
      planResponse(runtime, plan, history, 0);
    } catch (error) {
      return (error as { param: string }).param;
    }
    return undefined;
  };

  it('tool_use_id, a tool input_schema (counted over deferred tools), max_tokens', () => {
    expect(
      refused(
        base({
          messages: [
            { role: 'user', content: 'q' },
            { role: 'assistant', content: [{ type: 'text', text: 'x' }] },
            { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'nope', content: 'r' }] },
          ],
        }),
      ),
    ).toBe('messages[2].content[0].tool_use_id');
    const badSchema = { name: 'bad', input_schema: { type: 'object' as const, properties: { a: { type: 7 } } } };
    expect(refused(base({ tools: [{ ...weather, name: 'x', defer_loading: true }, weather, badSchema] }))).toBe(
      'tools[2].input_schema.properties.a.type',
    );
    expect(refused(base({ max_tokens: 10_000 }))).toBeUndefined();
  });
});

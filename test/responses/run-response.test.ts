/**
 * The Responses pipeline over FakeEngine + the real GLM-4.5 dialect: output items, SSE lifecycle
 * rules, usage, ends (incomplete / failed), tool calls, tool_choice, parallel_tool_calls and
 * validate-before-publish. The 400 cases must be thrown before any engine work is queued.
 */
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../contract/errors.ts';
import { normaliseInput } from '../../responses/input-history.ts';
import { newResponseObject, type ResponseObject } from '../../responses/response-object.ts';
import { planResponse, type PlanRequest } from '../../responses/response-plan.ts';
import { runResponse } from '../../responses/run-response.ts';
import type { StreamEvent } from '../../contract/stream-events.ts';
import { glmToolCall, scriptedRuntime, type ScriptedRuntime } from './scripted-runtime.ts';
import { streamViolations } from './stream-rules.ts';

const WEATHER = {
  type: 'function',
  name: 'get_weather',
  description: 'Weather for a city',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string' }, days: { type: 'integer' } },
    required: ['city'],
  },
};
const TIME = {
  type: 'function',
  name: 'get_time',
  parameters: { type: 'object', properties: { zone: { type: 'string' } }, required: ['zone'] },
};

async function run(runtime: ScriptedRuntime, request: PlanRequest & { input: unknown }) {
  const items = normaliseInput(request.input as string);
  const plan = planResponse(runtime, request, items, 0);
  const response = newResponseObject(request, 'resp_test', runtime.id, 'in_progress');
  const events: StreamEvent[] = [];
  const generator = runResponse(runtime, plan, response);
  let step = await generator.next();
  for (; !step.done; step = await generator.next()) events.push(step.value);
  return { events, response: step.value as ResponseObject, plan };
}

const types = (events: StreamEvent[]) => events.map((event) => event.type);
const CALL = glmToolCall('get_weather', { city: 'Paris', days: '3' });

describe('text and reasoning', () => {
  it('streams a reasoning item then a message in OpenAI lifecycle order, with usage', async () => {
    const runtime = scriptedRuntime([
      {
        pieces: ['<think>', 'The user', ' greets.', '</think>', '\n', 'Hello', ' there!', '<|user|>'],
        cachedTokens: 4,
      },
    ]);
    const { events, response } = await run(runtime, { input: 'Hello' });
    expect(streamViolations(events)).toEqual([]);
    expect(types(events).slice(0, 4)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
    ]);
    expect(response.status).toBe('completed');
    expect(response.output.map((item) => item.type)).toEqual(['reasoning', 'message']);
    const [reasoning, message] = response.output as unknown as [
      { content: Array<{ type: string; text: string }> },
      { content: Array<{ type: string; text: string; annotations: unknown[]; logprobs: unknown[] }> },
    ];
    expect(reasoning.content[0]).toEqual({ type: 'reasoning_text', text: 'The user greets.' });
    expect(message.content[0]).toEqual({ type: 'output_text', text: 'Hello there!', annotations: [], logprobs: [] });
    expect(response.usage).toMatchObject({
      output_tokens: 8,
      input_tokens_details: { cached_tokens: 4 },
      output_tokens_details: { reasoning_tokens: 3 },
    });
    expect(response.usage!.total_tokens).toBe(response.usage!.input_tokens + 8);
  });

  it('reasoning.effort none renders thinking off (no reasoning item when the model answers directly)', async () => {
    const runtime = scriptedRuntime([{ pieces: ['\n', 'Hi', '<|user|>'] }]);
    const { response } = await run(runtime, { input: 'Hello', reasoning: { effort: 'none' } });
    expect(runtime.engine.calls).toHaveLength(1);
    expect(response.output.map((item) => item.type)).toEqual(['message']);
    expect(response.usage!.output_tokens_details.reasoning_tokens).toBe(0);
  });

  it("the plan's topK (Anthropic's top_k) reaches the engine call; without one the call has none (off)", async () => {
    const runtime = scriptedRuntime(Array.from({ length: 2 }, () => ({ pieces: ['\n', 'Hi', '<|user|>'] })));
    const { plan } = await run(runtime, { input: 'Hello', temperature: 0.8, topK: 5, reasoning: { effort: 'none' } });
    expect(plan.topK).toBe(5);
    await run(runtime, { input: 'Hello', temperature: 0.8, reasoning: { effort: 'none' } });
    expect(runtime.engine.calls[0]).toMatchObject({ topK: 5, temperature: 0.8 });
    expect(runtime.engine.calls[1]!.topK).toBeUndefined();
  });

  it('max_output_tokens cut → incomplete with reason max_output_tokens', async () => {
    const runtime = scriptedRuntime([{ pieces: ['\n', 'One', ' two', ' three', ' four'] }]);
    const { events, response } = await run(runtime, {
      input: 'Count',
      max_output_tokens: 3,
      reasoning: { effort: 'none' },
    });
    expect(streamViolations(events)).toEqual([]);
    expect(events.at(-1)!.type).toBe('response.incomplete');
    expect(response.status).toBe('incomplete');
    expect(response.incomplete_details).toEqual({ reason: 'max_output_tokens' });
    expect(response.output[0]).toMatchObject({ type: 'message', status: 'incomplete' });
    expect(response.usage!.output_tokens).toBe(3);
  });

  it('an engine failure → response.failed with an error', async () => {
    const runtime = scriptedRuntime([{ pieces: ['\n', 'Hi'], finishReason: 'error' }]);
    const { events, response } = await run(runtime, { input: 'Hello', reasoning: { effort: 'none' } });
    expect(events.at(-1)!.type).toBe('response.failed');
    expect(response.status).toBe('failed');
    expect(response.error).toMatchObject({ code: 'server_error' });
  });
});

describe('function calls', () => {
  it('a GLM call becomes a function_call item with typed JSON arguments and matching deltas', async () => {
    const runtime = scriptedRuntime([{ pieces: ['\n', ...CALL, '<|observation|>'] }]);
    const { events, response } = await run(runtime, {
      input: 'Weather in Paris for 3 days?',
      tools: [WEATHER],
      reasoning: { effort: 'none' },
    });
    expect(streamViolations(events)).toEqual([]);
    const call = response.output.find((item) => item.type === 'function_call')!;
    expect(call).toMatchObject({ name: 'get_weather', status: 'completed' });
    expect(JSON.parse((call as { arguments: string }).arguments)).toEqual({ city: 'Paris', days: 3 });
    const deltas = events
      .filter((e) => e.type === 'response.function_call_arguments.delta')
      .map((e) => e.delta)
      .join('');
    expect(deltas).toBe((call as { arguments: string }).arguments);
    expect(events.find((e) => e.type === 'response.function_call_arguments.done')).toMatchObject({
      name: 'get_weather',
    });
  });

  it('a call cut by the output limit is incomplete and has no arguments.done event', async () => {
    const runtime = scriptedRuntime([{ pieces: ['\n', ...CALL.slice(0, 9)] }]);
    const { events, response } = await run(runtime, {
      input: 'Weather?',
      tools: [WEATHER],
      max_output_tokens: 9,
      reasoning: { effort: 'none' },
    });
    expect(streamViolations(events)).toEqual([]);
    expect(response.status).toBe('incomplete');
    expect(response.output.find((item) => item.type === 'function_call')).toMatchObject({ status: 'incomplete' });
    expect(types(events)).not.toContain('response.function_call_arguments.done');
  });

  it('an end of turn inside an unfinished call fails the response', async () => {
    const runtime = scriptedRuntime([{ pieces: ['\n', ...CALL.slice(0, 9), '<|observation|>'] }]);
    const { response } = await run(runtime, { input: 'Weather?', tools: [WEATHER], reasoning: { effort: 'none' } });
    expect(response.status).toBe('failed');
    expect(response.error!.code).toBe('unfinished_tool_call');
  });

  it('a call to an undeclared function fails the response', async () => {
    const runtime = scriptedRuntime([
      { pieces: ['\n', '<tool_call>', 'rm_rf', '\n', '</tool_call>', '<|observation|>'] },
    ]);
    const { response, events } = await run(runtime, { input: 'x', tools: [WEATHER], reasoning: { effort: 'none' } });
    expect(response.status).toBe('failed');
    expect(response.error!.code).toBe('undeclared_tool');
    expect(
      events.some((e) => e.type === 'response.output_item.added' && (e.item as { name?: string }).name === 'rm_rf'),
    ).toBe(false);
  });

  it('tool_choice names one function: a call to another declared one fails (disallowed)', async () => {
    const runtime = scriptedRuntime([
      {
        pieces: [
          '<arg_key>',
          'city',
          '</arg_key>',
          '\n',
          '<arg_value>',
          'Oslo',
          '</arg_value>',
          '\n',
          '</tool_call>',
          '\n',
          '<tool_call>',
          'get_time',
          '\n',
          '</tool_call>',
          '<|observation|>',
        ],
      },
    ]);
    const { response } = await run(runtime, {
      input: 'x',
      tools: [WEATHER, TIME],
      tool_choice: { type: 'function', name: 'get_weather' },
    });
    expect(response.status).toBe('failed');
  });

  it('tool_choice named opens the call in the prompt; the model completes it', async () => {
    const runtime = scriptedRuntime([
      {
        pieces: [
          '<arg_key>',
          'city',
          '</arg_key>',
          '\n',
          '<arg_value>',
          'Oslo',
          '</arg_value>',
          '\n',
          '</tool_call>',
          '<|observation|>',
        ],
      },
    ]);
    const { response } = await run(runtime, {
      input: 'Weather in Oslo',
      tools: [WEATHER, TIME],
      tool_choice: { type: 'function', name: 'get_weather' },
    });
    expect(response.status).toBe('completed');
    expect(response.output).toEqual([
      expect.objectContaining({ type: 'function_call', name: 'get_weather', arguments: '{"city":"Oslo"}' }),
    ]);
  });

  it('tool_choice required without a complete call fails the response', async () => {
    const runtime = scriptedRuntime([{ pieces: ['<|observation|>'] }]);
    const { response } = await run(runtime, { input: 'x', tools: [WEATHER], tool_choice: 'required' });
    expect(response.status).toBe('failed');
    expect(response.error!.code).toBe('unfinished_tool_call');
  });

  it('parallel_tool_calls:false stops at the first complete call and reports the tokens consumed', async () => {
    const second = [
      '\n',
      '<tool_call>',
      'get_time',
      '\n',
      '<arg_key>',
      'zone',
      '</arg_key>',
      '\n',
      '<arg_value>',
      'UTC',
      '</arg_value>',
      '\n',
      '</tool_call>',
    ];
    const runtime = scriptedRuntime([{ pieces: ['\n', ...CALL, ...second, '<|observation|>'] }]);
    const { response } = await run(runtime, {
      input: 'x',
      tools: [WEATHER, TIME],
      parallel_tool_calls: false,
      reasoning: { effort: 'none' },
    });
    expect(response.status).toBe('completed');
    expect(response.output.filter((item) => item.type === 'function_call')).toHaveLength(1);
    expect(response.usage!.output_tokens).toBe(1 + CALL.length);
    expect(runtime.engine.cancelledCount).toBe(1);
  });

  it('strict tools: invalid arguments fail before anything is published', async () => {
    const strict = {
      ...WEATHER,
      strict: true,
      parameters: {
        type: 'object',
        properties: { city: { type: 'string' }, days: { type: 'string' } },
        required: ['city', 'days'],
        additionalProperties: false,
      },
    };
    const runtime = scriptedRuntime([{ pieces: ['\n', ...CALL.slice(0, 11), '</tool_call>', '<|observation|>'] }]);
    const { events, response } = await run(runtime, { input: 'x', tools: [strict], reasoning: { effort: 'none' } });
    expect(response.status).toBe('failed');
    expect(response.error!.code).toBe('invalid_tool_arguments');
    expect(types(events)).toEqual(['response.created', 'response.in_progress', 'response.failed']);
  });
});

describe('structured output (validate-before-publish)', () => {
  const format = {
    type: 'json_schema',
    name: 'count',
    strict: true,
    schema: {
      type: 'object',
      properties: { count: { type: 'integer' } },
      required: ['count'],
      additionalProperties: false,
    },
  };

  it('valid JSON is published after validation, alone in output_text', async () => {
    const runtime = scriptedRuntime([{ pieces: ['\n', '{"count"', ': 3}', '<|user|>'] }]);
    const { events, response } = await run(runtime, {
      input: 'Return the count',
      text: { format },
      reasoning: { effort: 'none' },
    });
    expect(streamViolations(events)).toEqual([]);
    expect(response.status).toBe('completed');
    expect(JSON.parse((response.output[0] as { content: Array<{ text: string }> }).content[0]!.text)).toEqual({
      count: 3,
    });
  });

  it('a schema violation fails with usage and no deltas', async () => {
    const runtime = scriptedRuntime([{ pieces: ['\n', '{"count"', ': "three"}', '<|user|>'] }]);
    const { events, response } = await run(runtime, {
      input: 'Return the count',
      text: { format },
      reasoning: { effort: 'none' },
    });
    expect(response.status).toBe('failed');
    expect(response.error!.code).toBe('schema_violation');
    expect(response.output).toEqual([]);
    expect(response.usage!.output_tokens).toBe(4);
    expect(types(events).filter((t) => t.includes('delta'))).toEqual([]);
  });

  it('invalid JSON fails; the output limit gives incomplete with no unvalidated content', async () => {
    const bad = scriptedRuntime([{ pieces: ['\n', '{"count": 3', '<|user|>'] }]);
    expect((await run(bad, { input: 'x', text: { format }, reasoning: { effort: 'none' } })).response.error!.code).toBe(
      'invalid_json',
    );
    const cut = scriptedRuntime([{ pieces: ['\n', '{"count"', ': 3', '}'] }]);
    const { events, response } = await run(cut, {
      input: 'x',
      text: { format },
      max_output_tokens: 3,
      reasoning: { effort: 'none' },
    });
    expect(response.status).toBe('incomplete');
    expect(response.output).toEqual([]);
    expect(types(events)).toEqual(['response.created', 'response.in_progress', 'response.incomplete']);
  });

  it('json_object requires a JSON object', async () => {
    const runtime = scriptedRuntime([{ pieces: ['\n', '[1, 2]', '<|user|>'] }]);
    const { response } = await run(runtime, {
      input: 'x',
      text: { format: { type: 'json_object' } },
      reasoning: { effort: 'none' },
    });
    expect(response.error!.code).toBe('invalid_json');
  });
});

describe('400 before any generation', () => {
  const rejects = (request: PlanRequest & { input: unknown }, param: string, contextLength?: number) => {
    const runtime = scriptedRuntime([{ pieces: ['x'] }], contextLength);
    let error: unknown;
    try {
      planResponse(runtime, request, normaliseInput(request.input as string), 0);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).status).toBe(400);
    expect((error as ApiError).param).toBe(param);
    expect(runtime.engine.calls).toEqual([]);
  };
  const schema = (s: Record<string, unknown>) => ({ format: { type: 'json_schema', name: 'x', schema: s } });

  it('prompt + max_output_tokens beyond the context', () =>
    rejects({ input: 'x'.repeat(400), max_output_tokens: 100 }, 'max_output_tokens', 128));
  it('a prompt alone beyond the context', () => rejects({ input: 'x'.repeat(1000) }, 'input', 128));
  it('a function_call_output whose call_id matches no call', () =>
    rejects({ input: [{ type: 'function_call_output', call_id: 'nope', output: 'x' }] as never }, 'input[0].call_id'));
  it('a call without its result', () =>
    rejects(
      {
        input: [
          { role: 'user', content: 'x' },
          { type: 'function_call', call_id: 'c1', name: 'get_weather', arguments: '{}' },
        ] as never,
        tools: [WEATHER],
      },
      'input[1]',
    ));
  it('tool_choice names an undeclared function', () =>
    rejects({ input: 'x', tools: [WEATHER], tool_choice: { type: 'function', name: 'other' } }, 'tool_choice.name'));
  it('tool_choice required without tools', () => rejects({ input: 'x', tool_choice: 'required' }, 'tool_choice'));
  it('schema references', () =>
    rejects(
      { input: 'x', text: schema({ type: 'object', properties: { a: { $ref: '#/x' } } }) },
      'text.format.schema.properties.a.$ref',
    ));
  it('schema definitions', () =>
    rejects({ input: 'x', text: schema({ type: 'object', $defs: {} }) }, 'text.format.schema.$defs'));
  it('schema patterns', () =>
    rejects(
      { input: 'x', text: schema({ type: 'object', properties: { a: { type: 'string', pattern: 'x' } } }) },
      'text.format.schema.properties.a.pattern',
    ));
  it('schema formats', () =>
    rejects(
      { input: 'x', text: schema({ type: 'object', properties: { a: { type: 'string', format: 'email' } } }) },
      'text.format.schema.properties.a.format',
    ));
  it('schema conditionals', () =>
    rejects({ input: 'x', text: schema({ type: 'object', if: {} }) }, 'text.format.schema.if'));
  it('unknown schema keywords', () =>
    rejects({ input: 'x', text: schema({ type: 'object', propertyNames: {} }) }, 'text.format.schema.propertyNames'));
  it('a root that is not an object', () =>
    rejects({ input: 'x', text: schema({ type: 'array' }) }, 'text.format.schema.type'));
  it('strict without additionalProperties:false', () =>
    rejects(
      {
        input: 'x',
        text: {
          format: {
            type: 'json_schema',
            name: 'x',
            strict: true,
            schema: { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] },
          },
        },
      },
      'text.format.schema.additionalProperties',
    ));
  it('strict without every property required', () =>
    rejects(
      {
        input: 'x',
        text: {
          format: {
            type: 'json_schema',
            name: 'x',
            strict: true,
            schema: {
              type: 'object',
              properties: { a: { type: 'string' }, b: { type: ['string', 'null'] } },
              required: ['a'],
              additionalProperties: false,
            },
          },
        },
      },
      'text.format.schema.required',
    ));
  it('more than 512 schema nodes', () =>
    rejects(
      {
        input: 'x',
        text: schema({
          type: 'object',
          properties: Object.fromEntries(Array.from({ length: 600 }, (_, i) => [`p${i}`, { type: 'string' }])),
        }),
      },
      'text.format.schema.properties.p511',
    ));
  it('more than 24 levels', () => {
    let node: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 25; i++) node = { type: 'object', properties: { a: node } };
    rejects({ input: 'x', text: schema(node) }, `text.format.schema${'.properties.a'.repeat(24)}`);
  });
  it('a schema over 64 KiB', () =>
    rejects({ input: 'x', text: schema({ type: 'object', description: 'd'.repeat(70_000) }) }, 'text.format.schema'));
  it('strict tool schemas are checked too', () =>
    rejects({ input: 'x', tools: [{ ...WEATHER, strict: true }] }, 'tools[0].parameters.additionalProperties'));
});

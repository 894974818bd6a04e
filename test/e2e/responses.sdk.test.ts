/**
 * End to end with the real engine: the service (startService + loadModelRuntime on the embedded
 * demo checkpoint) on a loopback port, driven by the official openai SDK (v6). The demo model is
 * still being trained and will be replaced, so nothing here asserts the text it writes; the tests
 * assert structure, the contract, and what the mechanism guarantees (greedy determinism, stored
 * history, forced calls complete and schema-valid or not published, validate-before-publish,
 * cancellation freeing KV blocks).
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import OpenAI from 'openai';
import { zodTextFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { Tokenizer } from '../../checkpoint/tokenizer.ts';
import { normaliseInput } from '../../responses/input-history.ts';
import { planResponse } from '../../responses/response-plan.ts';
import { streamViolations } from '../responses/stream-rules.ts';
import { checkChatStream, checkResponseStream, schemaProblems, type WireEvent } from './stream-contract.ts';
import { DEMO_MODEL_DIR, startDemoService, type DemoService } from './start-demo-service.ts';

let demo: DemoService;
let client: OpenAI;
let model: string;

beforeAll(async () => {
  demo = await startDemoService();
  client = demo.client;
  model = demo.runtime.id;
}, 120_000);

afterAll(async () => {
  await demo?.stop();
});

/** Output items without their random ids, for comparing two greedy generations. */
const shape = (output: unknown[]) =>
  JSON.parse(
    JSON.stringify(output, (key, value) => (key === 'id' || key === 'call_id' ? undefined : value)),
  ) as unknown;
const allText = (response: OpenAI.Responses.Response) =>
  response.output
    .flatMap((item) =>
      item.type === 'message'
        ? item.content.map((part) => (part.type === 'output_text' ? part.text : ''))
        : item.type === 'reasoning'
          ? (item.content ?? []).map((part) => part.text)
          : [],
    )
    .join('');

const WEATHER_PARAMS = {
  type: 'object',
  properties: { city: { type: 'string' }, days: { type: 'integer' } },
  required: ['city', 'days'],
  additionalProperties: false,
} as const;
const WEATHER: OpenAI.Responses.FunctionTool = {
  type: 'function',
  name: 'get_weather',
  description: 'Weather forecast for a city',
  parameters: WEATHER_PARAMS,
  strict: true,
};
const validWeatherArgs = new Ajv2020().compile(WEATHER_PARAMS);

describe('models and plain generation', () => {
  it('models.list names the demo model', async () => {
    const page = await client.models.list();
    expect(page.data.map((m) => m.id)).toEqual(['maya-demo']);
  });

  it('responses.create (JSON, temperature 0): a contract-valid Response with consistent usage; greedy output repeats exactly', async () => {
    // Instructions long enough to fill whole KV blocks, so the repeat can be served from the prefix cache.
    const instructions = 'You are the guide of Arden, a small city by the sea. Answer briefly and kindly. '.repeat(4);
    const params = {
      model,
      instructions,
      input: 'Hello! Who are you?',
      temperature: 0,
      max_output_tokens: 48,
      store: false,
    } as const;
    const first = await client.responses.create(params);
    expect(schemaProblems('Response', first)).toBe('');
    expect(first.id).toMatch(/^resp_/);
    expect(['completed', 'incomplete']).toContain(first.status);
    if (first.status === 'incomplete') expect(first.incomplete_details).toEqual({ reason: 'max_output_tokens' });
    expect(first.output.length).toBeGreaterThan(0);
    const usage = first.usage!;
    expect(usage.output_tokens).toBeGreaterThan(0);
    expect(usage.output_tokens).toBeLessThanOrEqual(48);
    expect(usage.total_tokens).toBe(usage.input_tokens + usage.output_tokens);
    expect(usage.input_tokens_details.cached_tokens).toBeGreaterThanOrEqual(0);
    expect(usage.output_tokens_details.reasoning_tokens).toBeLessThanOrEqual(usage.output_tokens);

    const second = await client.responses.create(params);
    expect(second.id).not.toBe(first.id);
    expect(shape(second.output)).toEqual(shape(first.output));
    expect(second.usage!.output_tokens).toBe(usage.output_tokens);
    // The same prompt again: the engine's prefix cache serves part of it.
    expect(second.usage!.input_tokens_details.cached_tokens).toBeGreaterThan(0);
  });

  it('responses.create({stream:true}): every event valid and well-ordered; the streamed result equals the JSON one (greedy)', async () => {
    const params = { model, input: 'Tell me about Paris.', temperature: 0, max_output_tokens: 40 } as const;
    const json = await client.responses.create(params);
    const events: WireEvent[] = [];
    const stream = await client.responses.create({ ...params, stream: true });
    for await (const event of stream) events.push(event as unknown as WireEvent);
    expect(streamViolations(events)).toEqual([]);
    const union = schemaProblems.bind(null, 'ResponseStreamEvent');
    expect(events.map(union).filter(Boolean)).toEqual([]);
    const final = events.at(-1)!.response as OpenAI.Responses.Response;
    expect(final.status).toBe(json.status);
    expect(shape(final.output)).toEqual(shape(json.output));
    const deltas = events
      .filter((e) => e.type.endsWith('_text.delta'))
      .map((e) => e.delta)
      .join('');
    expect(deltas).toBe(allText(json));
  });

  it('raw SSE of the spec example body: frames, schemas, lifecycle and [DONE]', async () => {
    const res = await fetch(`${demo.origin}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ input: 'Hello', store: false, stream: true, max_output_tokens: 256 }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const checked = checkResponseStream(await res.text());
    expect(checked.problems).toEqual([]);
    expect(['response.completed', 'response.incomplete']).toContain(checked.events.at(-1)!.type);
  });

  it('responses.stream() helper resolves finalResponse() equal to the streamed snapshot', async () => {
    const seen: string[] = [];
    let textFromDeltas = '';
    const runner = client.responses.stream({ model, input: 'Hi there', temperature: 0, max_output_tokens: 32 });
    runner.on('event', (event) => {
      seen.push(event.type);
      if (event.type === 'response.output_text.delta' || event.type === 'response.reasoning_text.delta')
        textFromDeltas += event.delta;
    });
    const final = await runner.finalResponse();
    expect(final.id).toMatch(/^resp_/);
    expect(seen[0]).toBe('response.created');
    expect(seen.at(-1)).toBe(`response.${final.status}`);
    expect(allText(final)).toBe(textFromDeltas);
  });
});

describe('chat completions', () => {
  it('chat.completions.create JSON and stream agree under greedy decoding', async () => {
    const messages = [{ role: 'user' as const, content: 'What is 12 plus 30?' }];
    const json = await client.chat.completions.create({ model, messages, temperature: 0, max_tokens: 40 });
    expect(schemaProblems('CreateChatCompletionResponse', json)).toBe('');
    const choice = json.choices[0]!;
    expect(['stop', 'length', 'tool_calls']).toContain(choice.finish_reason);
    expect(json.usage!.completion_tokens).toBeLessThanOrEqual(40);

    const stream = await client.chat.completions.create({
      model,
      messages,
      temperature: 0,
      max_tokens: 40,
      stream: true,
      stream_options: { include_usage: true },
    });
    let content = '';
    let reasoning = '';
    let finish: string | null = null;
    let usage: OpenAI.CompletionUsage | undefined | null;
    for await (const chunk of stream) {
      expect(schemaProblems('CreateChatCompletionStreamResponse', chunk)).toBe('');
      const delta = chunk.choices[0]?.delta as { content?: string | null; reasoning_content?: string } | undefined;
      content += delta?.content ?? '';
      reasoning += delta?.reasoning_content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    expect(content).toBe(choice.message.content ?? '');
    expect(reasoning).toBe((choice.message as { reasoning_content?: string }).reasoning_content ?? '');
    expect(finish).toBe(choice.finish_reason);
    // The repeat may be served partly from the prefix cache (whole KV blocks of the first request's
    // prompt), so cached_tokens can differ; every count of what was prompted and generated agrees.
    const { prompt_tokens_details: streamCached, ...streamCounts } = usage!;
    const { prompt_tokens_details: jsonCached, ...jsonCounts } = json.usage!;
    expect(streamCounts).toEqual(jsonCounts);
    for (const cached of [streamCached, jsonCached]) {
      expect(cached!.cached_tokens).toBeGreaterThanOrEqual(0);
      expect(cached!.cached_tokens).toBeLessThan(json.usage!.prompt_tokens);
    }
  });

  it('raw chat stream frames are valid chunks ending with [DONE]', async () => {
    const res = await fetch(`${demo.origin}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model,
        messages: [{ role: 'user', content: 'Hello' }],
        max_tokens: 24,
        stream: true,
        stream_options: { include_usage: true },
      }),
    });
    const { chunks, problems } = checkChatStream(await res.text());
    expect(problems).toEqual([]);
    expect(chunks.at(-1)).toHaveProperty('usage');
  });
});

describe('conversation state', () => {
  it('previous_response_id with store:true; input_items lists first input + first output + second input', async () => {
    const first = await client.responses.create({
      model,
      input: 'Remember the value 73.',
      store: true,
      temperature: 0,
      max_output_tokens: 24,
    });
    const second = await client.responses.create({
      model,
      previous_response_id: first.id,
      input: 'What value did I give you?',
      store: true,
      temperature: 0,
      max_output_tokens: 24,
    });
    expect(second.previous_response_id).toBe(first.id);
    expect(second.usage!.input_tokens).toBeGreaterThan(first.usage!.input_tokens);
    const saved = await client.responses.retrieve(second.id);
    expect(shape(saved.output)).toEqual(shape(second.output));

    const items: Array<{ id?: string; type: string } & Record<string, unknown>> = [];
    for await (const item of client.responses.inputItems.list(second.id, { order: 'asc', limit: 2 }))
      items.push(item as never);
    const firstInput = items[0] as { type: string; role: string; content: Array<{ text: string }> };
    expect(firstInput).toMatchObject({
      type: 'message',
      role: 'user',
      content: [{ type: 'input_text', text: 'Remember the value 73.' }],
    });
    expect(items.slice(1, -1).map((item) => item.id)).toEqual(first.output.map((item) => item.id));
    expect(items.at(-1)).toMatchObject({
      type: 'message',
      role: 'user',
      content: [{ type: 'input_text', text: 'What value did I give you?' }],
    });
    await client.responses.delete(first.id);
    await expect(client.responses.retrieve(first.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });
});

describe('forced tool calls (strict) and the function-calling loop', () => {
  /**
   * tool_choice required/named opens the call in the prompt. With strict:true the call is
   * published only when complete and valid against its schema; otherwise nothing of it is.
   */
  function expectForcedOutcome(
    response: OpenAI.Responses.Response,
  ): OpenAI.Responses.ResponseFunctionToolCall | undefined {
    const calls = response.output.filter(
      (item): item is OpenAI.Responses.ResponseFunctionToolCall => item.type === 'function_call',
    );
    if (response.status === 'completed') {
      expect(calls.length).toBeGreaterThan(0);
      for (const call of calls) {
        expect(call.name).toBe('get_weather');
        expect(call.status).toBe('completed');
        expect(validWeatherArgs(JSON.parse(call.arguments)), call.arguments).toBe(true);
      }
      return calls[0];
    }
    // Not completed: no call (and no unvalidated text) is published.
    expect(response.output).toEqual([]);
    if (response.status === 'failed')
      expect([
        'missing_tool_call',
        'unfinished_tool_call',
        'invalid_tool_arguments',
        'invalid_json',
        'schema_violation',
      ]).toContain(response.error!.code);
    else expect(response.status).toBe('incomplete');
    return undefined;
  }

  it.each([
    ['named', { type: 'function', name: 'get_weather' } as const],
    ['required', 'required' as const],
  ])('tool_choice %s: complete and schema-valid, or nothing published', async (_label, toolChoice) => {
    const response = await client.responses.create({
      model,
      input: 'What will the weather be in Oslo for the next 3 days?',
      tools: [WEATHER],
      tool_choice: toolChoice,
      temperature: 0,
      max_output_tokens: 64,
    });
    expect(schemaProblems('Response', response)).toBe('');
    expectForcedOutcome(response);
  });

  it('the forced call is opened in the real prompt: named → `<tool_call>NAME\\n`, required → `<tool_call>`', async () => {
    const tokenizer = await Tokenizer.fromDir(DEMO_MODEL_DIR);
    const history = normaliseInput('Weather in Oslo for 3 days?');
    const named = planResponse(
      demo.runtime,
      { model, tools: [WEATHER], tool_choice: { type: 'function', name: 'get_weather' } },
      history,
      0,
    );
    expect(tokenizer.decode(named.promptIds)).toMatch(/<\|assistant\|>\n<think><\/think>\n<tool_call>get_weather\n$/);
    expect(named.forced).toEqual({ name: 'get_weather' });
    const required = planResponse(demo.runtime, { model, tools: [WEATHER], tool_choice: 'required' }, history, 0);
    expect(tokenizer.decode(required.promptIds)).toMatch(/<\|assistant\|>\n<think><\/think>\n<tool_call>$/);
  });

  it('named tool_choice, not strict: any call published is to the named function; a completed one has JSON arguments', async () => {
    const response = await client.responses.create({
      model,
      input: 'Weather in Oslo for 3 days?',
      tools: [{ ...WEATHER, strict: false }],
      tool_choice: { type: 'function', name: 'get_weather' },
      temperature: 0,
      max_output_tokens: 64,
    });
    const calls = response.output.filter(
      (item): item is OpenAI.Responses.ResponseFunctionToolCall => item.type === 'function_call',
    );
    for (const call of calls) {
      expect(call.name).toBe('get_weather');
      if (call.status === 'completed') expect(() => JSON.parse(call.arguments)).not.toThrow();
      else expect(response.status).not.toBe('completed');
    }
    if (response.status === 'completed') expect(calls.some((call) => call.status === 'completed')).toBe(true);
  });

  it('store:false loop: call → execute locally → function_call_output → second request completes', async () => {
    const tools = [WEATHER];
    const history: OpenAI.Responses.ResponseInput = [
      { role: 'user', content: 'What will the weather be in Oslo for the next 3 days?' },
    ];
    const first = await client.responses.create({
      model,
      input: history,
      tools,
      tool_choice: { type: 'function', name: 'get_weather' },
      store: false,
      temperature: 0,
      max_output_tokens: 64,
    });
    let call = expectForcedOutcome(first);
    history.push(...(first.output as OpenAI.Responses.ResponseInputItem[]));
    if (!call) {
      // The demo checkpoint did not complete the call: continue with the call a client would
      // have received, so the second half of the loop (history with call + result) still runs.
      call = {
        type: 'function_call',
        call_id: 'call_client_1',
        name: 'get_weather',
        arguments: '{"city":"Oslo","days":3}',
      };
      history.push(call);
    }
    const execute = (args: { city: string; days: number }) =>
      JSON.stringify({ city: args.city, forecast: Array.from({ length: args.days }, () => 'sunny') });
    history.push({
      type: 'function_call_output',
      call_id: call.call_id,
      output: execute(JSON.parse(call.arguments) as { city: string; days: number }),
    });
    const second = await client.responses.create({
      model,
      input: history,
      tools,
      store: false,
      temperature: 0,
      max_output_tokens: 48,
    });
    expect(schemaProblems('Response', second)).toBe('');
    expect(['completed', 'incomplete']).toContain(second.status);
    expect(second.usage!.input_tokens).toBeGreaterThan(first.usage!.input_tokens);
    await expect(client.responses.retrieve(second.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('a function_call without its output in store:false history is a 400 (BadRequestError)', async () => {
    const input: OpenAI.Responses.ResponseInput = [
      { role: 'user', content: 'Weather?' },
      { type: 'function_call', call_id: 'c1', name: 'get_weather', arguments: '{}' },
    ];
    await expect(client.responses.create({ model, input, tools: [WEATHER] })).rejects.toBeInstanceOf(
      OpenAI.BadRequestError,
    );
  });
});

describe('the context limit of the real model', () => {
  it('a prompt over the context is a 400 context_length_exceeded on both endpoints, before any engine work', async () => {
    const engine = demo.runtime.engine;
    const before = await engine.stats();
    const long = 'Arden market street. '.repeat(3000);
    const viaResponses = await client.responses.create({ model, input: long }).catch((error: unknown) => error);
    const viaChat = await client.chat.completions
      .create({ model, messages: [{ role: 'user', content: long }] })
      .catch((error: unknown) => error);
    const exact = await client.responses
      .create({ model, input: 'Hello', max_output_tokens: demo.runtime.contextLength })
      .catch((error: unknown) => error);
    for (const error of [viaResponses, viaChat, exact]) {
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      expect((error as InstanceType<typeof OpenAI.BadRequestError>).code).toBe('context_length_exceeded');
    }
    const after = await engine.stats();
    expect(after.prefillTokens + after.cachedTokens).toBe(before.prefillTokens + before.cachedTokens);
  });
});

describe('structured output with responses.parse + zodTextFormat', () => {
  const Person = z.object({ name: z.string(), age: z.number().int() });

  it('parses to the schema, or the response is not completed and publishes no text', async () => {
    const response = await client.responses.parse({
      model,
      input: 'Make a person record for Ada, aged 36.',
      temperature: 0,
      max_output_tokens: 64,
      text: { format: zodTextFormat(Person, 'person') },
    });
    if (response.status === 'completed') {
      expect(Person.parse(response.output_parsed)).toEqual(response.output_parsed);
    } else {
      expect(response.output).toEqual([]);
      expect(response.output_parsed).toBeNull();
      if (response.status === 'failed') expect(['schema_violation', 'invalid_json']).toContain(response.error!.code);
      else expect(response.status).toBe('incomplete');
    }
  });

  it('streamed json_schema output is buffered: no text delta unless the whole output validated', async () => {
    const res = await fetch(`${demo.origin}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model,
        input: 'Make a person record for Ada, aged 36.',
        stream: true,
        temperature: 0,
        max_output_tokens: 64,
        text: { format: zodTextFormat(Person, 'person') },
      }),
    });
    const { events, problems } = checkResponseStream(await res.text());
    expect(problems).toEqual([]);
    const final = events.at(-1)!.response as OpenAI.Responses.Response;
    const hasDeltas = events.some((e) => e.type === 'response.output_text.delta');
    expect(hasDeltas).toBe(final.status === 'completed');
  });
});

describe('a client that disconnects mid-stream', () => {
  it('cancels the sequence and its KV blocks return to the free list', async () => {
    const engine = demo.service.deps.getRuntime()!.engine;
    const maxTokens = 4000;
    await vi.waitFor(async () => expect((await engine.stats()).seqsRunning).toBe(0));
    const before = await engine.stats();
    // A long, fresh prompt: its prefill alone holds dozens of blocks, whatever the model then writes.
    const input = `${Array.from({ length: 150 }, (_, i) => `Street ${i} of Arden has a market.`).join(' ')} ${Date.now()} Hello`;
    const abort = new AbortController();
    const res = await fetch(`${demo.origin}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      signal: abort.signal,
      body: JSON.stringify({ model, input, stream: true, temperature: 0, max_output_tokens: maxTokens }),
    });
    expect(res.status).toBe(200);
    let leastFree = before.blocksFree;
    await vi.waitFor(
      async () => {
        leastFree = Math.min(leastFree, (await engine.stats()).blocksFree);
        expect(leastFree).toBeLessThan(before.blocksFree - 10);
      },
      { timeout: 20_000, interval: 2 },
    );
    abort.abort();
    await vi.waitFor(
      async () => {
        const after = await engine.stats();
        expect(after.seqsRunning + after.seqsWaiting).toBe(0);
        expect(after.blocksFree).toBe(before.blocksFree);
      },
      { timeout: 20_000, interval: 25 },
    );
    const after = await engine.stats();
    expect(after.decodeTokens - before.decodeTokens).toBeLessThan(maxTokens);
  });
});

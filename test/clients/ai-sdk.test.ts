/**
 * The Vercel AI SDK (`ai` 6 + `@ai-sdk/openai` 3), unmodified, against Maya on the demo model:
 * `openai(model)` speaks the Responses API, `openai.chat(model)` Chat Completions. Settings
 * Maya needs: `baseURL` = Maya's `/v1`, any `apiKey` without configured keys, and for multi-step
 * and multi-turn calls either `providerOptions.openai.store: false` (items replayed in full) or
 * `store: true` with MAYA_GLM_RESPONSES_ITEM_REFERENCES=on (the SDK replays earlier output as
 * `item_reference` items, which a default Maya refuses: README "Clients").
 * Asserts the protocol (requests sent, finish reasons, steps, stream parts), not the wording.
 */
import { createOpenAI } from '@ai-sdk/openai';
import { APICallError, generateObject, generateText, Output, stepCountIs, streamText, tool } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { recordingFetch, startMaya, type Fetch, type Maya, type RecordedRequest } from './maya.ts';

let maya: Maya;
let recorded: { fetch: Fetch; requests: RecordedRequest[] };
let openai: ReturnType<typeof createOpenAI>;
const STATELESS = { openai: { store: false } };

beforeAll(async () => {
  maya = await startMaya();
  recorded = recordingFetch();
  // bun-types adds `preconnect` to `typeof fetch`; a plain function is what the SDK calls.
  openai = createOpenAI({ baseURL: maya.baseURL, apiKey: 'unused', fetch: recorded.fetch as typeof globalThis.fetch });
}, 120_000);

afterAll(async () => {
  await maya?.stop();
});

const sent = () => recorded.requests.splice(0);
const executed: string[] = [];
const getWeather = tool({
  description: 'Weather for a city',
  inputSchema: z.object({ city: z.string() }),
  execute: async ({ city }) => {
    executed.push(city);
    return { city, temperature: 21, condition: 'sunny' };
  },
});

/** The weather tool loop that a test expects to be refused: the APICallError it ends in. */
async function refusedWeatherLoop(model: Parameters<typeof generateText>[0]['model']): Promise<APICallError> {
  const error = await generateText({
    model,
    prompt: "What's the weather in Paris?",
    tools: { get_weather: getWeather },
    stopWhen: stepCountIs(3),
    maxRetries: 0,
  }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(APICallError.isInstance(error)).toBe(true);
  return error as APICallError;
}

describe('AI SDK on the Responses API', () => {
  it('generateText: one POST /v1/responses, finishReason stop, usage and the response id', async () => {
    sent();
    const result = await generateText({ model: openai(maya.model), prompt: 'Hello', maxOutputTokens: 128 });
    expect(sent().map((r) => [r.method, r.path, r.status])).toEqual([['POST', '/v1/responses', 200]]);
    expect(result.finishReason).toBe('stop');
    expect(result.text.length).toBeGreaterThan(0);
    expect(result.usage.inputTokens).toBeGreaterThan(0);
    expect(result.usage.outputTokens).toBeGreaterThan(0);
    expect(result.response.id).toMatch(/^resp_/);
    expect(result.warnings ?? []).toEqual([]);
  });

  it('streamText: text-delta parts between start and finish, joined deltas equal the text', async () => {
    const result = streamText({ model: openai(maya.model), prompt: 'Hello', maxOutputTokens: 128 });
    const types: string[] = [];
    let joined = '';
    for await (const part of result.fullStream) {
      types.push(part.type);
      if (part.type === 'text-delta') joined += part.text;
      if (part.type === 'error') throw part.error;
    }
    expect(types[0]).toBe('start');
    expect(types.at(-1)).toBe('finish');
    expect(types.filter((t) => t === 'text-delta').length).toBeGreaterThan(1);
    expect(types.indexOf('text-start')).toBeLessThan(types.indexOf('text-delta'));
    expect(await result.text).toBe(joined);
    expect(await result.finishReason).toBe('stop');
  });

  it('tool loop (stopWhen, store:false): call → execute → result replayed → final answer, over several steps', async () => {
    executed.length = 0;
    sent();
    const result = await generateText({
      model: openai(maya.model),
      prompt: "What's the weather in Paris?",
      tools: { get_weather: getWeather },
      toolChoice: 'auto',
      stopWhen: stepCountIs(4),
      providerOptions: STATELESS,
    });
    const requests = sent();
    expect(requests.every((r) => r.status === 200)).toBe(true);
    expect(result.steps.length).toBeGreaterThanOrEqual(2);
    expect(result.steps[0]!.finishReason).toBe('tool-calls');
    expect(result.steps[0]!.toolCalls.map((c) => c.toolName)).toEqual(['get_weather']);
    expect(executed.length).toBe(result.steps[0]!.toolCalls.length);
    expect(result.steps.at(-1)!.finishReason).toBe('stop');
    // The second request replays the whole step in full: the call and its output, matched by call_id.
    const input = requests[1]!.body!.input as Array<Record<string, unknown>>;
    const call = input.find((item) => item.type === 'function_call')!;
    const output = input.find((item) => item.type === 'function_call_output')!;
    expect(output.call_id).toBe(call.call_id);
    expect(input.some((item) => item.type === 'item_reference')).toBe(false);
  });

  it("tool loop with the SDK's default store: Maya refuses the item_reference with a 400 that names the fix", async () => {
    const apiError = await refusedWeatherLoop(openai(maya.model));
    expect(apiError.statusCode).toBe(400);
    expect(JSON.parse(apiError.responseBody!).error).toMatchObject({
      code: 'unsupported_value',
      param: expect.stringMatching(/^input\[\d+\]\.type$/),
    });
    expect(apiError.message).toContain('store: false');
    expect(apiError.message).toContain('MAYA_GLM_RESPONSES_ITEM_REFERENCES=on');
  });

  it('multi-turn messages (store:false): the earlier response replayed as an assistant message with its id and no type', async () => {
    const first = await generateText({
      model: openai(maya.model),
      prompt: 'Remember the value 73',
      maxOutputTokens: 128,
      providerOptions: STATELESS,
    });
    sent();
    const second = await generateText({
      model: openai(maya.model),
      maxOutputTokens: 128,
      providerOptions: STATELESS,
      messages: [
        { role: 'user', content: 'Remember the value 73' },
        ...first.response.messages,
        { role: 'user', content: 'What value did I give you?' },
      ],
    });
    const [request] = sent();
    expect(request!.status).toBe(200);
    const assistant = (request!.body!.input as Array<Record<string, unknown>>).find(
      (item) => item.role === 'assistant',
    )!;
    expect(assistant).toMatchObject({ id: expect.stringMatching(/^msg_/), content: [{ type: 'output_text' }] });
    expect(assistant).not.toHaveProperty('type');
    expect(second.finishReason).toBe('stop');
  });

  it('generateObject: a strict json_schema request, the object matches the schema', async () => {
    const schema = z.object({ name: z.string(), age: z.number() });
    const result = await generateObject({
      model: openai(maya.model),
      schema,
      prompt: 'Create a record with name Alice and age 30.',
    });
    expect(schema.parse(result.object)).toEqual(result.object);
    expect(result.finishReason).toBe('stop');
  });
});

describe('AI SDK on Chat Completions (openai.chat)', () => {
  it('tool loop: tool_calls → tool message → final answer', async () => {
    executed.length = 0;
    sent();
    const result = await generateText({
      model: openai.chat(maya.model),
      prompt: "What's the weather in Paris?",
      tools: { get_weather: getWeather },
      stopWhen: stepCountIs(4),
    });
    const requests = sent();
    expect(requests.map((r) => [r.path, r.status])).toEqual(requests.map(() => ['/v1/chat/completions', 200]));
    expect(result.steps[0]!.finishReason).toBe('tool-calls');
    expect(executed.length).toBeGreaterThan(0);
    expect(result.steps.at(-1)!.finishReason).toBe('stop');
    const messages = requests[1]!.body!.messages as Array<Record<string, unknown>>;
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
  });
});

describe('AI SDK with item references on (MAYA_GLM_RESPONSES_ITEM_REFERENCES=on)', () => {
  let refsMaya: Maya;
  let refsRecorded: { fetch: Fetch; requests: RecordedRequest[] };
  let refsOpenai: ReturnType<typeof createOpenAI>;

  beforeAll(async () => {
    refsMaya = await startMaya({ optIns: { itemReferences: true, encryptedReasoning: false } });
    refsRecorded = recordingFetch();
    refsOpenai = createOpenAI({
      baseURL: refsMaya.baseURL,
      apiKey: 'unused',
      fetch: refsRecorded.fetch as typeof globalThis.fetch,
    });
  }, 120_000);

  afterAll(async () => {
    await refsMaya?.stop();
  });

  it('tool loop with store:true: later steps replay earlier output as item_reference, resolved from the store', async () => {
    executed.length = 0;
    refsRecorded.requests.splice(0);
    const result = await generateText({
      model: refsOpenai(refsMaya.model),
      prompt: "What's the weather in Paris?",
      tools: { get_weather: getWeather },
      stopWhen: stepCountIs(4),
      maxRetries: 0,
      providerOptions: { openai: { store: true } },
    });
    const requests = refsRecorded.requests.splice(0);
    expect(requests.map((r) => r.status)).toEqual(requests.map(() => 200));
    expect(requests.every((r) => r.body!.store === true)).toBe(true);
    expect(result.steps.length).toBeGreaterThanOrEqual(2);
    expect(result.steps[0]!.finishReason).toBe('tool-calls');
    expect(executed.length).toBe(result.steps[0]!.toolCalls.length);
    expect(result.steps.at(-1)!.finishReason).toBe('stop');
    // The second request names the first response's output items by id instead of sending them.
    const input = requests[1]!.body!.input as Array<Record<string, unknown>>;
    const references = input.filter((item) => item.type === 'item_reference').map((item) => item.id);
    expect(references.length).toBeGreaterThan(0);
    const firstOutput = (result.steps[0]!.response.body as { output: Array<{ id: string }> }).output.map(
      (item) => item.id,
    );
    expect(firstOutput).toEqual(expect.arrayContaining(references));
    // Maya stored the second turn with the referenced items resolved in place.
    const stored = await refsMaya.demo.client.responses.inputItems.list(result.steps[1]!.response.id, { order: 'asc' });
    const storedIds = stored.data.map((item) => item.id);
    expect(storedIds).toEqual(expect.arrayContaining(references));
    expect(stored.data.find((item) => item.type === 'function_call')).toMatchObject({ name: 'get_weather' });
  });

  it("with the SDK's default store (omitted: Maya stores nothing) the reference is a 404 naming the id and the fix", async () => {
    const apiError = await refusedWeatherLoop(refsOpenai(refsMaya.model));
    expect(apiError.statusCode).toBe(404);
    const body = JSON.parse(apiError.responseBody!).error;
    expect(body).toMatchObject({ code: 'not_found', param: expect.stringMatching(/^input\[\d+\]\.id$/) });
    expect(apiError.message).toContain('store: true');
  });
});

/** Maya's structured-output failure messages (responses/structured-output.ts). */
const FAILED_OUTPUT = /^The model output (does not match the schema|is not valid JSON)/;

describe('AI SDK and a failed response (the error surfaces with its message)', () => {
  let failMaya: Maya;
  let failOpenai: ReturnType<typeof createOpenAI>;
  // Unconstrained decoding: the greedy demo model's answer to this prompt is not valid JSON or does
  // not match the schema (which one depends on the checkpoint), so the response fails after
  // generation, as a real model's might.
  const request = {
    prompt: 'Hello',
    maxRetries: 0,
    output: Output.object({ schema: z.object({ a: z.number() }) }),
  };

  beforeAll(async () => {
    failMaya = await startMaya({ constrainedDecoding: false });
    failOpenai = createOpenAI({ baseURL: failMaya.baseURL, apiKey: 'unused' });
  }, 120_000);

  afterAll(async () => {
    await failMaya?.stop();
  });

  it("generateText: a 200 failed Response → APICallError carrying Maya's error message (not a parse error)", async () => {
    const error = await generateText({ model: failOpenai(failMaya.model), ...request }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(APICallError.isInstance(error)).toBe(true);
    const apiError = error as APICallError;
    // Before failed responses carried error.type, the SDK's response schema refused the body and
    // threw a bare "Invalid JSON response" instead.
    expect(apiError.message).toMatch(FAILED_OUTPUT);
    expect(apiError.isRetryable).toBe(false);
  });

  it('streamText: response.failed → an error part with the message and code', async () => {
    // onError: the parts are read below; without it the SDK also logs the error to stderr.
    const result = streamText({ model: failOpenai(failMaya.model), ...request, onError: () => undefined });
    const errors: unknown[] = [];
    for await (const part of result.fullStream) if (part.type === 'error') errors.push(part.error);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ message: expect.stringMatching(FAILED_OUTPUT) });
  });
});

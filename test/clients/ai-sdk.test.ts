/**
 * The Vercel AI SDK (`ai` 6 + `@ai-sdk/openai` 3), unmodified, against Maya on the demo model:
 * `openai(model)` speaks the Responses API, `openai.chat(model)` Chat Completions. Settings
 * Maya needs: `baseURL` = Maya's `/v1`, any `apiKey` without configured keys, and
 * `providerOptions.openai.store: false` for multi-step and multi-turn calls (the default replays
 * earlier output as `item_reference` items, which Maya refuses: README "Clients").
 * Asserts the protocol (requests sent, finish reasons, steps, stream parts), not the wording.
 */
import { createOpenAI } from '@ai-sdk/openai';
import { APICallError, generateObject, generateText, stepCountIs, streamText, tool } from 'ai';
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
    const error = await generateText({
      model: openai(maya.model),
      prompt: "What's the weather in Paris?",
      tools: { get_weather: getWeather },
      stopWhen: stepCountIs(3),
      maxRetries: 0,
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(APICallError.isInstance(error)).toBe(true);
    const apiError = error as APICallError;
    expect(apiError.statusCode).toBe(400);
    expect(JSON.parse(apiError.responseBody!).error).toMatchObject({
      code: 'unsupported_value',
      param: expect.stringMatching(/^input\[\d+\]\.type$/),
    });
    expect(apiError.message).toContain('store: false');
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

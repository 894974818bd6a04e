/**
 * The OpenAI Agents SDK (`@openai/agents` 0.14), unmodified, against Maya on the demo model, on
 * the Responses API. Settings Maya needs: an `OpenAI` client with `baseURL` = Maya's `/v1` given
 * to `setDefaultOpenAIClient`, `setOpenAIAPI('responses')`, tracing off (no network), and
 * `modelSettings.store: true` when runs continue with `previousResponseId` (Maya stores nothing
 * by default). Asserts the protocol (requests sent, run items, stream events), not the wording.
 */
import { Agent, run, setDefaultOpenAIClient, setOpenAIAPI, setTracingDisabled, tool } from '@openai/agents';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { recordingFetch, startMaya, type Fetch, type Maya, type RecordedRequest } from './maya.ts';

let maya: Maya;
let recorded: { fetch: Fetch; requests: RecordedRequest[] };

beforeAll(async () => {
  maya = await startMaya();
  recorded = recordingFetch();
  setDefaultOpenAIClient(new OpenAI({ baseURL: maya.baseURL, apiKey: 'unused', maxRetries: 0, fetch: recorded.fetch }));
  setOpenAIAPI('responses');
  setTracingDisabled(true);
}, 120_000);

afterAll(async () => {
  await maya?.stop();
});

const sent = () => recorded.requests.splice(0);
const cities: string[] = [];
const getWeather = tool({
  name: 'get_weather',
  description: 'Weather for a city',
  parameters: z.object({ city: z.string() }),
  execute: async ({ city }) => {
    cities.push(city);
    return JSON.stringify({ city, temperature: 21, condition: 'sunny' });
  },
});

describe('Agents SDK', () => {
  it('run with a function tool: the call is executed and its output sent back before the final message', async () => {
    const agent = new Agent({ name: 'Guide', instructions: 'Answer briefly.', model: maya.model, tools: [getWeather] });
    cities.length = 0;
    sent();
    const result = await run(agent, "What's the weather in Paris?");
    const requests = sent();
    expect(requests.map((r) => [r.path, r.status])).toEqual([
      ['/v1/responses', 200],
      ['/v1/responses', 200],
    ]);
    const types = result.newItems.map((item) => item.type);
    expect(types.filter((t) => t !== 'reasoning_item')).toEqual([
      'tool_call_item',
      'tool_call_output_item',
      'message_output_item',
    ]);
    expect(cities).toHaveLength(1);
    expect(typeof result.finalOutput).toBe('string');
    expect(result.finalOutput!.length).toBeGreaterThan(0);
    const input = requests[1]!.body!.input as Array<Record<string, unknown>>;
    const call = input.find((item) => item.type === 'function_call')!;
    expect(input.find((item) => item.type === 'function_call_output')).toMatchObject({ call_id: call.call_id });
  });

  it('streaming: response_started, text deltas, response_done, run items; deltas join to the final output', async () => {
    const agent = new Agent({ name: 'Greeter', instructions: 'Answer briefly.', model: maya.model });
    const result = await run(agent, 'Hello', { stream: true });
    const modelEvents: string[] = [];
    let joined = '';
    for await (const event of result) {
      // `model` events carry each raw Responses event as well; the SDK's own ones are asserted.
      if (event.type !== 'raw_model_stream_event' || event.data.type === 'model') continue;
      modelEvents.push(event.data.type);
      if (event.data.type === 'output_text_delta') joined += event.data.delta;
    }
    await result.completed;
    expect(modelEvents[0]).toBe('response_started');
    expect(modelEvents.at(-1)).toBe('response_done');
    expect(modelEvents.filter((t) => t === 'output_text_delta').length).toBeGreaterThan(1);
    expect(joined).toBe(result.finalOutput);
  });

  it('previousResponseId (with modelSettings.store): the second run sends only the new turn', async () => {
    const agent = new Agent({
      name: 'Memory',
      instructions: 'Answer briefly.',
      model: maya.model,
      modelSettings: { store: true },
    });
    const first = await run(agent, 'Remember the value 73');
    expect(first.lastResponseId).toMatch(/^resp_/);
    sent();
    const second = await run(agent, 'What value did I give you?', { previousResponseId: first.lastResponseId });
    const [request] = sent();
    expect(request).toMatchObject({
      path: '/v1/responses',
      status: 200,
      body: { previous_response_id: first.lastResponseId, store: true },
    });
    expect(request!.body!.input).toEqual([{ role: 'user', content: 'What value did I give you?' }]);
    expect(typeof second.finalOutput).toBe('string');
  });
});

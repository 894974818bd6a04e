/**
 * The embedded demo model answers the spec's examples through the real server (engine, GLM
 * dialect, store) and the official SDK, greedily (its generation_config is greedy, so these are
 * deterministic for the committed weights): "Hello" with text; the "Remember the value 73"
 * two-turn example with 73 and its full input_items history; a function-calling loop with a tool
 * result; a json_schema request with valid JSON; forced tool choices with complete calls.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDemoService, type DemoService } from './start-demo-service.ts';

const model = 'maya-demo';
const WEATHER: OpenAI.Responses.FunctionTool = {
  type: 'function',
  name: 'get_weather',
  description: 'Get the current weather for a city',
  strict: false,
  parameters: {
    type: 'object',
    properties: {
      city: { type: 'string' },
      days: { type: 'integer' },
      unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
    },
    required: ['city'],
  },
};
const TIME: OpenAI.Responses.FunctionTool = {
  type: 'function',
  name: 'get_time',
  description: 'Get the local time in a city',
  strict: false,
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

let demo: DemoService;
let client: OpenAI;
beforeAll(async () => {
  demo = await startDemoService();
  client = demo.client;
});
afterAll(async () => demo?.stop());

const calls = (response: OpenAI.Responses.Response) =>
  response.output.filter((item): item is OpenAI.Responses.ResponseFunctionToolCall => item.type === 'function_call');

describe('the demo model answers the spec examples', () => {
  it('{"input":"Hello"} → completed with text', async () => {
    const response = await client.responses.create({ model, max_output_tokens: 256, input: 'Hello', store: false });
    expect(response.status).toBe('completed');
    expect(response.output_text.trim().length).toBeGreaterThan(0);
  });

  it('"Remember the value 73" → previous_response_id → 73, and input_items lists the whole history', async () => {
    const first = await client.responses.create({
      model,
      max_output_tokens: 256,
      input: 'Remember the value 73',
      store: true,
    });
    const second = await client.responses.create({
      model,
      max_output_tokens: 256,
      previous_response_id: first.id,
      input: 'What value did I give you?',
      store: true,
    });
    expect(second.status).toBe('completed');
    expect(second.output_text).toContain('73');
    const items = [];
    for await (const item of client.responses.inputItems.list(second.id, { order: 'asc', limit: 20 })) items.push(item);
    const firstInput = items[0] as { type: string; role?: string };
    expect(firstInput).toMatchObject({ type: 'message', role: 'user' });
    expect(items.map((item) => item.id)).toEqual(expect.arrayContaining(first.output.map((item) => item.id!)));
    expect(items.at(-1)).toMatchObject({ type: 'message', role: 'user' });
  });

  it('a function-calling loop: the model calls get_weather with the city, then answers from the result', async () => {
    const history: OpenAI.Responses.ResponseInput = [{ role: 'user', content: "What's the weather in Paris?" }];
    const first = await client.responses.create({
      model,
      max_output_tokens: 256,
      input: history,
      tools: [WEATHER, TIME],
      store: false,
    });
    const [call] = calls(first);
    expect(call).toMatchObject({ name: 'get_weather', status: 'completed' });
    expect(JSON.parse(call!.arguments)).toMatchObject({ city: 'Paris' });
    history.push(...(first.output as OpenAI.Responses.ResponseInputItem[]));
    // The result as the spec's Python example would send it (json.dumps spacing, which is also what
    // the demo model was trained on; see its model card for compact JSON results).
    history.push({
      type: 'function_call_output',
      call_id: call!.call_id,
      output: '{"city": "Paris", "temperature": 21, "condition": "sunny"}',
    });
    const second = await client.responses.create({
      model,
      max_output_tokens: 256,
      input: history,
      tools: [WEATHER, TIME],
      store: false,
    });
    expect(second.status).toBe('completed');
    expect(calls(second)).toEqual([]);
    expect(second.output_text).toMatch(/21/);
  });

  it('a json_schema request → valid JSON matching the schema', async () => {
    const schema = {
      type: 'object',
      properties: { name: { type: 'string' }, age: { type: 'integer' } },
      required: ['name', 'age'],
      additionalProperties: false,
    };
    const response = await client.responses.create({
      model,
      max_output_tokens: 256,
      input: 'Create a record with name Alice and age 30.',
      text: { format: { type: 'json_schema', name: 'person', strict: true, schema } },
    });
    expect(response.status).toBe('completed');
    const value = JSON.parse(response.output_text) as { name: unknown; age: unknown };
    expect(typeof value.name).toBe('string');
    expect(Number.isInteger(value.age)).toBe(true);
  });

  it.each([
    ['named', { type: 'function', name: 'get_weather' } as const],
    ['required', 'required' as const],
  ])('tool_choice %s with strict:true yields a complete, schema-valid call', async (_label, toolChoice) => {
    const strict = {
      ...WEATHER,
      strict: true,
      parameters: {
        type: 'object',
        properties: { city: { type: 'string' }, days: { type: 'integer' } },
        required: ['city', 'days'],
        additionalProperties: false,
      },
    };
    const response = await client.responses.create({
      model,
      max_output_tokens: 256,
      input: 'Weather in Oslo for the next 3 days?',
      tools: [strict],
      tool_choice: toolChoice,
    });
    expect(response.status).toBe('completed');
    const [call] = calls(response);
    expect(call).toMatchObject({ name: 'get_weather', status: 'completed' });
    expect(JSON.parse(call!.arguments)).toEqual({ city: 'Oslo', days: 3 });
  });
});

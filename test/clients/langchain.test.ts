/**
 * LangChain.js (`@langchain/openai` 1.5 + `@langchain/core` 1.4), unmodified, against Maya on the
 * demo model, in both of ChatOpenAI's modes: `useResponsesApi: true` (POST /v1/responses) and the
 * default Chat Completions mode. Settings Maya needs: `configuration.baseURL` = Maya's `/v1`, any
 * `apiKey` without configured keys. Asserts the protocol (requests sent, message and tool-call
 * shapes, chunk streams), not the wording.
 */
import { AIMessage, HumanMessage, type BaseMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { ChatOpenAI } from '@langchain/openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { recordingFetch, startMaya, type Fetch, type Maya, type RecordedRequest } from './maya.ts';

let maya: Maya;
let recorded: { fetch: Fetch; requests: RecordedRequest[] };

beforeAll(async () => {
  maya = await startMaya();
  recorded = recordingFetch();
}, 120_000);

afterAll(async () => {
  await maya?.stop();
});

const sent = () => recorded.requests.splice(0);
const textOf = (message: BaseMessage) =>
  typeof message.content === 'string'
    ? message.content
    : message.content.map((part) => ('text' in part ? part.text : '')).join('');
const getWeather = tool(
  async ({ city }: { city: string }) => JSON.stringify({ city, temperature: 21, condition: 'sunny' }),
  {
    name: 'get_weather',
    description: 'Weather for a city',
    schema: z.object({ city: z.string() }),
  },
);

function chatModel(useResponsesApi: boolean): ChatOpenAI {
  return new ChatOpenAI({
    model: maya.model,
    apiKey: 'unused',
    useResponsesApi,
    maxRetries: 0,
    configuration: { baseURL: maya.baseURL, fetch: recorded.fetch },
  });
}

/** A bindTools round trip: a forced call, the tool's ToolMessage (which carries `name`), the answer. */
async function toolRoundTrip(llm: ChatOpenAI) {
  sent();
  const messages: BaseMessage[] = [new HumanMessage("What's the weather in Paris?")];
  const call = await llm.bindTools([getWeather], { tool_choice: 'required' }).invoke(messages);
  expect(call.tool_calls).toMatchObject([
    { name: 'get_weather', type: 'tool_call', args: { city: expect.any(String) } },
  ]);
  messages.push(call);
  for (const toolCall of call.tool_calls!) messages.push(await getWeather.invoke(toolCall));
  const answer = await llm.bindTools([getWeather]).invoke(messages);
  expect(answer).toBeInstanceOf(AIMessage);
  expect(answer.tool_calls ?? []).toEqual([]);
  expect(textOf(answer).length).toBeGreaterThan(0);
  return sent();
}

describe('ChatOpenAI with useResponsesApi: true', () => {
  it('invoke: one POST /v1/responses, an AIMessage with text and usage', async () => {
    sent();
    const message = await chatModel(true).invoke('Hello');
    expect(sent().map((r) => [r.path, r.status])).toEqual([['/v1/responses', 200]]);
    expect(textOf(message).length).toBeGreaterThan(0);
    expect(message.usage_metadata!.output_tokens).toBeGreaterThan(0);
  });

  it('stream: several chunks that concatenate to the answer', async () => {
    const chunks = [];
    for await (const chunk of await chatModel(true).stream('Hello')) chunks.push(chunk);
    expect(chunks.filter((c) => textOf(c) !== '').length).toBeGreaterThan(1);
    const joined = chunks.reduce((a, b) => a.concat(b));
    expect(textOf(joined)).toBe(chunks.map(textOf).join(''));
  });

  it('bindTools round trip: function_call → function_call_output replayed in full → answer', async () => {
    const requests = await toolRoundTrip(chatModel(true));
    expect(requests.map((r) => r.status)).toEqual([200, 200]);
    const input = requests[1]!.body!.input as Array<Record<string, unknown>>;
    const call = input.find((item) => item.type === 'function_call')!;
    expect(input.find((item) => item.type === 'function_call_output')).toMatchObject({ call_id: call.call_id });
  });

  it('withStructuredOutput: the parsed object matches the schema', async () => {
    const schema = z.object({ name: z.string(), age: z.number() });
    const value = await chatModel(true)
      .withStructuredOutput(schema, { name: 'person' })
      .invoke('Create a record with name Alice and age 30.');
    expect(schema.parse(value)).toEqual(value);
  });
});

describe('ChatOpenAI on Chat Completions (the default)', () => {
  it('invoke and stream (with the usage chunk LangChain asks for)', async () => {
    sent();
    const message = await chatModel(false).invoke('Hello');
    expect(textOf(message).length).toBeGreaterThan(0);
    const chunks = [];
    for await (const chunk of await chatModel(false).stream('Hello')) chunks.push(chunk);
    const joined = chunks.reduce((a, b) => a.concat(b));
    expect(textOf(joined)).toBe(textOf(message));
    expect(joined.usage_metadata!.output_tokens).toBeGreaterThan(0);
    const requests = sent();
    expect(requests.map((r) => [r.path, r.status])).toEqual([
      ['/v1/chat/completions', 200],
      ['/v1/chat/completions', 200],
    ]);
    expect(requests[1]!.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
  });

  it('tool round trip: the tool message carries `name` and is accepted', async () => {
    const requests = await toolRoundTrip(chatModel(false));
    expect(requests.map((r) => r.status)).toEqual([200, 200]);
    const messages = requests[1]!.body!.messages as Array<Record<string, unknown>>;
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
    expect(messages[2]).toMatchObject({
      name: 'get_weather',
      tool_call_id: (messages[1]!.tool_calls as Array<{ id: string }>)[0]!.id,
    });
  });
});

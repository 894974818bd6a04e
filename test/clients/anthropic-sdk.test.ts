/**
 * The official Anthropic SDK (`@anthropic-ai/sdk` 1.10), unmodified, against Maya on the demo
 * model (the real engine): messages.create with text and with thinking (signatures sealed: the
 * server runs with MAYA_GLM_RESPONSES_ENCRYPTED_REASONING on, and a second turn replays the
 * thinking block), messages.stream with finalMessage(), a tool round trip (tool_use →
 * tool_result → the answer), top_k (1 = the greedy answer), countTokens, the typed errors
 * (AuthenticationError, BadRequestError, NotFoundError), and an image on the GLM-4.1V fixture checkpoint, whose prompt
 * and greedy tokens are the PyTorch reference's. Settings Maya needs: `baseURL` = Maya's origin
 * (the SDK adds `/v1/messages`), an API key when the server has MAYA_API_KEYS.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningService } from '../../cli/serve.ts';
import { startLoopbackService } from '../helpers/loopback-service.ts';
import { fixturePng, type VisionFixtures } from '../helpers/vision-runtime.ts';
import { recordingFetch, startMaya, type Maya } from './maya.ts';

const KEY = 'sk-maya-anthropic';
let maya: Maya;
let client: Anthropic;
const recorded = recordingFetch();

beforeAll(async () => {
  maya = await startMaya({ apiKeys: [KEY], optIns: { itemReferences: false, encryptedReasoning: true } });
  client = new Anthropic({ baseURL: maya.demo.origin, apiKey: KEY, maxRetries: 0, fetch: recorded.fetch });
}, 120_000);

afterAll(async () => {
  await maya?.stop();
});

const WEATHER: Anthropic.Tool = {
  name: 'get_weather',
  description: 'Get the current weather for a city.',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

async function rejection(promise: Promise<unknown>): Promise<InstanceType<typeof Anthropic.APIError>> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(Anthropic.APIError);
  return error as InstanceType<typeof Anthropic.APIError>;
}

const textOf = (message: Anthropic.Message) =>
  message.content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('');

describe('messages.create', () => {
  it('text: a message with a text block, a stop reason and usage', async () => {
    const message = await client.messages.create({
      model: maya.model,
      max_tokens: 128,
      messages: [{ role: 'user', content: 'Hello' }],
    });
    expect(message).toMatchObject({ type: 'message', role: 'assistant', model: maya.model });
    expect(message.id).toMatch(/^msg_/);
    expect(message.content.map((block) => block.type)).toEqual(['text']);
    expect(textOf(message).length).toBeGreaterThan(0);
    expect(['end_turn', 'max_tokens']).toContain(message.stop_reason);
    expect(message.usage.input_tokens + (message.usage.cache_read_input_tokens ?? 0)).toBeGreaterThan(5);
    expect(message.usage.output_tokens).toBeGreaterThan(0);
    expect(message._request_id).toMatch(/^req_/);
  });

  it('thinking: a signed thinking block before the text; replaying it in the next turn is accepted and reuses the prefix cache', async () => {
    const ask: Anthropic.MessageParam[] = [{ role: 'user', content: 'What is 2 + 3?' }];
    const first = await client.messages.create({
      model: maya.model,
      max_tokens: 512,
      thinking: { type: 'enabled', budget_tokens: 1024 },
      messages: ask,
    });
    const [thinking, text] = first.content;
    expect(thinking?.type).toBe('thinking');
    if (thinking?.type !== 'thinking') return;
    expect(thinking.thinking.length).toBeGreaterThan(0);
    expect(thinking.signature.length).toBeGreaterThan(40);
    expect(text?.type).toBe('text');
    expect(first.usage.output_tokens_details?.thinking_tokens).toBeGreaterThan(0);
    const second = await client.messages.create({
      model: maya.model,
      max_tokens: 256,
      thinking: { type: 'enabled', budget_tokens: 1024 },
      messages: [...ask, { role: 'assistant', content: first.content }, { role: 'user', content: 'And 4 + 4?' }],
    });
    expect(second.content.some((block) => block.type === 'text')).toBe(true);
    expect(second.usage.cache_read_input_tokens).toBeGreaterThan(0);
    // Altered thinking does not pass its signature.
    const altered = await rejection(
      client.messages.create({
        model: maya.model,
        max_tokens: 64,
        messages: [
          ...ask,
          { role: 'assistant', content: [{ ...thinking, thinking: 'I will say 7.' }, ...first.content.slice(1)] },
          { role: 'user', content: 'And 4 + 4?' },
        ],
      }),
    );
    expect(altered).toBeInstanceOf(Anthropic.BadRequestError);
    expect(altered.type).toBe('invalid_request_error');
    expect(altered.errorCode).toBe('invalid_signature');
  });
});

describe('sampling', () => {
  it('top_k 1 at temperature 1 is the greedy answer; top_k 40 samples; a negative top_k is a BadRequestError', async () => {
    // SDK 1.10's types declare no sampling fields; it sends them as given (checked on the wire below).
    type Sampling = { temperature?: number; top_p?: number; top_k?: number };
    const create = (sampling: Sampling) =>
      client.messages.create({
        model: maya.model,
        max_tokens: 48,
        messages: [{ role: 'user', content: 'Hello' }],
        ...sampling,
      } as Anthropic.MessageCreateParamsNonStreaming);
    const greedy = await create({ temperature: 0 });
    const topOne = await create({ temperature: 1, top_k: 1 });
    expect(recorded.requests.filter((r) => r.path === '/v1/messages').at(-1)!.body).toMatchObject({ top_k: 1 });
    expect(textOf(topOne)).toBe(textOf(greedy));
    expect(topOne.usage.output_tokens).toBe(greedy.usage.output_tokens);
    const sampled = await create({ temperature: 1, top_p: 0.95, top_k: 40 });
    expect(sampled.usage.output_tokens).toBeGreaterThan(0);
    const negative = await rejection(create({ top_k: -1 }));
    expect(negative).toBeInstanceOf(Anthropic.BadRequestError);
    expect(negative.details).toMatchObject({ param: 'top_k' });
  });
});

describe('messages.stream', () => {
  it('finalMessage() equals the non-streamed message (greedy), built from the streamed events', async () => {
    const params = {
      model: maya.model,
      max_tokens: 256,
      thinking: { type: 'enabled' as const, budget_tokens: 1024 },
      messages: [{ role: 'user' as const, content: 'Tell me about the weather.' }],
    };
    const created = await client.messages.create(params);
    const seen: string[] = [];
    const stream = client.messages.stream(params);
    stream.on('streamEvent', (event) => seen.push(event.type));
    const final = await stream.finalMessage();
    expect(seen[0]).toBe('message_start');
    expect(seen.at(-1)).toBe('message_stop');
    expect(seen).toContain('content_block_delta');
    expect(final.content.map((block) => block.type)).toEqual(created.content.map((block) => block.type));
    expect(textOf(final)).toBe(textOf(created));
    expect(final.stop_reason).toBe(created.stop_reason);
    expect(final.usage.output_tokens).toBe(created.usage.output_tokens);
    // The prefix cache held the prompt the second time: the split differs, the sum does not.
    expect(final.usage.input_tokens + (final.usage.cache_read_input_tokens ?? 0)).toBe(
      created.usage.input_tokens + (created.usage.cache_read_input_tokens ?? 0),
    );
  });
});

describe('tools', () => {
  it('a round trip: tool_use → tool_result → the answer', async () => {
    const ask: Anthropic.MessageParam[] = [{ role: 'user', content: 'What is the weather in Paris?' }];
    const call = await client.messages.create({
      model: maya.model,
      max_tokens: 256,
      tools: [WEATHER],
      tool_choice: { type: 'tool', name: 'get_weather' },
      messages: ask,
    });
    expect(call.stop_reason).toBe('tool_use');
    const use = call.content.find((block): block is Anthropic.ToolUseBlock => block.type === 'tool_use');
    expect(use).toMatchObject({ name: 'get_weather', input: { city: expect.any(String) } });
    const answer = await client.messages.create({
      model: maya.model,
      max_tokens: 256,
      tools: [WEATHER],
      messages: [
        ...ask,
        { role: 'assistant', content: call.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: use!.id, content: 'Sunny, 22 degrees.' }] },
      ],
    });
    expect(answer.stop_reason).toBe('end_turn');
    expect(textOf(answer).length).toBeGreaterThan(0);
    const sent = recorded.requests.filter((r) => r.path === '/v1/messages').at(-1)!;
    expect(sent.status).toBe(200);
    expect((sent.body!.messages as unknown[]).length).toBe(3);
  });
});

describe('messages.countTokens', () => {
  it('the prompt a create with the same messages, system and tools is charged for', async () => {
    const params = {
      model: maya.model,
      system: 'You are brief.',
      tools: [WEATHER],
      messages: [{ role: 'user' as const, content: 'Hello there' }],
    };
    const counted = await client.messages.countTokens(params);
    const created = await client.messages.create({ ...params, max_tokens: 16 });
    expect(counted.input_tokens).toBe(created.usage.input_tokens + (created.usage.cache_read_input_tokens ?? 0));
    const bare = await client.messages.countTokens({ model: maya.model, messages: params.messages });
    expect(bare.input_tokens).toBeLessThan(counted.input_tokens);
  });
});

describe('typed errors', () => {
  it('AuthenticationError for a wrong key', async () => {
    const stranger = new Anthropic({ baseURL: maya.demo.origin, apiKey: 'sk-wrong', maxRetries: 0 });
    const error = await rejection(
      stranger.messages.create({ model: maya.model, max_tokens: 16, messages: [{ role: 'user', content: 'Hi' }] }),
    );
    expect(error).toBeInstanceOf(Anthropic.AuthenticationError);
    expect(error.type).toBe('authentication_error');
    expect(error.requestID).toMatch(/^req_/);
  });

  it('BadRequestError naming the field, for a server tool and for a missing max_tokens', async () => {
    const tool = await rejection(
      client.messages.create({
        model: maya.model,
        max_tokens: 16,
        tools: [{ type: 'web_search_20250305', name: 'web_search' }],
        messages: [{ role: 'user', content: 'Hi' }],
      }),
    );
    expect(tool).toBeInstanceOf(Anthropic.BadRequestError);
    expect(tool.apiMessage).toMatch(/^tools\[0\]\.type: /);
    const missing = await rejection(
      client.messages.create({ model: maya.model, messages: [{ role: 'user', content: 'Hi' }] } as never),
    );
    expect(missing).toBeInstanceOf(Anthropic.BadRequestError);
    expect(missing.details).toMatchObject({ error_code: 'missing_required_parameter' });
  });

  it('NotFoundError for message batches, which Maya does not serve', async () => {
    const error = await rejection(
      client.messages.batches.create({
        requests: [{ custom_id: 'a', params: { model: maya.model, max_tokens: 16, messages: [] } }],
      }),
    );
    expect(error).toBeInstanceOf(Anthropic.NotFoundError);
    expect(error.type).toBe('not_found_error');
  });
});

describe('an image on the GLM-4.1V fixture checkpoint', () => {
  const dir = fileURLToPath(new URL('../fixtures/engine/glm4v-tiny/', import.meta.url));
  const fixtures = JSON.parse(readFileSync(`${dir}/fixtures.json`, 'utf8')) as VisionFixtures;
  const PROMPT = 'What is in this image?';
  let service: RunningService;
  let vision: Anthropic;

  beforeAll(async () => {
    service = await startLoopbackService({ modelDir: dir });
    await service.loaded;
    vision = new Anthropic({ baseURL: service.origin, apiKey: 'unused', maxRetries: 0 });
  }, 120_000);
  afterAll(() => service?.stop());

  it("a base64 image block: the reference's prompt tokens and the same answer as /v1/responses gives", async () => {
    const messages: Anthropic.MessageParam[] = [
      {
        role: 'user',
        content: [
          {
            type: 'image',
            source: { type: 'base64', media_type: 'image/png', data: fixturePng(0).toString('base64') },
          },
          { type: 'text', text: PROMPT },
        ],
      },
    ];
    // `adaptive` thinking: the model's own default, as the reference prompt was rendered.
    const thinking = { type: 'adaptive' as const };
    const counted = await vision.messages.countTokens({ model: 'glm4v-tiny', messages, thinking });
    expect(counted.input_tokens).toBe(fixtures.prompts[0]!.ids.length);
    const greedy = fixtures.prompts[0]!.greedy.length;
    const message = await vision.messages.create({ model: 'glm4v-tiny', max_tokens: greedy, messages, thinking });
    expect(message.usage.input_tokens + (message.usage.cache_read_input_tokens ?? 0)).toBe(counted.input_tokens);
    expect(message.usage.output_tokens).toBe(greedy);
    const response = (await (
      await fetch(`${service.origin}/v1/responses`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          input: [
            {
              role: 'user',
              content: [
                { type: 'input_image', image_url: `data:image/png;base64,${fixturePng(0).toString('base64')}` },
                { type: 'input_text', text: PROMPT },
              ],
            },
          ],
          max_output_tokens: greedy,
        }),
      })
    ).json()) as { output: Array<{ type: string; content: Array<{ text: string }> }> };
    const fromResponses = response.output.map((item) => [item.type, item.content.map((part) => part.text).join('')]);
    const fromMessages = message.content.map((block) =>
      block.type === 'thinking'
        ? ['reasoning', block.thinking]
        : block.type === 'text'
          ? ['message', block.text]
          : [block.type, ''],
    );
    expect(fromMessages).toEqual(fromResponses);
  });

  it('an image the model cannot read is a BadRequestError naming the block', async () => {
    const error = await rejection(
      vision.messages.create({
        model: 'glm4v-tiny',
        max_tokens: 4,
        messages: [
          {
            role: 'user',
            content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } }],
          },
        ],
      }),
    );
    expect(error).toBeInstanceOf(Anthropic.BadRequestError);
    expect(error.details).toMatchObject({ param: 'messages[0].content[0].source' });
  });
});

/**
 * The official `openai` SDK (6.x), unmodified, against Maya on the demo model: the calls an
 * application makes beyond test/e2e/responses.sdk.test.ts — models.retrieve, the stored-response
 * lifecycle (create, retrieve, inputItems, delete), the stream helper, parse, background tasks
 * with cancel and resumed streams, and chat.completions with parse and the standard fields.
 * Settings Maya needs: `baseURL` = Maya's `/v1`; `store: true` to keep a response. Asserts the
 * protocol (status codes, error classes, event order, item shapes), not the wording.
 */
import OpenAI from 'openai';
import { zodResponseFormat, zodTextFormat } from 'openai/helpers/zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startMaya, type Maya } from './maya.ts';

let maya: Maya;
let client: OpenAI;

beforeAll(async () => {
  maya = await startMaya();
  client = new OpenAI({ baseURL: maya.baseURL, apiKey: 'unused', maxRetries: 0 });
}, 120_000);

afterAll(async () => {
  await maya?.stop();
});

const Person = z.object({ name: z.string(), age: z.number() });
const PERSON_PROMPT = 'Create a record with name Alice and age 30.';
/** About 1,700 prompt tokens: the demo model's prefill alone keeps a task busy for a while. */
const LONG_PROMPT = `Repeat this list exactly: ${Array.from({ length: 300 }, (_, i) => `item${i}`).join(' ')}`;

async function rejection(promise: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(OpenAI.APIError);
  return error as InstanceType<typeof OpenAI.APIError>;
}

describe('models', () => {
  it('models.retrieve: the served model; another id is a NotFoundError model_not_found', async () => {
    expect(await client.models.retrieve(maya.model)).toMatchObject({
      id: maya.model,
      object: 'model',
      owned_by: 'maya',
    });
    const error = await rejection(client.models.retrieve('gpt-4o'));
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    expect(error).toMatchObject({ code: 'model_not_found', param: 'model' });
  });
});

describe('the stored-response lifecycle', () => {
  it('create(store:true) → retrieve → inputItems → delete → NotFoundError', async () => {
    const created = await client.responses.create({
      model: maya.model,
      input: 'Hello',
      store: true,
      max_output_tokens: 128,
    });
    expect(created.status).toBe('completed');
    const retrieved = await client.responses.retrieve(created.id);
    expect(retrieved.id).toBe(created.id);
    expect(retrieved.output).toEqual(created.output);
    const items = [];
    for await (const item of client.responses.inputItems.list(created.id, { order: 'asc', limit: 1 })) items.push(item);
    expect(items).toMatchObject([{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Hello' }] }]);
    await client.responses.delete(created.id);
    expect(await rejection(client.responses.retrieve(created.id))).toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('the output replayed as input (store:false) with every SDK output shape is accepted', async () => {
    const first = await client.responses.create({
      model: maya.model,
      input: 'Remember the value 73',
      store: false,
      max_output_tokens: 128,
    });
    const replay = first.output.map((item) => {
      // What clients build from their own types: output_text without logprobs/annotations.
      if (item.type !== 'message') return item;
      return {
        id: item.id,
        role: item.role,
        status: item.status,
        content: item.content.map((part) =>
          part.type === 'output_text' ? { type: part.type, text: part.text } : part,
        ),
      };
    });
    const second = await client.responses.create({
      model: maya.model,
      store: false,
      max_output_tokens: 128,
      input: [
        { role: 'user', content: 'Remember the value 73' },
        ...(replay as OpenAI.Responses.ResponseInputItem[]),
        { role: 'user', content: 'What value did I give you?' },
      ],
    });
    expect(second.status).toBe('completed');
  });
});

describe('stream helper and parse', () => {
  it('responses.stream(): created first, text deltas on one message item, finalResponse equals the completed event', async () => {
    const stream = client.responses.stream({ model: maya.model, input: 'Hello', max_output_tokens: 128 });
    const types: string[] = [];
    const itemIds = new Set<string>();
    stream.on('event', (event) => types.push(event.type));
    stream.on('response.output_text.delta', (event) => itemIds.add(event.item_id));
    const final = await stream.finalResponse();
    expect(types[0]).toBe('response.created');
    expect(types.at(-1)).toBe('response.completed');
    expect(types).toContain('response.output_text.delta');
    const message = final.output.find((item) => item.type === 'message')!;
    expect([...itemIds]).toEqual([message.id]);
    expect(final.status).toBe('completed');
    expect(final.output_text.length).toBeGreaterThan(0);
  });

  it('responses.parse with zodTextFormat: output_parsed matches the schema', async () => {
    const response = await client.responses.parse({
      model: maya.model,
      input: PERSON_PROMPT,
      text: { format: zodTextFormat(Person, 'person') },
    });
    expect(response.status).toBe('completed');
    expect(Person.parse(response.output_parsed)).toEqual(response.output_parsed);
  });
});

describe('background tasks', () => {
  it('create(background) → cancel → retrieve is cancelled; the resumed stream ends with the response_cancelled error event', async () => {
    const job = await client.responses.create({
      model: maya.model,
      input: LONG_PROMPT,
      background: true,
      store: true,
      max_output_tokens: 1024,
    });
    expect(['queued', 'in_progress']).toContain(job.status);
    const cancelled = await client.responses.cancel(job.id);
    expect(cancelled).toMatchObject({ id: job.id, status: 'cancelled' });
    expect((await client.responses.retrieve(job.id)).status).toBe('cancelled');
    const seen: string[] = [];
    const error = await rejection(
      (async () => {
        for await (const event of await client.responses.retrieve(job.id, { stream: true, starting_after: 0 }))
          seen.push(event.type);
      })(),
    );
    expect(error.code).toBe('response_cancelled');
    expect(seen).not.toContain('response.created');
  });

  it('a finished task: retrieve(stream, starting_after) replays only later events; stream({response_id}) resolves finalResponse', async () => {
    const job = await client.responses.create({
      model: maya.model,
      input: 'Hello',
      background: true,
      store: true,
      max_output_tokens: 128,
    });
    let current = job;
    for (let i = 0; i < 200 && (current.status === 'queued' || current.status === 'in_progress'); i++) {
      await new Promise((resolve) => setTimeout(resolve, 25));
      current = await client.responses.retrieve(job.id);
    }
    expect(current.status).toBe('completed');
    const numbers: number[] = [];
    for await (const event of await client.responses.retrieve(job.id, { stream: true, starting_after: 2 }))
      numbers.push(event.sequence_number);
    expect(numbers[0]).toBe(3);
    expect(numbers).toEqual([...numbers].sort((a, b) => a - b));
    const resumed = client.responses.stream({ response_id: job.id, starting_after: 2 });
    const final = await resumed.finalResponse();
    expect(final).toMatchObject({ id: job.id, status: 'completed' });
    // The helper adds `parsed: null` to text parts; the items and text are the task's own.
    expect(final.output.map((item) => [item.type, item.id])).toEqual(
      current.output.map((item) => [item.type, item.id]),
    );
    expect(final.output_text).toBe(current.output_text);
  });
});

describe('chat.completions', () => {
  it('create with the standard fields clients send (penalties 0, store, metadata, service_tier, prompt_cache_key, safety_identifier, top_logprobs)', async () => {
    const completion = await client.chat.completions.create({
      model: maya.model,
      messages: [{ role: 'user', content: 'Hello' }],
      max_tokens: 128,
      presence_penalty: 0,
      frequency_penalty: 0,
      store: false,
      metadata: { run: '1' },
      service_tier: 'auto',
      prompt_cache_key: 'clients',
      prompt_cache_retention: 'in_memory',
      safety_identifier: 'user-1',
      top_logprobs: 0,
    });
    expect(completion).toMatchObject({
      object: 'chat.completion',
      model: maya.model,
      choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant' } }],
    });
    expect(completion.usage!.completion_tokens).toBeGreaterThan(0);
  });

  it('a non-zero penalty is a BadRequestError naming it', async () => {
    const error = await rejection(
      client.chat.completions.create({
        model: maya.model,
        messages: [{ role: 'user', content: 'Hello' }],
        frequency_penalty: 0.5,
      }),
    );
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error).toMatchObject({ param: 'frequency_penalty', code: 'unsupported_value' });
  });

  it('chat.completions.parse with zodResponseFormat: message.parsed matches the schema', async () => {
    const completion = await client.chat.completions.parse({
      model: maya.model,
      messages: [{ role: 'user', content: PERSON_PROMPT }],
      response_format: zodResponseFormat(Person, 'person'),
    });
    const message = completion.choices[0]!.message;
    expect(completion.choices[0]!.finish_reason).toBe('stop');
    expect(Person.parse(message.parsed)).toEqual(message.parsed);
  });
});

describe('encrypted reasoning with store:false (MAYA_GLM_RESPONSES_ENCRYPTED_REASONING=on)', () => {
  let encMaya: Maya;
  let clientA: OpenAI;
  let clientB: OpenAI;
  const tools: OpenAI.Responses.FunctionTool[] = [
    {
      type: 'function',
      name: 'get_weather',
      description: 'Weather for a city',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      strict: false,
    },
  ];
  const user = { role: 'user' as const, content: "What's the weather in Paris?" };
  const thinking = {
    store: false,
    include: ['reasoning.encrypted_content' as const],
    reasoning: { effort: 'medium' as const, summary: 'auto' as const },
  };
  type Item = OpenAI.Responses.ResponseInputItem;
  let first: OpenAI.Responses.Response;
  let reasoning: OpenAI.Responses.ResponseReasoningItem;
  let call: OpenAI.Responses.ResponseFunctionToolCall;
  let output: Item;

  beforeAll(async () => {
    encMaya = await startMaya({
      apiKeys: ['key-a', 'key-b'],
      optIns: { itemReferences: false, encryptedReasoning: true },
    });
    clientA = new OpenAI({ baseURL: encMaya.baseURL, apiKey: 'key-a', maxRetries: 0 });
    clientB = new OpenAI({ baseURL: encMaya.baseURL, apiKey: 'key-b', maxRetries: 0 });
    first = await clientA.responses.create({ model: encMaya.model, input: [user], tools, ...thinking });
    reasoning = first.output.find((item) => item.type === 'reasoning')!;
    call = first.output.find((item) => item.type === 'function_call')!;
    output = { type: 'function_call_output', call_id: call.call_id, output: '{"temperature":21}' };
  }, 120_000);

  afterAll(async () => {
    await encMaya?.stop();
  });

  /** The next turn's input tokens with `replayed` standing for the reasoning item. */
  const nextTurnInputTokens = async (replayed: Item[]) =>
    (
      await clientA.responses.create({
        model: encMaya.model,
        input: [user, ...replayed, call, output],
        tools,
        max_output_tokens: 16,
        ...thinking,
      })
    ).usage!.input_tokens;

  it('reasoning items come back with encrypted_content; summary:auto is accepted, echoed, and makes no summary', () => {
    expect(first.status).toBe('completed');
    expect(first.reasoning).toMatchObject({ effort: 'medium', summary: 'auto' });
    expect(reasoning.summary).toEqual([]);
    expect(reasoning.content![0]!.text.length).toBeGreaterThan(0);
    expect(typeof reasoning.encrypted_content).toBe('string');
    expect(reasoning.encrypted_content).not.toContain(reasoning.content![0]!.text.slice(0, 12));
    expect(call.name).toBe('get_weather');
  });

  it('streaming: absent from output_item.added, set on output_item.done and in the final response', async () => {
    const stream = clientA.responses.stream({
      model: encMaya.model,
      input: 'Hello',
      max_output_tokens: 128,
      ...thinking,
    });
    const added: unknown[] = [];
    const done: Array<Record<string, unknown>> = [];
    for await (const event of stream) {
      if (event.type === 'response.output_item.added' && event.item.type === 'reasoning') added.push(event.item);
      if (event.type === 'response.output_item.done' && event.item.type === 'reasoning')
        done.push(event.item as unknown as Record<string, unknown>);
    }
    const final = await stream.finalResponse();
    expect(added.length).toBe(1);
    expect(added[0]).not.toHaveProperty('encrypted_content');
    expect(typeof done[0]!.encrypted_content).toBe('string');
    expect(final.output.find((item) => item.type === 'reasoning')).toMatchObject({
      encrypted_content: done[0]!.encrypted_content,
    });
  });

  it('replayed by encrypted_content alone, the reasoning is rendered exactly as the plain item would be', async () => {
    const { content: _content, ...encryptedOnly } = reasoning;
    const plain = await nextTurnInputTokens([{ ...reasoning, encrypted_content: null }]);
    const sealed = await nextTurnInputTokens([encryptedOnly]);
    const without = await nextTurnInputTokens([]);
    // The same prompt as replaying the reasoning in full, and longer than leaving it out: the
    // decrypted reasoning reached the chat template (it renders reasoning after the last user turn).
    expect(sealed).toBe(plain);
    expect(sealed).toBeGreaterThan(without);
  });

  it('a background task seals its reasoning too (stored with the response, retrieved as it was made)', async () => {
    const queued = await clientA.responses.create({
      model: encMaya.model,
      input: 'Hello',
      max_output_tokens: 128,
      ...thinking,
      store: true,
      background: true,
    });
    let final = queued;
    while (final.status === 'queued' || final.status === 'in_progress') {
      await new Promise((resolve) => setTimeout(resolve, 100));
      final = await clientA.responses.retrieve(queued.id);
    }
    expect(final.status).toBe('completed');
    const item = final.output.find((entry) => entry.type === 'reasoning')!;
    expect(typeof item.encrypted_content).toBe('string');
    const { content: _content, ...encryptedOnly } = item;
    // The stored copy's content opens for its key scope: replayed, it renders like the plain item.
    const replay = (reasoningItem: Item) =>
      clientA.responses.create({
        model: encMaya.model,
        input: [{ role: 'user', content: 'Hello' }, reasoningItem],
        max_output_tokens: 16,
        ...thinking,
      });
    expect((await replay(encryptedOnly)).usage!.input_tokens).toBe(
      (await replay({ ...item, encrypted_content: null })).usage!.input_tokens,
    );
  });

  it('tampered encrypted_content → 400 invalid_encrypted_content naming the item', async () => {
    const bytes = Buffer.from(reasoning.encrypted_content!, 'base64');
    bytes[bytes.length - 20]! ^= 0x01;
    const { content: _content, ...encryptedOnly } = reasoning;
    const error = await rejection(
      clientA.responses.create({
        model: encMaya.model,
        input: [user, { ...encryptedOnly, encrypted_content: bytes.toString('base64') }, call, output],
        tools,
        ...thinking,
      }),
    );
    expect(error.status).toBe(400);
    expect(error).toMatchObject({ code: 'invalid_encrypted_content', param: 'input[1].encrypted_content' });
  });

  it("another API key cannot replay it: 400 invalid_encrypted_content (bound to the caller's key scope)", async () => {
    const { content: _content, ...encryptedOnly } = reasoning;
    const error = await rejection(
      clientB.responses.create({
        model: encMaya.model,
        input: [user, encryptedOnly, call, output],
        tools,
        ...thinking,
      }),
    );
    expect(error.status).toBe(400);
    expect(error).toMatchObject({ code: 'invalid_encrypted_content', param: 'input[1].encrypted_content' });
  });

  it('a default server (setting off) refuses encrypted input, summaries and include with thinking, naming the setting', async () => {
    const { content: _content, ...encryptedOnly } = reasoning;
    const cases: Array<[OpenAI.Responses.ResponseCreateParamsNonStreaming, string]> = [
      [{ model: maya.model, input: [user, encryptedOnly, call, output], tools }, 'input[1].encrypted_content'],
      [{ model: maya.model, input: 'Hello', reasoning: { effort: 'medium', summary: 'auto' } }, 'reasoning.summary'],
      [{ model: maya.model, input: 'Hello', include: ['reasoning.encrypted_content'] }, 'include[0]'],
    ];
    for (const [body, param] of cases) {
      const error = await rejection(client.responses.create(body));
      expect(error.status).toBe(400);
      expect(error).toMatchObject({ param });
      expect(error.message).toContain('MAYA_GLM_RESPONSES_ENCRYPTED_REASONING=on');
    }
  });
});

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

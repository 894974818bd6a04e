/** The official openai SDK (v6) against Maya on a loopback port: its error classes parse Maya's errors. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { listenTestApp, type ListeningApp } from '../helpers/test-app.ts';
import { notFound, tooManyRequests } from '../../contract/errors.ts';

let served: ListeningApp;
let client: OpenAI;

beforeAll(async () => {
  served = await listenTestApp({
    server: { apiKeys: ['sk-test'], maxBodyBytes: 4096 },
    handlers: {
      getResponse: async (ctx) => {
        throw notFound('response', ctx.state.params.response_id!);
      },
      cancelResponse: async () => {
        throw tooManyRequests('Too many background tasks for this key.', 'rate_limit_exceeded', 1);
      },
      deleteResponse: async () => {
        throw new Error('unexpected');
      },
    },
  });
  client = new OpenAI({ baseURL: `${served.origin}/v1`, apiKey: 'sk-test', maxRetries: 0 });
});

afterAll(async () => {
  await served.close();
});

async function caught(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error('expected the SDK call to throw');
}

describe('openai SDK error classes', () => {
  it('models.list works with the key', async () => {
    const page = await client.models.list();
    expect(page.data.map((m) => m.id)).toEqual(['maya-test']);
  });

  it('BadRequestError with code and param (rejection row)', async () => {
    const err = await caught(client.responses.create({ model: 'maya-test', input: 'hi', truncation: 'auto' }));
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    const api = err as InstanceType<typeof OpenAI.BadRequestError>;
    expect(api.status).toBe(400);
    expect(api.code).toBe('unsupported_value');
    expect(api.param).toBe('truncation');
    expect(api.type).toBe('invalid_request_error');
    expect(api.requestID).toMatch(/^req_/);
  });

  it('BadRequestError for a schema violation names the JSON path', async () => {
    const input = [{ role: 'user', content: [{ type: 'input_text' }] }] as unknown as OpenAI.Responses.ResponseInput;
    const err = (await caught(client.responses.create({ model: 'maya-test', input }))) as InstanceType<
      typeof OpenAI.BadRequestError
    >;
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err.param).toBe('input[0].content[0].text');
    expect(err.code).toBe('missing_required_parameter');
  });

  it('AuthenticationError for a wrong key', async () => {
    const bad = new OpenAI({ baseURL: `${served.origin}/v1`, apiKey: 'sk-wrong', maxRetries: 0 });
    const err = (await caught(bad.models.list())) as InstanceType<typeof OpenAI.AuthenticationError>;
    expect(err).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(err.status).toBe(401);
    expect(err.code).toBe('invalid_api_key');
  });

  it('NotFoundError for an unknown response id', async () => {
    const err = (await caught(client.responses.retrieve('resp_missing'))) as InstanceType<typeof OpenAI.NotFoundError>;
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect(err.code).toBe('not_found');
    expect(err.message).toContain('resp_missing');
  });

  it('RateLimitError for 429', async () => {
    const err = (await caught(client.responses.cancel('resp_1'))) as InstanceType<typeof OpenAI.RateLimitError>;
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    expect(err.code).toBe('rate_limit_exceeded');
    expect(err.headers?.get('retry-after')).toBe('1');
  });

  it('InternalServerError for an unexpected failure', async () => {
    const err = (await caught(client.responses.delete('resp_1'))) as InstanceType<typeof OpenAI.InternalServerError>;
    expect(err).toBeInstanceOf(OpenAI.InternalServerError);
    expect(err.status).toBe(500);
    expect(err.code).toBe('server_error');
  });

  it('APIError with status 413 for an oversized body', async () => {
    const err = (await caught(
      client.responses.create({ model: 'maya-test', input: 'x'.repeat(10_000) }),
    )) as InstanceType<typeof OpenAI.APIError>;
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(err.status).toBe(413);
    expect(err.code).toBe('request_too_large');
  });
});

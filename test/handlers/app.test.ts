import { describe, expect, it, vi } from 'vitest';
import { request as httpRequest } from 'node:http';
import { createTestApp, listenTestApp } from '../helpers/test-app.ts';
import type { Handler } from '../../handlers/app-deps.ts';
import { notImplemented } from '../../handlers/index.ts';

const ERROR_KEYS = ['code', 'message', 'param', 'type'];

function spy(): Handler & { mock: { calls: unknown[][] } } {
  return vi.fn<Handler>(async (ctx) => {
    ctx.body = { body: ctx.state.body, query: ctx.state.query, params: ctx.state.params, scope: ctx.state.scope };
  });
}

describe('routing', () => {
  it('unknown path → 404 in the error shape', async () => {
    const { request } = createTestApp();
    const res = await request.get('/v1/nope');
    expect(res.status).toBe(404);
    expect(Object.keys(res.body.error).sort()).toEqual(ERROR_KEYS);
    expect(res.body.error).toMatchObject({ type: 'invalid_request_error', code: 'unknown_url', param: null });
  });

  it('known path, wrong method → 405 with Allow', async () => {
    const { request } = createTestApp();
    const res = await request.put('/v1/models');
    expect(res.status).toBe(405);
    expect(res.headers.allow).toBe('GET');
    expect(res.body.error.code).toBe('method_not_allowed');
  });

  it('an operation bound to notImplemented → 501 not_implemented', async () => {
    const { request } = createTestApp({ handlers: { cancelResponse: notImplemented('cancelResponse') } });
    const res = await request.post('/v1/responses/resp_1/cancel');
    expect(res.status).toBe(501);
    expect(res.body.error).toEqual({
      message: expect.any(String),
      type: 'server_error',
      param: null,
      code: 'not_implemented',
    });
  });

  it('every response carries an x-request-id', async () => {
    const { request } = createTestApp();
    const res = await request.get('/health');
    expect(res.headers['x-request-id']).toMatch(/^req_[0-9a-f]{24}$/);
  });
});

describe('body reading', () => {
  it('malformed JSON → 400 invalid_json, handler not reached', async () => {
    const handler = spy();
    const { request } = createTestApp({ handlers: { createResponse: handler } });
    const res = await request.post('/v1/responses').set('content-type', 'application/json').send('{"input": "hi",');
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_json', param: null });
    expect(handler).not.toHaveBeenCalled();
  });

  it.each([['[1,2]'], ['"text"'], ['42'], ['null']])('non-object JSON %s → 400 invalid_type', async (text) => {
    const handler = spy();
    const { request } = createTestApp({ handlers: { createResponse: handler } });
    const res = await request.post('/v1/responses').set('content-type', 'application/json').send(text);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_type');
    expect(handler).not.toHaveBeenCalled();
  });

  it('empty body on an operation that requires one → 400', async () => {
    const { request } = createTestApp();
    const res = await request.post('/v1/responses');
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_type');
  });

  it('body over MAYA_MAX_BODY_BYTES → 413 (declared length)', async () => {
    const handler = spy();
    const { request } = createTestApp({ server: { maxBodyBytes: 1024 }, handlers: { createResponse: handler } });
    const res = await request
      .post('/v1/responses')
      .set('content-type', 'application/json')
      .send({ input: 'x'.repeat(2000) });
    expect(res.status).toBe(413);
    expect(res.body.error).toMatchObject({ type: 'invalid_request_error', code: 'request_too_large' });
    expect(handler).not.toHaveBeenCalled();
  });

  it('body over the limit without Content-Length (chunked) → 413', async () => {
    const served = await listenTestApp({ server: { maxBodyBytes: 1024 } });
    try {
      const status = await new Promise<number>((resolve, reject) => {
        const req = httpRequest(
          `${served.origin}/v1/responses`,
          { method: 'POST', headers: { 'content-type': 'application/json' } },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on('error', reject);
        for (let i = 0; i < 10; i++) req.write('{"input":"'.padEnd(600, 'y'));
        req.end();
      });
      expect(status).toBe(413);
    } finally {
      await served.close();
    }
  });

  it('a body at the limit is accepted', async () => {
    const handler = spy();
    const body = JSON.stringify({ input: 'z'.repeat(50) });
    const { request } = createTestApp({
      server: { maxBodyBytes: Buffer.byteLength(body) },
      handlers: { createResponse: handler },
    });
    const res = await request.post('/v1/responses').set('content-type', 'application/json').send(body);
    expect(res.status).toBe(200);
    expect(res.body.body).toEqual({ input: 'z'.repeat(50) });
  });

  it('JSON is read whatever the Content-Type (curl -d)', async () => {
    const handler = spy();
    const { request } = createTestApp({ handlers: { createResponse: handler } });
    const res = await request
      .post('/v1/responses')
      .set('content-type', 'application/x-www-form-urlencoded')
      .send('{"input":"Hello"}');
    expect(res.status).toBe(200);
    expect(res.body.body).toEqual({ input: 'Hello' });
  });
});

describe('schema validation', () => {
  it('unknown body parameter → 400 unknown_parameter naming it', async () => {
    const handler = spy();
    const { request } = createTestApp({ handlers: { createResponse: handler } });
    const res = await request.post('/v1/responses').send({ input: 'hi', temprature: 1 });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'unknown_parameter', param: 'temprature' });
    expect(handler).not.toHaveBeenCalled();
  });

  it('wrong type deep in the input → param is the JSON path', async () => {
    const { request } = createTestApp();
    const res = await request.post('/v1/responses').send({ input: [{ role: 'user', content: 5 }] });
    expect(res.status).toBe(400);
    expect(res.body.error.param).toBe('input[0].content');
    expect(res.body.error.code).toBe('invalid_type');
  });

  it('a content part with a missing field → names the missing field', async () => {
    const { request } = createTestApp();
    const res = await request
      .post('/v1/responses')
      .send({ input: [{ role: 'user', content: [{ type: 'input_text' }] }] });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'missing_required_parameter', param: 'input[0].content[0].text' });
  });

  it('an unknown content-part type → param ends in .type', async () => {
    const { request } = createTestApp();
    const res = await request
      .post('/v1/responses')
      .send({ input: [{ role: 'user', content: [{ type: 'input_video', url: 'x' }] }] });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_value', param: 'input[0].content[0].type' });
  });

  it('a function tool without a name → tools[1].name', async () => {
    const { request } = createTestApp();
    const tools = [{ type: 'function', name: 'ok' }, { type: 'function' }];
    const res = await request.post('/v1/responses').send({ input: 'hi', tools });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'missing_required_parameter', param: 'tools[1].name' });
  });

  it('a number below the schema minimum → integer_below_min_value', async () => {
    const { request } = createTestApp();
    const res = await request.post('/v1/responses').send({ input: 'hi', max_output_tokens: 3 });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'integer_below_min_value', param: 'max_output_tokens' });
  });

  it('input of the wrong JSON type → invalid_type on input', async () => {
    const { request } = createTestApp();
    const res = await request.post('/v1/responses').send({ input: 7 });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_type', param: 'input' });
  });

  it('a valid request reaches the handler with the body on ctx.state', async () => {
    const handler = spy();
    const { request } = createTestApp({ handlers: { createResponse: handler } });
    const body = {
      input: [{ role: 'user', content: [{ type: 'input_text', text: 'hi' }] }],
      max_output_tokens: 64,
      store: false,
    };
    const res = await request.post('/v1/responses').send(body);
    expect(res.status).toBe(200);
    expect(res.body.body).toEqual(body);
    expect(handler).toHaveBeenCalledTimes(1);
  });
});

describe('query and path parameters', () => {
  it('DELETE accepts no query options → 400 unknown_parameter', async () => {
    const handler = spy();
    const { request } = createTestApp({ handlers: { deleteResponse: handler } });
    const res = await request.delete('/v1/responses/resp_1?include=x');
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'unknown_parameter', param: 'include' });
    expect(handler).not.toHaveBeenCalled();
  });

  it('query values are coerced per schema, defaults applied, brackets folded', async () => {
    const handler = spy();
    const { request } = createTestApp({ handlers: { listInputItems: handler, getResponse: handler } });
    const list = await request.get('/v1/responses/resp_1/input_items?limit=5&order=asc');
    expect(list.status).toBe(200);
    expect(list.body.query).toMatchObject({ limit: 5, order: 'asc' });
    expect(list.body.params).toEqual({ response_id: 'resp_1' });
    const get = await request.get(
      '/v1/responses/resp_2?stream=true&starting_after=3&include%5B%5D=reasoning.encrypted_content',
    );
    expect(get.status).toBe(200);
    expect(get.body.query).toMatchObject({ stream: true, starting_after: 3, include: ['reasoning.encrypted_content'] });
  });

  it('a query value out of range → 400 naming the parameter', async () => {
    const { request } = createTestApp();
    const res = await request.get('/v1/responses/resp_1/input_items?limit=500');
    expect(res.status).toBe(400);
    expect(res.body.error.param).toBe('limit');
  });

  it('a non-numeric limit → 400 naming the parameter', async () => {
    const { request } = createTestApp();
    const res = await request.get('/v1/responses/resp_1/input_items?limit=many');
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ param: 'limit', code: 'invalid_type' });
  });
});

describe('unexpected errors', () => {
  it('→ 500 server_error with a generic message, logged without content', async () => {
    const errors: Record<string, unknown>[] = [];
    const logger = {
      info: () => {},
      warn: () => {},
      error: (message: string, fields?: Record<string, unknown>) => errors.push({ message, ...fields }),
    };
    const { request } = createTestApp({
      deps: { logger },
      handlers: {
        createResponse: async () => {
          throw new TypeError('boom');
        },
      },
    });
    const res = await request.post('/v1/responses').send({ input: 'SECRET PROMPT TEXT' });
    expect(res.status).toBe(500);
    expect(res.body).toEqual({
      error: { message: expect.any(String), type: 'server_error', param: null, code: 'server_error' },
    });
    expect(res.body.error.message).not.toContain('boom');
    // The one logger also carries the access log's line for the 500.
    expect(errors.map((e) => e.message)).toEqual(['unhandled error', 'request']);
    expect(JSON.stringify(errors)).toContain('TypeError: boom');
    expect(JSON.stringify(errors)).not.toContain('SECRET PROMPT TEXT');
  });
});

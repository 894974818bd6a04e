/**
 * The access log (handlers/access-log.ts): one JSON line per request through the one logger
 * (handlers/logger.ts) with method, route, operation, status, duration, request id and key scope;
 * a 4xx carries its `param` and `code`; never the API key or any request content; the logger's
 * level (MAYA_LOG_LEVEL) filters; the health probe's 503 while loading is info, not an error.
 */
import { describe, expect, it } from 'vitest';
import { createTestApp, stubRuntime } from '../helpers/test-app.ts';
import { scopeOf } from '../../handlers/auth.ts';
import { createLogger } from '../../handlers/logger.ts';
import type { LogLevel } from '../../config/settings.ts';
import type { ModelRuntime } from '../../runtime/model-runtime.ts';

const KEY = 'sk-secret-access-log-key';
const PROMPT = 'my private prompt text';

/** An app whose logger writes to `lines` at logLevel; undefined = the tests' silent logger. */
function appWithLog(
  logLevel: LogLevel | undefined,
  apiKeys: string[] = [KEY],
  runtime: ModelRuntime | null = stubRuntime({ id: 'maya-demo' }),
) {
  const lines: string[] = [];
  const destination = { write: (line: string) => void lines.push(line) };
  const app = createTestApp({
    runtime,
    server: { apiKeys },
    ...(logLevel === undefined ? {} : { deps: { logger: createLogger(logLevel, destination) } }),
  });
  /** Lines are written when the response finishes; supertest resolves after that. */
  const records = () => lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  return { ...app, lines, records };
}

describe('access log', () => {
  it('a 200: method, route, operation, status, duration, request id and key scope, at info', async () => {
    const { request, records } = appWithLog('info');
    const res = await request.get('/v1/models/maya-demo').set('Authorization', `Bearer ${KEY}`);
    expect(res.status).toBe(200);
    const [line, ...rest] = records();
    expect(rest).toEqual([]);
    expect(line).toMatchObject({
      level: 30,
      message: 'request',
      method: 'GET',
      route: '/v1/models/{model}',
      operation: 'retrieveModel',
      status: 200,
      request_id: res.headers['x-request-id'],
      scope: scopeOf(KEY),
    });
    expect(line!.duration_ms).toEqual(expect.any(Number));
    expect(line!.time).toEqual(expect.any(String));
    expect(line).not.toHaveProperty('param');
  });

  it('a 400 rejection logs its param and code at warn, and neither the key nor the prompt', async () => {
    const { request, lines, records } = appWithLog('info');
    const res = await request.post('/v1/responses').set('x-api-key', KEY).send({ input: PROMPT, presence_penalty: 1 });
    expect(res.status).toBe(400);
    expect(records()).toEqual([
      expect.objectContaining({
        level: 40,
        status: 400,
        operation: 'createResponse',
        route: '/v1/responses',
        param: 'presence_penalty',
        code: 'unknown_parameter',
      }),
    ]);
    const text = lines.join('');
    expect(text).not.toContain(KEY);
    expect(text).not.toContain(PROMPT);
  });

  it("a 400 in Anthropic's envelope (/v1/messages) logs its param and code too, never the prompt", async () => {
    const { request, lines, records } = appWithLog('info');
    const res = await request
      .post('/v1/messages')
      .set('x-api-key', KEY)
      .send({ model: 'm', max_tokens: 8, messages: [{ role: 'user', content: PROMPT }], top_k: -3 });
    expect(res.status).toBe(400);
    expect(records()).toEqual([
      expect.objectContaining({
        status: 400,
        operation: 'createMessage',
        param: 'top_k',
        code: 'integer_below_min_value',
      }),
    ]);
    expect(lines.join('')).not.toContain(PROMPT);
  });

  it('a 401 and an unknown route are logged too (no scope, no route)', async () => {
    const { request, records } = appWithLog('info');
    await request.get('/v1/models').set('Authorization', 'Bearer wrong-key');
    await request.get('/v2/nothing').set('Authorization', `Bearer ${KEY}`);
    expect(records()).toEqual([
      expect.objectContaining({
        status: 401,
        operation: 'listModels',
        scope: null,
        code: 'invalid_api_key',
        param: null,
      }),
      expect.objectContaining({ status: 404, operation: null, route: null, code: 'unknown_url' }),
    ]);
    expect(JSON.stringify(records())).not.toContain('wrong-key');
  });

  it('MAYA_LOG_LEVEL=warn keeps the 4xx and drops the 200', async () => {
    const { request, records } = appWithLog('warn');
    await request.get('/v1/models').set('Authorization', `Bearer ${KEY}`);
    await request.get('/v1/models/other').set('Authorization', `Bearer ${KEY}`);
    expect(records()).toEqual([expect.objectContaining({ status: 404, param: 'model', code: 'model_not_found' })]);
  });

  it('/health answering 503 while the model loads is logged at info; a 500 at error', async () => {
    const loading = appWithLog('info', [], null);
    const res = await loading.request.get('/health');
    expect(res.status).toBe(503);
    expect(loading.records()).toEqual([
      expect.objectContaining({ level: 30, status: 503, operation: 'getHealth', route: '/health' }),
    ]);
    const lines: string[] = [];
    const failing = createTestApp({
      deps: { logger: createLogger('warn', { write: (line: string) => void lines.push(line) }) },
      handlers: {
        listModels: async () => {
          throw new TypeError('boom');
        },
      },
    });
    expect((await failing.request.get('/v1/models')).status).toBe(500);
    const records = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(records).toEqual([
      expect.objectContaining({ level: 50, message: 'unhandled error', operation: 'listModels' }),
      expect.objectContaining({ level: 50, message: 'request', status: 500, operation: 'listModels' }),
    ]);
  });

  it('silent, or no logger (the silent one of an app built without one), logs nothing', async () => {
    for (const level of ['silent', undefined] as const) {
      const { request, lines } = appWithLog(level);
      await request.get('/v1/models').set('Authorization', `Bearer ${KEY}`);
      expect(lines).toEqual([]);
    }
  });
});

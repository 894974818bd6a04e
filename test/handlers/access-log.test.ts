/**
 * The access log (handlers/access-log.ts): one JSON line per request with method, route,
 * operation, status, duration, request id and key scope; a 4xx carries its `param` and `code`;
 * never the API key or any request content; MAYA_LOG_LEVEL filters; unset = no access log.
 */
import { describe, expect, it } from 'vitest';
import { createTestApp, stubRuntime } from '../helpers/test-app.ts';
import { scopeOf } from '../../handlers/auth.ts';
import type { LogLevel } from '../../config/settings.ts';

const KEY = 'sk-secret-access-log-key';
const PROMPT = 'my private prompt text';

function appWithLog(logLevel: LogLevel | undefined, apiKeys: string[] = [KEY]) {
  const lines: string[] = [];
  const app = createTestApp({
    runtime: stubRuntime({ id: 'maya-demo' }),
    server: { apiKeys, ...(logLevel === undefined ? {} : { logLevel }) },
    deps: { accessLogDestination: { write: (line: string) => void lines.push(line) } },
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
      .send({ model: 'm', max_tokens: 8, messages: [{ role: 'user', content: PROMPT }], top_k: 3 });
    expect(res.status).toBe(400);
    expect(records()).toEqual([
      expect.objectContaining({
        status: 400,
        operation: 'createMessage',
        param: 'top_k',
        code: 'unsupported_parameter',
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

  it('silent, or no level (an app built without loadServerSettings), logs nothing', async () => {
    for (const level of ['silent', undefined] as const) {
      const { request, lines } = appWithLog(level);
      await request.get('/v1/models').set('Authorization', `Bearer ${KEY}`);
      expect(lines).toEqual([]);
    }
  });
});

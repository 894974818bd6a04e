import { describe, expect, it, vi } from 'vitest';
import { createTestApp } from '../helpers/test-app.ts';
import type { Handler } from '../../handlers/app-deps.ts';
import { ANONYMOUS_SCOPE, createAuthenticator, scopeOf } from '../../handlers/auth.ts';

function scopedApp(apiKeys: string[]) {
  const handler = vi.fn<Handler>(async (ctx) => {
    ctx.body = { scope: ctx.state.scope };
  });
  return { handler, ...createTestApp({ server: { apiKeys }, handlers: { listModels: handler } }) };
}

describe('API keys', () => {
  it('Bearer and x-api-key forms are the same credential with the same scope', async () => {
    const { request } = scopedApp(['key-a', 'key-b']);
    const bearer = await request.get('/v1/models').set('authorization', 'Bearer key-a');
    const header = await request.get('/v1/models').set('x-api-key', 'key-a');
    expect(bearer.status).toBe(200);
    expect(header.status).toBe(200);
    expect(bearer.body.scope).toBe(header.body.scope);
  });

  it('different keys get different scopes, and no scope contains the key', async () => {
    const { request } = scopedApp(['key-a', 'key-b']);
    const a = await request.get('/v1/models').set('authorization', 'Bearer key-a');
    const b = await request.get('/v1/models').set('authorization', 'Bearer key-b');
    expect(a.body.scope).not.toBe(b.body.scope);
    expect(a.body.scope).not.toContain('key-a');
    expect(a.body.scope).toMatch(/^key_[0-9a-f]{32}$/);
  });

  it('missing key → 401 invalid_api_key, handler not reached', async () => {
    const { request, handler } = scopedApp(['key-a']);
    const res = await request.get('/v1/models');
    expect(res.status).toBe(401);
    expect(res.body).toEqual({
      error: { message: expect.any(String), type: 'invalid_request_error', param: null, code: 'invalid_api_key' },
    });
    expect(handler).not.toHaveBeenCalled();
  });

  it('wrong key → 401 and the key is not echoed', async () => {
    const { request } = scopedApp(['key-a']);
    const res = await request.get('/v1/models').set('authorization', 'Bearer not-the-key');
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('invalid_api_key');
    expect(JSON.stringify(res.body)).not.toContain('not-the-key');
  });

  it('a key that is a prefix of a real key is refused', async () => {
    const { request } = scopedApp(['key-abc']);
    expect((await request.get('/v1/models').set('x-api-key', 'key-ab')).status).toBe(401);
  });

  it('a malformed Authorization header falls back to x-api-key', async () => {
    const { request } = scopedApp(['key-a']);
    const res = await request.get('/v1/models').set('authorization', 'Basic abc').set('x-api-key', 'key-a');
    expect(res.status).toBe(200);
  });

  it('without configured keys everybody shares the anonymous scope', async () => {
    const { request } = scopedApp([]);
    const none = await request.get('/v1/models');
    const some = await request.get('/v1/models').set('authorization', 'Bearer whatever');
    expect(none.body.scope).toBe(ANONYMOUS_SCOPE);
    expect(some.body.scope).toBe(ANONYMOUS_SCOPE);
  });

  it('validation errors come after auth: an unauthenticated bad request is a 401', async () => {
    const { request } = createTestApp({ server: { apiKeys: ['k'] } });
    const res = await request.post('/v1/responses').send('{broken');
    expect(res.status).toBe(401);
  });

  it.each([['/health'], ['/openapi.json'], ['/metrics/prometheus']])(
    '%s needs no key (security: [] in the contract)',
    async (path) => {
      const { request } = createTestApp({ server: { apiKeys: ['k'] } });
      expect((await request.get(path)).status).toBe(200);
    },
  );

  it.each([['/v1/status'], ['/v1/models']])('%s needs a key', async (path) => {
    const { request } = createTestApp({ server: { apiKeys: ['k'] } });
    expect((await request.get(path)).status).toBe(401);
    expect((await request.get(path).set('authorization', 'Bearer k')).status).toBe(200);
  });
});

describe('createAuthenticator', () => {
  it('scopeOf is stable within the process and is what requests get', () => {
    const auth = createAuthenticator(['secret']);
    expect(auth.scopeFor({ authorization: 'Bearer secret' })).toBe(scopeOf('secret'));
    expect(auth.scopeFor({ 'x-api-key': 'secret' })).toBe(scopeOf('secret'));
    expect(auth.isEnabled).toBe(true);
    expect(createAuthenticator([]).isEnabled).toBe(false);
  });
});

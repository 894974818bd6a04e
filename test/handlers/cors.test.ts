import { describe, expect, it } from 'vitest';
import { createTestApp } from '../helpers/test-app.ts';
import { isOriginAllowed } from '../../handlers/cors.ts';

function preflight(
  request: ReturnType<typeof createTestApp>['request'],
  origin: string,
  headers = 'authorization, content-type',
) {
  return request
    .options('/v1/responses')
    .set('origin', origin)
    .set('access-control-request-method', 'POST')
    .set('access-control-request-headers', headers);
}

describe('CORS', () => {
  it('default: a loopback origin gets a 204 preflight with methods and headers, without a key', async () => {
    const { request } = createTestApp({ server: { apiKeys: ['k'] } });
    const res = await preflight(
      request,
      'http://localhost:5173',
      'authorization, content-type, x-stainless-os, x-stainless-foo, openai-beta',
    );
    expect(res.status).toBe(204);
    expect(res.headers['access-control-allow-origin']).toBe('http://localhost:5173');
    expect(res.headers['access-control-allow-methods']).toContain('POST');
    const allowed = String(res.headers['access-control-allow-headers']).split(', ');
    for (const name of [
      'authorization',
      'content-type',
      'x-api-key',
      'x-stainless-os',
      'x-stainless-foo',
      'openai-beta',
    ])
      expect(allowed).toContain(name);
  });

  it('the Anthropic SDK in a browser: its anthropic-* headers are allowed, request-id is exposed', async () => {
    const { request } = createTestApp();
    const res = await request
      .options('/v1/messages')
      .set('origin', 'http://localhost:5173')
      .set('access-control-request-method', 'POST')
      .set(
        'access-control-request-headers',
        'x-api-key, anthropic-version, anthropic-dangerous-direct-browser-access, anthropic-future-header',
      );
    expect(res.status).toBe(204);
    const allowed = String(res.headers['access-control-allow-headers']).split(', ');
    for (const name of [
      'x-api-key',
      'anthropic-version',
      'anthropic-dangerous-direct-browser-access',
      'anthropic-future-header',
    ])
      expect(allowed).toContain(name);
    const error = await request.post('/v1/messages').set('origin', 'http://localhost:5173').send({});
    expect(error.headers['access-control-expose-headers']).toContain('request-id');
    expect(error.headers['request-id']).toMatch(/^req_/);
  });

  it('default: a non-loopback origin gets no CORS headers', async () => {
    const { request } = createTestApp();
    const pre = await preflight(request, 'https://evil.example');
    expect(pre.headers['access-control-allow-origin']).toBeUndefined();
    expect(pre.headers['access-control-allow-methods']).toBeUndefined();
    const get = await request.get('/v1/models').set('origin', 'https://evil.example');
    expect(get.status).toBe(200);
    expect(get.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('simple requests from an allowed origin carry the origin, also on errors', async () => {
    const { request } = createTestApp({ server: { apiKeys: ['k'] } });
    const res = await request.get('/v1/models').set('origin', 'http://127.0.0.1:3000');
    expect(res.status).toBe(401);
    expect(res.headers['access-control-allow-origin']).toBe('http://127.0.0.1:3000');
    expect(res.headers.vary).toContain('Origin');
  });

  it('MAYA_CORS_ORIGINS lists the allowed origins exactly', async () => {
    const { request } = createTestApp({ server: { corsOrigins: ['https://app.example'] } });
    expect((await preflight(request, 'https://app.example')).headers['access-control-allow-origin']).toBe(
      'https://app.example',
    );
    expect((await preflight(request, 'http://localhost:3000')).headers['access-control-allow-origin']).toBeUndefined();
  });

  it('`*` allows any origin', async () => {
    const { request } = createTestApp({ server: { corsOrigins: ['*'] } });
    expect((await preflight(request, 'https://anything.example')).headers['access-control-allow-origin']).toBe(
      'https://anything.example',
    );
  });

  it('loopback matching is exact about the host', () => {
    expect(isOriginAllowed('http://[::1]:8080', undefined)).toBe(true);
    expect(isOriginAllowed('https://127.0.0.1', undefined)).toBe(true);
    expect(isOriginAllowed('http://localhost.evil.example', undefined)).toBe(false);
    expect(isOriginAllowed('http://127.0.0.1.evil.example', undefined)).toBe(false);
    expect(isOriginAllowed('null', undefined)).toBe(false);
  });
});

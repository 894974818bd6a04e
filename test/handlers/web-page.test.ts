/**
 * The web page's static files (handlers/web-page.ts) in-process, on a small built page of our own:
 * the headers (strict CSP, caching), no key needed while the API needs one, MAYA_WEB=off and an
 * unbuilt page answering 404 as before, and nothing outside the built files served.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createTestApp } from '../helpers/test-app.ts';
import { WEB_CSP } from '../../handlers/web-page.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'maya-web-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const INDEX = '<!doctype html><title>Maya</title><script type="module" src="/assets/index-AbC123.js"></script>';
mkdirSync(path.join(dir, 'assets'));
writeFileSync(path.join(dir, 'index.html'), INDEX);
writeFileSync(path.join(dir, 'assets/index-AbC123.js'), 'console.log(1)');
writeFileSync(path.join(dir, 'assets/index-Xy9.css'), 'body{}');

describe('GET / and /assets/*', () => {
  it('index.html with a strict CSP (no inline script, this origin only), revalidated by ETag', async () => {
    const { request } = createTestApp({ webDir: dir });
    const res = await request.get('/');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.text).toBe(INDEX);
    const csp = res.headers['content-security-policy'];
    expect(csp).toBe(WEB_CSP);
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).not.toContain('unsafe-eval');
    expect(csp).toContain("connect-src 'self'");
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['cache-control']).toBe('no-cache');
    const again = await request.get('/').set('If-None-Match', res.headers.etag!);
    expect(again.status).toBe(304);
    expect(again.text).toBe('');
  });

  it('hashed assets are cached for a year, typed by extension; HEAD works', async () => {
    const { request } = createTestApp({ webDir: dir });
    const js = await request.get('/assets/index-AbC123.js');
    expect(js.status).toBe(200);
    expect(js.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(js.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect((await request.get('/assets/index-Xy9.css')).headers['content-type']).toBe('text/css; charset=utf-8');
    const head = await request.head('/assets/index-AbC123.js');
    expect(head.status).toBe(200);
    expect(head.headers['content-length']).toBe(String('console.log(1)'.length));
  });

  it('needs no key while the API does', async () => {
    const { request } = createTestApp({ webDir: dir, server: { apiKeys: ['sk-right'] } });
    expect((await request.get('/')).status).toBe(200);
    expect((await request.get('/assets/index-AbC123.js')).status).toBe(200);
    expect((await request.get('/v1/models')).status).toBe(401);
  });

  it('serves nothing but the built files: other paths, methods and traversal answer as the API does', async () => {
    const { request } = createTestApp({ webDir: dir });
    const missing = await request.get('/assets/nope.js');
    expect(missing.status).toBe(404);
    expect(missing.body.error).toMatchObject({ type: 'invalid_request_error' });
    expect((await request.get('/assets/../index.html')).status).toBe(404);
    expect((await request.get('/assets/%2e%2e/index.html')).status).toBe(404);
    expect((await request.get('/index.html')).status).toBe(404);
    expect((await request.post('/').send({})).status).toBe(404);
  });
});

describe('the page off', () => {
  it('MAYA_WEB=off: / answers the 404 it answered before the page existed', async () => {
    const { request } = createTestApp({ webDir: dir, server: { web: false } });
    const res = await request.get('/');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({
      error: {
        message: expect.stringContaining('/'),
        type: 'invalid_request_error',
        param: null,
        code: expect.any(String),
      },
    });
    expect(res.headers['content-security-policy']).toBeUndefined();
    expect((await request.get('/assets/index-AbC123.js')).status).toBe(404);
  });

  it('an unbuilt page: / is 404 and the server says how to build it', async () => {
    const warnings: string[] = [];
    const logger = { info: () => {}, error: () => {}, warn: (message: string) => void warnings.push(message) };
    const { request } = createTestApp({ webDir: path.join(dir, 'missing'), deps: { logger } });
    expect((await request.get('/')).status).toBe(404);
    // One warning at start-up (the access log adds its own for the 404).
    expect(warnings.filter((message) => message.includes('web/dist'))).toEqual([
      expect.stringContaining('npm run web:build'),
    ]);
  });
});

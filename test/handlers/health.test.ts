import { describe, expect, it } from 'vitest';
import { createTestApp, stubRuntime } from '../helpers/test-app.ts';

describe('GET /health', () => {
  it('503 {status:"loading"} until the model is loaded, then 200 {status:"ok"}', async () => {
    const { request, setRuntime } = createTestApp({ runtime: null });
    const loading = await request.get('/health');
    expect(loading.status).toBe(503);
    expect(loading.body).toEqual({ status: 'loading' });
    expect(loading.headers['retry-after']).toBe('5');
    setRuntime(stubRuntime());
    const ready = await request.get('/health');
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({ status: 'ok' });
  });

  it('while loading, model endpoints answer 503 model_loading in the error shape', async () => {
    const { request } = createTestApp({ runtime: null });
    for (const path of ['/v1/models', '/v1/status']) {
      const res = await request.get(path);
      expect(res.status).toBe(503);
      expect(res.body.error).toMatchObject({ type: 'server_error', code: 'model_loading', param: null });
    }
  });

  it('rejects query parameters it does not declare', async () => {
    const { request } = createTestApp();
    const res = await request.get('/health?verbose=1');
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ param: 'verbose', code: 'unknown_parameter' });
  });
});

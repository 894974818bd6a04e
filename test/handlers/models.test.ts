import { describe, expect, it } from 'vitest';
import { createTestApp, stubRuntime } from '../helpers/test-app.ts';

describe('GET /v1/models', () => {
  it('lists the loaded model in OpenAI list shape', async () => {
    const { request } = createTestApp({ runtime: stubRuntime({ id: 'maya-demo', createdAt: 1_750_000_000 }) });
    const res = await request.get('/v1/models');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.body).toEqual({
      object: 'list',
      data: [{ id: 'maya-demo', object: 'model', created: 1_750_000_000, owned_by: 'maya' }],
    });
  });
});

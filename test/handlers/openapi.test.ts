import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { createTestApp } from '../helpers/test-app.ts';

describe('GET /openapi.json', () => {
  it('serves openapi/openapi.yaml as JSON, without a key', async () => {
    const { request } = createTestApp({ server: { apiKeys: ['k'] } });
    const res = await request.get('/openapi.json');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const yaml = parse(readFileSync(new URL('../../openapi/openapi.yaml', import.meta.url), 'utf8'));
    expect(res.body).toEqual(yaml);
    expect(res.body.paths['/v1/responses'].post.operationId).toBe('createResponse');
  });
});

import { describe, expect, it } from 'vitest';
import { createTestApp } from '../helpers/test-app.ts';
import { openapiDocument } from '../../generated/openapi-document.ts';
import { operations, operationIds } from '../../generated/operations.ts';

describe('GET /openapi.json', () => {
  it('serves the contract as JSON, without a key (its match with openapi.yaml is gen:check)', async () => {
    const { request } = createTestApp({ server: { apiKeys: ['k'] } });
    const res = await request.get('/openapi.json');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.body).toEqual(openapiDocument);
    expect(res.body.openapi).toBe('3.1.0');
    for (const id of operationIds) {
      const { path, method } = operations[id];
      expect(res.body.paths[path][method].operationId).toBe(id);
    }
  });
});

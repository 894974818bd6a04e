/**
 * generated/operations.ts against the yaml: the table has exactly the document's
 * path+method pairs, with the right Koa paths, body schemas, stream flags and public routes.
 */
import { describe, expect, it } from 'vitest';
import { operationIds, operations } from '../../generated/operations.ts';
import { toKoaPath } from '../../scripts/gen-operations.ts';
import { loadDocument } from './contract-schemas.ts';

const doc = loadDocument();
const METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

function documentOperations(): Map<string, { method: string; path: string }> {
  const found = new Map<string, { method: string; path: string }>();
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (METHODS.has(method)) found.set(String(op.operationId), { method, path });
    }
  }
  return found;
}

describe('generated/operations.ts', () => {
  it('covers every path+method of the yaml, and nothing else', () => {
    const fromDoc = documentOperations();
    expect([...operationIds].sort()).toEqual([...fromDoc.keys()].sort());
    for (const id of operationIds) {
      expect({ method: operations[id].method, path: operations[id].path }, id).toEqual(fromDoc.get(id));
    }
  });

  it('lists the endpoints Maya serves under their OpenAI operationIds (and the Anthropic SDK method names)', () => {
    const routes = Object.fromEntries(operationIds.map((id) => [id, `${operations[id].method.toUpperCase()} ${operations[id].path}`]));
    expect(routes).toEqual({
      createResponse: 'POST /v1/responses',
      getResponse: 'GET /v1/responses/{response_id}',
      deleteResponse: 'DELETE /v1/responses/{response_id}',
      listInputItems: 'GET /v1/responses/{response_id}/input_items',
      cancelResponse: 'POST /v1/responses/{response_id}/cancel',
      createChatCompletion: 'POST /v1/chat/completions',
      createMessage: 'POST /v1/messages',
      countMessageTokens: 'POST /v1/messages/count_tokens',
      listModels: 'GET /v1/models',
      retrieveModel: 'GET /v1/models/{model}',
      getStatus: 'GET /v1/status',
      getMetrics: 'GET /metrics/prometheus',
      getHealth: 'GET /health',
      getOpenApi: 'GET /openapi.json',
    });
  });

  it('turns OpenAPI path templates into Koa paths', () => {
    expect(operations.getResponse.koaPath).toBe('/v1/responses/:response_id');
    expect(operations.listInputItems.koaPath).toBe('/v1/responses/:response_id/input_items');
    expect(toKoaPath('/a/{x}/b/{y_z}')).toBe('/a/:x/b/:y_z');
    for (const id of operationIds) expect(operations[id].koaPath).not.toMatch(/[{}]/);
  });

  it('names the request body schema and how each streaming operation is switched on', () => {
    expect(operations.createResponse.requestBody).toBe('CreateResponse');
    expect(operations.createChatCompletion.requestBody).toBe('CreateChatCompletionRequest');
    expect(operations.cancelResponse.requestBody).toBeNull();
    const streams = Object.fromEntries(operationIds.filter((id) => operations[id].stream !== null).map((id) => [id, operations[id].stream]));
    expect(streams).toEqual({ createResponse: 'body', getResponse: 'query', createChatCompletion: 'body', createMessage: 'body' });
  });

  it("marks the Anthropic operations' error envelope, and only theirs", () => {
    const anthropic = operationIds.filter((id) => operations[id].errorFormat === 'anthropic').sort();
    expect(anthropic).toEqual(['countMessageTokens', 'createMessage']);
    expect(operations.createMessage.statuses).toEqual([200, 400, 401, 413, 500, 529]);
    expect(operations.createMessage.query).toEqual(['beta']);
  });

  it('marks only health, metrics and the document as public', () => {
    expect(operationIds.filter((id) => !operations[id].security).sort()).toEqual(['getHealth', 'getMetrics', 'getOpenApi']);
  });

  it('lists query parameters and declared statuses', () => {
    expect(operations.getResponse.query).toEqual(['include', 'stream', 'starting_after', 'include_obfuscation']);
    expect(operations.listInputItems.query).toEqual(['limit', 'order', 'after', 'include']);
    expect(operations.deleteResponse.query).toEqual([]);
    expect(operations.getResponse.pathParams).toEqual(['response_id']);
    expect(operations.getResponse.statuses).toEqual([200, 400, 401, 404, 409, 410, 429, 500]);
    expect(operations.createResponse.statuses).toEqual([200, 400, 401, 403, 404, 409, 413, 429, 500, 503]);
  });
});

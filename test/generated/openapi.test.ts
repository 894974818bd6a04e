/**
 * The contract document itself: OpenAPI 3.1 that Redocly's 3.1 rules accept, every $ref
 * resolves, every schema compiles under ajv 2020 (strict), and the structural promises the rest
 * of Maya relies on (error shape, event envelope, closed request bodies) hold.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createConfig, lintFromString } from '@redocly/openapi-core';
import { OpenAPIBackend, type Document as BackendDocument } from 'openapi-backend';
import { SPEC_PATH, createContractAjv, loadDocument } from './contract-schemas.ts';

const doc = loadDocument();
type Json = Record<string, unknown>;

function collectRefs(value: unknown, out: string[] = []): string[] {
  if (Array.isArray(value)) value.forEach((v) => collectRefs(v, out));
  else if (value !== null && typeof value === 'object') {
    for (const [key, inner] of Object.entries(value)) {
      if (key === '$ref' && typeof inner === 'string') out.push(inner);
      else collectRefs(inner, out);
    }
  }
  return out;
}

function resolvePointer(ref: string): unknown {
  expect(ref.startsWith('#/'), `${ref} is a local ref`).toBe(true);
  let node: unknown = doc;
  for (const part of ref.slice(2).split('/')) {
    node = (node as Json | undefined)?.[part.replace(/~1/g, '/').replace(/~0/g, '~')];
  }
  return node;
}

describe('openapi/openapi.yaml', () => {
  it('is OpenAPI 3.1 with a provenance note (upstream source and sha256)', () => {
    expect(doc.openapi).toBe('3.1.0');
    const upstream = doc.info['x-upstream'] as Json;
    expect(upstream.repository).toBe('openai/openai-openapi');
    expect(upstream.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(String(doc.info.description)).toContain(String(upstream.sha256));
  });

  it('resolves every $ref inside the document', () => {
    const refs = collectRefs(doc);
    expect(refs.length).toBeGreaterThan(100);
    const missing = refs.filter((ref) => resolvePointer(ref) === undefined);
    expect(missing).toEqual([]);
  });

  it("passes Redocly's OpenAPI 3.1 rules with no errors", async () => {
    const config = await createConfig({ extends: ['recommended'] });
    const problems = await lintFromString({ source: readFileSync(SPEC_PATH, 'utf8'), absoluteRef: SPEC_PATH, config });
    const serious = problems
      .filter((p) => p.severity === 'error' || p.ruleId !== 'operation-4xx-response')
      .map((p) => `${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`);
    expect(serious).toEqual([]);
    // The only accepted warning: public endpoints (health, metrics, the document) have no 4xx.
    const public4xx = problems.filter((p) => p.ruleId === 'operation-4xx-response').map((p) => p.location[0]?.pointer);
    expect(public4xx.sort()).toEqual(['#/paths/~1health/get/responses', '#/paths/~1metrics~1prometheus/get/responses', '#/paths/~1openapi.json/get/responses']);
  });

  it("loads in openapi-backend (quick mode) and routes each operation's path to it", async () => {
    const api = new OpenAPIBackend({ definition: structuredClone(doc) as unknown as BackendDocument, quick: true, validate: false });
    await api.init();
    const route = (method: string, path: string) => api.matchOperation({ method, path, headers: {} })?.operationId;
    expect(route('get', '/v1/responses/resp_1')).toBe('getResponse');
    expect(route('delete', '/v1/responses/resp_1')).toBe('deleteResponse');
    expect(route('get', '/v1/responses/resp_1/input_items')).toBe('listInputItems');
    expect(route('post', '/v1/responses/resp_1/cancel')).toBe('cancelResponse');
    expect(route('post', '/v1/chat/completions')).toBe('createChatCompletion');
    expect(route('get', '/metrics/prometheus')).toBe('getMetrics');
    expect(route('put', '/v1/responses')).toBeUndefined();
  });

  it('compiles every schema under ajv 2020 in strict mode with discriminators', () => {
    const ajv = createContractAjv(doc);
    const names = Object.keys(doc.components.schemas);
    expect(names.length).toBeGreaterThan(100);
    for (const name of names) expect(() => ajv.getSchema(`contract#/components/schemas/${name}`), name).not.toThrow();
  });

  it('requires all four Error fields, param and code nullable', () => {
    const error = doc.components.schemas.Error as Json;
    expect([...(error.required as string[])].sort()).toEqual(['code', 'message', 'param', 'type']);
    const props = error.properties as Record<string, Json>;
    expect(props.param!.type).toEqual(['string', 'null']);
    expect(props.code!.type).toEqual(['string', 'null']);
  });

  it('gives every operation an operationId and the error bodies of its x-error-format for its error statuses', () => {
    const responses = doc.components.responses as Record<string, { content?: Record<string, { schema: { $ref: string } }> }>;
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        if (method === 'parameters') continue;
        expect(op.operationId, `${method} ${path}`).toMatch(/^[a-z][A-Za-z]+$/);
        const format = op['x-error-format'] ?? 'openai';
        expect(['openai', 'anthropic'], `${method} ${path} x-error-format`).toContain(format);
        const expected = format === 'anthropic' ? '#/components/schemas/AnthropicErrorResponse' : '#/components/schemas/ErrorResponse';
        for (const [status, response] of Object.entries(op.responses as Record<string, Json>)) {
          if (Number(status) < 400 || path === '/health') continue;
          const ref = String(response.$ref);
          const schemaRef = responses[ref.split('/').pop()!]?.content?.['application/json']?.schema.$ref;
          expect(schemaRef, `${method} ${path} ${status}`).toBe(expected);
        }
      }
    }
  });

  it('closes every request body schema (unknown parameters are errors)', () => {
    for (const name of ['CreateResponse', 'CreateChatCompletionRequest', 'AnthropicCreateMessageRequest', 'AnthropicCountTokensRequest', 'AnthropicUserMessageParam', 'AnthropicAssistantMessageParam', 'AnthropicTextBlockParam', 'AnthropicToolResultBlockParam', 'AnthropicTool', 'EasyInputMessage', 'OutputTextContentParam', 'RefusalContent', 'FunctionTool', 'FunctionCallOutputItemParam', 'ReasoningItem', 'InputTextContent', 'InputImageContent', 'TextResponseFormatJsonSchema', 'ToolChoiceFunction', 'Reasoning', 'ResponseTextParam']) {
      expect((doc.components.schemas[name] as Json).additionalProperties, name).toBe(false);
    }
  });

  it('gives every stream event a required type and sequence_number, and lists each in ResponseStreamEvent', () => {
    const union = doc.components.schemas.ResponseStreamEvent as { oneOf: { $ref: string }[]; discriminator: { mapping: Record<string, string> } };
    const members = union.oneOf.map((r) => r.$ref.split('/').pop()!);
    const eventNames = Object.keys(doc.components.schemas).filter((n) => /^Response\w+Event$/.test(n) && n !== 'ResponseStreamEvent');
    expect(members.sort()).toEqual(eventNames.sort());
    for (const name of members) {
      const schema = doc.components.schemas[name] as { required: string[]; properties: Record<string, { enum?: string[] }> };
      expect(schema.required, name).toEqual(expect.arrayContaining(['type', 'sequence_number']));
      const tag = schema.properties.type!.enum![0]!;
      expect(union.discriminator.mapping[tag], name).toBe(`#/components/schemas/${name}`);
    }
    expect(Object.keys(union.discriminator.mapping).sort()).toEqual([
      'error',
      'response.completed',
      'response.content_part.added',
      'response.content_part.done',
      'response.created',
      'response.failed',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.in_progress',
      'response.incomplete',
      'response.mcp_call.completed',
      'response.mcp_call.failed',
      'response.mcp_call.in_progress',
      'response.mcp_call_arguments.delta',
      'response.mcp_call_arguments.done',
      'response.mcp_list_tools.completed',
      'response.mcp_list_tools.failed',
      'response.mcp_list_tools.in_progress',
      'response.output_item.added',
      'response.output_item.done',
      'response.output_text.delta',
      'response.output_text.done',
      'response.queued',
      'response.reasoning_text.delta',
      'response.reasoning_text.done',
    ]);
  });
});

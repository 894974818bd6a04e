/**
 * Client input that once produced 500s (a probe of the running server): every case here must be
 * a 400 in the OpenAI error shape naming the field, before any engine work, and the server must
 * keep answering. In-process over FakeEngine + the real GLM-4.5 dialect (handler logic).
 */
import { describe, expect, it } from 'vitest';
import { createTestApp, stubRuntime } from '../helpers/test-app.ts';
import { scriptedRuntime } from '../responses/scripted-runtime.ts';

function app() {
  const base = scriptedRuntime([{ pieces: ['\n', 'Hi', '<|user|>'] }]);
  const runtime = stubRuntime({ ...base, id: 'maya-test' });
  return { ...createTestApp({ runtime }), engine: base.engine };
}

const nest = (levels: number, leaf: object): object => {
  let node = leaf;
  for (let i = 0; i < levels; i++) node = { type: 'object', properties: { a: node } };
  return node;
};
const schemaFormat = (schema: object) => ({ text: { format: { type: 'json_schema', name: 'x', schema } } });
const tool = (parameters: object, strict = false) => ({ tools: [{ type: 'function', name: 'f', parameters, strict }] });

const CASES: Array<[string, Record<string, unknown>, string | RegExp, string]> = [
  [
    'tool parameters nested 1,500 levels',
    { input: 'x', ...tool(nest(1500, { type: 'string' })) },
    /^tools\[0\]\.parameters\.properties/,
    'nested_too_deep',
  ],
  [
    'json_schema nested 2,000 levels',
    { input: 'x', ...schemaFormat(nest(2000, { type: 'string' })) },
    /^text\.format\.schema\.properties/,
    'nested_too_deep',
  ],
  [
    'required: "a"',
    { input: 'x', ...schemaFormat({ type: 'object', properties: { a: { type: 'string' } }, required: 'a' }) },
    'text.format.schema.required',
    'invalid_schema',
  ],
  [
    'minLength: -1',
    { input: 'x', ...schemaFormat({ type: 'object', properties: { a: { type: 'string', minLength: -1 } } }) },
    'text.format.schema.properties.a.minLength',
    'invalid_schema',
  ],
  [
    'properties: []',
    { input: 'x', ...schemaFormat({ type: 'object', properties: [] }) },
    'text.format.schema.properties',
    'invalid_schema',
  ],
  [
    'additionalProperties: "yes"',
    { input: 'x', ...schemaFormat({ type: 'object', properties: {}, additionalProperties: 'yes' }) },
    'text.format.schema.additionalProperties',
    'invalid_schema',
  ],
  [
    'a strict tool with required: "a"',
    {
      input: 'x',
      ...tool(
        { type: 'object', properties: { a: { type: 'string' } }, required: 'a', additionalProperties: false },
        true,
      ),
    },
    'tools[0].parameters.required',
    'invalid_schema',
  ],
  [
    'a non-strict tool with properties: 5',
    { input: 'x', ...tool({ type: 'object', properties: 5 }) },
    'tools[0].parameters.properties',
    'invalid_schema',
  ],
  [
    'schema keyword "constructor" (a prototype key)',
    { input: 'x', ...schemaFormat({ type: 'object', properties: {}, constructor: 1 }) },
    'text.format.schema.constructor',
    'unsupported_schema_keyword',
  ],
];

describe('hostile input → 400 naming the field, no engine work', () => {
  for (const [name, body, param, code] of CASES) {
    it(name, async () => {
      const { request, engine } = app();
      const res = await request.post('/v1/responses').send(body);
      expect(res.status).toBe(400);
      expect(res.body.error.type).toBe('invalid_request_error');
      expect(res.body.error.code).toBe(code);
      if (typeof param === 'string') expect(res.body.error.param).toBe(param);
      else expect(res.body.error.param).toMatch(param);
      expect(engine.calls).toHaveLength(0);
      expect((await request.get('/health')).status).toBe(200);
    });
  }

  it('the 64 KiB schema limit counts UTF-8 bytes, not characters', async () => {
    const { request } = app();
    const description = 'é'.repeat(20_000); // 20,000 characters, 40,000 bytes
    const schema = {
      type: 'object',
      properties: { a: { type: 'string', description }, b: { type: 'string', description } },
    };
    const res = await request.post('/v1/responses').send({ input: 'x', ...schemaFormat(schema) });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('schema_too_large');
  });

  it('top_p: 0 (valid in the contract) samples greedily instead of failing', async () => {
    const { request, engine } = app();
    const res = await request
      .post('/v1/responses')
      .send({ input: 'x', top_p: 0, temperature: 0.9, reasoning: { effort: 'none' } });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('completed');
    expect(engine.calls[0]).toMatchObject({ temperature: 0, topP: 1 });
  });

  it('Chat seed 1e400 → 400 on seed, not 500', async () => {
    const { request } = app();
    const res = await request
      .post('/v1/chat/completions')
      .set('content-type', 'application/json')
      .send('{"messages":[{"role":"user","content":"hi"}],"seed":1e400}');
    expect(res.status).toBe(400);
    expect(res.body.error.param).toBe('seed');
  });

  it("Chat's role error lists every role", async () => {
    const { request } = app();
    const res = await request.post('/v1/chat/completions').send({ messages: [{ role: 'wizard', content: 'hi' }] });
    expect(res.status).toBe(400);
    expect(res.body.error.param).toBe('messages[0].role');
    for (const role of ['system', 'developer', 'user', 'assistant', 'tool'])
      expect(res.body.error.message).toContain(`'${role}'`);
  });

  it('a body that starts with a UTF-8 byte-order mark is read as JSON', async () => {
    const { request } = app();
    const res = await request
      .post('/v1/responses')
      .set('content-type', 'application/json')
      .send('\uFEFF{"input":"hi","reasoning":{"effort":"none"}}');
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('completed');
  });
});

describe('large bodies', () => {
  it('a body of 1 MiB or more is parsed on the JSON worker with the same answers (valid, BOM, malformed)', async () => {
    const { request } = app();
    const big = 'x'.repeat(1024 * 1024);
    const ok = await request
      .post('/v1/responses')
      .set('content-type', 'application/json')
      .send(`\uFEFF${JSON.stringify({ input: 'hi', metadata: {}, instructions: big, reasoning: { effort: 'none' } })}`);
    expect(ok.status).not.toBe(500);
    expect(ok.body.error?.code).not.toBe('invalid_json');
    const malformed = await request
      .post('/v1/responses')
      .set('content-type', 'application/json')
      .send(`{"input": "${big}"`);
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.code).toBe('invalid_json');
    const deep = await request
      .post('/v1/responses')
      .set('content-type', 'application/json')
      .send(`{"input":"hi","metadata":${'['.repeat(100)}${']'.repeat(100)},"x":"${big}"}`);
    expect(deep.status).toBe(400);
    expect(deep.body.error.code).toBe('nested_too_deep');
  });
});

describe('large bodies nested deeply', () => {
  it('a 1 MiB+ body nested 8,000 levels is the same 400 nested_too_deep as a small one (never a hang)', async () => {
    const { request } = app();
    const deep = (padding: string) =>
      `{"input":"hi","instructions":"${padding}","metadata":${'['.repeat(8000)}${']'.repeat(8000)}}`;
    for (const body of [deep(''), deep('x'.repeat(1024 * 1024))]) {
      const res = await request.post('/v1/responses').set('content-type', 'application/json').send(body);
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('nested_too_deep');
      expect(res.body.error.param).toMatch(/^metadata(\[0\])+$/);
    }
  }, 30_000);
});

import { describe, expect, it } from 'vitest';
import { createTestApp, stubRuntime } from '../helpers/test-app.ts';
import { FakeEngine } from '../helpers/fake-engine.ts';
import { scriptedRuntime } from '../responses/scripted-runtime.ts';

describe('GET /metrics/prometheus', () => {
  it('counts requests by operationId and status, with latency, and never shows keys or prompt text', async () => {
    const { request } = createTestApp({ server: { apiKeys: ['sk-very-secret-key'] } });
    const auth = { authorization: 'Bearer sk-very-secret-key' };
    await request.get('/v1/models').set(auth);
    await request.get('/v1/models').set(auth);
    await request.get('/v1/models').set('authorization', 'Bearer sk-wrong-key-text');
    await request.post('/v1/responses').set(auth).send({ input: 'PROMPT-CANARY-42', truncation: 'auto' });
    await request.get('/v1/nowhere');
    await new Promise((resolve) => setImmediate(resolve));
    const res = await request.get('/metrics/prometheus');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    const text = res.text;
    expect(text).toContain('maya:http_requests_total{operation="listModels",status="200"} 2');
    expect(text).toContain('maya:http_requests_total{operation="listModels",status="401"} 1');
    expect(text).toContain('maya:http_requests_total{operation="createResponse",status="400"} 1');
    expect(text).toContain('maya:http_requests_total{operation="unmatched",status="404"} 1');
    expect(text).toMatch(/maya:http_request_duration_seconds_count\{operation="listModels"\} 3/);
    expect(text).toContain('process_cpu_user_seconds_total');
    expect(text).toContain('maya:responses_cache_');
    for (const secret of ['sk-very-secret-key', 'sk-wrong-key-text', 'PROMPT-CANARY-42', 'key_'])
      expect(text).not.toContain(secret);
  });

  it('maya:time_to_first_token_seconds: one observation per run (Responses, Chat Completions, Messages), queue and prefill included', async () => {
    const scripted = scriptedRuntime([]);
    const engine = new FakeEngine({ script: { tokens: scripted.ids(['Hi', '<|user|>']) }, tokenDelayMs: 40 });
    const runtime = stubRuntime({ engine, tokenizer: scripted.tokenizer, dialect: scripted.dialect });
    const { request } = createTestApp({ runtime });
    const before = (await request.get('/metrics/prometheus')).text;
    expect(before).toContain('maya:time_to_first_token_seconds_count 0');
    expect((await request.post('/v1/responses').send({ input: 'Hello', reasoning: { effort: 'none' } })).status).toBe(
      200,
    );
    const chat = await request.post('/v1/chat/completions').send({ messages: [{ role: 'user', content: 'Hello' }] });
    expect(chat.status).toBe(200);
    const message = await request
      .post('/v1/messages')
      .send({ model: 'any', max_tokens: 16, messages: [{ role: 'user', content: 'Hello' }] });
    expect(message.status).toBe(200);
    const text = (await request.get('/metrics/prometheus')).text;
    expect(text).toContain('maya:time_to_first_token_seconds_count 3');
    const sum = Number(/^maya:time_to_first_token_seconds_sum (\S+)$/m.exec(text)?.[1]);
    // Each first token came after the fake engine's 40 ms delay; far less than the 10 s bucket.
    expect(sum).toBeGreaterThanOrEqual(0.1);
    expect(sum).toBeLessThan(10);
    expect(text).toContain('maya:time_to_first_token_seconds_bucket{le="10"} 3');
  });
});

import { describe, expect, it } from 'vitest';
import { createTestApp } from './test-app.ts';
import { parseSse, rawText } from './sse.ts';

describe('SSE test helpers', () => {
  it('parseSse frames events like the SDK: comments skipped, data joined, [DONE] kept', () => {
    const text = ': keep-alive\n\nevent: a\ndata: {"x":1}\n\ndata: line1\ndata: line2\r\n\r\ndata: [DONE]\n\n';
    expect(parseSse(text)).toEqual([
      { event: 'a', data: '{"x":1}', json: { x: 1 } },
      { event: undefined, data: 'line1\nline2', json: undefined },
      { event: undefined, data: '[DONE]', json: undefined },
    ]);
  });

  it('rawText returns a text/event-stream body as a string through supertest', async () => {
    const { request } = createTestApp({
      handlers: {
        createResponse: async (ctx) => {
          ctx.type = 'text/event-stream';
          ctx.body = 'event: response.created\ndata: {"type":"response.created","sequence_number":0}\n\n';
        },
      },
    });
    const res = await request.post('/v1/responses').send({ input: 'hi', stream: true }).buffer(true).parse(rawText);
    expect(typeof res.body).toBe('string');
    expect(parseSse(res.body as string)[0]?.json).toEqual({ type: 'response.created', sequence_number: 0 });
  });
});

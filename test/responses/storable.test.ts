/** A response that will be stored is checked for storability before any generation. */
import { describe, expect, it } from 'vitest';
import { createTestApp, stubRuntime } from '../helpers/test-app.ts';
import { scriptedRuntime } from './scripted-runtime.ts';

function appWith(settings: Record<string, number> = {}) {
  const base = scriptedRuntime([{ pieces: ['\n', 'Hi', '<|user|>'] }, { pieces: ['\n', 'Again', '<|user|>'] }]);
  const runtime = stubRuntime({ ...base, id: 'maya-test' });
  return { ...createTestApp({ runtime, settings }), engine: base.engine };
}

describe('store:true requests are storable before generation', () => {
  it('an item id repeated in the history → 400 duplicate_item, no engine work', async () => {
    const { request, engine } = appWith();
    const input = [
      { type: 'message', id: 'msg_same', role: 'user', content: [{ type: 'input_text', text: 'a' }] },
      { type: 'message', id: 'msg_same', role: 'user', content: [{ type: 'input_text', text: 'b' }] },
    ];
    const res = await request.post('/v1/responses').send({ model: 'm', input, store: true });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'duplicate_item', param: 'input[1].id' });
    expect(engine.calls).toEqual([]);
  });

  it('the same ids are fine when nothing is stored', async () => {
    const { request } = appWith();
    const input = [
      { type: 'message', id: 'msg_same', role: 'user', content: [{ type: 'input_text', text: 'a' }] },
      { type: 'message', id: 'msg_same', role: 'user', content: [{ type: 'input_text', text: 'b' }] },
    ];
    const res = await request
      .post('/v1/responses')
      .send({ model: 'm', input, store: false, reasoning: { effort: 'none' } });
    expect(res.status).toBe(200);
  });

  it('a history over ENTRY_BYTES → 413 before generation', async () => {
    const { request, engine } = appWith({ ENTRY_BYTES: 2000 });
    const res = await request.post('/v1/responses').send({ model: 'm', input: 'x'.repeat(3000), store: true });
    expect(res.status).toBe(413);
    expect(res.body.error).toMatchObject({ code: 'snapshot_too_large', param: 'input' });
    expect(engine.calls).toEqual([]);
  });
});

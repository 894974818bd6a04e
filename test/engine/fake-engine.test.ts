import { describe, expect, it } from 'vitest';
import { FakeEngine } from '../helpers/fake-engine.ts';
import { EngineError, type FinishInfo, type TokenEvent } from '../../engine-cuda/engine.ts';

async function drain(
  gen: AsyncGenerator<TokenEvent, FinishInfo, void>,
): Promise<{ ids: number[]; finish: FinishInfo }> {
  const ids: number[] = [];
  for (;;) {
    const r = await gen.next();
    if (r.done) return { ids, finish: r.value };
    if (r.value.type === 'token') ids.push(r.value.id);
  }
}

describe('FakeEngine', () => {
  it('replays a script, cut by stop ids and max tokens', async () => {
    const engine = new FakeEngine({ script: { tokens: [5, 6, 7, 8], cachedTokens: 2 } });
    const a = await drain(engine.generate({ promptIds: [1, 2, 3], maxTokens: 10, stopIds: [7] }));
    expect(a.ids).toEqual([5, 6, 7]);
    expect(a.finish).toEqual({ reason: 'stop', usage: { inputTokens: 3, cachedTokens: 2, outputTokens: 3 } });
    const b = await drain(engine.generate({ promptIds: [1], maxTokens: 2 }));
    expect(b.ids).toEqual([5, 6]);
    expect(b.finish.reason).toBe('length');
    expect(b.finish.usage.cachedTokens).toBe(0);
    expect(engine.calls.map((c) => c.promptIds)).toEqual([[1, 2, 3], [1]]);
    const c = await drain(
      new FakeEngine({ script: { tokens: [4], usage: { inputTokens: 99 } } }).generate({
        promptIds: [1],
        maxTokens: 3,
      }),
    );
    expect(c.finish.usage).toEqual({ inputTokens: 99, cachedTokens: 0, outputTokens: 1 });
  });

  it('throws context_overflow from the first next() with no work queued', async () => {
    const engine = new FakeEngine({ info: { contextLength: 8 } });
    const gen = engine.generate({ promptIds: [1, 2, 3, 4], maxTokens: 5 });
    await expect(gen.next()).rejects.toMatchObject({ code: 'context_overflow' });
    await expect(drain(engine.generate({ promptIds: [1], maxTokens: 5 }))).resolves.toBeDefined();
    expect(engine.calls).toHaveLength(1);
    expect(new EngineError('io', 'x')).toBeInstanceOf(Error);
  });

  it('counts break and abort as cancellations', async () => {
    const engine = new FakeEngine({
      script: (_req, i) => ({ tokens: [10 + i, 11, 12, 13], finishReason: 'error', error: 'boom' }),
    });
    for await (const ev of engine.generate({ promptIds: [1], maxTokens: 9 })) if (ev.type === 'token') break;
    const controller = new AbortController();
    const gen = engine.generate({ promptIds: [1], maxTokens: 9 }, { signal: controller.signal });
    await gen.next();
    controller.abort();
    const rest = await drain(gen);
    expect(rest.finish.reason).toBe('cancelled');
    expect(engine.cancelledCount).toBe(2);
    expect(engine.activeCount).toBe(0);
    const done = await drain(engine.generate({ promptIds: [1], maxTokens: 9 }));
    expect(done.ids).toEqual([12, 11, 12, 13]);
    expect(done.finish).toMatchObject({ reason: 'error', error: 'boom' });
  });
});

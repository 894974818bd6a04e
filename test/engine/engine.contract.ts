/**
 * runEngineContract: the behaviour every Engine owes its handlers (engine-cuda/engine.ts), run on
 * FakeEngine and on NativeEngine by engine-contract.test.ts (one contract suite, run on each
 * implementation).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../engine-cuda/engine.ts';
import { drain } from './engine-helpers.ts';

export interface ContractSubject {
  engine: Engine;
  /** A prompt the engine accepts, that generates at least 8 tokens unless stopped. */
  prompt: number[];
}

export function runEngineContract(name: string, make: () => Promise<ContractSubject>): void {
  describe(`Engine contract: ${name}`, () => {
    let s: ContractSubject;
    beforeAll(async () => {
      s = await make();
    });
    afterAll(() => s.engine.close());

    it('reports prefilled first, then maxTokens tokens, then finish length with usage', async () => {
      const events = [];
      const gen = s.engine.generate({ promptIds: s.prompt, maxTokens: 6 });
      let r = await gen.next();
      while (!r.done) {
        events.push(r.value);
        r = await gen.next();
      }
      expect(events[0]?.type).toBe('prefilled');
      expect(events.filter((e) => e.type === 'token')).toHaveLength(6);
      expect(r.value.reason).toBe('length');
      expect(r.value.usage.inputTokens).toBe(s.prompt.length);
      expect(r.value.usage.outputTokens).toBe(6);
    });

    it('reportProgress: prefill_progress events before prefilled, cumulative, ending at the prompt length', async () => {
      const events = [];
      for await (const event of s.engine.generate({ promptIds: s.prompt, maxTokens: 2, reportProgress: true })) {
        events.push(event);
        if (event.type === 'token') break;
      }
      const prefilled = events.findIndex((e) => e.type === 'prefilled');
      const progress = events.slice(0, prefilled);
      expect(progress.length).toBeGreaterThan(0);
      expect(progress.every((e) => e.type === 'prefill_progress')).toBe(true);
      const processed = progress.map((e) => (e.type === 'prefill_progress' ? e.processedTokens : -1));
      expect(processed).toEqual([...processed].sort((a, b) => a - b));
      expect(processed.at(-1)).toBe(s.prompt.length);
      const plain = [];
      for await (const event of s.engine.generate({ promptIds: s.prompt, maxTokens: 2 })) plain.push(event.type);
      expect(plain).toEqual(['prefilled', 'token', 'token']);
    });

    it('ends with stop on a stop id, reporting the stop token last', async () => {
      const free = await drain(s.engine.generate({ promptIds: s.prompt, maxTokens: 8 }));
      const stopId = free.ids[2]!;
      const stopped = await drain(s.engine.generate({ promptIds: s.prompt, maxTokens: 8, stopIds: [stopId] }));
      expect(stopped.finish.reason).toBe('stop');
      expect(stopped.ids.at(-1)).toBe(stopId);
      expect(stopped.ids).toEqual(free.ids.slice(0, stopped.ids.length));
      expect(stopped.finish.usage.outputTokens).toBe(stopped.ids.length);
    });

    it('throws context_overflow from the first next()', async () => {
      const gen = s.engine.generate({ promptIds: s.prompt, maxTokens: s.engine.info.contextLength });
      await expect(gen.next()).rejects.toMatchObject({ name: 'EngineError', code: 'context_overflow' });
    });

    it('an aborted signal finishes as cancelled; break ends the loop; the engine keeps working', async () => {
      const controller = new AbortController();
      const gen = s.engine.generate({ promptIds: s.prompt, maxTokens: 50 }, { signal: controller.signal });
      await gen.next();
      controller.abort();
      const rest = await drain(gen);
      expect(rest.finish.reason).toBe('cancelled');
      let seen = 0;
      for await (const event of s.engine.generate({ promptIds: s.prompt, maxTokens: 50 })) {
        if (event.type === 'token' && ++seen === 2) break;
      }
      expect(seen).toBe(2);
      const after = await drain(s.engine.generate({ promptIds: s.prompt, maxTokens: 3 }));
      expect(after.finish.reason).toBe('length');
      const stats = await s.engine.stats();
      expect(stats.seqsRunning).toBeGreaterThanOrEqual(0);
      expect(stats.blocksTotal).toBeGreaterThan(0);
    });
  });
}

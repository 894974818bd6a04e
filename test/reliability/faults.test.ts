/**
 * Faults on the real service (demo model, real engine): a storm of clients that disconnect
 * mid-stream returns every KV block (free + cached = total) and leaves no sequence running, and
 * the server answers normally afterwards; a reader that never reads does not hold up others.
 * (Engine errors mid-stream → response.failed and shutdown are in create-response.test.ts and
 * shutdown.test.ts.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDemoService, type DemoService } from '../e2e/start-demo-service.ts';

let demo: DemoService;
beforeAll(async () => {
  demo = await startDemoService();
}, 120_000);
afterAll(async () => demo?.stop());

const streamBody = (input: string) => JSON.stringify({ input, stream: true, max_output_tokens: 2000, temperature: 1 });

async function settle(): Promise<ReturnType<DemoService['runtime']['engine']['stats']>> {
  for (let i = 0; i < 100; i++) {
    const stats = await demo.runtime.engine.stats();
    if (stats.seqsRunning === 0 && stats.seqsWaiting === 0) return stats;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return demo.runtime.engine.stats();
}

describe('faults', () => {
  it('40 streams whose clients vanish after the first bytes: every KV block comes back, nothing keeps running', async () => {
    const controllers = Array.from({ length: 40 }, () => new AbortController());
    await Promise.all(
      controllers.map(async (controller, i) => {
        const res = await fetch(`${demo.origin}/v1/responses`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: streamBody(`Tell me story number ${i}`),
          signal: controller.signal,
        });
        const reader = res.body!.getReader();
        await reader.read();
        controller.abort();
      }),
    );
    const stats = await settle();
    expect(stats.seqsRunning).toBe(0);
    expect(stats.seqsWaiting).toBe(0);
    expect(stats.blocksFree).toBe(stats.blocksTotal);
    const after = await fetch(`${demo.origin}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ input: 'Hello', max_output_tokens: 32 }),
    });
    expect(after.status).toBe(200);
    expect(['completed', 'incomplete']).toContain(((await after.json()) as { status: string }).status);
  }, 60_000);

  it('a reader that never reads its stream does not stop another request from finishing', async () => {
    const stalled = await fetch(`${demo.origin}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: streamBody('Write at length'),
    });
    expect(stalled.status).toBe(200);
    const other = await fetch(`${demo.origin}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ input: 'Hello', max_output_tokens: 32 }),
    });
    expect(other.status).toBe(200);
    expect(['completed', 'incomplete']).toContain(((await other.json()) as { status: string }).status);
    await stalled.body!.cancel();
    const stats = await settle();
    expect(stats.blocksFree).toBe(stats.blocksTotal);
  }, 60_000);
});

describe('a client that leaves while its request is being planned', () => {
  it('stops the run before it generates and nothing is stored (a JSON request with store:true)', async () => {
    const { scriptedRuntime } = await import('../responses/scripted-runtime.ts');
    const { listenTestApp, stubRuntime } = await import('../helpers/test-app.ts');
    const base = scriptedRuntime([{ pieces: ['\n', 'Hi', '<|user|>'] }]);
    let planned = 0;
    // Large inputs are planned on prompt workers; this one takes 300 ms, and the client leaves at 100.
    const promptWorkers = {
      render: async (
        turns: Parameters<typeof base.dialect.renderPrompt>[0],
        options: Parameters<typeof base.dialect.renderPrompt>[1],
      ) => {
        await new Promise((resolve) => setTimeout(resolve, 300));
        planned++;
        const rendered = base.dialect.renderPrompt(turns, options);
        return { promptIds: base.tokenizer.encode(rendered.text), parser: rendered.parser };
      },
    };
    const served = await listenTestApp({ runtime: stubRuntime({ ...base, id: 'maya-test', promptWorkers }) });
    try {
      const controller = new AbortController();
      const request = fetch(`${served.origin}/v1/responses`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ input: 'x'.repeat(10_000), store: true, reasoning: { effort: 'none' } }),
        signal: controller.signal,
      });
      setTimeout(() => controller.abort(), 100);
      await expect(request).rejects.toThrow();
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(planned).toBe(1);
      // Whatever reached the engine was cancelled before a token (no generation), and nothing was saved.
      expect(base.engine.calls.length).toBeLessThanOrEqual(1);
      expect(base.engine.cancelledCount).toBe(base.engine.calls.length);
      expect((await served.deps.store.stats()).entries).toBe(0);
    } finally {
      await served.close();
    }
  });
});

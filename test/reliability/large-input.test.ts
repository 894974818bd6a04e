/**
 * Large inputs on the real service (demo model): a body far beyond the context is refused from its
 * byte length before any template or tokenizer work, and a large input that might fit is rendered
 * and tokenised by the prompt workers, so the event loop keeps answering /health meanwhile (a
 * probe once saw /health blocked for 54 s by one 16 MiB input). Latency figures are in
 * `npm run bench:load`, not asserted here.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startDemoService, type DemoService } from '../e2e/start-demo-service.ts';

let demo: DemoService;
beforeAll(async () => {
  demo = await startDemoService();
}, 120_000);
afterAll(async () => demo?.stop());

const post = (body: unknown) =>
  fetch(`${demo.origin}/v1/responses`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

describe('large inputs', () => {
  it('an input that cannot fit is a 400 context_length_exceeded from its size alone (no tokenising)', async () => {
    const render = vi.spyOn(demo.runtime.dialect, 'renderPrompt');
    const res = await post({ input: 'word '.repeat(2_000_000) });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: string; param: string; message: string } };
    expect(body.error).toMatchObject({ code: 'context_length_exceeded', param: 'input' });
    expect(body.error.message).toMatch(/at least \d+ tokens/);
    expect(render).not.toHaveBeenCalled();
    render.mockRestore();
  });

  it('large inputs are tokenised off the main thread while /health keeps answering', async () => {
    const workers = demo.runtime.promptWorkers!;
    const offThread = vi.spyOn(workers, 'render');
    const big = 'The quick brown fox jumps over the lazy dog. '.repeat(3000); // 135 KB: passes the byte bound
    const requests = [post({ input: big }), post({ input: big }), post({ input: [{ role: 'user', content: big }] })];
    const health: number[] = [];
    let done = false;
    const probe = (async () => {
      while (!done) {
        health.push((await fetch(`${demo.origin}/health`)).status);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    })();
    const answers = await Promise.all(requests);
    done = true;
    await probe;
    for (const res of answers) {
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('context_length_exceeded');
    }
    expect(offThread).toHaveBeenCalledTimes(3);
    expect(health.length).toBeGreaterThan(0);
    expect(health.every((status) => status === 200)).toBe(true);
    offThread.mockRestore();
  }, 60_000);

  it('a small input still runs to a normal answer', async () => {
    const res = await post({ input: 'Hello', max_output_tokens: 32 });
    expect(res.status).toBe(200);
    expect(['completed', 'incomplete']).toContain(((await res.json()) as { status: string }).status);
  });
});

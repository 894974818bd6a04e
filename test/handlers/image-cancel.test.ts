/**
 * Cancelling a background task while its image is being encoded. The native engine encodes the
 * images inside the step that prefills the sequence (eng_step) and a cancel is only seen after
 * that step returns; NativeEngine keeps draining until the engine reports the finish. This engine
 * double does the same: its first step blocks until the test lets the "encoder" return, whatever
 * the abort signal says. The task must stay in_progress meanwhile, reach `cancelled` only after
 * the engine reported, and never publish anything as completed.
 */
import { describe, expect, it } from 'vitest';
import { createResponse } from '../../handlers/create-response.ts';
import { cancelResponse } from '../../handlers/cancel-response.ts';
import { getResponse } from '../../handlers/get-response.ts';
import { DEFAULT_RESPONSES_SETTINGS } from '../../config/settings.ts';
import { JobManager } from '../../store/jobs/job-manager.ts';
import { MemoryResponseStore } from '../../store/responses/memory-response-store.ts';
import { createRegistry } from '../../metrics/http-metrics.ts';
import type { FinishInfo, GenerateOptions, GenerateRequest, TokenEvent } from '../../engine-cuda/engine.ts';
import { FakeEngine } from '../helpers/fake-engine.ts';
import { createTestApp, stubRuntime } from '../helpers/test-app.ts';
import { fixtureDataUrl, visionRuntime } from '../helpers/vision-runtime.ts';

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** The first step (prefill with the image encoder) runs until `encoder.resolve()`; aborts wait for it. */
class EncodingEngine extends FakeEngine {
  readonly log: string[] = [];
  readonly stepStarted = deferred();
  readonly encoder = deferred();

  override generate(
    request: GenerateRequest,
    options: GenerateOptions = {},
  ): AsyncGenerator<TokenEvent, FinishInfo, void> {
    return this.encodeThenGenerate(request, options);
  }

  private async *encodeThenGenerate(request: GenerateRequest, options: GenerateOptions) {
    this.calls.push(request);
    this.log.push(`step started with ${request.images?.length ?? 0} image(s)`);
    this.stepStarted.resolve();
    await this.encoder.promise;
    this.log.push('engine reported');
    const usage = { inputTokens: request.promptIds.length, cachedTokens: 0, outputTokens: 0 };
    if (options.signal?.aborted) return { reason: 'cancelled', usage } as FinishInfo;
    yield { type: 'prefilled', cachedTokens: 0 } as TokenEvent;
    for (const id of [519, 762, 1007]) {
      if (options.signal?.aborted) return { reason: 'cancelled', usage } as FinishInfo;
      usage.outputTokens++;
      yield { type: 'token', id } as TokenEvent;
    }
    return { reason: 'stop', usage } as FinishInfo;
  }
}

async function until(check: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 2000; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error('condition not reached');
}

describe('cancelling a background task during image encoding', () => {
  it('stays in_progress until the encoder returns, then ends cancelled; nothing is published as completed', async () => {
    const engine = new EncodingEngine({ info: { contextLength: 2048, vision: true } });
    const runtime = stubRuntime({ ...(await visionRuntime()), engine });
    const settings = DEFAULT_RESPONSES_SETTINGS;
    const store = new MemoryResponseStore({ settings });
    const jobs = new JobManager({ settings, store, registry: createRegistry() });
    const { request } = createTestApp({
      runtime,
      settings,
      deps: { store, jobs },
      handlers: { createResponse, cancelResponse, getResponse },
    });

    const created = await request.post('/v1/responses').send({
      model: 'glm4v-tiny',
      background: true,
      store: true,
      input: [{ role: 'user', content: [{ type: 'input_image', image_url: fixtureDataUrl(0) }] }],
    });
    expect(created.status).toBe(200);
    const id = created.body.id as string;
    await engine.stepStarted.promise;

    // The cancel call waits (up to five seconds) for the task's cleanup, which waits for the step.
    const cancelling = request.post(`/v1/responses/${id}/cancel`).then((res) => {
      engine.log.push(`cancel answered ${res.body.status}`);
      return res;
    });
    await until(() => jobs.snapshot('anonymous', id)?.status !== undefined);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const during = (await request.get(`/v1/responses/${id}`)).body;
    expect(during.status).toBe('in_progress');
    expect(engine.log).toEqual(['step started with 1 image(s)']);

    engine.encoder.resolve();
    const cancelled = await cancelling;
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.status).toBe('cancelled');
    expect(engine.log).toEqual(['step started with 1 image(s)', 'engine reported', 'cancel answered cancelled']);

    const final = (await request.get(`/v1/responses/${id}`)).body;
    expect(final.status).toBe('cancelled');
    expect(final.output).toEqual([]);
    const events = (await request.get(`/v1/responses/${id}?stream=true`)).text;
    expect(events).not.toContain('response.completed');
    expect(events).toContain('response_cancelled');
    await jobs.shutdown(1000);
  });
});

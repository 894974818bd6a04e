/**
 * End to end on the GLM-4.1V and GLM-4.5V fixtures: the real service (startService, as `maya serve
 * --model test/fixtures/engine/glm4v-tiny` builds it: NativeEngine, the checkpoint's tokenizer, template
 * and image processor) answers POST /v1/responses with an input_image data URL of the fixture PNG,
 * in JSON and SSE, and the engine's generated token ids equal the PyTorch reference's greedy
 * tokens. The prefix cache: a stored conversation that continues after an image reports cached
 * tokens covering it; the same prompt with different pixels reuses nothing from the image on.
 */
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningService } from '../../cli/serve.ts';
import type { FinishInfo, TokenEvent } from '../../engine-cuda/engine.ts';
import { TEST_ENGINE_SETTINGS } from '../helpers/test-engine.ts';
import { startLoopbackService } from '../helpers/loopback-service.ts';
import { loadModelRuntime } from '../../runtime/load-model-runtime.ts';
import type { ModelRuntime } from '../../runtime/model-runtime.ts';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { fixtureDataUrl, fixturePng, type VisionFixtures } from '../helpers/vision-runtime.ts';

/** Records the token ids the engine generates, one list per generation. */
function recordTokens(runtime: ModelRuntime, into: number[][]): ModelRuntime {
  const engine = runtime.engine;
  const generate = engine.generate.bind(engine);
  engine.generate = (request, options) => {
    const ids: number[] = [];
    into.push(ids);
    const inner = generate(request, options);
    return (async function* (): AsyncGenerator<TokenEvent, FinishInfo, void> {
      try {
        for (;;) {
          const step = await inner.next();
          if (step.done) return step.value;
          if (step.value.type === 'token') ids.push(step.value.id);
          yield step.value;
        }
      } finally {
        await inner.return(undefined as never);
      }
    })();
  };
  return runtime;
}

const PROMPT = 'What is in this image?';
const image = (url: string) => ({ type: 'input_image', image_url: url });

// GLM-4.1V and GLM-4.5V (its MoE language model), each with its own reference tokens.
describe.each(['glm4v-tiny', 'glm45v-tiny'])('vision end to end: maya serve on %s', (name) => {
  const dir = fileURLToPath(new URL(`../fixtures/engine/${name}/`, import.meta.url));
  const visionFixtures = JSON.parse(readFileSync(`${dir}/fixtures.json`, 'utf8')) as VisionFixtures;
  const ask = (url: string, extra: Record<string, unknown> = {}) => ({
    model: name,
    input: [{ role: 'user', content: [image(url), { type: 'input_text', text: PROMPT }] }],
    max_output_tokens: visionFixtures.prompts[0]!.greedy.length,
    ...extra,
  });
  let service: RunningService;
  const generated: number[][] = [];
  const post = (body: unknown) =>
    fetch(`${service.origin}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  beforeAll(async () => {
    service = await startLoopbackService({
      server: { engine: TEST_ENGINE_SETTINGS },
      modelDir: dir,
      loadRuntime: async (dir, load) => recordTokens(await loadModelRuntime(dir, load), generated),
    });
    await service.loaded;
  });
  afterAll(() => service.stop());

  it('/v1/status reports the vision path', async () => {
    const status = (await (await fetch(`${service.origin}/v1/status`)).json()) as { engine: { vision: boolean } };
    expect(status.engine.vision).toBe(true);
  });

  it("JSON: the engine's greedy tokens equal the reference's; usage counts the image tokens", async () => {
    const res = await post(ask(fixtureDataUrl(0)));
    expect(res.status).toBe(200);
    const body = (await res.json()) as { status: string; usage: { input_tokens: number; output_tokens: number } };
    expect(generated.at(-1)).toEqual(visionFixtures.prompts[0]!.greedy);
    expect(body.usage.input_tokens).toBe(visionFixtures.prompts[0]!.ids.length);
    expect(body.usage.output_tokens).toBe(visionFixtures.prompts[0]!.greedy.length);
  });

  it('SSE: the same tokens, and the stream ends with response.completed or response.incomplete', async () => {
    const res = await post(ask(fixtureDataUrl(0), { stream: true }));
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toMatch(/event: response\.(completed|incomplete)/);
    expect(generated.at(-1)).toEqual(visionFixtures.prompts[0]!.greedy);
  });

  it('a stored conversation continuing after the image reports cached tokens covering it', async () => {
    const first = (await (await post(ask(fixtureDataUrl(0), { store: true }))).json()) as { id: string };
    const res = await post({
      model: name,
      previous_response_id: first.id,
      input: 'And the colours?',
      max_output_tokens: 16,
    });
    expect(res.status).toBe(200);
    const usage = ((await res.json()) as { usage: { input_tokens_details: { cached_tokens: number } } }).usage;
    const lastImageToken = visionFixtures.prompts[0]!.ids.lastIndexOf(1012);
    expect(usage.input_tokens_details.cached_tokens).toBeGreaterThan(lastImageToken);
  });

  it('the same prompt with other pixels (same size) reuses nothing from the image on', async () => {
    const again = (await (await post(ask(fixtureDataUrl(0)))).json()) as {
      usage: { input_tokens_details: { cached_tokens: number } };
    };
    const firstImageToken = visionFixtures.prompts[0]!.ids.indexOf(1012);
    expect(again.usage.input_tokens_details.cached_tokens).toBeGreaterThan(firstImageToken);
    const flipped = await sharp(fixturePng(0)).flop().png().toBuffer();
    const other = (await (await post(ask(`data:image/png;base64,${flipped.toString('base64')}`))).json()) as {
      usage: { input_tokens_details: { cached_tokens: number } };
    };
    expect(other.usage.input_tokens_details.cached_tokens).toBeLessThanOrEqual(firstImageToken);
  });
});

/**
 * Images through the plan on the GLM-4.1V fixture checkpoint (real tokenizer, template and image
 * processor; FakeEngine): the prompt ids equal the PyTorch reference's (each `<|image|>` expanded
 * to the image's token count), the pixels equal the reference's, the cache key follows the pixels,
 * images in function results are placed where the template renders tool results, and image
 * tokens count towards the context.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { normaliseInput } from '../../responses/input-history.ts';
import { planResponseAsync, type PlanRequest } from '../../responses/response-plan.ts';
import { PromptPool } from '../../runtime/prompt-pool.ts';
import { ApiError } from '../../contract/errors.ts';
import { OFF_THREAD_IMAGE_PIXELS } from '../../responses/images.ts';
import sharp from 'sharp';
import { VISION_DIR, fixtureDataUrl, goldenPixels, visionFixtures, visionRuntime } from '../helpers/vision-runtime.ts';

const image = (index = 0) => ({ type: 'input_image', image_url: fixtureDataUrl(index) });
const text = (value: string) => ({ type: 'input_text', text: value });

async function plan(input: Record<string, unknown>[], request: Partial<PlanRequest> = {}, contextLength?: number) {
  const runtime = await visionRuntime(contextLength ? { info: { contextLength } } : {});
  return planResponseAsync(runtime, { model: 'glm4v-tiny', ...request }, normaliseInput(input), 0);
}

const maxDiff = (a: Float32Array, b: Float32Array) => a.reduce((m, v, i) => Math.max(m, Math.abs(v - b[i]!)), 0);

describe('images in the plan (glm4v-tiny fixture)', () => {
  const pool = new PromptPool({ dir: VISION_DIR }, 1);
  afterAll(() => pool.close());

  it("prompt 0: the ids equal the reference's, and the image's pixels, grid and hash reach the plan", async () => {
    const planned = await plan([{ role: 'user', content: [image(0), text('What is in this image?')] }]);
    expect(planned.promptIds).toEqual(visionFixtures.prompts[0]!.ids);
    expect(planned.promptIds.filter((id) => id === 1012)).toHaveLength(visionFixtures.images[0]!.n_tokens);
    expect(planned.images).toHaveLength(1);
    expect(planned.images![0]!.grid).toEqual(visionFixtures.images[0]!.grid_thw);
    expect(maxDiff(planned.images![0]!.pixels, goldenPixels(0))).toBeLessThanOrEqual(1e-6);
  });

  it("prompt 1: two images between text parts give the reference's ids, in order", async () => {
    const planned = await plan([{ role: 'user', content: [text('Compare '), image(0), text(' with '), image(1)] }]);
    expect(planned.promptIds).toEqual(visionFixtures.prompts[1]!.ids);
    expect(planned.images!.map((i) => i.grid)).toEqual([
      visionFixtures.images[0]!.grid_thw,
      visionFixtures.images[1]!.grid_thw,
    ]);
  });

  it('the cache key is the same for the same pixels in another request and differs for other pixels', async () => {
    const a = await plan([{ role: 'user', content: [image(0)] }]);
    const b = await plan([{ role: 'user', content: [text('again'), image(0)] }]);
    const c = await plan([{ role: 'user', content: [image(1)] }]);
    expect(typeof a.images![0]!.hash).toBe('bigint');
    expect(b.images![0]!.hash).toBe(a.images![0]!.hash);
    expect(c.images![0]!.hash).not.toBe(a.images![0]!.hash);
  });

  it('an image in a function_call_output is rendered inside the tool result', async () => {
    const planned = await plan(
      [
        { role: 'user', content: 'Take a photo.' },
        { type: 'function_call', call_id: 'c1', name: 'camera', arguments: '{}' },
        { type: 'function_call_output', call_id: 'c1', output: [text('Here:'), image(1)] },
      ],
      { tools: [{ type: 'function', name: 'camera', parameters: { type: 'object', properties: {} } }] },
    );
    const runtime = await visionRuntime();
    const observation = runtime.tokenizer.tokenToId('<|observation|>')!;
    const begin = runtime.tokenizer.tokenToId('<|begin_of_image|>')!;
    const ids = planned.promptIds;
    expect(ids.indexOf(begin)).toBeGreaterThan(ids.indexOf(observation));
    expect(ids.filter((id) => id === 1012)).toHaveLength(visionFixtures.images[1]!.n_tokens);
    expect(planned.images).toHaveLength(1);
  });

  it('user text spelling <|image|> adds no image token (plain text), so the count stays one per image', async () => {
    const planned = await plan([{ role: 'user', content: [text('a <|image|> b'), image(0)] }]);
    expect(planned.promptIds.filter((id) => id === 1012)).toHaveLength(visionFixtures.images[0]!.n_tokens);
  });

  it("an image's tokens count towards the context: 400 context_length_exceeded", async () => {
    const length = visionFixtures.prompts[0]!.ids.length;
    const error = await plan(
      [{ role: 'user', content: [image(0), text('What is in this image?')] }],
      { max_output_tokens: 8 },
      length + 4,
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).code).toBe('context_length_exceeded');
    expect((error as ApiError).message).toContain(`(${length} tokens)`);
  });

  it('a large image is processed on a prompt worker, to the same pixels as on the calling thread', async () => {
    const runtime = { ...(await visionRuntime({ info: { contextLength: 8192 } })), promptWorkers: pool };
    const width = 600;
    const height = 500;
    const raw = Buffer.from(new Uint8Array(width * height * 3).map((_, i) => (i * 2654435761) >>> 24));
    const png = await sharp(raw, { raw: { width, height, channels: 3 } })
      .png()
      .toBuffer();
    const input = normaliseInput([
      {
        role: 'user',
        content: [{ type: 'input_image', image_url: `data:image/png;base64,${png.toString('base64')}` }],
      },
    ]);
    const [h, w] = [504, 588]; // smart_resize: round(500/28)·28, round(600/28)·28 (within the fixture's budget)
    expect(h * w).toBeGreaterThanOrEqual(OFF_THREAD_IMAGE_PIXELS);
    let calls = 0;
    const counting = {
      render: pool.render.bind(pool),
      processImage: (...args: Parameters<PromptPool['processImage']>) => (calls++, pool.processImage(...args)),
    };
    const offThread = await planResponseAsync(
      { ...runtime, promptWorkers: counting },
      { model: 'glm4v-tiny' },
      input,
      0,
    );
    const inline = await planResponseAsync({ ...runtime, promptWorkers: undefined }, { model: 'glm4v-tiny' }, input, 0);
    expect(calls).toBe(1);
    expect(offThread.images![0]!.grid).toEqual([1, h / 14, w / 14]);
    expect(offThread.images![0]!.hash).toBe(inline.images![0]!.hash);
    expect(offThread.promptIds).toEqual(inline.promptIds);
  });

  it('the prompt worker path renders the same ids for a large input with an image', async () => {
    const runtime = { ...(await visionRuntime({ info: { contextLength: 8192 } })), promptWorkers: pool };
    const long = 'word '.repeat(2000);
    const input = normaliseInput([{ role: 'user', content: [text(long), image(0)] }]);
    const offThread = await planResponseAsync(runtime, { model: 'glm4v-tiny' }, input, 0);
    const inline = await planResponseAsync({ ...runtime, promptWorkers: undefined }, { model: 'glm4v-tiny' }, input, 0);
    expect(offThread.promptIds).toEqual(inline.promptIds);
    expect(offThread.promptIds.filter((id) => id === 1012)).toHaveLength(visionFixtures.images[0]!.n_tokens);
    expect(offThread.images).toHaveLength(1);
  });
});

/**
 * The GLM-4.1V fixture checkpoint (test/fixtures/engine/glm4v-tiny) as a ModelRuntime over
 * FakeEngine: its real tokenizer, dialect (the checkpoint's template with image parts) and image
 * processor, so handler and plan tests see exactly the prompt ids and pixels the native engine
 * would get, and can assert what reached the engine (FakeEngine.calls). Also the fixture images
 * as data URLs and their golden values.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Tokenizer } from '../../checkpoint/tokenizer.ts';
import { loadDialect } from '../../dialects/select.ts';
import { pipelineTokenizer, visionConfig } from '../../runtime/load-model-runtime.ts';
import type { ModelRuntime } from '../../runtime/model-runtime.ts';
import { FakeEngine, type FakeEngineOptions } from './fake-engine.ts';
import { stubRuntime } from './test-app.ts';

export const VISION_FIXTURES = new URL('../fixtures/engine/', import.meta.url);
export const VISION_DIR = fileURLToPath(new URL('glm4v-tiny/', VISION_FIXTURES));

export interface VisionFixtures {
  images: Array<{
    png: string;
    height: number;
    width: number;
    pixel_values: string;
    grid_thw: [number, number, number];
    n_tokens: number;
  }>;
  prompts: Array<{ text: string; images: number[]; ids: number[]; greedy: number[] }>;
}

export const visionFixtures = JSON.parse(
  readFileSync(new URL('glm4v-tiny/fixtures.json', VISION_FIXTURES), 'utf8'),
) as VisionFixtures;

/** A fixture image's bytes. */
export const fixturePng = (index = 0): Buffer =>
  readFileSync(new URL(visionFixtures.images[index]!.png, VISION_FIXTURES));

/** A fixture image as a `data:image/png;base64,` URL. */
export const fixtureDataUrl = (index = 0): string => `data:image/png;base64,${fixturePng(index).toString('base64')}`;

/** A fixture image's golden pixel_values (float32 rows from the PyTorch reference). */
export function goldenPixels(index = 0): Float32Array {
  const bytes = readFileSync(new URL(`glm4v-tiny/${visionFixtures.images[index]!.pixel_values}`, VISION_FIXTURES));
  return new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
}

/** The fixture checkpoint's tokenizer, dialect and vision config over a FakeEngine that reports vision. */
export async function visionRuntime(options: FakeEngineOptions = {}): Promise<ModelRuntime & { engine: FakeEngine }> {
  const config = JSON.parse(readFileSync(`${VISION_DIR}/config.json`, 'utf8')) as Record<string, unknown>;
  const engine = new FakeEngine({ ...options, info: { contextLength: 2048, vision: true, ...options.info } });
  const tokenizer = pipelineTokenizer(await Tokenizer.fromDir(VISION_DIR));
  const dialect = await loadDialect(VISION_DIR);
  const runtime = stubRuntime({
    id: 'glm4v-tiny',
    dir: VISION_DIR,
    engine,
    tokenizer,
    dialect,
    dialectName: dialect.name,
    vision: await visionConfig(VISION_DIR, config),
  });
  return runtime as ModelRuntime & { engine: FakeEngine };
}

/**
 * Runs one generation (greedy, or sampled with a temperature and seed) on a model directory and
 * prints {runtime, ids} as JSON. Spawned by bun.test.ts under Bun (and run in-process under Node)
 * so both runtimes' outputs can be compared.
 *   bun test/engine/greedy-script.ts MODEL_DIR 1,2,3 MAX_TOKENS [TEMPERATURE SEED [TOP_K]]
 */
import { pathToFileURL } from 'node:url';
import { NativeEngine } from '../../engine-cuda/native-engine.ts';
import { isBun } from '../../engine-cuda/ffi.ts';
import { TEST_ENGINE } from '../helpers/test-engine.ts';

export async function greedyIds(
  dir: string,
  promptIds: number[],
  maxTokens: number,
  temperature = 0,
  seed = 0,
  topK = 0,
): Promise<number[]> {
  const engine = await NativeEngine.load(dir, TEST_ENGINE);
  try {
    const ids: number[] = [];
    for await (const event of engine.generate({ promptIds, maxTokens, temperature, seed, topP: 0.95, topK })) {
      if (event.type === 'token') ids.push(event.id);
    }
    return ids;
  } finally {
    await engine.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [dir = '', prompt = '', max = '8', temperature = '0', seed = '0', topK = '0'] = process.argv.slice(2);
  const ids = await greedyIds(
    dir,
    prompt.split(',').map(Number),
    Number(max),
    Number(temperature),
    Number(seed),
    Number(topK),
  );
  console.log(JSON.stringify({ runtime: isBun ? 'bun' : 'node', ids }));
}

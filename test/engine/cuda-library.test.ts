/**
 * The CUDA backend's library path (MAYA_ENGINE_CUDA_LIB) reaches the engine through
 * eng_cuda_lib_set before the first context: a CUDA context then looks exactly there. The library
 * is looked up once per process, so this file runs alone in its process (vitest's forks pool).
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { NativeEngine } from '../../engine-cuda/native-engine.ts';
import { TEST_ENGINE } from '../helpers/test-engine.ts';
import { fixtureDir } from './engine-helpers.ts';

describe('NativeEngine cudaLibPath', () => {
  it('a cuda context looks for the backend library at the given path, and says so', async () => {
    const missing = join(import.meta.dirname, 'no-such-dir/libmaya_engine_cuda.so');
    const loading = NativeEngine.load(fixtureDir('llama-f32'), {
      ...TEST_ENGINE,
      backend: 'cuda',
      cudaLibPath: missing,
    });
    await expect(loading).rejects.toMatchObject({ code: 'unsupported', message: expect.stringContaining(missing) });
    // Once looked up, the path is fixed for the process: another one is refused by name.
    const other = NativeEngine.load(fixtureDir('llama-f32'), { ...TEST_ENGINE, cudaLibPath: '/elsewhere/lib.so' });
    await expect(other).rejects.toMatchObject({
      code: 'invalid_arg',
      message: expect.stringContaining('already looked up'),
    });
  });
});

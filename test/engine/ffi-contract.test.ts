import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ENG, ENG_FUNCTIONS, NativeLib, defaultLibraryPath, encodeParams } from '../../engine-cuda/ffi.ts';

const header = readFileSync(new URL('../../engine-cuda/include/engine.h', import.meta.url), 'utf8');
const tmp = mkdtempSync(join(tmpdir(), 'maya-ffi-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function headerConstants(): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of header.matchAll(/#define\s+(ENG_[A-Z0-9_]+)\s+(-?\d+)/g)) out.set(m[1]!, Number(m[2]));
  for (const m of header.matchAll(/\b(ENG_[A-Z0-9_]+)\s*=\s*(-?\d+)/g)) out.set(m[1]!, Number(m[2]));
  return out;
}

describe('ffi.ts mirrors engine.h', () => {
  it('has every ENG_* constant with the header value, and no others', () => {
    const fromHeader = headerConstants();
    expect(fromHeader.size).toBeGreaterThan(50);
    const fromTs = new Map(Object.entries(ENG).map(([k, v]) => [`ENG_${k}`, v]));
    expect(Object.fromEntries(fromTs)).toEqual(Object.fromEntries(fromHeader));
  });

  it('binds exactly the exported functions of the header', async () => {
    const exported = [...header.matchAll(/ENG_API\s+[^;(]*?\b(eng_[a-z_]+)\s*\(/g)].map((m) => m[1]);
    expect(exported).toEqual([...ENG_FUNCTIONS]);
    const lib = await NativeLib.open();
    expect(lib.functions.sort()).toEqual([...ENG_FUNCTIONS].sort());
    expect(lib.abiVersion()).toBe(ENG.ABI_VERSION);
    expect(lib.path).toBe(defaultLibraryPath());
  });

  it('turns statuses into EngineError with the status text and the last-error detail', async () => {
    const lib = await NativeLib.open();
    expect(lib.check(3, 'x')).toBe(3);
    expect(() => lib.createContext(join(tmp, 'no-such-model'))).toThrow(expect.objectContaining({ code: 'io' }));
    let message = '';
    try {
      lib.createContext(join(tmp, 'no-such-model'));
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toContain(lib.statusStr(ENG.STATUS_IO));
    expect(message).toContain('no-such-model');
  });

  it('encodes creation parameters at their ENG_PARAM_* index', () => {
    const p = encodeParams({ backend: 'cpu', numThreads: 2, blockSize: 32, contextLength: 77, numBlocks: 0 });
    expect(p.length).toBe(ENG.PARAM_COUNT);
    expect(p[ENG.PARAM_BACKEND]).toBe(BigInt(ENG.BACKEND_CPU));
    expect(p[ENG.PARAM_N_THREADS]).toBe(2n);
    expect(p[ENG.PARAM_BLOCK_SIZE]).toBe(32n);
    expect(p[ENG.PARAM_N_CTX]).toBe(77n);
    expect(p[ENG.PARAM_N_BLOCKS]).toBe(0n);
  });

  it("encodes the engine settings' parameters: kernel path, weight copy and the CUDA knobs", () => {
    const p = encodeParams({
      simd: 'avx512',
      weightDtype: 'q8',
      weightCopy: false,
      cudaDevice: 1,
      cudaTcMinTokens: 32,
      cudaGraphs: false,
    });
    expect(p[ENG.PARAM_SIMD]).toBe(3n);
    expect(p[ENG.PARAM_WEIGHT_DTYPE]).toBe(BigInt(ENG.WEIGHT_DTYPE_Q8));
    expect(p[ENG.PARAM_WEIGHT_COPY]).toBe(2n);
    expect(p[ENG.PARAM_CUDA_DEVICE]).toBe(1n);
    expect(p[ENG.PARAM_CUDA_TC_MIN_TOKENS]).toBe(32n);
    expect(p[ENG.PARAM_CUDA_GRAPHS]).toBe(2n);
    const on = encodeParams({ simd: 'scalar', weightCopy: true, cudaGraphs: true });
    expect([on[ENG.PARAM_SIMD], on[ENG.PARAM_WEIGHT_COPY], on[ENG.PARAM_CUDA_GRAPHS]]).toEqual([1n, 1n, 1n]);
    expect(encodeParams({})[ENG.PARAM_SIMD]).toBe(0n); // auto: the fastest path
    expect(encodeParams({ weightDtype: 'stored' })[ENG.PARAM_WEIGHT_DTYPE]).toBe(0n); // as stored
  });

  it('refuses a library of another ABI version, and a missing one', async () => {
    const src = join(tmp, 'other.c');
    const lib = join(tmp, 'libother.so');
    writeFileSync(src, 'int eng_abi_version(void) { return 999; }\n');
    execFileSync('cc', ['-shared', '-fPIC', '-o', lib, src]);
    await expect(NativeLib.open(lib)).rejects.toMatchObject({ code: 'abi_mismatch' });
    await expect(NativeLib.open(join(tmp, 'absent.so'))).rejects.toMatchObject({ code: 'io' });
  });
});

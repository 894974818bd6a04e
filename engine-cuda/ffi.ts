/**
 * ffi.ts: the only file that imports bun:ffi or koffi. It binds the C ABI of
 * engine-cuda/include/engine.h (the symbol table below mirrors it 1:1), checks the ABI version,
 * and turns status codes into EngineError exactly once, with eng_last_error's detail.
 *
 * NativeLib / NativeContext are synchronous: every call blocks the calling thread for as long as
 * the C function runs. NativeEngine therefore drives them from a worker thread
 * (engine-worker.ts). A NativeContext is not thread-safe: one thread owns it.
 *
 * Library path: the one given (config/: MAYA_ENGINE_LIB), else engine-cuda/build/libmaya_engine.so
 * beside this file. Nothing here reads the environment.
 */
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { EngineError, type EngineErrorCode } from './engine.ts';

/** The ENG_* constants of engine.h, without the prefix (test/engine/ffi-contract.test.ts parses the header). */
export const ENG = {
  ABI_VERSION: 12,
  STATUS_OK: 0,
  STATUS_NO_KV_SPACE: 1,
  STATUS_INVALID_ARG: -1,
  STATUS_IO: -2,
  STATUS_BAD_CHECKPOINT: -3,
  STATUS_UNSUPPORTED: -4,
  STATUS_CONTEXT_OVERFLOW: -5,
  STATUS_OUT_OF_MEMORY: -6,
  STATUS_UNKNOWN_SEQ: -7,
  STATUS_BACKEND: -8,
  STATUS_INTERNAL: -9,
  PARAM_BACKEND: 0,
  PARAM_N_THREADS: 1,
  PARAM_BLOCK_SIZE: 2,
  PARAM_N_BLOCKS: 3,
  PARAM_KV_BYTES: 4,
  PARAM_MAX_BATCH: 5,
  PARAM_PREFILL_CHUNK: 6,
  PARAM_N_CTX: 7,
  PARAM_WEIGHT_DTYPE: 8,
  PARAM_SIMD: 9,
  PARAM_WEIGHT_COPY: 10,
  PARAM_CUDA_DEVICE: 11,
  PARAM_CUDA_TC_MIN_TOKENS: 12,
  PARAM_CUDA_GRAPHS: 13,
  PARAM_SPECULATIVE: 14,
  PARAM_SPEC_MAX_DRAFT: 15,
  PARAM_KV_DTYPE: 16,
  PARAM_MAX_LOGITS: 17,
  PARAM_COUNT: 18,
  INFO_N_VOCAB: 0,
  INFO_N_CTX: 1,
  INFO_N_LAYER: 2,
  INFO_N_EMBD: 3,
  INFO_N_HEAD: 4,
  INFO_N_HEAD_KV: 5,
  INFO_HEAD_DIM: 6,
  INFO_BLOCK_SIZE: 7,
  INFO_N_BLOCKS: 8,
  INFO_BACKEND: 9,
  INFO_ARCH: 10,
  INFO_N_PARAMS: 11,
  INFO_WEIGHT_BYTES: 12,
  INFO_SIMD: 13,
  INFO_N_PARAMS_ACTIVE: 14,
  INFO_VISION: 15,
  INFO_WEIGHT_DTYPE: 16,
  INFO_N_THREADS: 17,
  INFO_SPECULATIVE: 18,
  INFO_SPEC_MAX_DRAFT: 19,
  INFO_KV_DTYPE: 20,
  INFO_KV_BYTES_PER_TOKEN: 21,
  INFO_KV_CAPACITY: 22,
  INFO_COUNT: 23,
  STAT_BLOCKS_TOTAL: 0,
  STAT_BLOCKS_FREE: 1,
  STAT_BLOCKS_CACHED: 2,
  STAT_SEQS_WAITING: 3,
  STAT_SEQS_RUNNING: 4,
  STAT_STEPS: 5,
  STAT_PREFILL_TOKENS: 6,
  STAT_CACHED_TOKENS: 7,
  STAT_DECODE_TOKENS: 8,
  STAT_PREEMPTIONS: 9,
  STAT_IMAGES_ENCODED: 10,
  STAT_ENCODE_US: 11,
  STAT_ENCODE_CPU_US: 12,
  STAT_DRAFT_TOKENS: 13,
  STAT_DRAFT_ACCEPTED: 14,
  STAT_DECODE_PASSES: 15,
  STAT_MTP_DRAFTS: 16,
  STAT_MTP_FIRST_ACCEPTED: 17,
  STAT_MTP_DRAFT_TOKENS: 18,
  STAT_MTP_DRAFT_ACCEPTED: 19,
  STAT_TOKEN_COST_PPM: 20,
  STAT_COUNT: 21,
  EVENT_PREFILLED: 1,
  EVENT_TOKEN: 2,
  EVENT_FINISH: 3,
  EVENT_PREFILL_PROGRESS: 4,
  FINISH_STOP: 1,
  FINISH_LENGTH: 2,
  FINISH_CANCELLED: 3,
  FINISH_ERROR: 4,
  EVENT_INTS: 4,
  SEQ_KEEP_LOGITS: 1,
  BACKEND_AUTO: 0,
  BACKEND_CPU: 1,
  BACKEND_CUDA: 2,
  ARCH_GLM4: 1,
  ARCH_LLAMA: 2,
  ARCH_QWEN3: 3,
  ARCH_GLM4_MOE: 4,
  ARCH_DEEPSEEK_V3: 5,
  ARCH_GLM4V: 6,
  ARCH_GLM4V_MOE: 7,
  ARCH_QWEN3_MOE: 8,
  SIMD_SCALAR: 0,
  SIMD_AVX2: 1,
  SIMD_AVX512: 2,
  WEIGHT_DTYPE_F32: 0,
  WEIGHT_DTYPE_F16: 1,
  WEIGHT_DTYPE_BF16: 2,
  WEIGHT_DTYPE_FP8: 4,
  WEIGHT_DTYPE_Q8: 5,
  SEQ_REPORT_PROGRESS: 2,
  SEQ_PROMPT_LOGITS: 4,
  SPEC_AUTO: 0,
  SPEC_OFF: 1,
  SPEC_NGRAM: 2,
  SPEC_MTP: 3,
  WEIGHT_DTYPE_Q8_0: 8,
  WEIGHT_DTYPE_Q4_0: 9,
  WEIGHT_DTYPE_Q4_1: 10,
  WEIGHT_DTYPE_Q5_0: 11,
  WEIGHT_DTYPE_Q5_1: 12,
  WEIGHT_DTYPE_Q4_K: 13,
  WEIGHT_DTYPE_Q5_K: 14,
  WEIGHT_DTYPE_Q6_K: 15,
  KV_DTYPE_F32: 0,
  KV_DTYPE_F16: 1,
  KV_DTYPE_BF16: 2,
  KV_DTYPE_Q8_0: 8,
} as const;

/** The exported functions of engine.h, in header order. */
export const ENG_FUNCTIONS = [
  'eng_abi_version',
  'eng_status_str',
  'eng_last_error',
  'eng_ctx_create',
  'eng_cuda_lib_set',
  'eng_ctx_free',
  'eng_ctx_info',
  'eng_ctx_stats',
  'eng_seq_add',
  'eng_seq_add_mm',
  'eng_seq_cancel',
  'eng_seq_logits',
  'eng_seq_prompt_logits',
  'eng_seq_mask',
  'eng_seq_draft',
  'eng_step',
] as const;

const STATUS_CODES: Record<number, EngineErrorCode> = {
  [ENG.STATUS_INVALID_ARG]: 'invalid_arg',
  [ENG.STATUS_IO]: 'io',
  [ENG.STATUS_BAD_CHECKPOINT]: 'bad_checkpoint',
  [ENG.STATUS_UNSUPPORTED]: 'unsupported',
  [ENG.STATUS_CONTEXT_OVERFLOW]: 'context_overflow',
  [ENG.STATUS_OUT_OF_MEMORY]: 'out_of_memory',
  [ENG.STATUS_UNKNOWN_SEQ]: 'unknown_seq',
  [ENG.STATUS_BACKEND]: 'backend',
  [ENG.STATUS_INTERNAL]: 'internal',
};

/** Backends by name; 'auto' = cuda when usable, else cpu. */
export const BACKENDS = ['auto', 'cpu', 'cuda'] as const;
/** CPU kernel paths by name; 'auto' = the fastest the CPU runs. */
export const SIMD_PATHS = ['auto', 'scalar', 'avx2', 'avx512'] as const;
/** KV cache row formats by name (MAYA_KV_DTYPE); 'auto' = the engine's default (engine.h). */
export const KV_DTYPES = ['auto', 'f32', 'bf16', 'f16', 'q8_0'] as const;
/** Tensor-core threshold meaning "never" (above any batch the engine runs). */
export const TC_NEVER = 2 ** 30;
/** Speculative decoding modes by name (ENG_PARAM_SPECULATIVE); 'auto' = MTP where the checkpoint has it (GLM-4.5 /
 * DeepSeek-V3 with their MTP layer, on the CPU backend), else prompt lookup. */
export const SPECULATIVE_MODES = ['auto', 'off', 'ngram', 'mtp'] as const;

/** Creation parameters (ENG_PARAM_*); unset or <= 0 means the library's default. */
export interface ContextParams {
  backend?: (typeof BACKENDS)[number];
  numThreads?: number;
  blockSize?: number;
  numBlocks?: number;
  kvBytes?: number;
  maxBatch?: number;
  prefillChunk?: number;
  contextLength?: number;
  /**
   * Weights as stored (default); 'q8': quantized at load to int8 per block of 32; 'q4_k_m', 'q8_0',
   * 'q4_0', 'q6_k': quantized at load to that llama.cpp file type's mixture of GGUF block types
   * (ENG_PARAM_WEIGHT_DTYPE). CPU backend.
   */
  weightDtype?: 'stored' | 'q8' | 'q4_k_m' | 'q8_0' | 'q4_0' | 'q6_k';
  /** The context's CPU kernel path; default 'auto' (the fastest this CPU runs). */
  simd?: (typeof SIMD_PATHS)[number];
  /** CPU backend: copy the matrices into huge pages when they fit (default true). */
  weightCopy?: boolean;
  /** CUDA device ordinal (default 0). */
  cudaDevice?: number;
  /** CUDA: matmuls over at least this many tokens use the tensor-core gemm (default 16; TC_NEVER: never). */
  cudaTcMinTokens?: number;
  /** CUDA: replay decode steps as CUDA graphs (default true). */
  cudaGraphs?: boolean;
  /** Speculative decoding (default 'auto'). */
  speculative?: (typeof SPECULATIVE_MODES)[number];
  /** Most drafted tokens a sequence verifies per step (default 8, at most 64). */
  specMaxDraft?: number;
  /** The KV cache's rows (default 'auto': f32, or f16 for weights run at 8 bits or fewer; CUDA: f32 only). */
  kvDtype?: (typeof KV_DTYPES)[number];
  /** Most logits rows a step computes (default maxBatch x (1 + specMaxDraft as run), minimum maxBatch): a
   * PROMPT_LOGITS sequence prefills at most this many tokens a step. */
  maxLogits?: number;
}

export interface SeqAddArgs {
  tokens: ArrayLike<number>;
  stopIds?: ArrayLike<number>;
  maxTokens: number;
  temperature?: number;
  topP?: number;
  /** >= 0; 0 = off. */
  topK?: number;
  seed?: number | bigint;
  flags?: number;
  /** Images (eng_seq_add_mm): each one's pixel_values rows, grid (t, h, w in patches) and pixel hash. */
  images?: readonly SeqImageArgs[];
}

export interface SeqImageArgs {
  pixels: Float32Array;
  grid: readonly [number, number, number];
  hash: bigint;
}

/** The raw C functions, with pointers as bigint (koffi) or number (bun). */
interface Symbols {
  eng_abi_version(): number;
  eng_status_str(status: number): string;
  eng_last_error(buf: Uint8Array, len: number): number;
  eng_ctx_create(modelDir: string, params: BigInt64Array, nParams: number, out: BigUint64Array): number;
  eng_cuda_lib_set(path: string | null): number;
  eng_ctx_free(ctx: CtxHandle): void;
  eng_ctx_info(ctx: CtxHandle, out: BigInt64Array, cap: number): number;
  eng_ctx_stats(ctx: CtxHandle, out: BigInt64Array, cap: number): number;
  eng_seq_add(
    ctx: CtxHandle,
    tokens: Int32Array,
    nTokens: number,
    stopIds: Int32Array,
    nStop: number,
    maxTokens: number,
    temperature: number,
    topP: number,
    topK: number,
    seed: bigint,
    flags: number,
    outSeqId: Int32Array,
  ): number;
  eng_seq_add_mm(
    ctx: CtxHandle,
    tokens: Int32Array,
    nTokens: number,
    stopIds: Int32Array,
    nStop: number,
    maxTokens: number,
    temperature: number,
    topP: number,
    topK: number,
    seed: bigint,
    flags: number,
    pixels: Float32Array,
    nPixels: bigint,
    grids: Int32Array,
    hashes: BigUint64Array,
    nImages: number,
    outSeqId: Int32Array,
  ): number;
  eng_seq_cancel(ctx: CtxHandle, seqId: number): number;
  eng_seq_logits(ctx: CtxHandle, seqId: number, out: Float32Array, cap: number): number;
  eng_seq_prompt_logits(ctx: CtxHandle, seqId: number, out: Float32Array, cap: bigint): number;
  eng_seq_mask(ctx: CtxHandle, seqId: number, mask: Uint32Array, nWords: number): number;
  eng_seq_draft(
    ctx: CtxHandle,
    seqId: number,
    tokens: Int32Array,
    n: number,
    masks: Uint32Array,
    nWords: number,
  ): number;
  eng_step(ctx: CtxHandle, out: Int32Array, cap: number): number;
}
type CtxHandle = bigint | number;

/** The library built beside this module (engine-cuda/build/libmaya_engine.so). */
export function defaultLibraryPath(): string {
  return fileURLToPath(new URL('./build/libmaya_engine.so', import.meta.url));
}

export const isBun = typeof (globalThis as { Bun?: unknown }).Bun !== 'undefined';

/** Reads eng_abi_version() alone, so a library of another ABI is refused before its symbols are bound. */
async function probeAbiVersion(path: string): Promise<number> {
  if (isBun) {
    const ffi = await import('bun:ffi');
    const lib = ffi.dlopen(path, { eng_abi_version: { args: [], returns: ffi.FFIType.i32 } });
    try {
      return lib.symbols.eng_abi_version();
    } finally {
      lib.close();
    }
  }
  const koffi = createRequire(import.meta.url)('koffi') as typeof import('koffi');
  const lib = koffi.load(path);
  try {
    return (lib.func('int32_t eng_abi_version(void)') as () => number)();
  } finally {
    lib.unload();
  }
}

async function bindBun(path: string): Promise<Symbols> {
  const ffi = await import('bun:ffi');
  const { FFIType: T } = ffi;
  const lib = ffi.dlopen(path, {
    eng_abi_version: { args: [], returns: T.i32 },
    eng_status_str: { args: [T.i32], returns: T.cstring },
    eng_last_error: { args: [T.ptr, T.i32], returns: T.i32 },
    eng_ctx_create: { args: [T.ptr, T.ptr, T.i32, T.ptr], returns: T.i32 },
    eng_cuda_lib_set: { args: [T.ptr], returns: T.i32 },
    eng_ctx_free: { args: [T.ptr], returns: T.void },
    eng_ctx_info: { args: [T.ptr, T.ptr, T.i32], returns: T.i32 },
    eng_ctx_stats: { args: [T.ptr, T.ptr, T.i32], returns: T.i32 },
    eng_seq_add: {
      args: [T.ptr, T.ptr, T.i32, T.ptr, T.i32, T.i32, T.f32, T.f32, T.i32, T.u64, T.u32, T.ptr],
      returns: T.i32,
    },
    eng_seq_add_mm: {
      args: [
        T.ptr,
        T.ptr,
        T.i32,
        T.ptr,
        T.i32,
        T.i32,
        T.f32,
        T.f32,
        T.i32,
        T.u64,
        T.u32,
        T.ptr,
        T.i64,
        T.ptr,
        T.ptr,
        T.i32,
        T.ptr,
      ],
      returns: T.i32,
    },
    eng_seq_cancel: { args: [T.ptr, T.i32], returns: T.i32 },
    eng_seq_logits: { args: [T.ptr, T.i32, T.ptr, T.i32], returns: T.i32 },
    eng_seq_prompt_logits: { args: [T.ptr, T.i32, T.ptr, T.i64], returns: T.i32 },
    eng_seq_mask: { args: [T.ptr, T.i32, T.ptr, T.i32], returns: T.i32 },
    eng_seq_draft: { args: [T.ptr, T.i32, T.ptr, T.i32, T.ptr, T.i32], returns: T.i32 },
    eng_step: { args: [T.ptr, T.ptr, T.i32], returns: T.i32 },
  });
  const s = lib.symbols;
  // The one type bridge at the FFI boundary: bun:ffi types pointer arguments as its branded
  // Pointer, the ABI table (Symbols, mirrored 1:1 from engine.h) as the context handle number.
  return {
    ...(s as unknown as Symbols),
    eng_status_str: (status) => String(s.eng_status_str(status)),
    eng_ctx_create: (dir, params, n, out) => s.eng_ctx_create(cString(dir), params, n, out),
    eng_cuda_lib_set: (path) => s.eng_cuda_lib_set(path === null ? null : cString(path)),
  };
}

let koffiTypesDeclared = false;

async function bindKoffi(path: string): Promise<Symbols> {
  const require = createRequire(import.meta.url);
  const koffi = require('koffi') as typeof import('koffi');
  const lib = koffi.load(path);
  if (!koffiTypesDeclared) {
    koffi.opaque('eng_ctx');
    koffiTypesDeclared = true;
  }
  const f = (proto: string) => lib.func(proto) as (...args: unknown[]) => unknown;
  return {
    eng_abi_version: f('int32_t eng_abi_version(void)') as Symbols['eng_abi_version'],
    eng_status_str: f('const char *eng_status_str(int32_t status)') as Symbols['eng_status_str'],
    eng_last_error: f('int32_t eng_last_error(char *buf, int32_t len)') as Symbols['eng_last_error'],
    // The out pointer is passed as a BigUint64Array cell, read back after the call.
    eng_ctx_create: f(
      'int32_t eng_ctx_create(const char *dir, const int64_t *params, int32_t n, void *out)',
    ) as Symbols['eng_ctx_create'],
    eng_cuda_lib_set: f('int32_t eng_cuda_lib_set(const char *path)') as Symbols['eng_cuda_lib_set'],
    eng_ctx_free: f('void eng_ctx_free(eng_ctx *ctx)') as Symbols['eng_ctx_free'],
    eng_ctx_info: f('int32_t eng_ctx_info(const eng_ctx *ctx, int64_t *out, int32_t cap)') as Symbols['eng_ctx_info'],
    eng_ctx_stats: f(
      'int32_t eng_ctx_stats(const eng_ctx *ctx, int64_t *out, int32_t cap)',
    ) as Symbols['eng_ctx_stats'],
    eng_seq_add: f(
      'int32_t eng_seq_add(eng_ctx *ctx, const int32_t *tokens, int32_t n_tokens, const int32_t *stop_ids, ' +
        'int32_t n_stop, int32_t max_tokens, float temperature, float top_p, int32_t top_k, uint64_t seed, ' +
        'uint32_t flags, int32_t *out_seq_id)',
    ) as Symbols['eng_seq_add'],
    eng_seq_add_mm: f(
      'int32_t eng_seq_add_mm(eng_ctx *ctx, const int32_t *tokens, int32_t n_tokens, const int32_t *stop_ids, ' +
        'int32_t n_stop, int32_t max_tokens, float temperature, float top_p, int32_t top_k, uint64_t seed, ' +
        'uint32_t flags, const float *pixels, int64_t n_pixels, const int32_t *grids, const uint64_t *image_hashes, ' +
        'int32_t n_images, int32_t *out_seq_id)',
    ) as Symbols['eng_seq_add_mm'],
    eng_seq_cancel: f('int32_t eng_seq_cancel(eng_ctx *ctx, int32_t seq_id)') as Symbols['eng_seq_cancel'],
    eng_seq_logits: f(
      'int32_t eng_seq_logits(const eng_ctx *ctx, int32_t seq_id, float *out, int32_t cap)',
    ) as Symbols['eng_seq_logits'],
    eng_seq_prompt_logits: f(
      'int32_t eng_seq_prompt_logits(const eng_ctx *ctx, int32_t seq_id, float *out, int64_t cap)',
    ) as Symbols['eng_seq_prompt_logits'],
    eng_seq_mask: f(
      'int32_t eng_seq_mask(eng_ctx *ctx, int32_t seq_id, const uint32_t *mask, int32_t n_words)',
    ) as Symbols['eng_seq_mask'],
    eng_seq_draft: f(
      'int32_t eng_seq_draft(eng_ctx *ctx, int32_t seq_id, const int32_t *tokens, int32_t n, const uint32_t *masks, int32_t n_words)',
    ) as Symbols['eng_seq_draft'],
    eng_step: f('int32_t eng_step(eng_ctx *ctx, int32_t *out, int32_t cap)') as Symbols['eng_step'],
  };
}

function cString(text: string): Uint8Array {
  return new TextEncoder().encode(`${text}\0`);
}

export class NativeLib {
  private constructor(
    readonly path: string,
    private readonly sym: Symbols,
  ) {}

  /** Loads and binds the library (default: defaultLibraryPath()) and checks its ABI version. Throws EngineError('io' | 'abi_mismatch'). */
  static async open(path: string = defaultLibraryPath()): Promise<NativeLib> {
    if (!existsSync(path)) {
      throw new EngineError(
        'io',
        `engine library not found at ${path} (run npm run engine:build, or set MAYA_ENGINE_LIB to a built one)`,
      );
    }
    let version: number;
    let sym: Symbols;
    try {
      version = await probeAbiVersion(path);
    } catch (err) {
      throw new EngineError('io', `cannot load engine library ${path}: ${(err as Error).message}`);
    }
    if (version !== ENG.ABI_VERSION) {
      throw new EngineError('abi_mismatch', `engine library ${path} has ABI ${version}, expected ${ENG.ABI_VERSION}`);
    }
    try {
      sym = isBun ? await bindBun(path) : await bindKoffi(path);
    } catch (err) {
      throw new EngineError('io', `cannot bind engine library ${path}: ${(err as Error).message}`);
    }
    return new NativeLib(path, sym);
  }

  /** Names of the bound C functions (the contract test compares them with engine.h). */
  get functions(): string[] {
    return Object.entries(this.sym)
      .filter(([, value]) => typeof value === 'function')
      .map(([name]) => name);
  }

  abiVersion(): number {
    return this.sym.eng_abi_version();
  }

  statusStr(status: number): string {
    return this.sym.eng_status_str(status);
  }

  /** Detail of the latest failure on this thread ('' when none). */
  lastError(): string {
    let buf = new Uint8Array(256);
    let n = this.sym.eng_last_error(buf, buf.length);
    if (n < 0) {
      buf = new Uint8Array(-n + 1);
      n = this.sym.eng_last_error(buf, buf.length);
    }
    return new TextDecoder().decode(buf.subarray(0, Math.max(0, Math.min(n, buf.length))));
  }

  /** Throws the EngineError for a negative status (the one place codes become errors). */
  check(status: number, what: string): number {
    if (status >= 0) return status;
    const code = STATUS_CODES[status] ?? 'internal';
    const detail = this.lastError();
    throw new EngineError(code, `${what}: ${this.statusStr(status)}${detail ? ` (${detail})` : ''}`);
  }

  /** Where the CUDA backend's library is loaded from (eng_cuda_lib_set: before the first context). */
  setCudaLibrary(path: string): void {
    this.check(this.sym.eng_cuda_lib_set(path), 'eng_cuda_lib_set');
  }

  createContext(modelDir: string, params: ContextParams = {}): NativeContext {
    const p = encodeParams(params);
    const out = new BigUint64Array(1);
    this.check(this.sym.eng_ctx_create(modelDir, p, p.length, out), `loading ${modelDir}`);
    const raw = out[0] ?? 0n;
    if (raw === 0n) throw new EngineError('internal', 'eng_ctx_create returned OK without a context');
    return new NativeContext(this, this.sym, isBun ? Number(raw) : raw);
  }
}

/** ENG_PARAM_BACKEND's value of each backend. */
const BACKEND_PARAM: Record<(typeof BACKENDS)[number], number> = {
  auto: ENG.BACKEND_AUTO,
  cpu: ENG.BACKEND_CPU,
  cuda: ENG.BACKEND_CUDA,
};
/** ENG_PARAM_SIMD's value of each kernel path: 0 the fastest, else 1 + ENG_SIMD_*. */
const SIMD_PARAM: Record<(typeof SIMD_PATHS)[number], number> = {
  auto: 0,
  scalar: 1 + ENG.SIMD_SCALAR,
  avx2: 1 + ENG.SIMD_AVX2,
  avx512: 1 + ENG.SIMD_AVX512,
};
/** ENG_PARAM_SPECULATIVE's value of each mode. */
const SPECULATIVE_PARAM: Record<(typeof SPECULATIVE_MODES)[number], number> = {
  auto: ENG.SPEC_AUTO,
  off: ENG.SPEC_OFF,
  ngram: ENG.SPEC_NGRAM,
  mtp: ENG.SPEC_MTP,
};
/** ENG_PARAM_WEIGHT_DTYPE's value: 0 as stored, or the dtype to quantize to at load. */
const WEIGHT_DTYPE_PARAM: Record<NonNullable<ContextParams['weightDtype']>, number> = {
  stored: 0,
  q8: ENG.WEIGHT_DTYPE_Q8,
  q4_k_m: ENG.WEIGHT_DTYPE_Q4_K,
  q8_0: ENG.WEIGHT_DTYPE_Q8_0,
  q4_0: ENG.WEIGHT_DTYPE_Q4_0,
  q6_k: ENG.WEIGHT_DTYPE_Q6_K,
};

/** ENG_PARAM_KV_DTYPE's value: 0 the default, else 1 + ENG_KV_DTYPE_*. */
const KV_DTYPE_PARAM: Record<(typeof KV_DTYPES)[number], number> = {
  auto: 0,
  f32: 1 + ENG.KV_DTYPE_F32,
  f16: 1 + ENG.KV_DTYPE_F16,
  bf16: 1 + ENG.KV_DTYPE_BF16,
  q8_0: 1 + ENG.KV_DTYPE_Q8_0,
};

export function encodeParams(params: ContextParams): BigInt64Array {
  const p = new BigInt64Array(ENG.PARAM_COUNT);
  const set = (index: number, value: number | undefined) => {
    if (value !== undefined && value > 0) p[index] = BigInt(Math.floor(value));
  };
  set(ENG.PARAM_BACKEND, BACKEND_PARAM[params.backend ?? 'auto']);
  set(ENG.PARAM_N_THREADS, params.numThreads);
  set(ENG.PARAM_BLOCK_SIZE, params.blockSize);
  set(ENG.PARAM_N_BLOCKS, params.numBlocks);
  set(ENG.PARAM_KV_BYTES, params.kvBytes);
  set(ENG.PARAM_MAX_BATCH, params.maxBatch);
  set(ENG.PARAM_PREFILL_CHUNK, params.prefillChunk);
  set(ENG.PARAM_N_CTX, params.contextLength);
  set(ENG.PARAM_WEIGHT_DTYPE, WEIGHT_DTYPE_PARAM[params.weightDtype ?? 'stored']);
  set(ENG.PARAM_SIMD, SIMD_PARAM[params.simd ?? 'auto']);
  set(ENG.PARAM_WEIGHT_COPY, params.weightCopy === undefined ? undefined : params.weightCopy ? 1 : 2);
  set(ENG.PARAM_CUDA_DEVICE, params.cudaDevice);
  set(ENG.PARAM_CUDA_TC_MIN_TOKENS, params.cudaTcMinTokens);
  set(ENG.PARAM_CUDA_GRAPHS, params.cudaGraphs === undefined ? undefined : params.cudaGraphs ? 1 : 2);
  set(ENG.PARAM_SPECULATIVE, SPECULATIVE_PARAM[params.speculative ?? 'auto']);
  set(ENG.PARAM_SPEC_MAX_DRAFT, params.specMaxDraft);
  set(ENG.PARAM_KV_DTYPE, KV_DTYPE_PARAM[params.kvDtype ?? 'auto']);
  set(ENG.PARAM_MAX_LOGITS, params.maxLogits);
  return p;
}

export class NativeContext {
  private handle: CtxHandle | null;
  private readonly seqIdOut = new Int32Array(1);

  constructor(
    readonly lib: NativeLib,
    private readonly sym: Symbols,
    handle: CtxHandle,
  ) {
    this.handle = handle;
  }

  private get ctx(): CtxHandle {
    if (this.handle === null) throw new EngineError('closed', 'engine context is freed');
    return this.handle;
  }

  /** ENG_INFO_* fields, indexed by ENG.INFO_*. */
  info(): number[] {
    const out = new BigInt64Array(ENG.INFO_COUNT);
    const n = this.lib.check(this.sym.eng_ctx_info(this.ctx, out, out.length), 'eng_ctx_info');
    return Array.from(out.subarray(0, n), Number);
  }

  /** ENG_STAT_* fields, indexed by ENG.STAT_*. */
  stats(): number[] {
    const out = new BigInt64Array(ENG.STAT_COUNT);
    const n = this.lib.check(this.sym.eng_ctx_stats(this.ctx, out, out.length), 'eng_ctx_stats');
    return Array.from(out.subarray(0, n), Number);
  }

  /** Queues a sequence; returns its id. Throws EngineError (e.g. 'context_overflow'). */
  seqAdd(args: SeqAddArgs): number {
    const tokens = Int32Array.from(args.tokens);
    const stop = Int32Array.from(args.stopIds ?? []);
    const seed = BigInt.asUintN(64, BigInt(args.seed ?? 0));
    const images = args.images ?? [];
    // The arguments eng_seq_add and eng_seq_add_mm share, in order.
    const head = [
      this.ctx,
      tokens,
      tokens.length,
      stop.length > 0 ? stop : new Int32Array(1),
      stop.length,
      args.maxTokens,
      args.temperature ?? 0,
      args.topP ?? 1,
      args.topK ?? 0,
      seed,
      args.flags ?? 0,
    ] as const;
    if (images.length > 0) {
      // One pixel buffer for the C call (the library copies it in turn); a single image's own
      // buffer goes as it is.
      const total = images.reduce((n, img) => n + img.pixels.length, 0);
      let pixels = images[0]?.pixels ?? new Float32Array(1);
      if (images.length > 1) {
        pixels = new Float32Array(total);
        let at = 0;
        for (const img of images) {
          pixels.set(img.pixels, at);
          at += img.pixels.length;
        }
      }
      const grids = Int32Array.from(images.flatMap((img) => [img.grid[0], img.grid[1], img.grid[2]]));
      const hashes = BigUint64Array.from(images.map((img) => BigInt.asUintN(64, img.hash)));
      const status = this.sym.eng_seq_add_mm(
        ...head,
        pixels,
        BigInt(total),
        grids,
        hashes,
        images.length,
        this.seqIdOut,
      );
      this.lib.check(status, 'eng_seq_add_mm');
      return this.seqIdOut[0] ?? -1;
    }
    const status = this.sym.eng_seq_add(...head, this.seqIdOut);
    this.lib.check(status, 'eng_seq_add');
    return this.seqIdOut[0] ?? -1;
  }

  /** Marks a sequence cancelled (FINISH cancelled at the next step). Throws 'unknown_seq'. */
  seqCancel(seqId: number): void {
    this.lib.check(this.sym.eng_seq_cancel(this.ctx, seqId), 'eng_seq_cancel');
  }

  /** Copies the latest logits of a KEEP_LOGITS sequence into out; returns the vocabulary size. */
  seqLogits(seqId: number, out: Float32Array): number {
    return this.lib.check(this.sym.eng_seq_logits(this.ctx, seqId, out, out.length), 'eng_seq_logits');
  }

  /** Copies every prompt position's logits of a PROMPT_LOGITS sequence (row i scores token i + 1) into
   * out (n_prompt * V floats); returns n_prompt. Valid from its PREFILLED event until the step after FINISH. */
  seqPromptLogits(seqId: number, out: Float32Array): number {
    return this.lib.check(
      this.sym.eng_seq_prompt_logits(this.ctx, seqId, out, BigInt(out.length)),
      'eng_seq_prompt_logits',
    );
  }

  /** Restricts the sequence's next samples to the ids set in mask (ceil(V/32) words); null lifts it. */
  seqMask(seqId: number, mask: Uint32Array | null): void {
    const words = mask ?? new Uint32Array(1);
    this.lib.check(this.sym.eng_seq_mask(this.ctx, seqId, words, mask ? mask.length : 0), 'eng_seq_mask');
  }

  /**
   * Drafted tokens for the sequence's next decode pass (speculative decoding); empty clears them.
   * masks: for a constrained sequence, the mask after each drafted token (tokens.length x ceil(V/32) words).
   */
  seqDraft(seqId: number, tokens: ArrayLike<number>, masks?: Uint32Array): void {
    const buf = Int32Array.from(tokens.length > 0 ? tokens : [0]);
    const words = masks && tokens.length > 0 ? masks.length / tokens.length : 0;
    const m = masks && masks.length > 0 ? masks : new Uint32Array(1);
    this.lib.check(this.sym.eng_seq_draft(this.ctx, seqId, buf, tokens.length, m, words), 'eng_seq_draft');
  }

  /** One step; writes events (ENG.EVENT_INTS ints each) into buf and returns how many. */
  step(buf: Int32Array): number {
    return this.lib.check(this.sym.eng_step(this.ctx, buf, buf.length), 'eng_step');
  }

  free(): void {
    if (this.handle === null) return;
    this.sym.eng_ctx_free(this.handle);
    this.handle = null;
  }
}

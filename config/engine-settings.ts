/**
 * The engine's settings: which library and backend, the CPU kernel path, the KV cache budget,
 * weight placement and the CUDA backend's knobs. The C library reads no environment variable:
 * these are parsed here once and reach it as creation parameters (engine-cuda/include/engine.h
 * ENG_PARAM_*, encoded by engine-cuda/ffi.ts) or, for the two library paths, as the paths
 * NativeEngine loads.
 */
import { BACKENDS, KV_DTYPES, SIMD_PATHS, SPECULATIVE_MODES, TC_NEVER } from '../engine-cuda/ffi.ts';
import type { NativeEngineOptions } from '../engine-cuda/native-engine.ts';
import { oneOf, rawValue, ruledInteger, SettingsError, type Env } from './setting-rules.ts';

/** Each is undefined when unset: the engine's default (engine.h), named in the README's table. */
export interface EngineSettings {
  /** MAYA_ENGINE_BACKEND: auto (cuda when built and a GPU is seen, else cpu), cpu or cuda. */
  readonly backend?: (typeof BACKENDS)[number];
  /** MAYA_ENGINE_SIMD: the CPU kernel path; auto = the fastest this CPU runs. */
  readonly simd?: (typeof SIMD_PATHS)[number];
  /** MAYA_ENGINE_KV_BYTES: the KV cache budget (CPU; default 2 GiB) or cap (CUDA; default none). */
  readonly kvBytes?: number;
  /** MAYA_KV_DTYPE: the KV cache's rows; auto = f32, or f16 for weights run at 8 bits or fewer. */
  readonly kvDtype?: (typeof KV_DTYPES)[number];
  /** MAYA_ENGINE_WEIGHT_COPY: false keeps the CPU backend's matrices in the checkpoint mapping. */
  readonly weightCopy?: boolean;
  /** MAYA_CUDA_DEVICE: the CUDA device ordinal (default 0). */
  readonly cudaDevice?: number;
  /** MAYA_CUDA_TC_MIN_TOKENS: tensor-core gemm from this many tokens (default 16; 0 = never, as TC_NEVER). */
  readonly cudaTcMinTokens?: number;
  /** MAYA_CUDA_GRAPHS: false launches each decode kernel instead of replaying CUDA graphs. */
  readonly cudaGraphs?: boolean;
  /** MAYA_SPECULATIVE: speculative decoding: auto (MTP where the checkpoint has it, else prompt lookup), off,
   * ngram (prompt lookup), mtp (the checkpoint's MTP layer, with prompt lookup where its match is the better bet;
   * the model load fails naming it where there is no layer). */
  readonly speculative?: (typeof SPECULATIVE_MODES)[number];
  /** MAYA_SPECULATIVE_MAX_DRAFT: most drafted tokens a sequence verifies per step (default 8, 1..64). */
  readonly specMaxDraft?: number;
  /** MAYA_ENGINE_LIB: the engine library (default engine-cuda/build/libmaya_engine.so). */
  readonly libPath?: string;
  /** MAYA_ENGINE_CUDA_LIB: the CUDA backend's library (default beside the engine library). */
  readonly cudaLibPath?: string;
}

/** The variables loadEngineSettings reads, in the README's order. */
export const ENGINE_SETTING_NAMES = [
  'MAYA_ENGINE_BACKEND',
  'MAYA_ENGINE_SIMD',
  'MAYA_ENGINE_KV_BYTES',
  'MAYA_KV_DTYPE',
  'MAYA_ENGINE_WEIGHT_COPY',
  'MAYA_ENGINE_LIB',
  'MAYA_ENGINE_CUDA_LIB',
  'MAYA_CUDA_DEVICE',
  'MAYA_CUDA_TC_MIN_TOKENS',
  'MAYA_CUDA_GRAPHS',
  'MAYA_SPECULATIVE',
  'MAYA_SPECULATIVE_MAX_DRAFT',
] as const;

function onOff(env: Env, variable: string): boolean | undefined {
  const value = oneOf(env, variable, ['0', '1']);
  return value === undefined ? undefined : value === '1';
}

function integer(env: Env, variable: string, allowZero: boolean): number | undefined {
  const raw = rawValue(env, variable);
  return raw === undefined ? undefined : ruledInteger(variable, raw, { allowZero });
}

function path(env: Env, variable: string): string | undefined {
  const raw = rawValue(env, variable);
  if (raw !== undefined && raw.trim() === '') throw new SettingsError(variable, `${variable}: must be a file path`);
  return raw?.trim();
}

/** MAYA_SPECULATIVE_MAX_DRAFT: an integer in 1..64 (the engine's bound, ENG_PARAM_SPEC_MAX_DRAFT). */
function maxDraft(env: Env): number | undefined {
  const raw = rawValue(env, 'MAYA_SPECULATIVE_MAX_DRAFT');
  return raw === undefined ? undefined : ruledInteger('MAYA_SPECULATIVE_MAX_DRAFT', raw, { max: 64 });
}

/** The MAYA_ENGINE_*, MAYA_CUDA_* and MAYA_SPECULATIVE* settings from `env`; SettingsError names a bad one. */
export function loadEngineSettings(env: Env): EngineSettings {
  const tcMinTokens = integer(env, 'MAYA_CUDA_TC_MIN_TOKENS', true);
  const settings: EngineSettings = {
    backend: oneOf(env, 'MAYA_ENGINE_BACKEND', BACKENDS),
    simd: oneOf(env, 'MAYA_ENGINE_SIMD', SIMD_PATHS),
    kvBytes: integer(env, 'MAYA_ENGINE_KV_BYTES', false),
    kvDtype: oneOf(env, 'MAYA_KV_DTYPE', KV_DTYPES),
    weightCopy: onOff(env, 'MAYA_ENGINE_WEIGHT_COPY'),
    libPath: path(env, 'MAYA_ENGINE_LIB'),
    cudaLibPath: path(env, 'MAYA_ENGINE_CUDA_LIB'),
    cudaDevice: integer(env, 'MAYA_CUDA_DEVICE', true),
    cudaTcMinTokens: tcMinTokens === 0 ? TC_NEVER : tcMinTokens,
    cudaGraphs: onOff(env, 'MAYA_CUDA_GRAPHS'),
    speculative: oneOf(env, 'MAYA_SPECULATIVE', SPECULATIVE_MODES),
    specMaxDraft: maxDraft(env),
  };
  return Object.fromEntries(Object.entries(settings).filter(([, value]) => value !== undefined));
}

/** What NativeEngine.load takes for these settings and the weight dtype (MAYA_WEIGHT_DTYPE). */
export function engineOptions(
  engine: EngineSettings | undefined,
  weightDtype: NativeEngineOptions['weightDtype'] | undefined,
): NativeEngineOptions {
  return { ...engine, ...(weightDtype !== undefined ? { weightDtype } : {}) };
}

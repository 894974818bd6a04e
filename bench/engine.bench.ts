/**
 * npm run bench:engine: prefill and decode tokens/s of NativeEngine (the full TypeScript path:
 * worker thread, FFI, event routing) at batch 1 and batch 8, for a small random Llama (~5M
 * parameters) and a 110M one shaped like llama2.c's stories110M (tied classifier), each beside
 * its decode roofline: weight bytes streamed per step ÷ this machine's measured read bandwidth
 * (one step reads every weight once for the whole batch, so the batch-8 roofline is 8× batch 1).
 *
 * Bandwidth comes from a tiny C program compiled here (threads reading a 512 MiB array; best run).
 * Models are generated deterministically into .bench/ (ignored) on first use. Every engine figure
 * is the median of several runs (the machine is shared and noisy).
 * MoE rows (bench/moe-checkpoint.ts): a scaled-down GLM-4.5 (BF16) and DeepSeek-V3 (MLA, block FP8)
 * at decode batch 1 and 8 beside the active-bytes roofline, with their KV bytes per token.
 * Dense rows run per kernel path (MAYA_ENGINE_SIMD: every vector path this CPU has, avx2 and
 * avx512), per weight dtype (the 110M model stored f32 and bf16, and bf16 loaded as q8) and per
 * thread count (1 and all cores), beside the machine's measured FMA peak for that path (a small
 * C loop of independent FMAs, all threads, best run) so prefill GFLOP/s has a reference.
 * GGUF rows (bench/quant.bench.ts): the 110M and MoE shapes at llama.cpp's Q4_K_M, Q4_0, Q6_K and Q8_0
 * mixtures, quantized at load (--quant adds them to --quick, --quant-only runs just those; they run by
 * default otherwise).
 * Speculative rows (bench/speculative.bench.ts): the demo model on edit / tool-call / JSON / chat / held-out
 * chat workloads and constrained tool-call / json_schema ones, speculation off and on (prompt lookup, the MTP
 * layer with lookup, auto), batch 1 and 8 (--speculative-only runs just those, --no-speculative skips them,
 * --max-draft K sets MAYA_SPECULATIVE_MAX_DRAFT for them, --speculative-mode ngram,mtp,auto picks ways of
 * drafting, --speculative-workloads tool,json_schema,... picks workloads, --threads N their engine threads),
 * then (unless the workloads leave heldout out) the MTP layer's acceptance over every held-out chat case.
 * Options: --runs N (default 3), --quick (small model only; --moe adds the MoE rows; --moe-only runs just those), --threads N (engine threads; default
 * 1 and all cores), --paths avx2,avx512 (default: the vector paths this CPU has), --dtypes f32,bf16,q8, --llama2c PATH/run.c (also time llama2.c's fp32 run.c on the 110M shape, the
 * issue's reference point; the source is not fetched here), --backend cuda (the GPU benchmark of
 * bench/engine-cuda.bench.ts instead). */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { engineOptions, loadEngineSettings } from '../config/engine-settings.ts';
import { NativeEngine } from '../engine-cuda/native-engine.ts';
import {
  LLAMA_110M,
  makeRandomCheckpoint,
  parameterCount,
  type RandomCheckpointOptions,
} from '../scripts/make-random-checkpoint.ts';
import { makeMoeCheckpoint, moeBenchSizes, type MoeBenchOptions } from './moe-checkpoint.ts';
import { benchQuant, type QuantRow, quantTable } from './quant.bench.ts';
import {
  benchSpeculative,
  mtpAcceptanceLine,
  mtpHeldOutAcceptance,
  speculativeTable,
  type SpecMode,
} from './speculative.bench.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const WORK = join(ROOT, '.bench');

const MEMBW_C = `
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
static uint64_t *data; static size_t words; static int nthreads, passes;
static volatile uint64_t sink;
static void *reader(void *arg) {
  size_t t = (size_t)arg, per = words / nthreads, lo = t * per, hi = lo + per;
  const uint64_t *restrict p = data;
  uint64_t s = 0;
  for (int k = 0; k < passes; k++)
    for (size_t i = lo; i < hi; i++) s += p[i]; /* a vectorised integer reduction at -O3 */
  sink += s;
  return 0;
}
static double now(void) { struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts); return ts.tv_sec + 1e-9 * ts.tv_nsec; }
int main(int argc, char **argv) {
  size_t mib = (size_t)atol(argv[1]); nthreads = atoi(argv[2]); int reps = atoi(argv[3]); passes = 4;
  words = mib * 1024 * 1024 / 8;
  /* 2 MiB-aligned transparent huge pages, as the engine holds its weights (model_place_weights) */
  size_t huge = (size_t)2 << 20;
  char *raw = mmap(0, words * 8 + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return 1;
  data = (uint64_t *)(((uintptr_t)raw + huge - 1) & ~(uintptr_t)(huge - 1));
  madvise(data, words * 8, MADV_HUGEPAGE);
  for (size_t i = 0; i < words; i++) data[i] = i;
  pthread_t th[256];
  for (int r = 0; r < reps; r++) {
    double t0 = now();
    for (long t = 0; t < nthreads; t++) pthread_create(&th[t], 0, reader, (void *)t);
    for (int t = 0; t < nthreads; t++) pthread_join(th[t], 0);
    printf("%.3f\\n", (double)words * 8 * passes / (now() - t0) / 1e9);
  }
  return 0;
}
`;

/** Peak f32 FMA GFLOP/s of one instruction set: 12 independent FMA chains per thread, best of 5. */
const PEAK_C = `
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#ifdef __AVX512F__
typedef __m512 V; enum { LANES = 16 };
#define FMA _mm512_fmadd_ps
#define SET1 _mm512_set1_ps
#define STORE _mm512_storeu_ps
#else
typedef __m256 V; enum { LANES = 8 };
#define FMA _mm256_fmadd_ps
#define SET1 _mm256_set1_ps
#define STORE _mm256_storeu_ps
#endif
static const long N = 20000000;
static volatile float sink;
static void *run(void *arg) {
  (void)arg;
  /* 12 named chains: an array indexed in a loop stays on the stack at -O2 and measures
     store-to-load forwarding, not the FMA units. */
  V m = SET1(0.9999999f), c = SET1(1e-7f);
  V a0 = SET1(0), a1 = SET1(1), a2 = SET1(2), a3 = SET1(3), a4 = SET1(4), a5 = SET1(5);
  V a6 = SET1(6), a7 = SET1(7), a8 = SET1(8), a9 = SET1(9), a10 = SET1(10), a11 = SET1(11);
  for (long k = 0; k < N; k++) {
    a0 = FMA(a0, m, c); a1 = FMA(a1, m, c); a2 = FMA(a2, m, c); a3 = FMA(a3, m, c);
    a4 = FMA(a4, m, c); a5 = FMA(a5, m, c); a6 = FMA(a6, m, c); a7 = FMA(a7, m, c);
    a8 = FMA(a8, m, c); a9 = FMA(a9, m, c); a10 = FMA(a10, m, c); a11 = FMA(a11, m, c);
  }
  float out[16];
  a0 = FMA(a1, m, a0); a0 = FMA(a2, m, a0); a0 = FMA(a3, m, a0); a0 = FMA(a4, m, a0); a0 = FMA(a5, m, a0);
  a0 = FMA(a6, m, a0); a0 = FMA(a7, m, a0); a0 = FMA(a8, m, a0); a0 = FMA(a9, m, a0); a0 = FMA(a10, m, a0);
  a0 = FMA(a11, m, a0);
  STORE(out, a0);
  sink += out[0];
  return 0;
}
static double now(void) { struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts); return ts.tv_sec + 1e-9 * ts.tv_nsec; }
int main(int argc, char **argv) {
  int threads = atoi(argv[1]); pthread_t th[256]; double best = 0;
  for (int r = 0; r < 5; r++) {
    double t0 = now();
    for (int t = 0; t < threads; t++) pthread_create(&th[t], 0, run, 0);
    for (int t = 0; t < threads; t++) pthread_join(th[t], 0);
    double g = threads * N * 12.0 * 2 * LANES / (now() - t0) / 1e9;
    if (g > best) best = g;
  }
  printf("%.1f\\n", best);
  return 0;
}
`;

/** Peak GFLOP/s of a kernel path with `threads` threads (PEAK_C compiled for that path). */
function measurePeak(path: 'avx2' | 'avx512', threads: number): number {
  const src = join(WORK, 'peak.c');
  const bin = join(WORK, `peak-${path}`);
  writeFileSync(src, PEAK_C);
  const isa = path === 'avx512' ? ['-mavx512f', '-mfma'] : ['-mavx2', '-mfma'];
  execFileSync('cc', ['-O2', ...isa, '-pthread', '-o', bin, src]);
  return Number(execFileSync(bin, [String(threads)], { encoding: 'utf8' }));
}

/** Vector kernel paths this CPU runs (as kernels_choose() tests them, from /proc/cpuinfo's flags). */
function cpuPaths(): ('avx2' | 'avx512')[] {
  let flags = '';
  try {
    flags = /^flags\s*:(.*)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? '';
  } catch {
    return [];
  }
  const has = (f: string) => flags.split(/\s+/).includes(f);
  const out: ('avx2' | 'avx512')[] = [];
  if (has('avx2') && has('fma') && has('f16c')) out.push('avx2');
  if (out.length && ['avx512f', 'avx512bw', 'avx512vl', 'avx512dq', 'avx512_vnni'].every(has)) out.push('avx512');
  return out;
}

/** Drives llama2.c's unmodified run.c (path given with --llama2c, compiled with TESTING so its main
 * is left out): writes a random stories110M-shaped fp32 checkpoint in run.c's format (7-int header,
 * positive vocab = shared classifier; layout from run.c's memory_map_weights) and times forward(). */
const LLAMA2C_DRIVER_C = `
#define TESTING
#include RUN_C
static double now_s(void) { struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts); return ts.tv_sec + 1e-9 * ts.tv_nsec; }
int main(int argc, char **argv) {
  const char *path = argv[1]; int steps = atoi(argv[2]);
  Config c = { 768, 2048, 12, 12, 12, 32000, 1024 };
  FILE *f = fopen(path, "rb");
  if (!f) {
    f = fopen(path, "wb");
    fwrite(&c, sizeof c, 1, f);
    long hs = c.dim / c.n_heads, L = c.n_layers, d = c.dim;
    long n = c.vocab_size * d + L * d + L * d * d * 4 + L * d + L * 3 * d * c.hidden_dim + d + c.seq_len * hs;
    unsigned s = 1; static float buf[4096];
    for (long i = 0; i < n; i += 4096) {
      long m = n - i < 4096 ? n - i : 4096;
      for (long j = 0; j < m; j++) { s = s * 1664525u + 1013904223u; buf[j] = ((s >> 8) / 16777216.0f - 0.5f) * 0.05f; }
      fwrite(buf, 4, m, f);
    }
  }
  fclose(f);
  Transformer t;
  build_transformer(&t, (char *)path);
  for (int i = 0; i < 8; i++) forward(&t, 1 + i, i);
  double t0 = now_s();
  for (int i = 0; i < steps; i++) forward(&t, (i * 7) % 32000, 8 + i);
  printf("%.2f\\n", steps / (now_s() - t0));
  free_transformer(&t);
  return 0;
}
`;

/** Decode tokens/s of llama2.c's run.c (fp32, OpenMP) on the 110M shape: median of `runs`. */
function llama2cRate(runC: string, threads: number, runs: number): number {
  const src = join(WORK, 'llama2c-driver.c');
  const bin = join(WORK, 'llama2c-driver');
  writeFileSync(src, LLAMA2C_DRIVER_C);
  execFileSync('cc', ['-Ofast', '-march=native', '-fopenmp', `-DRUN_C="${runC}"`, '-o', bin, src, '-lm'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  // Passive waiting: spinning OpenMP barriers collapse when a core is shared with other work.
  const env = { ...process.env, OMP_NUM_THREADS: String(threads), OMP_WAIT_POLICY: 'passive' };
  const rates = Array.from({ length: runs }, () =>
    Number(execFileSync(bin, [join(WORK, 'llama2c-110M.bin'), '128'], { env, encoding: 'utf8' })),
  );
  return median(rates);
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] ?? 0) : ((s[m - 1] ?? 0) + (s[m] ?? 0)) / 2;
}

/** Read bandwidth in GB/s: the best of `reps` runs each with 1 and with `threads` readers over a
 * 512 MiB array in huge pages (a roofline is the attainable peak, as STREAM reports its best run;
 * on a shared machine one reader per core can lose to a busy neighbour). */
function measureBandwidth(threads: number, reps = 9): number {
  const src = join(WORK, 'membw.c');
  const bin = join(WORK, 'membw');
  if (!existsSync(bin) || !existsSync(src) || readFileSync(src, 'utf8') !== MEMBW_C) {
    writeFileSync(src, MEMBW_C);
    execFileSync('cc', ['-O3', '-march=native', '-pthread', '-o', bin, src]);
  }
  const runs = [...new Set([1, threads])].flatMap((t) =>
    execFileSync(bin, ['512', String(t), String(reps)], { encoding: 'utf8' })
      .trim()
      .split('\n'),
  );
  return Math.max(...runs.map(Number));
}

interface BenchModel {
  name: string;
  options: RandomCheckpointOptions;
  /** Loaded as 8-bit weights (ENG_PARAM_WEIGHT_DTYPE q8). */
  q8?: boolean;
}

const SMALL: BenchModel = {
  name: 'small-llama-5M-f32',
  options: { dim: 256, layers: 4, heads: 4, kvHeads: 2, hidden: 768, vocab: 4096, ctx: 1024, dtype: 'f32', seed: 7 },
};
const LLAMA110: BenchModel = { name: 'llama-110M-f32', options: LLAMA_110M };
const LLAMA110_BF16: BenchModel = { name: 'llama-110M-bf16', options: { ...LLAMA_110M, dtype: 'bf16' } };
const DENSE: Record<string, BenchModel> = {
  f32: LLAMA110,
  bf16: LLAMA110_BF16,
  q8: { ...LLAMA110_BF16, q8: true },
};

/** Bytes one decode step streams: every weight, except an untied embedding table (one row per token). */
function bytesPerStep(o: RandomCheckpointOptions): number {
  return (parameterCount(o) - (o.tied ? 0 : o.vocab * o.dim)) * (o.dtype === 'f32' ? 4 : 2);
}

async function ensureModel(m: BenchModel): Promise<string> {
  const dir = join(WORK, m.name);
  const stamp = join(dir, 'bench-options.json');
  const wanted = JSON.stringify(m.options);
  if (existsSync(stamp) && readFileSync(stamp, 'utf8') === wanted) return dir;
  process.stderr.write(`bench: writing ${dir} ...\n`);
  await makeRandomCheckpoint(dir, m.options);
  writeFileSync(stamp, wanted);
  return dir;
}

function prompt(length: number, salt: number, vocab: number): number[] {
  return Array.from({ length }, (_, i) => ((i * 31 + salt * 977 + 3) % (vocab - 3)) + 3);
}

/** Prefill tokens/s: `batch` prompts of `length` tokens queued together, until every one is prefilled. */
async function prefillRate(engine: NativeEngine, batch: number, length: number, salt: number): Promise<number> {
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: batch }, async (_, b) => {
      const gen = engine.generate({ promptIds: prompt(length, salt * 16 + b, engine.info.numVocab), maxTokens: 1 });
      for await (const _event of gen) void _event;
    }),
  );
  return (batch * length) / ((performance.now() - t0) / 1000);
}

/** Decode tokens/s: `batch` sequences generate `tokens` each; counted from when all have their first token. */
async function decodeRate(engine: NativeEngine, batch: number, tokens: number, salt: number): Promise<number> {
  const firsts: number[] = [];
  let counted = 0;
  let allStarted = Infinity;
  const stamps: number[][] = Array.from({ length: batch }, () => []);
  await Promise.all(
    stamps.map(async (times, b) => {
      const gen = engine.generate({ promptIds: prompt(8, salt * 16 + b, engine.info.numVocab), maxTokens: tokens });
      for await (const event of gen) {
        if (event.type !== 'token') continue;
        times.push(performance.now());
        if (times.length === 1) firsts.push(times[0] ?? 0);
        if (firsts.length === batch && allStarted === Infinity) allStarted = Math.max(...firsts);
      }
    }),
  );
  const end = Math.max(...stamps.map((t) => t[t.length - 1] ?? 0));
  for (const times of stamps) counted += times.filter((t) => t > allStarted).length;
  return counted / ((end - allStarted) / 1000);
}

interface Row {
  model: string;
  dtype: string;
  path: string;
  threads: number;
  params: number;
  weightMiB: number;
  prefill1: number;
  prefill8: number;
  decode1: number;
  decode8: number;
  roof1: number;
  roof8: number;
  peak: number;
}

/**
 * The engine on kernel path `path` (ENG_PARAM_SIMD), else on this environment's engine settings
 * (MAYA_ENGINE_SIMD, MAYA_ENGINE_BACKEND, ... read through config/ as `maya serve` reads them).
 */
async function loadOnPath(
  dir: string,
  path: 'avx2' | 'avx512' | undefined,
  options: Parameters<typeof NativeEngine.load>[1],
) {
  const fromEnv = engineOptions(loadEngineSettings(process.env), undefined);
  return NativeEngine.load(dir, { ...fromEnv, ...options, ...(path ? { simd: path } : {}) });
}

async function benchModel(
  m: BenchModel,
  gbps: number,
  runs: number,
  threads: number,
  path: 'avx2' | 'avx512' | undefined,
  peak: number,
): Promise<Row> {
  const dir = await ensureModel(m);
  const engine = await loadOnPath(dir, path, { numThreads: threads, ...(m.q8 ? { weightDtype: 'q8' } : {}) });
  try {
    await decodeRate(engine, 1, 8, 999); // warm-up: page in the weights
    const samples: Record<'prefill1' | 'prefill8' | 'decode1' | 'decode8', number[]> = {
      prefill1: [],
      prefill8: [],
      decode1: [],
      decode8: [],
    };
    for (let r = 0; r < runs; r++) {
      // Fresh salts each run: prompts never hit the prefix cache.
      samples.prefill1.push(await prefillRate(engine, 1, 128, 100 + r));
      samples.prefill8.push(await prefillRate(engine, 8, 128, 200 + r));
      samples.decode1.push(await decodeRate(engine, 1, 64, 300 + r));
      samples.decode8.push(await decodeRate(engine, 8, 64, 400 + r));
    }
    // Stored bytes one step reads (q8: the int8 weights and their scales), as the engine counts them.
    const stepBytes = engine.info.weightBytes || bytesPerStep(m.options);
    const roof1 = (gbps * 1e9) / stepBytes;
    return {
      model: m.name.replace(/-(f32|bf16)$/, ''),
      dtype: m.q8 ? 'q8' : m.options.dtype,
      path: engine.info.simd,
      threads,
      peak,
      params: parameterCount(m.options),
      weightMiB: stepBytes / 2 ** 20,
      prefill1: median(samples.prefill1),
      prefill8: median(samples.prefill8),
      decode1: median(samples.decode1),
      decode8: median(samples.decode8),
      roof1,
      roof8: 8 * roof1,
    };
  } finally {
    await engine.close();
  }
}

/** Scaled-down GLM-4.5 (MoE, BF16) and DeepSeek-V3 (MLA + MoE, block FP8) shapes: 16 experts, 4 per token. */
const MOE_MODELS: { name: string; options: MoeBenchOptions }[] = [
  {
    name: 'glm45-moe-bf16',
    options: {
      arch: 'Glm4MoeForCausalLM',
      fp8: false,
      dim: 1024,
      layers: 6,
      firstDense: 1,
      heads: 16,
      kvHeads: 4,
      headDim: 64,
      vocab: 32000,
      hidden: 2816,
      experts: 16,
      perToken: 4,
      groups: 1,
      topkGroups: 1,
      expertHidden: 512,
    },
  },
  {
    name: 'deepseek3-mla-fp8',
    options: {
      arch: 'DeepseekV3ForCausalLM',
      fp8: true,
      dim: 1024,
      layers: 6,
      firstDense: 1,
      heads: 16,
      qRank: 384,
      kvRank: 256,
      nope: 64,
      rope: 32,
      vDim: 64,
      vocab: 32000,
      hidden: 2816,
      experts: 16,
      perToken: 4,
      groups: 4,
      topkGroups: 2,
      expertHidden: 512,
    },
  },
];

interface MoeRow {
  model: string;
  path: string;
  params: number;
  activeParams: number;
  engineActive: number;
  activeMiB: number;
  kvBytes: number;
  /** Median of the bandwidths measured before each run (GB/s). */
  gbps: number;
  decode1: number;
  roof1: number;
  /** Median over runs of decode / the roofline of the bandwidth measured just before. */
  ratio1: number;
  decode8: number;
  roof8: number;
  ratio8: number;
}

async function ensureMoe(m: (typeof MOE_MODELS)[number]): Promise<string> {
  const dir = join(WORK, m.name);
  const stamp = join(dir, 'bench-options.json');
  if (!existsSync(stamp) || readFileSync(stamp, 'utf8') !== JSON.stringify(m.options)) {
    process.stderr.write(`bench: writing ${dir} ...\n`);
    await makeMoeCheckpoint(dir, m.options);
    writeFileSync(stamp, JSON.stringify(m.options));
  }
  return dir;
}

async function benchMoe(
  m: (typeof MOE_MODELS)[number],
  runs: number,
  threads: number,
  path: 'avx2' | 'avx512' | undefined,
): Promise<MoeRow> {
  const dir = await ensureMoe(m);
  const sizes = moeBenchSizes(m.options);
  const engine = await loadOnPath(dir, path, { numThreads: threads });
  try {
    await decodeRate(engine, 1, 8, 999);
    // The machine's bandwidth moves with its neighbours by a third from minute to minute: each
    // decode run is set against the bandwidth measured just before it (best of 3 runs with 1 and
    // all readers), and the row reports the median of those ratios.
    const d1: number[] = [],
      d8: number[] = [],
      ratio1: number[] = [],
      ratio8: number[] = [],
      bw: number[] = [];
    for (let r = 0; r < runs; r++) {
      const now = measureBandwidth(threads, 3);
      bw.push(now);
      d1.push(await decodeRate(engine, 1, 64, 500 + r));
      d8.push(await decodeRate(engine, 8, 64, 600 + r));
      ratio1.push((d1[r] ?? 0) / ((now * 1e9) / sizes.activeBytes));
      ratio8.push((d8[r] ?? 0) / ((8 * now * 1e9) / sizes.batch8Bytes));
    }
    const gbpsRow = median(bw);
    return {
      model: m.name,
      path: engine.info.simd,
      params: sizes.params,
      activeParams: sizes.activeParams,
      engineActive: engine.info.numActiveParams ?? 0,
      activeMiB: sizes.activeBytes / 2 ** 20,
      kvBytes: sizes.kvBytesPerToken,
      gbps: gbpsRow,
      decode1: median(d1),
      roof1: (gbpsRow * 1e9) / sizes.activeBytes,
      ratio1: median(ratio1),
      decode8: median(d8),
      roof8: (8 * gbpsRow * 1e9) / sizes.batch8Bytes,
      ratio8: median(ratio8),
    };
  } finally {
    await engine.close();
  }
}

function moeTable(rows: MoeRow[]): string {
  const head = [
    'model',
    'path',
    'params',
    'active',
    'active MiB/token',
    'KV bytes/token',
    'GB/s',
    'decode b1 tok/s',
    'roofline b1',
    'b1 / roof',
    'decode b8 tok/s',
    'roofline b8',
    'b8 / roof',
  ];
  const lines = rows.map((r) => [
    r.model,
    r.path,
    `${(r.params / 1e6).toFixed(1)}M`,
    `${(r.activeParams / 1e6).toFixed(1)}M`,
    r.activeMiB.toFixed(1),
    String(r.kvBytes),
    r.gbps.toFixed(1),
    r.decode1.toFixed(1),
    r.roof1.toFixed(1),
    `${(100 * r.ratio1).toFixed(0)}%`,
    r.decode8.toFixed(1),
    r.roof8.toFixed(1),
    `${(100 * r.ratio8).toFixed(0)}%`,
  ]);
  return formatTable(head, lines);
}

function formatTable(head: string[], lines: string[][]): string {
  const all = [head, ...lines];
  const widths = head.map((_, i) => Math.max(...all.map((row) => (row[i] ?? '').length)));
  const fmt = (row: string[]) => `| ${row.map((c, i) => c.padStart(widths[i] ?? 0)).join(' | ')} |`;
  return [fmt(head), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...lines.map(fmt)].join('\n');
}

function table(rows: Row[]): string {
  const head = [
    'model',
    'dtype',
    'path',
    'thr',
    'params',
    'MiB/step',
    'prefill b1 tok/s',
    'prefill b8 tok/s',
    'prefill GFLOP/s',
    'FMA peak',
    'decode b1 tok/s',
    'roofline b1',
    'b1 / roof',
    'decode b8 tok/s',
    'roofline b8',
    'b8 / roof',
  ];
  const lines = rows.map((r) => [
    r.model,
    r.dtype,
    r.path,
    String(r.threads),
    `${(r.params / 1e6).toFixed(1)}M`,
    r.weightMiB.toFixed(0),
    r.prefill1.toFixed(0),
    r.prefill8.toFixed(0),
    ((2 * r.params * Math.max(r.prefill1, r.prefill8)) / 1e9).toFixed(1),
    r.peak.toFixed(0),
    r.decode1.toFixed(1),
    r.roof1.toFixed(1),
    `${((100 * r.decode1) / r.roof1).toFixed(0)}%`,
    r.decode8.toFixed(1),
    r.roof8.toFixed(1),
    `${((100 * r.decode8) / r.roof8).toFixed(0)}%`,
  ]);
  return formatTable(head, lines);
}

async function main(argv: string[]): Promise<void> {
  const flag = (name: string) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  if (flag('--backend') === 'cuda') {
    // the GPU benchmark: bench/engine-cuda.bench.ts
    mkdirSync(WORK, { recursive: true });
    const { runCudaBench } = await import('./engine-cuda.bench.ts');
    return runCudaBench(argv, ROOT, WORK, { decodeRate, median, prompt });
  }
  const runs = Number(flag('--runs') ?? 3);
  if (argv.includes('--speculative-only'))
    return speculativeRows(
      runs,
      flag('--max-draft'),
      flag('--speculative-mode'),
      flag('--speculative-workloads'),
      flag('--threads'),
    );
  const quantOnly = argv.includes('--quant-only');
  const threads = flag('--threads') === undefined ? undefined : Number(flag('--threads'));
  mkdirSync(WORK, { recursive: true });
  const cores = threads ?? availableParallelism();
  const threadCounts = threads !== undefined ? [threads] : [...new Set([1, cores])];
  const paths = (flag('--paths')?.split(',') ?? cpuPaths()) as ('avx2' | 'avx512')[];
  const dtypes = flag('--dtypes')?.split(',') ?? ['f32', 'bf16', 'q8'];
  const gbps = measureBandwidth(cores);
  process.stderr.write(`bench: read bandwidth ${gbps.toFixed(1)} GB/s (best of 9 runs with 1 and ${cores} readers)\n`);
  process.stderr.write(
    `bench: kernel paths ${paths.join(', ') || 'none (scalar only)'}; threads ${threadCounts.join(', ')}\n`,
  );
  const peaks = new Map<string, number>();
  const peakOf = (path: 'avx2' | 'avx512' | undefined, t: number) => {
    if (!path) return 0;
    const key = `${path}/${t}`;
    if (!peaks.has(key)) peaks.set(key, measurePeak(path, t));
    return peaks.get(key) ?? 0;
  };
  const rows: Row[] = [];
  const pathList = paths.length ? paths : [undefined];
  if (!argv.includes('--moe-only') && !quantOnly) {
    const models = argv.includes('--quick') ? [SMALL] : dtypes.map((d) => DENSE[d]).filter((m) => m !== undefined);
    for (const path of pathList)
      for (const m of models)
        for (const t of threadCounts) {
          rows.push(await benchModel(m, gbps, runs, t, path, peakOf(path, t)));
          process.stderr.write(`bench: ${m.name}${m.q8 ? ' as q8' : ''} on ${path ?? 'default'} x${t} done\n`);
        }
  }
  console.log(`Memory read bandwidth: ${gbps.toFixed(1)} GB/s; medians of ${runs} runs.`);
  console.log(
    'path: the kernel table that ran (MAYA_ENGINE_SIMD); FMA peak: measured GFLOP/s of that path at thr threads.',
  );
  console.log(
    'Roofline = bandwidth / weight bytes streamed per decode step (an untied embedding table excluded), x batch.',
  );
  console.log('A model that fits in the last-level cache is not bound by DRAM bandwidth: its ratio can pass 100%.');
  if (rows.length) {
    console.log(
      'Prefill is compute-bound (weights are read once per chunk of up to 256 tokens): shown as 2 x params x tok/s.',
    );
    console.log(table(rows));
  }
  const moeRows: MoeRow[] = [];
  if (!quantOnly && (!argv.includes('--quick') || argv.includes('--moe') || argv.includes('--moe-only'))) {
    for (const path of pathList)
      for (const m of MOE_MODELS) {
        moeRows.push(await benchMoe(m, runs, cores, path));
        process.stderr.write(`bench: ${m.name} on ${path ?? 'default'} done\n`);
      }
    console.log(
      'MoE / MLA: roofline = bandwidth / bytes one token reads (attention, dense and shared MLPs, router, K routed',
    );
    console.log(
      'experts, lm_head, one embedding row); batch 8 reads the experts 8 uniform choices of K cover on average.',
    );
    console.log('KV bytes/token: f32 cache, all layers (MLA: the latent + rope key only).');
    console.log(
      'GB/s: median of the bandwidths measured just before each run; b1 / roof and b8 / roof: medians of each run against its own.',
    );
    console.log(moeTable(moeRows));
    for (const r of moeRows)
      if (r.engineActive !== r.activeParams)
        console.log(`note: ${r.model}: engine counts ${r.engineActive} active parameters, the bench ${r.activeParams}`);
  }
  let quantRows: QuantRow[] = [];
  if ((!argv.includes('--quick') && !argv.includes('--moe-only')) || argv.includes('--quant') || quantOnly) {
    // GGUF block types made at load (bench/quant.bench.ts), on the fastest kernel path, all cores.
    const glm = MOE_MODELS[0];
    const models = [{ name: 'llama-110M', dir: await ensureModel(LLAMA110) }];
    if (glm) models.push({ name: 'glm45-moe', dir: await ensureMoe(glm) });
    quantRows = await benchQuant(
      {
        models,
        load: (dir, type) => loadOnPath(dir, undefined, { numThreads: cores, weightDtype: type }),
        prefillRate,
        decodeRate,
        median,
        gbps,
        threads: cores,
      },
      runs,
    );
    console.log(
      "GGUF block types (llama.cpp's Q4_K_M / Q4_0 / Q6_K / Q8_0 mixtures, quantized at load), batch 1: prefill of",
    );
    console.log('128 tokens, decode of 64; roofline = bandwidth / matrix bytes one token reads (MoE: active experts).');
    console.log(quantTable(quantRows, formatTable));
  }
  if (!argv.includes('--moe-only') && !quantOnly)
    await (await import('./vision.bench.ts')).runVisionBench(runs, threads);
  const runC = flag('--llama2c');
  let llama2c: number | undefined;
  if (runC) {
    llama2c = llama2cRate(runC, cores, runs);
    const maya = rows.find((r) => r.model === 'llama-110M' && r.dtype === 'f32' && r.threads === cores)?.decode1;
    console.log(
      `llama2.c run.c (fp32, ${cores} OpenMP threads, same 110M shape): ${llama2c.toFixed(1)} tok/s decode at batch 1` +
        (maya ? `; Maya ${maya.toFixed(1)} tok/s = ${(maya / llama2c).toFixed(2)}x` : ''),
    );
  }
  writeFileSync(
    join(WORK, 'engine-bench.json'),
    `${JSON.stringify({ gbps, threads: cores, runs, rows, moeRows, quantRows, llama2c }, null, 2)}\n`,
  );
  if (!argv.includes('--no-speculative') && !quantOnly)
    await speculativeRows(
      runs,
      flag('--max-draft'),
      flag('--speculative-mode'),
      flag('--speculative-workloads'),
      flag('--threads'),
    );
}

/** The speculative-decoding rows on the demo model (bench/speculative.bench.ts). */
async function speculativeRows(
  runs: number,
  maxDraft: string | undefined,
  modeFlag: string | undefined,
  workloadFlag: string | undefined,
  threadsFlag: string | undefined,
): Promise<void> {
  const load = (dir: string, options: Parameters<typeof NativeEngine.load>[1]) => loadOnPath(dir, undefined, options);
  const modes = modeFlag === undefined ? undefined : (modeFlag.split(',') as SpecMode[]);
  const rows = await benchSpeculative(ROOT, load, runs, {
    ...(maxDraft === undefined ? {} : { maxDraft: Number(maxDraft) }),
    ...(modes ? { modes } : {}),
    ...(workloadFlag ? { workloads: workloadFlag.split(',') } : {}),
    ...(threadsFlag ? { threads: Number(threadsFlag) } : {}),
  });
  console.log(
    'Speculative decoding on models/maya-demo (drafts: ngram = prompt lookup, mtp = its MTP layer with lookup, auto),',
  );
  console.log(
    "greedy: decode tok/s off and on (medians of alternating rounds), on/off = median of each round's ratio (wall",
  );
  console.log(
    'time; cpu: process CPU time; best: fastest on round / fastest off round), acceptance = accepted / drafted tokens,',
  );
  console.log('tok/pass = decode tokens per decode pass, same = identical tokens.');
  console.log(speculativeTable(rows));
  const heldOut =
    workloadFlag === undefined || workloadFlag.split(',').includes('heldout')
      ? await mtpHeldOutAcceptance(ROOT, load, {
          ...(maxDraft === undefined ? {} : { maxDraft: Number(maxDraft) }),
          ...(threadsFlag ? { threads: Number(threadsFlag) } : {}),
        })
      : undefined;
  if (heldOut) console.log(mtpAcceptanceLine(heldOut));
  mkdirSync(WORK, { recursive: true });
  writeFileSync(
    join(WORK, 'speculative-bench.json'),
    `${JSON.stringify({ runs, rows, ...(heldOut ? { mtpHeldOut: heldOut } : {}) }, null, 2)}\n`,
  );
}

main(process.argv.slice(2)).catch((err: unknown) => {
  console.error(`bench:engine: ${(err as Error).stack ?? String(err)}`);
  process.exitCode = 1;
});

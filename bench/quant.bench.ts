/**
 * GGUF block-type rows of `npm run bench:engine` (called from bench/engine.bench.ts): the 110M
 * Llama shape and the GLM-4.5 MoE shape with their matrices in llama.cpp's Q4_K_M, Q4_0, Q6_K and
 * Q8_0 file mixtures, prefill (128 tokens) and decode (64 tokens) at batch 1.
 *
 * The quantized matrices are made in-process: the bench's f32 / bf16 checkpoints loaded with
 * ENG_PARAM_WEIGHT_DTYPE q4_k_m / q4_0 / q6_k / q8_0 (the engine's quantizers, whose blocks equal
 * llama-quantize's for these types: engine-cuda/test/test_ggml_quants.cpp), so the matrices hold
 * the blocks a GGUF file of that type holds and run the same kernels; nothing here needs
 * llama.cpp. Side-by-side figures against llama.cpp on real GGUF files come from a harness
 * outside the repository (bench/results/engine-log.md). Rounds alternate the four types so a
 * change in the machine's load falls on all of them; each figure is the median of the rounds.
 */
import type { NativeEngine } from '../engine-cuda/native-engine.ts';

export const QUANT_TYPES = ['q4_k_m', 'q4_0', 'q6_k', 'q8_0'] as const;
export type QuantType = (typeof QUANT_TYPES)[number];

export interface QuantRow {
  model: string;
  type: QuantType;
  path: string;
  threads: number;
  /** Matrix bytes one decoded token reads, as the engine counts them (MoE: the active experts). */
  stepMiB: number;
  /** Load time including the quantization, seconds. */
  loadS: number;
  prefill1: number;
  decode1: number;
  /** Decode roofline: the bandwidth measured at start / stepMiB. */
  roof1: number;
}

export interface QuantBenchContext {
  /** The source checkpoints: name -> directory (f32 or bf16 safetensors). */
  models: { name: string; dir: string }[];
  load: (dir: string, type: QuantType) => Promise<NativeEngine>;
  prefillRate: (engine: NativeEngine, batch: number, length: number, salt: number) => Promise<number>;
  decodeRate: (engine: NativeEngine, batch: number, tokens: number, salt: number) => Promise<number>;
  median: (xs: number[]) => number;
  gbps: number;
  threads: number;
}

export async function benchQuant(ctx: QuantBenchContext, runs: number): Promise<QuantRow[]> {
  const rows: QuantRow[] = [];
  for (const m of ctx.models) {
    const engines = new Map<QuantType, { engine: NativeEngine; loadS: number }>();
    try {
      for (const type of QUANT_TYPES) {
        const t0 = performance.now();
        const engine = await ctx.load(m.dir, type);
        engines.set(type, { engine, loadS: (performance.now() - t0) / 1000 });
        await ctx.decodeRate(engine, 1, 8, 999); // warm-up: page in the weights
      }
      const pre = new Map<QuantType, number[]>(QUANT_TYPES.map((t) => [t, []]));
      const dec = new Map<QuantType, number[]>(QUANT_TYPES.map((t) => [t, []]));
      for (let r = 0; r < runs; r++)
        for (const type of QUANT_TYPES) {
          const e = engines.get(type)?.engine;
          if (!e) continue;
          // Fresh salts each run: prompts never hit the prefix cache.
          pre.get(type)?.push(await ctx.prefillRate(e, 1, 128, 700 + r));
          dec.get(type)?.push(await ctx.decodeRate(e, 1, 64, 800 + r));
        }
      for (const type of QUANT_TYPES) {
        const e = engines.get(type);
        if (!e) continue;
        const stepBytes = e.engine.info.weightBytes ?? 0;
        rows.push({
          model: m.name,
          type,
          path: e.engine.info.simd,
          threads: ctx.threads,
          stepMiB: stepBytes / 2 ** 20,
          loadS: e.loadS,
          prefill1: ctx.median(pre.get(type) ?? []),
          decode1: ctx.median(dec.get(type) ?? []),
          roof1: stepBytes > 0 ? (ctx.gbps * 1e9) / stepBytes : 0,
        });
      }
    } finally {
      for (const e of engines.values()) await e.engine.close();
    }
  }
  return rows;
}

export function quantTable(rows: QuantRow[], formatTable: (head: string[], lines: string[][]) => string): string {
  const head = [
    'model',
    'type',
    'path',
    'thr',
    'MiB/step',
    'load s',
    'prefill b1 tok/s',
    'decode b1 tok/s',
    'roofline b1',
    'b1 / roof',
  ];
  const lines = rows.map((r) => [
    r.model,
    r.type,
    r.path,
    String(r.threads),
    r.stepMiB.toFixed(1),
    r.loadS.toFixed(1),
    r.prefill1.toFixed(0),
    r.decode1.toFixed(1),
    r.roof1.toFixed(1),
    `${((100 * r.decode1) / r.roof1).toFixed(0)}%`,
  ]);
  return formatTable(head, lines);
}

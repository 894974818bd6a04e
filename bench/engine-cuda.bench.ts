/**
 * `npm run bench:engine -- --backend cuda [--out DIR] [--runs N]`: the CUDA backend on a random
 * GLM-4-9B-shaped bf16 checkpoint (bench/glm4-checkpoint.ts, written into .bench/ on first use),
 * through NativeEngine like the CPU benchmark. Reports batch-1 decode tokens/s beside its HBM
 * roofline (weight bytes per step ÷ device read bandwidth measured in the same run by
 * engine-cuda/test/bench/gpu_membw.cu), batch 8/32/64 decode throughput, and time to first token
 * for 1k and 4k prompts, and (bench/hf_baseline.py, when python3 has torch + transformers) a stock
 * transformers baseline on the same weights. Writes cuda-bench.json and cuda-bench.md into --out
 * (default .bench/).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { NativeEngine } from '../engine-cuda/native-engine.ts';
import { GLM4_9B, glm4BytesPerStep, glm4ParameterCount, writeGlm4Checkpoint } from './glm4-checkpoint.ts';

export interface BenchHelpers {
  decodeRate(engine: NativeEngine, batch: number, tokens: number, salt: number): Promise<number>;
  median(xs: number[]): number;
  prompt(length: number, salt: number, vocab: number): number[];
}

/** Device read bandwidth in GB/s: engine-cuda/build/gpu-membw (build-engine-cuda.sh --tests), else built here with nvcc. */
function deviceBandwidth(root: string, work: string): number {
  let bin = join(root, 'engine-cuda/build/gpu-membw');
  if (!existsSync(bin)) {
    bin = join(work, 'gpu-membw');
    execFileSync('nvcc', [
      '-O3',
      '-gencode=arch=compute_90a,code=sm_90a',
      '-o',
      bin,
      join(root, 'engine-cuda/test/bench/gpu_membw.cu'),
    ]);
  }
  return Number(execFileSync(bin, ['4096', '20'], { encoding: 'utf8' }).trim());
}

/** Milliseconds from generate() to the first token of one fresh prompt of `length` tokens. */
async function ttft(engine: NativeEngine, h: BenchHelpers, length: number, salt: number): Promise<number> {
  const t0 = performance.now();
  const gen = engine.generate({ promptIds: h.prompt(length, salt, engine.info.numVocab), maxTokens: 1 });
  let first = 0;
  for await (const event of gen) if (event.type === 'token' && first === 0) first = performance.now();
  return first - t0;
}

export async function runCudaBench(argv: string[], root: string, work: string, h: BenchHelpers): Promise<void> {
  const flag = (name: string) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const runs = Number(flag('--runs') ?? 3);
  const out = flag('--out') ?? work;
  mkdirSync(out, { recursive: true });
  const gbps = deviceBandwidth(root, work);
  process.stderr.write(`bench: device read bandwidth ${gbps.toFixed(0)} GB/s\n`);
  const dir = join(work, 'glm4-9b-bf16');
  const stamp = join(dir, 'bench-options.json');
  if (!existsSync(stamp) || readFileSync(stamp, 'utf8') !== JSON.stringify(GLM4_9B)) {
    process.stderr.write(`bench: writing ${dir} (18.7 GB) ...\n`);
    await writeGlm4Checkpoint(dir);
    writeFileSync(stamp, JSON.stringify(GLM4_9B));
  }
  const t0 = performance.now();
  const engine = await NativeEngine.load(dir, {
    backend: 'cuda',
    maxBatch: 64,
    prefillChunk: 1024,
    kvBytes: 16 * 2 ** 30,
  });
  const loadS = (performance.now() - t0) / 1000;
  try {
    if (engine.info.backend !== 'cuda') throw new Error(`the engine runs on ${engine.info.backend}, not cuda`);
    await h.decodeRate(engine, 1, 8, 999); // warm-up (and the batch-1 decode graph)
    const rates: Record<string, number[]> = { b1: [], b8: [], b32: [], b64: [], ttft1k: [], ttft4k: [] };
    for (let r = 0; r < runs; r++) {
      rates.b1?.push(await h.decodeRate(engine, 1, 128, 300 + r));
      rates.b8?.push(await h.decodeRate(engine, 8, 64, 400 + r));
      rates.b32?.push(await h.decodeRate(engine, 32, 48, 500 + r));
      rates.b64?.push(await h.decodeRate(engine, 64, 48, 600 + r));
      rates.ttft1k?.push(await ttft(engine, h, 1024, 700 + r));
      rates.ttft4k?.push(await ttft(engine, h, 4096, 800 + r));
    }
    const m = (k: string) => h.median(rates[k] ?? []);
    const roof = (gbps * 1e9) / glm4BytesPerStep();
    const result = {
      model: 'random GLM-4-9B shape, bf16',
      params: glm4ParameterCount(),
      bytesPerStep: glm4BytesPerStep(),
      deviceGBps: gbps,
      loadSeconds: loadS,
      roofline1: roof,
      decode1: m('b1'),
      decode8: m('b8'),
      decode32: m('b32'),
      decode64: m('b64'),
      ttft1kMs: m('ttft1k'),
      ttft4kMs: m('ttft4k'),
      runs,
      samples: rates,
    };
    const md = [
      `Random GLM-4-9B-shaped bf16 checkpoint: ${(result.params / 1e9).toFixed(2)}B parameters, ${(result.bytesPerStep / 1e9).toFixed(2)} GB streamed per decode step; device read bandwidth ${gbps.toFixed(0)} GB/s (measured in this run); load ${loadS.toFixed(1)} s; medians of ${runs} runs.`,
      '',
      '| measure | value | roofline | ratio |',
      '|---|---|---|---|',
      `| decode batch 1 | ${result.decode1.toFixed(1)} tok/s | ${roof.toFixed(1)} tok/s | ${((100 * result.decode1) / roof).toFixed(1)}% |`,
      `| decode batch 8 | ${result.decode8.toFixed(1)} tok/s | ${(8 * roof).toFixed(0)} tok/s | ${((100 * result.decode8) / (8 * roof)).toFixed(1)}% |`,
      `| decode batch 32 | ${result.decode32.toFixed(1)} tok/s | | |`,
      `| decode batch 64 | ${result.decode64.toFixed(1)} tok/s | | |`,
      `| time to first token, 1k prompt | ${result.ttft1kMs.toFixed(0)} ms | | |`,
      `| time to first token, 4k prompt | ${result.ttft4kMs.toFixed(0)} ms | | |`,
    ].join('\n');
    await engine.close();
    const base = process.env.MAYA_BENCH_BASELINE === '0' ? undefined : hfBaseline(root, dir);
    const line = base
      ? `Stock baseline, same weights and GPU: transformers ${base.transformers} (torch ${base.torch}, eager, bf16) decodes ${base.decode1.toFixed(1)} tok/s at batch 1; Maya / baseline = ${(result.decode1 / base.decode1).toFixed(2)}x.`
      : 'Stock baseline: not run (python3 with torch + transformers and Glm4ForCausalLM not available, or MAYA_BENCH_BASELINE=0).';
    const text = `${md}\n\n${line}`;
    console.log(text);
    writeFileSync(join(out, 'cuda-bench.json'), `${JSON.stringify({ ...result, baseline: base ?? null }, null, 2)}\n`);
    writeFileSync(join(out, 'cuda-bench.md'), `${text}\n`);
  } finally {
    await engine.close();
  }
}

interface Baseline {
  decode1: number;
  transformers: string;
  torch: string;
}

/** bench/hf_baseline.py on the same checkpoint, or undefined when the machine lacks its packages. */
function hfBaseline(root: string, dir: string): Baseline | undefined {
  try {
    const out = execFileSync('python3', [join(root, 'bench/hf_baseline.py'), dir, '64'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    return JSON.parse(out.trim().split('\n').pop() ?? '') as Baseline;
  } catch {
    return undefined;
  }
}

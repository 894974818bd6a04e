/**
 * Vision rows of `npm run bench:engine` (called from bench/engine.bench.ts): image encode time of
 * the GLM-4.1V vision tower on the CPU, and what it implies for the real model.
 *
 * - tiny: test/fixtures/engine/glm4v-tiny encoding a 1024 x 1024 image (the processor resizes it to
 *   1036 x 1036: grid 74 x 74 patches, 1369 image tokens; the grid and random pixels are passed
 *   directly). Mostly attention over 5476 patches with 16-wide heads: a latency figure, not a rate.
 * - wide: a random checkpoint with GLM-4.1V's vision width (hidden 1536, 12 heads of 128, patch 14,
 *   merge 2; 1 block, MLP / output width 1024, merger 2048; generated into .bench/) encoding a
 *   448 x 448 image (32 x 32 patches): the encoder's GFLOP/s at the real layer widths.
 * - GLM-4.1V-9B: FLOPs of one 1024 x 1024 image with the published vision config (depth 24, hidden
 *   1536, 12 heads, out_hidden_size 4096, intermediate_size 13696, patch 14, merge 2; the defaults
 *   of transformers' configuration_glm4v.py), and that count over the wide rate.
 * Encode time is the engine's own counter (ENG_STAT_ENCODE_US), median of the runs; every run uses
 * a new image hash, so nothing comes from the prefix cache.
 */
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { engineOptions, loadEngineSettings } from '../config/engine-settings.ts';
import { NativeEngine } from '../engine-cuda/native-engine.ts';
import { numelOf, writeSafetensors } from '../scripts/safetensors-writer.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const WORK = join(ROOT, '.bench');

export interface VisionShape {
  depth: number;
  hidden: number;
  heads: number;
  outHidden: number;
  mergerFf: number;
  patch: number;
  temporal: number;
  merge: number;
}

/** GLM-4.1V-9B-Thinking's vision_config (configuration_glm4v.py defaults = the published config). */
export const GLM41V_VISION: VisionShape = {
  depth: 24,
  hidden: 1536,
  heads: 12,
  outHidden: 4096,
  mergerFf: 13696,
  patch: 14,
  temporal: 2,
  merge: 2,
};
const TINY: VisionShape = {
  depth: 2,
  hidden: 64,
  heads: 4,
  outHidden: 128,
  mergerFf: 96,
  patch: 14,
  temporal: 2,
  merge: 2,
};
const WIDE: VisionShape = {
  depth: 1,
  hidden: 1536,
  heads: 12,
  outHidden: 1024,
  mergerFf: 2048,
  patch: 14,
  temporal: 2,
  merge: 2,
};

/**
 * FLOPs (2 x multiply-adds) of encoding one image of h x w patches: patch embedding, per block qkv +
 * proj (4 Cv^2), the SwiGLU MLP (3 Cv O), attention scores and values (2 N Cv); per merged token
 * the 2x2 downsample (4 Cv O), merger projection (O^2) and SwiGLU (3 O Iv). Elementwise work
 * (norms, rope, softmax, GELU) is left out.
 */
export function visionFlops(s: VisionShape, h: number, w: number): number {
  const N = h * w;
  const P = 3 * s.temporal * s.patch * s.patch;
  const perPatch = P * s.hidden + s.depth * (4 * s.hidden ** 2 + 3 * s.hidden * s.outHidden + 2 * N * s.hidden);
  const perToken = 4 * s.hidden * s.outHidden + s.outHidden ** 2 + 3 * s.outHidden * s.mergerFf;
  return 2 * (N * perPatch + (N / (s.merge * s.merge)) * perToken);
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** xorshift32 in [0, 1). */
function rng(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 4294967296;
  };
}

/** bf16 bits of f (round to nearest even). */
function bf16(f: number): number {
  const b = new Float32Array([f]);
  const u = new Uint32Array(b.buffer)[0]!;
  return ((u + 0x7fff + ((u >>> 16) & 1)) >>> 16) & 0xffff;
}

/** Writes a random GLM-4.1V-shaped checkpoint (BF16; norms 1, matrices uniform with std 1/sqrt(fan-in)). */
async function writeWideCheckpoint(dir: string, s: VisionShape): Promise<void> {
  const C = s.outHidden,
    heads = 8,
    kv = 2,
    D = C / heads,
    I = 1024,
    V = 1024,
    Cv = s.hidden,
    O = s.outHidden;
  const t: [string, number[], 'norm' | 'matrix'][] = [
    ['lm_head.weight', [V, C], 'matrix'],
    ['model.language_model.embed_tokens.weight', [V, C], 'matrix'],
    ['model.language_model.norm.weight', [C], 'norm'],
    ['model.visual.embeddings.position_embedding.weight', [576, Cv], 'matrix'],
    ['model.visual.patch_embed.proj.weight', [Cv, 3, s.temporal, s.patch, s.patch], 'matrix'],
    ['model.visual.patch_embed.proj.bias', [Cv], 'norm'],
    ['model.visual.post_conv_layernorm.weight', [Cv], 'norm'],
    ['model.visual.post_layernorm.weight', [Cv], 'norm'],
    ['model.visual.downsample.weight', [O, Cv, s.merge, s.merge], 'matrix'],
    ['model.visual.downsample.bias', [O], 'norm'],
    ['model.visual.merger.proj.weight', [O, O], 'matrix'],
    ['model.visual.merger.post_projection_norm.weight', [O], 'norm'],
    ['model.visual.merger.post_projection_norm.bias', [O], 'norm'],
    ['model.visual.merger.gate_proj.weight', [s.mergerFf, O], 'matrix'],
    ['model.visual.merger.up_proj.weight', [s.mergerFf, O], 'matrix'],
    ['model.visual.merger.down_proj.weight', [O, s.mergerFf], 'matrix'],
  ];
  for (let i = 0; i < s.depth; i++) {
    const p = `model.visual.blocks.${i}.`;
    t.push(
      [`${p}norm1.weight`, [Cv], 'norm'],
      [`${p}norm2.weight`, [Cv], 'norm'],
      [`${p}attn.qkv.weight`, [3 * Cv, Cv], 'matrix'],
      [`${p}attn.proj.weight`, [Cv, Cv], 'matrix'],
      [`${p}mlp.gate_proj.weight`, [O, Cv], 'matrix'],
      [`${p}mlp.up_proj.weight`, [O, Cv], 'matrix'],
      [`${p}mlp.down_proj.weight`, [Cv, O], 'matrix'],
    );
  }
  const p = 'model.language_model.layers.0.';
  for (const n of ['input_layernorm', 'post_attention_layernorm', 'post_self_attn_layernorm', 'post_mlp_layernorm'])
    t.push([`${p}${n}.weight`, [C], 'norm']);
  t.push(
    [`${p}self_attn.q_proj.weight`, [heads * D, C], 'matrix'],
    [`${p}self_attn.q_proj.bias`, [heads * D], 'norm'],
    [`${p}self_attn.k_proj.weight`, [kv * D, C], 'matrix'],
    [`${p}self_attn.k_proj.bias`, [kv * D], 'norm'],
    [`${p}self_attn.v_proj.weight`, [kv * D, C], 'matrix'],
    [`${p}self_attn.v_proj.bias`, [kv * D], 'norm'],
    [`${p}self_attn.o_proj.weight`, [C, heads * D], 'matrix'],
    [`${p}mlp.gate_up_proj.weight`, [2 * I, C], 'matrix'],
    [`${p}mlp.down_proj.weight`, [C, I], 'matrix'],
  );
  t.sort((a, b) => (a[0] < b[0] ? -1 : 1));
  await mkdir(dir, { recursive: true });
  const rand = rng(20261201);
  const tensors = t.map(([name, shape, kind]) => ({ name, dtype: 'BF16' as const, shape, kind }));
  await writeSafetensors(join(dir, 'model.safetensors'), tensors, ({ shape, kind }) => {
    const n = numelOf(shape);
    const scale = Math.sqrt(3 / numelOf(shape.slice(1)));
    const out = new Uint16Array(n);
    for (let i = 0; i < n; i++) out[i] = bf16(kind === 'norm' ? 1 : (2 * rand() - 1) * scale);
    return [new Uint8Array(out.buffer)];
  });
  const config = {
    architectures: ['Glm4vForConditionalGeneration'],
    model_type: 'glm4v',
    image_token_id: 1012,
    image_start_token_id: 1010,
    image_end_token_id: 1011,
    text_config: {
      vocab_size: V,
      hidden_size: C,
      intermediate_size: I,
      num_hidden_layers: 1,
      num_attention_heads: heads,
      num_key_value_heads: kv,
      partial_rotary_factor: 0.5,
      rope_theta: 10000,
      rope_scaling: { type: 'default', mrope_section: [8, 12, 12] },
      rms_norm_eps: 1e-5,
      max_position_embeddings: 8192,
    },
    vision_config: {
      depth: s.depth,
      hidden_size: Cv,
      num_heads: s.heads,
      out_hidden_size: O,
      intermediate_size: s.mergerFf,
      image_size: 336,
      patch_size: s.patch,
      temporal_patch_size: s.temporal,
      spatial_merge_size: s.merge,
      rms_norm_eps: 1e-5,
    },
  };
  await writeFile(join(dir, 'config.json'), `${JSON.stringify(config, null, 2)}\n`);
}

/** Median encode wall and CPU milliseconds of an h x w-patch image on the model in dir (ENG_STAT_ENCODE_US / _CPU_US). */
async function encodeMs(
  dir: string,
  h: number,
  w: number,
  runs: number,
  threads: number | undefined,
): Promise<{ wall: number; cpu: number }> {
  // This environment's engine settings (MAYA_ENGINE_SIMD, ...), read through config/ as `maya serve` reads them.
  const engine = await NativeEngine.load(dir, {
    ...engineOptions(loadEngineSettings(process.env), undefined),
    numThreads: threads,
  });
  try {
    const nTok = (h * w) / 4;
    const promptIds = [1002, 1004, 1007, 10, 1010, ...new Array<number>(nTok).fill(1012), 1011, 532, 1008];
    const rand = rng(7);
    const wall: number[] = [];
    const cpu: number[] = [];
    for (let r = 0; r < runs + 1; r++) {
      const pixels = new Float32Array(h * w * 3 * 2 * 14 * 14);
      for (let i = 0; i < pixels.length; i++) pixels[i] = 4 * rand() - 2;
      const before = await engine.stats();
      const gen = engine.generate({
        promptIds,
        maxTokens: 1,
        images: [{ pixels, grid: [1, h, w], hash: BigInt(r + 1) }],
      });
      for await (const _ of gen) void _;
      const after = await engine.stats();
      if (after.imagesEncoded !== before.imagesEncoded + 1) throw new Error('the image was not encoded');
      if (r > 0) {
        // run 0 warms up
        wall.push((after.encodeMicros - before.encodeMicros) / 1000);
        cpu.push((after.encodeCpuMicros - before.encodeCpuMicros) / 1000);
      }
    }
    return { wall: median(wall), cpu: median(cpu) };
  } finally {
    await engine.close();
  }
}

export async function runVisionBench(runs: number, threads: number | undefined): Promise<void> {
  const tinyDir = join(ROOT, 'test', 'fixtures', 'engine', 'glm4v-tiny');
  const wideDir = join(WORK, 'glm4v-wide');
  if (!existsSync(join(wideDir, 'config.json'))) await writeWideCheckpoint(wideDir, WIDE);
  const tinyMs = await encodeMs(tinyDir, 74, 74, runs, threads);
  process.stderr.write('bench: vision tiny done\n');
  const wideMs = await encodeMs(wideDir, 32, 32, runs, threads);
  process.stderr.write('bench: vision wide done\n');
  const tinyFlops = visionFlops(TINY, 74, 74);
  const wideFlops = visionFlops(WIDE, 32, 32);
  const realFlops = visionFlops(GLM41V_VISION, 74, 74);
  const rate = (flops: number, ms: number) => flops / (ms / 1000) / 1e9;
  const wideRate = rate(wideFlops, wideMs.wall);
  const wideCpuRate = rate(wideFlops, wideMs.cpu);
  console.log(
    `Vision encode (CPU backend; medians of ${runs} runs; wall = ENG_STAT_ENCODE_US, CPU = _CPU_US, all threads):`,
  );
  console.log(
    `  glm4v-tiny, 1024x1024 image (74x74 patches, 1369 tokens): ${tinyMs.wall.toFixed(0)} ms wall, ` +
      `${tinyMs.cpu.toFixed(0)} ms CPU; ${(tinyFlops / 1e9).toFixed(1)} GFLOP = ${rate(tinyFlops, tinyMs.wall).toFixed(1)} GFLOP/s ` +
      `(${rate(tinyFlops, tinyMs.cpu).toFixed(1)} per CPU-second)`,
  );
  console.log(
    `  GLM-4.1V widths (1 block, hidden 1536), 448x448 (32x32 patches): ${wideMs.wall.toFixed(0)} ms wall, ` +
      `${wideMs.cpu.toFixed(0)} ms CPU; ${(wideFlops / 1e9).toFixed(1)} GFLOP = ${wideRate.toFixed(1)} GFLOP/s ` +
      `(${wideCpuRate.toFixed(1)} per CPU-second)`,
  );
  console.log(
    `  GLM-4.1V-9B vision tower (depth 24, hidden 1536, out 4096, merger 13696), 1024x1024: ` +
      `${(realFlops / 1e12).toFixed(2)} TFLOP per image = ${(realFlops / (wideRate * 1e9)).toFixed(0)} s at ` +
      `${wideRate.toFixed(1)} GFLOP/s, ${(realFlops / (wideCpuRate * 1e9)).toFixed(0)} CPU-seconds at ${wideCpuRate.toFixed(1)}`,
  );
  await writeFile(
    join(WORK, 'vision-bench.json'),
    `${JSON.stringify({ runs, tinyMs, tinyFlops, wideMs, wideFlops, wideRate, wideCpuRate, realFlops }, null, 2)}\n`,
  );
}

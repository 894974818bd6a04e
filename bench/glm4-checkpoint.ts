/**
 * A random GLM-4-9B-shaped bf16 checkpoint (Glm4ForCausalLM: hidden 4096, 40 layers, 32 query / 2
 * key-value heads of 128, intermediate 13696, vocab 151552, q/k/v bias, fused gate_up, sandwich
 * norms, half-rotary interleaved RoPE; shapes from THUDM/GLM-4-9B-0414's config.json) for the GPU
 * benchmark. 9.4B parameters, 18.7 GB: written from small random pools repeated (the benchmark
 * measures speed, and pool values keep activations O(1)), so writing costs little more than the disk.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { numelOf, writeSafetensors } from '../scripts/safetensors-writer.ts';

export type Glm4Shape = typeof GLM4_9B;
export const GLM4_9B = {
  dim: 4096,
  layers: 40,
  heads: 32,
  kvHeads: 2,
  headDim: 128,
  hidden: 13696,
  vocab: 151552,
  ctx: 32768,
};

type Kind = 'norm' | 'bias' | 'matrix';
interface Spec {
  name: string;
  shape: number[];
  kind: Kind;
}

function specs(shape: Glm4Shape): Spec[] {
  const { dim, layers, heads, kvHeads, headDim, hidden, vocab } = shape;
  const q = heads * headDim,
    kv = kvHeads * headDim;
  const out: Spec[] = [{ name: 'model.embed_tokens.weight', shape: [vocab, dim], kind: 'matrix' }];
  for (let l = 0; l < layers; l++) {
    const p = `model.layers.${l}`;
    out.push(
      { name: `${p}.input_layernorm.weight`, shape: [dim], kind: 'norm' },
      { name: `${p}.self_attn.q_proj.weight`, shape: [q, dim], kind: 'matrix' },
      { name: `${p}.self_attn.q_proj.bias`, shape: [q], kind: 'bias' },
      { name: `${p}.self_attn.k_proj.weight`, shape: [kv, dim], kind: 'matrix' },
      { name: `${p}.self_attn.k_proj.bias`, shape: [kv], kind: 'bias' },
      { name: `${p}.self_attn.v_proj.weight`, shape: [kv, dim], kind: 'matrix' },
      { name: `${p}.self_attn.v_proj.bias`, shape: [kv], kind: 'bias' },
      { name: `${p}.self_attn.o_proj.weight`, shape: [dim, q], kind: 'matrix' },
      { name: `${p}.post_self_attn_layernorm.weight`, shape: [dim], kind: 'norm' },
      { name: `${p}.post_attention_layernorm.weight`, shape: [dim], kind: 'norm' },
      { name: `${p}.mlp.gate_up_proj.weight`, shape: [2 * hidden, dim], kind: 'matrix' },
      { name: `${p}.mlp.down_proj.weight`, shape: [dim, hidden], kind: 'matrix' },
      { name: `${p}.post_mlp_layernorm.weight`, shape: [dim], kind: 'norm' },
    );
  }
  out.push(
    { name: 'model.norm.weight', shape: [dim], kind: 'norm' },
    { name: 'lm_head.weight', shape: [vocab, dim], kind: 'matrix' },
  );
  return out;
}

const numel = (s: Spec) => numelOf(s.shape);

export function glm4ParameterCount(shape: Glm4Shape = GLM4_9B): number {
  return specs(shape).reduce((n, s) => n + numel(s), 0);
}

/** Bytes one decode step streams: every matrix except the embedding table (one row per token). */
export function glm4BytesPerStep(shape: Glm4Shape = GLM4_9B): number {
  return 2 * (glm4ParameterCount(shape) - shape.vocab * shape.dim);
}

/** bf16 values uniform in center ± scale (xorshift32, fixed seed). */
function pool(n: number, center: number, scale: number, seed: number): Uint16Array {
  const f = new Float32Array(n);
  const words = new Uint32Array(f.buffer);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    f[i] = center + (2 * (s / 4294967296) - 1) * scale;
  }
  return Uint16Array.from(words, (w) => w >>> 16);
}

/** Writes the checkpoint into dir (`shape` smaller than GLM-4-9B for tests). */
export async function writeGlm4Checkpoint(dir: string, shape: Glm4Shape = GLM4_9B): Promise<void> {
  await mkdir(dir, { recursive: true });
  const n = 1 << 22;
  const pools: Record<string, Uint16Array> = {
    norm: pool(n, 1, 0.1, 1),
    bias: pool(n, 0, 0.1, 2),
    [`matrix${shape.dim}`]: pool(n, 0, Math.sqrt(3 / shape.dim), 3),
    [`matrix${shape.hidden}`]: pool(n, 0, Math.sqrt(3 / shape.hidden), 4),
    [`matrix${shape.heads * shape.headDim}`]: pool(n, 0, Math.sqrt(3 / (shape.heads * shape.headDim)), 5),
  };
  // Each tensor repeats the pool of its kind (matrices: of their fan-in).
  function* chunks(s: Spec): Generator<Uint8Array> {
    const src = pools[s.kind === 'matrix' ? `matrix${s.shape[1] ?? 0}` : s.kind] ?? pools.norm ?? new Uint16Array(n);
    for (let left = numel(s); left > 0; left -= Math.min(left, n))
      yield new Uint8Array(src.buffer, 0, 2 * Math.min(left, n));
  }
  const all = specs(shape).map((s) => ({ ...s, dtype: 'BF16' as const }));
  await writeSafetensors(join(dir, 'model.safetensors'), all, chunks);
  const { dim, layers, heads, kvHeads, headDim, hidden, vocab, ctx } = shape;
  const config = {
    architectures: ['Glm4ForCausalLM'],
    model_type: 'glm4',
    hidden_size: dim,
    intermediate_size: hidden,
    num_attention_heads: heads,
    num_key_value_heads: kvHeads,
    head_dim: headDim,
    num_hidden_layers: layers,
    vocab_size: vocab,
    max_position_embeddings: ctx,
    partial_rotary_factor: 0.5,
    attention_bias: true,
    hidden_act: 'silu',
    rms_norm_eps: 1e-5,
    rope_theta: 10000.0,
    tie_word_embeddings: false,
    pad_token_id: 151329,
    eos_token_id: [151329, 151336, 151338],
    torch_dtype: 'bfloat16',
  };
  await writeFile(join(dir, 'config.json'), `${JSON.stringify(config, null, 2)}\n`);
}

/**
 * make-random-checkpoint: writes a deterministic random Llama-shaped Hugging Face checkpoint
 * (config.json, generation_config.json, model.safetensors) for benchmarks and engine tests.
 * Same options and seed, same bytes. Weights are uniform in ±sqrt(3)·std with std = 1/sqrt(fan-in)
 * (norm weights 1 + small noise), so activations stay O(1) through the layers.
 *
 *   tsx scripts/make-random-checkpoint.ts --out DIR [--dim 768] [--layers 12] [--heads 12]
 *       [--kv-heads 12] [--hidden 2048] [--vocab 32000] [--ctx 1024] [--dtype f32|bf16] [--seed 1]
 *       [--tied true|false]   (defaults: llama2.c's stories110M shape, tied classifier)
 * The file is written by scripts/safetensors-writer.ts.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { numelOf, writeSafetensors } from './safetensors-writer.ts';

export interface RandomCheckpointOptions {
  dim: number;
  layers: number;
  heads: number;
  kvHeads: number;
  hidden: number;
  vocab: number;
  ctx: number;
  dtype: 'f32' | 'bf16';
  seed: number;
  /** tie_word_embeddings: no lm_head.weight, the embedding is the classifier (llama2.c's shared_classifier). */
  tied?: boolean;
}

/** llama2.c's stories110M shape (dim 768, 12 layers, 12 heads, hidden 2048, vocab 32000, shared classifier). */
export const LLAMA_110M: RandomCheckpointOptions = {
  dim: 768,
  layers: 12,
  heads: 12,
  kvHeads: 12,
  hidden: 2048,
  vocab: 32000,
  ctx: 1024,
  dtype: 'f32',
  seed: 1,
  tied: true,
};

interface TensorSpec {
  name: string;
  shape: number[];
  /** 'norm': 1 + noise; otherwise uniform with std 1/sqrt(fan-in = last dim). */
  kind: 'norm' | 'matrix';
}

function tensorSpecs(o: RandomCheckpointOptions): TensorSpec[] {
  const headDim = o.dim / o.heads;
  const specs: TensorSpec[] = [{ name: 'model.embed_tokens.weight', shape: [o.vocab, o.dim], kind: 'matrix' }];
  for (let l = 0; l < o.layers; l++) {
    const p = `model.layers.${l}`;
    specs.push(
      { name: `${p}.input_layernorm.weight`, shape: [o.dim], kind: 'norm' },
      { name: `${p}.self_attn.q_proj.weight`, shape: [o.heads * headDim, o.dim], kind: 'matrix' },
      { name: `${p}.self_attn.k_proj.weight`, shape: [o.kvHeads * headDim, o.dim], kind: 'matrix' },
      { name: `${p}.self_attn.v_proj.weight`, shape: [o.kvHeads * headDim, o.dim], kind: 'matrix' },
      { name: `${p}.self_attn.o_proj.weight`, shape: [o.dim, o.heads * headDim], kind: 'matrix' },
      { name: `${p}.post_attention_layernorm.weight`, shape: [o.dim], kind: 'norm' },
      { name: `${p}.mlp.gate_proj.weight`, shape: [o.hidden, o.dim], kind: 'matrix' },
      { name: `${p}.mlp.up_proj.weight`, shape: [o.hidden, o.dim], kind: 'matrix' },
      { name: `${p}.mlp.down_proj.weight`, shape: [o.dim, o.hidden], kind: 'matrix' },
    );
  }
  specs.push({ name: 'model.norm.weight', shape: [o.dim], kind: 'norm' });
  if (!o.tied) specs.push({ name: 'lm_head.weight', shape: [o.vocab, o.dim], kind: 'matrix' });
  return specs;
}

/** xorshift32: a tiny deterministic generator (Marsaglia 2003). */
function makeRandom(seed: number): () => number {
  let s = seed >>> 0 || 0x9e3779b9;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 4294967296;
  };
}

/**
 * The chunks of each tensor's values (norm: 1 + noise; matrix: uniform, std 1/sqrt(fan-in)), 1 Mi
 * elements at a time from one shared buffer (each chunk is written before the next is made); bf16
 * truncated from f32.
 */
function randomChunks(dtype: RandomCheckpointOptions['dtype'], random: () => number) {
  const chunk = new Float32Array(1 << 20);
  const bf16 = new Uint16Array(chunk.length);
  const words = new Uint32Array(chunk.buffer);
  return function* (t: TensorSpec): Generator<Uint8Array> {
    let left = numelOf(t.shape);
    const scale = t.kind === 'norm' ? 0.1 : Math.sqrt(3 / (t.shape[t.shape.length - 1] ?? 1));
    while (left > 0) {
      const n = Math.min(left, chunk.length);
      for (let i = 0; i < n; i++) chunk[i] = (t.kind === 'norm' ? 1 : 0) + (2 * random() - 1) * scale;
      if (dtype === 'f32') {
        yield new Uint8Array(chunk.buffer, 0, n * 4);
      } else {
        for (let i = 0; i < n; i++) bf16[i] = (words[i] ?? 0) >>> 16;
        yield new Uint8Array(bf16.buffer, 0, n * 2);
      }
      left -= n;
    }
  };
}

export function parameterCount(o: RandomCheckpointOptions): number {
  return tensorSpecs(o).reduce((n, t) => n + numelOf(t.shape), 0);
}

/** Writes the checkpoint into dir; returns the parameter count and the weight bytes. */
export async function makeRandomCheckpoint(
  dir: string,
  o: RandomCheckpointOptions,
): Promise<{ params: number; bytes: number }> {
  if (o.dim % o.heads !== 0 || o.heads % o.kvHeads !== 0)
    throw new Error('dim must divide by heads, heads by kv-heads');
  await mkdir(dir, { recursive: true });
  const specs = tensorSpecs(o);
  const dtype = o.dtype === 'f32' ? ('F32' as const) : ('BF16' as const);
  const bytes = await writeSafetensors(
    join(dir, 'model.safetensors'),
    specs.map((t) => ({ ...t, dtype })),
    randomChunks(o.dtype, makeRandom(o.seed)),
  );
  const config = {
    architectures: ['LlamaForCausalLM'],
    model_type: 'llama',
    hidden_size: o.dim,
    intermediate_size: o.hidden,
    num_attention_heads: o.heads,
    num_key_value_heads: o.kvHeads,
    num_hidden_layers: o.layers,
    vocab_size: o.vocab,
    max_position_embeddings: o.ctx,
    head_dim: o.dim / o.heads,
    hidden_act: 'silu',
    rms_norm_eps: 1e-5,
    rope_theta: 10000.0,
    tie_word_embeddings: o.tied ?? false,
    bos_token_id: 1,
    eos_token_id: 2,
    torch_dtype: o.dtype === 'f32' ? 'float32' : 'bfloat16',
  };
  await writeFile(join(dir, 'config.json'), `${JSON.stringify(config, null, 2)}\n`);
  await writeFile(
    join(dir, 'generation_config.json'),
    `${JSON.stringify({ bos_token_id: 1, eos_token_id: 2 }, null, 2)}\n`,
  );
  return { params: parameterCount(o), bytes };
}

function parseArgs(argv: string[]): { out: string; options: RandomCheckpointOptions } {
  const o = { ...LLAMA_110M };
  let out = '';
  const numeric: Record<string, keyof RandomCheckpointOptions> = {
    '--dim': 'dim',
    '--layers': 'layers',
    '--heads': 'heads',
    '--kv-heads': 'kvHeads',
    '--hidden': 'hidden',
    '--vocab': 'vocab',
    '--ctx': 'ctx',
    '--seed': 'seed',
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i] ?? '';
    const value = argv[++i];
    if (value === undefined) throw new Error(`${flag} needs a value`);
    if (flag === '--out') out = value;
    else if (flag === '--dtype' && (value === 'f32' || value === 'bf16')) o.dtype = value;
    else if (flag === '--tied' && (value === 'true' || value === 'false')) o.tied = value === 'true';
    else if (numeric[flag] && Number.isInteger(Number(value)) && Number(value) > 0)
      (o as Record<string, unknown>)[numeric[flag]] = Number(value);
    else throw new Error(`bad option ${flag} ${value}`);
  }
  if (!out) throw new Error('--out DIR is required');
  return { out, options: o };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  try {
    const { out, options } = parseArgs(process.argv.slice(2));
    const { params, bytes } = await makeRandomCheckpoint(out, options);
    console.log(
      `wrote ${out}: ${(params / 1e6).toFixed(1)}M parameters, ${(bytes / 2 ** 20).toFixed(1)} MiB of weights`,
    );
  } catch (err) {
    console.error(`make-random-checkpoint: ${(err as Error).message}`);
    process.exitCode = 2;
  }
}

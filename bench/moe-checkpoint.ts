/**
 * Random GLM-4.5-shaped (Glm4MoeForCausalLM, BF16) and DeepSeek-V3-shaped (DeepseekV3ForCausalLM,
 * block-FP8) checkpoints for `npm run bench:engine`, scaled down so a run takes seconds, plus the
 * bytes one decoded token reads (attention + dense/shared MLPs + K routed experts + router + one
 * embedding row + lm_head) and the KV cache bytes per token (the engine caches f32).
 * Weights: bf16 uniform with std 1/sqrt(fan-in); FP8 bytes drawn among finite e4m3 values with one
 * f32 scale per 128x128 block; norms 1. Same options, same bytes.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { numelOf, writeSafetensors, type TensorHeader } from '../scripts/safetensors-writer.ts';

export interface MoeBenchOptions {
  arch: 'Glm4MoeForCausalLM' | 'DeepseekV3ForCausalLM';
  fp8: boolean;
  dim: number;
  layers: number;
  firstDense: number;
  heads: number;
  vocab: number;
  hidden: number;
  experts: number;
  perToken: number;
  groups: number;
  topkGroups: number;
  expertHidden: number;
  /** GLM: kv heads and head dim. */
  kvHeads?: number;
  headDim?: number;
  /** DeepSeek MLA: q_lora_rank (0 = null), kv_lora_rank, nope / rope / value head dims. */
  qRank?: number;
  kvRank?: number;
  nope?: number;
  rope?: number;
  vDim?: number;
}

interface Spec {
  name: string;
  shape: number[];
  kind: 'norm' | 'matrix' | 'bias';
  routed?: boolean;
  embed?: boolean;
}

function specs(o: MoeBenchOptions): Spec[] {
  const m = (name: string, rows: number, cols: number, extra: Partial<Spec> = {}): Spec => ({
    name,
    shape: [rows, cols],
    kind: 'matrix',
    ...extra,
  });
  const n = (name: string, len: number): Spec => ({ name, shape: [len], kind: 'norm' });
  const out: Spec[] = [m('model.embed_tokens.weight', o.vocab, o.dim, { embed: true })];
  for (let l = 0; l < o.layers; l++) {
    const p = `model.layers.${l}.`;
    out.push(n(`${p}input_layernorm.weight`, o.dim), n(`${p}post_attention_layernorm.weight`, o.dim));
    if (o.arch === 'Glm4MoeForCausalLM') {
      const D = o.headDim ?? 128,
        kv = (o.kvHeads ?? 1) * D;
      out.push(
        m(`${p}self_attn.q_proj.weight`, o.heads * D, o.dim),
        m(`${p}self_attn.k_proj.weight`, kv, o.dim),
        m(`${p}self_attn.v_proj.weight`, kv, o.dim),
        m(`${p}self_attn.o_proj.weight`, o.dim, o.heads * D),
      );
    } else {
      const R = o.kvRank ?? 0,
        Dn = o.nope ?? 0,
        Dr = o.rope ?? 0,
        Dv = o.vDim ?? 0,
        Rq = o.qRank ?? 0;
      if (Rq > 0)
        out.push(
          m(`${p}self_attn.q_a_proj.weight`, Rq, o.dim),
          n(`${p}self_attn.q_a_layernorm.weight`, Rq),
          m(`${p}self_attn.q_b_proj.weight`, o.heads * (Dn + Dr), Rq),
        );
      else out.push(m(`${p}self_attn.q_proj.weight`, o.heads * (Dn + Dr), o.dim));
      out.push(
        m(`${p}self_attn.kv_a_proj_with_mqa.weight`, R + Dr, o.dim),
        n(`${p}self_attn.kv_a_layernorm.weight`, R),
        m(`${p}self_attn.kv_b_proj.weight`, o.heads * (Dn + Dv), R),
        m(`${p}self_attn.o_proj.weight`, o.dim, o.heads * Dv),
      );
    }
    const mlp = (q: string, hidden: number, routed = false) =>
      out.push(
        m(`${q}gate_proj.weight`, hidden, o.dim, { routed }),
        m(`${q}up_proj.weight`, hidden, o.dim, { routed }),
        m(`${q}down_proj.weight`, o.dim, hidden, { routed }),
      );
    if (l < o.firstDense) mlp(`${p}mlp.`, o.hidden);
    else {
      out.push(
        { name: `${p}mlp.gate.weight`, shape: [o.experts, o.dim], kind: 'matrix' },
        { name: `${p}mlp.gate.e_score_correction_bias`, shape: [o.experts], kind: 'bias' },
      );
      for (let e = 0; e < o.experts; e++) mlp(`${p}mlp.experts.${e}.`, o.expertHidden, true);
      mlp(`${p}mlp.shared_experts.`, o.expertHidden);
    }
  }
  out.push(n('model.norm.weight', o.dim), m('lm_head.weight', o.vocab, o.dim));
  return out;
}

/** FP8 applies to the projection matrices (not embeddings, lm_head or the router), as the releases ship. */
const isFp8 = (o: MoeBenchOptions, s: Spec) => o.fp8 && s.kind === 'matrix' && s.name.endsWith('_proj.weight');
const numel = (s: Spec) => numelOf(s.shape);
const scaleShape = (s: Spec) => [Math.ceil((s.shape[0] ?? 1) / 128), Math.ceil((s.shape[1] ?? 1) / 128)];

export interface MoeBenchSizes {
  params: number;
  activeParams: number;
  activeBytes: number;
  batch8Bytes: number;
  kvBytesPerToken: number;
}

/** Parameter counts (active: as the engine counts them, embedding included) and the bytes a
 * decoded token reads; batch8Bytes: one step of 8 tokens, each
 * layer reading the experts that 8 independent uniform choices of K cover on average. */
export function moeBenchSizes(o: MoeBenchOptions): MoeBenchSizes {
  let params = 0,
    activeParams = 0,
    shared = 0,
    routedBytes = 0;
  for (const s of specs(o)) {
    const n = numel(s);
    const bytes = isFp8(o, s) ? n + 4 * scaleShape(s).reduce((a, b) => a * b, 1) : (s.kind === 'bias' ? 4 : 2) * n;
    params += n;
    if (s.routed) {
      routedBytes += bytes;
      continue;
    }
    activeParams += n;
    shared += s.embed ? 2 * o.dim : bytes; // one embedding row per token
  }
  const moeLayers = o.layers - o.firstDense,
    perExpert = routedBytes / (moeLayers * o.experts);
  const routedParams = specs(o)
    .filter((s) => s.routed)
    .reduce((a, s) => a + numel(s), 0);
  activeParams += (routedParams / o.experts) * o.perToken;
  const covered8 = o.experts * (1 - (1 - o.perToken / o.experts) ** 8);
  const kvFloats =
    o.arch === 'DeepseekV3ForCausalLM' ? (o.kvRank ?? 0) + (o.rope ?? 0) : 2 * (o.kvHeads ?? 1) * (o.headDim ?? 128);
  return {
    params,
    activeParams,
    activeBytes: shared + moeLayers * o.perToken * perExpert,
    batch8Bytes: shared + 7 * 2 * o.dim + moeLayers * covered8 * perExpert,
    kvBytesPerToken: 4 * o.layers * kvFloats,
  };
}

function xorshift(seed: number): () => number {
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

function config(o: MoeBenchOptions): Record<string, unknown> {
  const common = {
    architectures: [o.arch],
    vocab_size: o.vocab,
    hidden_size: o.dim,
    intermediate_size: o.hidden,
    num_hidden_layers: o.layers,
    num_attention_heads: o.heads,
    max_position_embeddings: 4096,
    rms_norm_eps: 1e-6,
    hidden_act: 'silu',
    tie_word_embeddings: false,
    n_routed_experts: o.experts,
    num_experts_per_tok: o.perToken,
    n_shared_experts: 1,
    n_group: o.groups,
    topk_group: o.topkGroups,
    moe_intermediate_size: o.expertHidden,
    first_k_dense_replace: o.firstDense,
    norm_topk_prob: true,
    routed_scaling_factor: 2.5,
    rope_theta: 10000.0,
    bos_token_id: 1,
    eos_token_id: 2,
    torch_dtype: 'bfloat16',
    ...(o.fp8
      ? {
          quantization_config: {
            quant_method: 'fp8',
            fmt: 'e4m3',
            activation_scheme: 'dynamic',
            weight_block_size: [128, 128],
          },
        }
      : {}),
  };
  if (o.arch === 'Glm4MoeForCausalLM') {
    return {
      ...common,
      model_type: 'glm4_moe',
      num_key_value_heads: o.kvHeads,
      head_dim: o.headDim,
      partial_rotary_factor: 0.5,
      attention_bias: false,
    };
  }
  return {
    ...common,
    model_type: 'deepseek_v3',
    num_key_value_heads: o.heads,
    q_lora_rank: o.qRank || null,
    kv_lora_rank: o.kvRank,
    qk_nope_head_dim: o.nope,
    qk_rope_head_dim: o.rope,
    v_head_dim: o.vDim,
    scoring_func: 'sigmoid',
    topk_method: 'noaux_tc',
  };
}

/** A tensor to write: its spec and how its values are stored (an FP8 matrix adds its scale tensor). */
interface Stored extends TensorHeader {
  spec: Spec;
  as: 'bf16' | 'f8' | 'f32' | 'scale';
}

function storedTensors(o: MoeBenchOptions): Stored[] {
  const out: Stored[] = [];
  for (const s of specs(o)) {
    if (isFp8(o, s)) {
      out.push({ name: s.name, dtype: 'F8_E4M3', shape: s.shape, spec: s, as: 'f8' });
      const sc = { ...s, name: `${s.name}_scale_inv`, shape: scaleShape(s) };
      out.push({ name: sc.name, dtype: 'F32', shape: sc.shape, spec: sc, as: 'scale' });
    } else if (s.kind === 'bias') {
      out.push({ name: s.name, dtype: 'F32', shape: s.shape, spec: s, as: 'f32' });
    } else {
      out.push({ name: s.name, dtype: 'BF16', shape: s.shape, spec: s, as: 'bf16' });
    }
  }
  return out;
}

/** One tensor's bytes (a single chunk: the bench shapes are small). */
function storedBytes({ spec, as }: Stored, random: () => number): Uint8Array {
  const n = numel(spec);
  const fanIn = spec.shape[spec.shape.length - 1] ?? 1;
  if (as === 'f8') {
    // finite e4m3 bytes of either sign, exponents 1..14
    const buf = Buffer.alloc(n);
    for (let i = 0; i < n; i++) buf[i] = ((random() * 0x70) | 0) + 8 + (random() < 0.5 ? 0x80 : 0);
    return buf;
  }
  if (as === 'scale' || as === 'f32') {
    const f = new Float32Array(n).fill(as === 'scale' ? 0.02 / Math.sqrt(fanIn) : 0);
    return new Uint8Array(f.buffer);
  }
  const words = new Uint16Array(n),
    f = new Float32Array(1),
    w = new Uint32Array(f.buffer);
  const scale = Math.sqrt(3 / fanIn);
  for (let i = 0; i < n; i++) {
    f[0] = spec.kind === 'norm' ? 1 : (2 * random() - 1) * scale;
    words[i] = (w[0] ?? 0) >>> 16;
  }
  return new Uint8Array(words.buffer);
}

export async function makeMoeCheckpoint(dir: string, o: MoeBenchOptions, seed = 3): Promise<void> {
  await mkdir(dir, { recursive: true });
  const random = xorshift(seed);
  await writeSafetensors(join(dir, 'model.safetensors'), storedTensors(o), (t) => [storedBytes(t, random)]);
  await writeFile(join(dir, 'config.json'), `${JSON.stringify(config(o), null, 2)}\n`);
}

/**
 * The committed demo model directory (models/maya-demo) is a complete Glm4ForCausalLM checkpoint:
 * every tensor the GLM-4-0414 forward needs, with shapes that follow config.json, within the size
 * budget, with eos ids and a chat template that match the tokenizer and the training template.
 */
import { readFileSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));
const dir = `${root}models/maya-demo/`;
const readJson = (name: string): Record<string, unknown> =>
  JSON.parse(readFileSync(`${dir}${name}`, 'utf8')) as Record<string, unknown>;

interface TensorMeta {
  dtype: string;
  shape: number[];
  data_offsets: [number, number];
}

function safetensorsHeader(path: string): { header: Record<string, TensorMeta>; dataBytes: number } {
  const buf = readFileSync(path);
  const n = Number(buf.readBigUInt64LE(0));
  const header = JSON.parse(buf.subarray(8, 8 + n).toString('utf8')) as Record<string, TensorMeta>;
  delete header.__metadata__;
  return { header, dataBytes: buf.length - 8 - n };
}

describe('models/maya-demo', () => {
  const config = readJson('config.json');
  const c = config as unknown as {
    hidden_size: number;
    head_dim: number;
    num_attention_heads: number;
    num_key_value_heads: number;
    intermediate_size: number;
    vocab_size: number;
    num_hidden_layers: number;
    [field: string]: unknown;
  };

  it('declares a GLM-4-0414 architecture with an 8192-token context', () => {
    expect(config.architectures).toEqual(['Glm4ForCausalLM']);
    expect(config.model_type).toBe('glm4');
    expect(c.max_position_embeddings).toBeGreaterThanOrEqual(8192);
    expect(c.partial_rotary_factor).toBe(0.5);
    expect(config.attention_bias).toBe(true);
    expect(config.tie_word_embeddings).toBe(false);
  });

  it('stores every tensor with the shape config.json implies, tightly packed', () => {
    const { header, dataBytes } = safetensorsHeader(`${dir}model.safetensors`);
    const C = c.hidden_size,
      D = c.head_dim,
      H = c.num_attention_heads,
      KV = c.num_key_value_heads;
    const I = c.intermediate_size,
      V = c.vocab_size;
    const want: Record<string, number[]> = {
      'model.embed_tokens.weight': [V, C],
      'model.norm.weight': [C],
      'lm_head.weight': [V, C],
    };
    // The main layers, then the one MTP layer (num_nextn_predict_layers, issue 35): the same GLM-4
    // layer plus enorm, hnorm, eh_proj and shared_head.norm (its embedding and head are the model's).
    expect(config.num_nextn_predict_layers).toBe(1);
    const n = c.num_hidden_layers;
    Object.assign(want, {
      [`model.layers.${n}.enorm.weight`]: [C],
      [`model.layers.${n}.hnorm.weight`]: [C],
      [`model.layers.${n}.eh_proj.weight`]: [C, 2 * C],
      [`model.layers.${n}.shared_head.norm.weight`]: [C],
    });
    for (let i = 0; i <= n; i++) {
      const p = `model.layers.${i}.`;
      Object.assign(want, {
        [`${p}input_layernorm.weight`]: [C],
        [`${p}self_attn.q_proj.weight`]: [H * D, C],
        [`${p}self_attn.q_proj.bias`]: [H * D],
        [`${p}self_attn.k_proj.weight`]: [KV * D, C],
        [`${p}self_attn.k_proj.bias`]: [KV * D],
        [`${p}self_attn.v_proj.weight`]: [KV * D, C],
        [`${p}self_attn.v_proj.bias`]: [KV * D],
        [`${p}self_attn.o_proj.weight`]: [C, H * D],
        [`${p}post_self_attn_layernorm.weight`]: [C],
        [`${p}post_attention_layernorm.weight`]: [C],
        [`${p}mlp.gate_up_proj.weight`]: [2 * I, C],
        [`${p}mlp.down_proj.weight`]: [C, I],
        [`${p}post_mlp_layernorm.weight`]: [C],
      });
    }
    expect(Object.keys(header).sort()).toEqual(Object.keys(want).sort());
    let total = 0;
    for (const [name, shape] of Object.entries(want)) {
      const meta = header[name]!;
      expect(meta.shape, name).toEqual(shape);
      expect(meta.dtype).toBe('BF16');
      const bytes = 2 * shape.reduce((a, b) => a * b, 1);
      expect(meta.data_offsets[1] - meta.data_offsets[0], name).toBe(bytes);
      total += bytes;
    }
    expect(dataBytes).toBe(total);
  });

  it('fits the 30 MB budget for the whole directory', () => {
    const files = [
      'config.json',
      'generation_config.json',
      'model.safetensors',
      'tokenizer.json',
      'tokenizer_config.json',
      'README.md',
    ];
    const bytes = files.reduce((sum, f) => sum + statSync(`${dir}${f}`).size, 0);
    expect(bytes).toBeLessThan(30 * 1024 * 1024);
  });

  it('stops on the GLM end tokens and carries the template it was trained with', () => {
    const tokenizer = readJson('tokenizer.json') as { added_tokens: { id: number; content: string }[] };
    const idOf = (t: string) => tokenizer.added_tokens.find((a) => a.content === t)?.id;
    const eos = ['<|endoftext|>', '<|user|>', '<|observation|>'].map(idOf);
    expect(readJson('generation_config.json').eos_token_id).toEqual(eos);
    expect(config.eos_token_id).toEqual(eos);
    const template = readFileSync(`${root}scripts/demo-model/glm-4.5.jinja`, 'utf8');
    expect(readJson('tokenizer_config.json').chat_template).toBe(template);
  });
});

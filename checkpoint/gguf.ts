/**
 * GGUF metadata (llama.cpp's model files) for the TypeScript side: the header's key-values, read
 * from the file's start without touching the tensor data, and what they give in place of a Hugging
 * Face directory's files: config.json's fields, the tokenizer (`tokenizer.ggml.*`, model `gpt2`: a
 * byte-level BPE, rebuilt as a tokenizer.json for checkpoint/tokenizer.ts) and the chat template
 * (`tokenizer.chat_template`). The engine reads the tensors itself (engine-cuda/src/gguf.cpp).
 *
 * Layout (llama.cpp's gguf-py / ggml/src/gguf.cpp, facts only): little-endian; "GGUF", u32
 * version, u64 tensor count, u64 key-value count, then each key-value: u64-length string key, u32
 * value type, value (arrays: u32 element type, u64 count, elements).
 */
import { open, type FileHandle } from 'node:fs/promises';
import { basename } from 'node:path';
import { byteLevelBpeJson, sentencePieceBpeJson, type AddedToken } from './tokenizer-json.ts';

export class GgufError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'GgufError';
  }
}

export type GgufScalar = number | bigint | boolean | string;
export type GgufValue = GgufScalar | GgufScalar[];

export interface GgufMetadata {
  version: number;
  tensorCount: bigint;
  kv: Map<string, GgufValue>;
}

/**
 * A string from the file as an error message shows it: quoted, control bytes and broken UTF-8
 * escaped, and cut after 64 characters, so a damaged key cannot flood or garble the message.
 */
function shown(text: string): string {
  let out = '';
  for (const c of text) {
    if (out.length >= 64) return `"${out}..."`;
    const code = c.codePointAt(0) ?? 0;
    const control = code < 0x20 || (code >= 0x7f && code <= 0x9f) || code === 0xfffd;
    out += control ? `\\u${code.toString(16).padStart(4, '0')}` : c === '"' || c === '\\' ? `\\${c}` : c;
  }
  return `"${out}"`;
}

/** A path that names a GGUF file rather than a model directory. */
export function isGgufPath(path: string): boolean {
  return path.toLowerCase().endsWith('.gguf');
}

/** Reads a little-endian byte stream from a file, a chunk at a time. */
class Reader {
  private buf = Buffer.alloc(0);
  private start = 0; // file offset of buf[0]
  pos = 0; // file offset
  constructor(
    private readonly fh: FileHandle,
    private readonly size: number,
    private readonly file: string,
  ) {}

  private async need(n: number, what: string): Promise<number> {
    if (this.pos + n > this.size)
      throw new GgufError(`${this.file}: truncated GGUF file: it ends at byte ${this.size} while reading ${what}`);
    const at = this.pos - this.start;
    if (at + n <= this.buf.length) return at;
    const len = Math.min(Math.max(n, 1 << 20), this.size - this.pos);
    const next = Buffer.alloc(len);
    await this.fh.read(next, 0, len, this.pos);
    this.buf = next;
    this.start = this.pos;
    return 0;
  }
  async u32(what: string): Promise<number> {
    const at = await this.need(4, what);
    this.pos += 4;
    return this.buf.readUInt32LE(at);
  }
  async u64(what: string): Promise<bigint> {
    const at = await this.need(8, what);
    this.pos += 8;
    return this.buf.readBigUInt64LE(at);
  }
  async str(what: string): Promise<string> {
    const n = await this.u64(what);
    if (n > BigInt(this.size - this.pos))
      throw new GgufError(`${this.file}: truncated GGUF file: a string of ${n} bytes in ${what} passes its end`);
    const at = await this.need(Number(n), what);
    this.pos += Number(n);
    return this.buf.toString('utf8', at, at + Number(n));
  }
  async scalar(type: number, what: string): Promise<GgufScalar> {
    const sizes: Record<number, number> = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };
    if (type === 8) return this.str(what);
    const size = sizes[type];
    if (size === undefined) throw new GgufError(`${this.file}: ${what} has unknown value type ${type}`);
    const at = await this.need(size, what);
    this.pos += size;
    const b = this.buf;
    switch (type) {
      case 0:
        return b.readUInt8(at);
      case 1:
        return b.readInt8(at);
      case 2:
        return b.readUInt16LE(at);
      case 3:
        return b.readInt16LE(at);
      case 4:
        return b.readUInt32LE(at);
      case 5:
        return b.readInt32LE(at);
      case 6:
        return b.readFloatLE(at);
      case 7:
        return b.readUInt8(at) !== 0;
      case 10: {
        const v = b.readBigUInt64LE(at);
        return v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
      }
      case 11: {
        const v = b.readBigInt64LE(at);
        return v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= -BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
      }
      default:
        return b.readDoubleLE(at);
    }
  }
}

/** Reads the header and every key-value of a GGUF file. Throws GgufError naming what is wrong. */
export async function readGgufMetadata(path: string): Promise<GgufMetadata> {
  const fh = await open(path, 'r').catch((err: Error) => {
    throw new GgufError(`cannot open ${path}: ${err.message}`);
  });
  try {
    const { size } = await fh.stat();
    const r = new Reader(fh, size, path);
    const magic = Buffer.alloc(4);
    if (size < 4) throw new GgufError(`${path}: truncated GGUF file: it ends at byte ${size} while reading the magic`);
    await fh.read(magic, 0, 4, 0);
    if (magic.toString('latin1') !== 'GGUF') throw new GgufError(`${path}: not a GGUF file (no "GGUF" magic)`);
    r.pos = 4;
    const version = await r.u32('the version');
    if (version !== 2 && version !== 3)
      throw new GgufError(`${path}: GGUF version ${version} is not supported (2 and 3 are)`);
    const tensorCount = await r.u64('the tensor count');
    const kvCount = await r.u64('the key-value count');
    if (kvCount > BigInt(size)) throw new GgufError(`${path}: header claims ${kvCount} key-values`);
    const kv = new Map<string, GgufValue>();
    for (let i = 0n; i < kvCount; i++) {
      const key = await r.str('a metadata key');
      const what = `metadata key ${shown(key)}`;
      if (key === '' || kv.has(key)) throw new GgufError(`${path}: ${what} is empty or appears twice`);
      const type = await r.u32(what);
      if (type === 9) {
        const elem = await r.u32(what);
        const n = await r.u64(what);
        if (elem === 9 || n > BigInt(size - r.pos))
          throw new GgufError(`${path}: ${what}: bad array (${n} elements of type ${elem})`);
        const items: GgufScalar[] = [];
        for (let j = 0n; j < n; j++) items.push(await r.scalar(elem, what));
        kv.set(key, items);
      } else {
        kv.set(key, await r.scalar(type, what));
      }
    }
    return { version, tensorCount, kv };
  } finally {
    await fh.close();
  }
}

/** The Hugging Face architecture of each GGUF architecture the engine reads. */
export const GGUF_ARCHITECTURES: Record<string, string> = {
  llama: 'LlamaForCausalLM',
  qwen3: 'Qwen3ForCausalLM',
  qwen3moe: 'Qwen3MoeForCausalLM',
  glm4: 'Glm4ForCausalLM',
  glm4moe: 'Glm4MoeForCausalLM',
  deepseek2: 'DeepseekV3ForCausalLM',
};

/**
 * Pre-tokenizer split patterns by `tokenizer.ggml.pre`: each family's Hugging Face tokenizer.json
 * regex (the case-insensitive contractions spelled out). DeepSeek-V3 splits three times.
 */
const LLAMA3 =
  "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const QWEN2 =
  "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const PRE_SPLITS: Record<string, string[]> = {
  'llama-bpe': [LLAMA3],
  llama3: [LLAMA3],
  glm4: [LLAMA3],
  qwen2: [QWEN2],
  'deepseek-v3': [
    '\\p{N}{1,3}',
    '[一-龥぀-ゟ゠-ヿ]+',
    '[!"#$%&\'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+',
  ],
  gpt2: ["'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"],
};

/** What a GGUF file gives in place of a model directory's config, tokenizer and template files. */
export interface GgufModel {
  /** general.architecture as a Hugging Face name (Qwen3MoeForCausalLM...). */
  architecture: string;
  contextLength: number;
  vocabSize: number;
  /** tokenizer.ggml.eos / eot / eom token ids. */
  eosIds: number[];
  chatTemplate: string | null;
  specialTokens: { bos_token?: string; eos_token?: string; unk_token?: string; pad_token?: string };
  /** A tokenizer.json object and tokenizer_config.json object for checkpoint/tokenizer.ts. */
  tokenizerJson: object;
  tokenizerConfig: object;
}

function int(value: GgufValue | undefined): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) ? value : undefined;
}

function strings(meta: GgufMetadata, key: string, file: string): string[] {
  const v = meta.kv.get(key);
  if (!Array.isArray(v) || v.some((s) => typeof s !== 'string'))
    throw new GgufError(`${file}: ${key} is missing or not an array of strings`);
  return v as string[];
}

/**
 * Whether encoding with special tokens puts BOS (EOS) around the text, as llama.cpp's vocabulary
 * decides it (src/llama-vocab.cpp): `tokenizer.ggml.add_bos_token` / `add_eos_token` when present,
 * else true for BOS under SentencePiece vocabularies (`llama`) and the Llama 3 pre-tokenizers and
 * false otherwise; GLM-4's files have no BOS.
 */
function addSpecial(meta: GgufMetadata, which: 'bos' | 'eos', pre: string, spm: boolean): boolean {
  if (which === 'bos' && pre === 'glm4') return false;
  const flag = meta.kv.get(`tokenizer.ggml.add_${which}_token`);
  if (typeof flag === 'boolean') return flag;
  return which === 'bos' && (spm || pre === 'llama-bpe' || pre === 'llama3');
}

/** tokenizer.ggml.scores: one number per token (SentencePiece vocabularies need them). */
function scores(meta: GgufMetadata, n: number, file: string): number[] {
  const v = meta.kv.get('tokenizer.ggml.scores');
  if (!Array.isArray(v) || v.length !== n || v.some((x) => typeof x !== 'number'))
    throw new GgufError(`${file}: tokenizer.ggml.scores is missing or not one number per token (${n})`);
  return v as number[];
}

/**
 * A SentencePiece BPE vocabulary's merges, derived from its pieces and scores as Hugging Face's
 * SentencePieceExtractor does for LlamaConverter (transformers convert_slow_tokenizer.py): every
 * split of a piece into two pieces that are both in the vocabulary is a merge; a piece's merges in
 * order of (left id, right id); all merges by the merged piece's score, highest first, equal scores
 * in vocabulary order (a stable sort). The BPE model then merges the pair whose piece scores highest
 * first, which is what llama.cpp's SPM tokenizer does greedily over bigrams (src/llama-vocab.cpp,
 * llm_tokenizer_spm_session); the two differ only between different pieces of exactly equal score.
 */
export function sentencePieceMerges(tokens: readonly string[], score: readonly number[]): [string, string][] {
  const ids = new Map<string, number>();
  tokens.forEach((t, id) => {
    if (!ids.has(t)) ids.set(t, id);
  });
  const merges: Array<{ left: string; right: string; score: number; order: number }> = [];
  tokens.forEach((piece, id) => {
    if (ids.get(piece) !== id) return;
    const chars = Array.from(piece);
    const local: Array<{ left: string; right: string; l: number; r: number }> = [];
    for (let i = 1; i < chars.length; i++) {
      const left = chars.slice(0, i).join('');
      const right = chars.slice(i).join('');
      const l = ids.get(left);
      const r = ids.get(right);
      if (l !== undefined && r !== undefined) local.push({ left, right, l, r });
    }
    local.sort((a, b) => a.l - b.l || a.r - b.r);
    for (const m of local) merges.push({ left: m.left, right: m.right, score: score[id] ?? 0, order: merges.length });
  });
  merges.sort((a, b) => b.score - a.score || a.order - b.order);
  return merges.map((m) => [m.left, m.right]);
}

/**
 * The post-processor a Hugging Face tokenizer.json of the same model carries (Llama 3, DeepSeek-V3):
 * TemplateProcessing with BOS before (and EOS after) each sequence. It applies only when encoding
 * asks for special tokens (`maya perplexity`); chat templates write their own BOS into the text.
 */
function templateProcessing(bos: string | undefined, eos: string | undefined, tokens: string[]): object | null {
  if (bos === undefined && eos === undefined) return null;
  const special = (token: string | undefined, typeId: number) =>
    token === undefined ? [] : [{ SpecialToken: { id: token, type_id: typeId } }];
  const sequence = (id: 'A' | 'B', typeId: number) => [
    ...special(bos, typeId),
    { Sequence: { id, type_id: typeId } },
    ...special(eos, typeId),
  ];
  const specialTokens = Object.create(null) as Record<string, object>;
  for (const token of [bos, eos])
    if (token !== undefined) specialTokens[token] = { id: token, ids: [tokens.indexOf(token)], tokens: [token] };
  return {
    type: 'TemplateProcessing',
    single: sequence('A', 0),
    pair: [...sequence('A', 0), ...sequence('B', 1)],
    special_tokens: specialTokens,
  };
}

/** The model facts, tokenizer and template of a GGUF file's metadata. Throws GgufError. */
export function ggufModel(meta: GgufMetadata, file: string): GgufModel {
  const name = basename(file);
  const arch = meta.kv.get('general.architecture');
  const splitNo = int(meta.kv.get('split.no'));
  if (splitNo !== undefined && splitNo > 0) {
    // Only a split set's first file carries the model metadata (the engine refuses the same way).
    const count = int(meta.kv.get('split.count'));
    const first = name.replace(/-\d{5}-of-(\d{5})\.gguf$/i, '-00001-of-$1.gguf');
    throw new GgufError(
      `${name} is part ${splitNo + 1}${count !== undefined ? ` of ${count}` : ''} of a split GGUF set: ` +
        `open its first file (${first === name ? '-00001-of-...' : first})`,
    );
  }
  if (typeof arch !== 'string') throw new GgufError(`${name}: general.architecture is missing`);
  // own keys only: an architecture named "constructor" is not supported, not Object's constructor
  const architecture = Object.hasOwn(GGUF_ARCHITECTURES, arch) ? GGUF_ARCHITECTURES[arch] : undefined;
  if (!architecture)
    throw new GgufError(
      `${name}: GGUF architecture ${shown(arch)} is not supported (${Object.keys(GGUF_ARCHITECTURES).join(', ')} are)`,
    );
  const model = meta.kv.get('tokenizer.ggml.model');
  if (model !== 'gpt2' && model !== 'llama')
    throw new GgufError(
      `${name}: tokenizer.ggml.model ${shown(String(model))} is not supported (gpt2, byte-level BPE, and llama, SentencePiece BPE, are)`,
    );
  const pre = model === 'llama' ? undefined : meta.kv.get('tokenizer.ggml.pre');
  const preName = typeof pre === 'string' ? pre : 'gpt2';
  const splits = Object.hasOwn(PRE_SPLITS, preName) ? PRE_SPLITS[preName] : undefined;
  if (!splits)
    throw new GgufError(
      `${name}: tokenizer.ggml.pre ${shown(String(pre))} is not supported (${Object.keys(PRE_SPLITS).join(', ')} are)`,
    );
  const tokens = strings(meta, 'tokenizer.ggml.tokens', name);
  const typesRaw = meta.kv.get('tokenizer.ggml.token_type');
  const types = Array.isArray(typesRaw) ? typesRaw : [];
  // No prototype: tokens named like Object.prototype's members (constructor, toString, __proto__)
  // are ordinary entries (the tokenizer library reads the vocabulary with Object.entries).
  const vocab = Object.create(null) as Record<string, number>;
  const added: AddedToken[] = [];
  tokens.forEach((t, id) => {
    if (!Object.hasOwn(vocab, t)) vocab[t] = id;
    // llama.cpp token types: 3 control (special added tokens), 4 user-defined (other added tokens);
    // a SentencePiece vocabulary's 2 (unknown, `<unk>`) is special too, as Hugging Face's
    // LlamaConverter makes it and as llama.cpp parses it in text with parse_special.
    const type = types[id];
    if (type === 3 || type === 4 || (model === 'llama' && type === 2))
      added.push({ id, content: t, special: type !== 4 });
  });
  const tokenOf = (key: string): string | undefined => {
    const id = int(meta.kv.get(`tokenizer.ggml.${key}_token_id`));
    return id !== undefined && id >= 0 && id < tokens.length ? tokens[id] : undefined;
  };
  const spm = model === 'llama';
  const addBos = addSpecial(meta, 'bos', preName, spm) ? tokenOf('bos') : undefined;
  const addEos = addSpecial(meta, 'eos', preName, spm) ? tokenOf('eos') : undefined;
  const tokenizerJson = spm
    ? sentencePieceBpeJson({
        added,
        postProcessor: templateProcessing(addBos, addEos, tokens),
        vocab,
        merges: sentencePieceMerges(tokens, scores(meta, tokens.length, name)),
        unk: tokenOf('unknown') ?? (Object.hasOwn(vocab, '<unk>') ? '<unk>' : null),
        addSpacePrefix: meta.kv.get('tokenizer.ggml.add_space_prefix') !== false,
      })
    : gpt2Json(splits);
  function gpt2Json(regexes: string[]): object {
    const merges = strings(meta, 'tokenizer.ggml.merges', name);
    return byteLevelBpeJson({
      added,
      preTokenizer: {
        type: 'Sequence',
        pretokenizers: [
          ...regexes.map((regex) => ({
            type: 'Split',
            pattern: { Regex: regex },
            behavior: 'Isolated',
            invert: false,
          })),
          { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false },
        ],
      },
      postProcessor: templateProcessing(addBos, addEos, tokens),
      decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
      vocab,
      merges: merges.map((m) => {
        const at = m.indexOf(' ');
        return [m.slice(0, at), m.slice(at + 1)] as [string, string];
      }),
    });
  }
  const specialTokens: GgufModel['specialTokens'] = {};
  for (const [field, key] of [
    ['bos_token', 'bos'],
    ['eos_token', 'eos'],
    ['unk_token', 'unknown'],
    ['pad_token', 'padding'],
  ] as const) {
    const t = tokenOf(key);
    if (t !== undefined) specialTokens[field] = t;
  }
  const eosIds = [
    ...new Set(
      ['eos', 'eot', 'eom']
        .map((k) => int(meta.kv.get(`tokenizer.ggml.${k}_token_id`)))
        .filter((id): id is number => id !== undefined && id >= 0 && id < tokens.length),
    ),
  ];
  const template = meta.kv.get('tokenizer.chat_template');
  return {
    architecture,
    contextLength: int(meta.kv.get(`${arch}.context_length`)) ?? 0,
    vocabSize: tokens.length,
    eosIds,
    chatTemplate: typeof template === 'string' ? template : null,
    specialTokens,
    tokenizerJson,
    tokenizerConfig: {
      ...specialTokens,
      add_bos_token: addBos !== undefined,
      add_eos_token: addEos !== undefined,
    },
  };
}

/** Reads a GGUF file's metadata and model facts. Throws GgufError. */
export async function readGgufModel(path: string): Promise<GgufModel> {
  return ggufModel(await readGgufMetadata(path), path);
}

/**
 * Tokenizer: a Hugging Face `tokenizer.json` (+ `tokenizer_config.json`) through
 * @huggingface/tokenizers. encode() recognises added/special tokens in the text and never splits
 * them (`<|user|>`, `<think>`); decode() turns ids back into text; createDecoder() streams text
 * token by token without ever emitting half of a multi-byte UTF-8 character.
 *
 * Streaming follows the incremental detokenisation of vLLM / text-generation-inference: decode a
 * short window of ids twice (without and with the new ones) and emit the difference, holding it
 * back while the window's text ends in U+FFFD (an incomplete byte sequence).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Tokenizer as HfTokenizer } from '@huggingface/tokenizers';
import { isGgufPath, readGgufModel } from './gguf.ts';

export class TokenizerError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TokenizerError';
  }
}

export interface EncodeOptions {
  /** Add the tokenizer's post-processor tokens (e.g. BOS). Default false: chat templates carry their own. */
  addSpecialTokens?: boolean;
}

export interface DecodeOptions {
  /** Drop special tokens from the text. Default false. */
  skipSpecialTokens?: boolean;
  /** With skipSpecialTokens: keep a special token whose content occurs in one of these strings
   * (a dialect's markers, see Dialect.markerTokens). */
  keepTokens?: readonly string[];
}

/** Streams text for token ids as they are generated. */
export interface StreamDecoder {
  /** Adds one id; returns the text that is now complete ('' while a character is incomplete). */
  push(id: number): string;
  /** Returns whatever is still held back (an incomplete trailing sequence decodes to U+FFFD). */
  flush(): string;
}

interface AddedTokenJson {
  id: number;
  content: string;
  special?: boolean;
}

const REPLACEMENT = '\uFFFD';

/**
 * GPT-2's byte ↔ printable-character table used by ByteLevel BPE vocabularies: bytes that are
 * printable Latin-1 map to themselves, the rest to U+0100 onwards in byte order.
 */
function byteLevelCharToByte(): Map<string, number> {
  const printable = (b: number) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  const table = new Map<string, number>();
  let next = 0;
  for (let b = 0; b < 256; b++) table.set(String.fromCharCode(printable(b) ? b : 256 + next++), b);
  return table;
}

export class Tokenizer {
  private readonly hf: HfTokenizer;
  /** The same tokenizer without added tokens: their strings are encoded as ordinary text. */
  private plainHf: HfTokenizer | undefined;
  private readonly json: object;
  private readonly config: object;
  private readonly added = new Map<string, { id: number; special: boolean }>();
  /** id → UTF-8 bytes, for ByteLevel-decoded BPE vocabularies (the O(1) streaming path). */
  private readonly idBytes: Array<Uint8Array | undefined> | undefined;

  constructor(tokenizerJson: object, tokenizerConfig: object = {}) {
    this.json = tokenizerJson;
    this.config = tokenizerConfig;
    try {
      this.hf = new HfTokenizer(tokenizerJson, tokenizerConfig);
    } catch (err) {
      throw new TokenizerError(`invalid tokenizer.json: ${(err as Error).message}`);
    }
    const addedTokens = (tokenizerJson as { added_tokens?: AddedTokenJson[] }).added_tokens ?? [];
    for (const t of addedTokens) this.added.set(t.content, { id: t.id, special: t.special ?? false });
    this.idBytes = byteLevelTable(tokenizerJson as TokenizerJsonShape, addedTokens);
    if (this.idBytes && (tokenizerJson as { normalizer?: unknown }).normalizer == null) {
      this.maxTokenBytes = this.idBytes.reduce((max, bytes) => Math.max(max, bytes?.length ?? 0), 1);
    }
  }

  /**
   * UTF-8 bytes of the longest token, for byte-level BPE vocabularies without a normalizer (where
   * every token spells exactly its bytes); undefined for other tokenizers.
   */
  readonly maxTokenBytes: number | undefined;

  /** Loads `tokenizer.json` and, when present, `tokenizer_config.json` from a model directory; from a
   * GGUF file, the tokenizer its metadata describes (checkpoint/gguf.ts). */
  static async fromDir(dir: string): Promise<Tokenizer> {
    if (isGgufPath(dir)) {
      const gguf = await readGgufModel(dir).catch((err: Error) => {
        throw new TokenizerError(err.message);
      });
      return new Tokenizer(gguf.tokenizerJson, gguf.tokenizerConfig);
    }
    const json = await readJson(join(dir, 'tokenizer.json'));
    if (json === undefined) throw new TokenizerError(`${dir} has no tokenizer.json`);
    const config = (await readJson(join(dir, 'tokenizer_config.json'))) ?? {};
    return new Tokenizer(json, config);
  }

  encode(text: string, options: EncodeOptions = {}): number[] {
    if (text === '') return [];
    return this.hf.encode(text, { add_special_tokens: options.addSpecialTokens ?? false }).ids;
  }

  /**
   * Encodes a rendered prompt in which the strings of `plain` (message contents, reasoning, tool
   * arguments and results: text that came from users, tools or history) are ordinary text: an
   * added-token string inside them (`<|user|>`, `<tool_call>`) is encoded as its characters, so
   * only the template's own markup produces role and tool tokens. Prompts whose plain strings hold
   * no added-token string encode exactly as encode() does. Each plain string is found in order
   * after the previous one (then anywhere); one the template rewrote beyond recognition is not.
   */
  encodePrompt(text: string, plain: readonly string[]): number[] {
    const markers = [...this.added.keys()];
    const risky = plain.filter((part) => part !== '' && markers.some((marker) => part.includes(marker)));
    if (risky.length === 0) return this.encode(text);
    const spans: Array<[number, number]> = [];
    let cursor = 0;
    for (const part of risky) {
      let at = text.indexOf(part, cursor);
      if (at < 0) at = text.indexOf(part);
      if (at < 0) continue;
      spans.push([at, at + part.length]);
      cursor = at + part.length;
    }
    spans.sort((a, b) => a[0] - b[0]);
    const ids: number[] = [];
    let position = 0;
    for (const [start, end] of spans) {
      if (end <= position) continue;
      ids.push(
        ...this.encode(text.slice(position, Math.max(position, start))),
        ...this.encodePlain(text.slice(Math.max(position, start), end)),
      );
      position = end;
    }
    ids.push(...this.encode(text.slice(position)));
    return ids;
  }

  /** `text` with added-token strings encoded as ordinary characters. */
  encodePlain(text: string): number[] {
    if (text === '') return [];
    this.plainHf ??= new HfTokenizer({ ...this.json, added_tokens: [] }, this.config);
    return this.plainHf.encode(text, { add_special_tokens: false }).ids;
  }

  decode(ids: readonly number[], options: DecodeOptions = {}): string {
    return this.decodeDropping(ids, this.droppedIds(options));
  }

  private decodeDropping(ids: readonly number[], dropped: ReadonlySet<number>): string {
    const kept = dropped.size > 0 ? ids.filter((id) => !dropped.has(id)) : [...ids];
    if (kept.length === 0) return '';
    return this.hf.decode(kept, { skip_special_tokens: false, clean_up_tokenization_spaces: false });
  }

  /** The ids decoding drops: with skipSpecialTokens, the special tokens not within a kept string. */
  private droppedIds(options: DecodeOptions): ReadonlySet<number> {
    const dropped = new Set<number>();
    if (options.skipSpecialTokens !== true) return dropped;
    const keep = options.keepTokens ?? [];
    for (const [content, t] of this.added) {
      if (t.special && !keep.some((marker) => marker.includes(content))) dropped.add(t.id);
    }
    return dropped;
  }

  /** The id of a token string (special/added tokens included), or undefined. */
  tokenId(token: string): number | undefined {
    return this.added.get(token)?.id ?? this.hf.token_to_id(token);
  }

  /** The vocabulary string of an id (e.g. 'Ġhello', '<|user|>'), or undefined. */
  idToToken(id: number): string | undefined {
    return this.hf.id_to_token(id);
  }

  /** True for ids of added tokens marked special. */
  isSpecial(id: number): boolean {
    const token = this.hf.id_to_token(id);
    return token !== undefined && (this.added.get(token)?.special ?? false);
  }

  /** Ids of all added tokens marked special, by content. */
  specialTokens(): Map<string, number> {
    const out = new Map<string, number>();
    for (const [content, t] of this.added) if (t.special) out.set(content, t.id);
    return out;
  }

  /**
   * The vocabulary as constrained decoding sees it: each ordinary token's bytes by id and the
   * special tokens by content (special ids have no bytes). Byte-level BPE tokens are their bytes;
   * SentencePiece pieces (byte-fallback BPE, sentencePieceTable) spell "▁" as a space and
   * `<0xNN>` as that byte, and stripsLeadingSpace says the decoder drops one leading space of the
   * output (Hugging Face's Strip), so a first token's leading space is never published. Other
   * tokenizers have no fixed bytes per token: every id is undefined. size: ids covered (the
   * model's own vocabulary may be larger; the engine pads to it).
   */
  vocabularyBytes(): {
    tokens: Array<Uint8Array | undefined>;
    specials: Record<string, number>;
    size: number;
    stripsLeadingSpace: boolean;
  } {
    const specials = Object.fromEntries(this.specialTokens());
    const specialIds = new Set(Object.values(specials));
    // SentencePiece bytes serve the grammar only: streaming keeps the windowed decoder, which also
    // drops the output's leading space.
    const pieces = this.idBytes ? undefined : sentencePieceTable(this.json as TokenizerJsonShape);
    const table = this.idBytes ?? pieces?.tokens ?? [];
    const tokens = table.map((bytes, id) => (specialIds.has(id) ? undefined : bytes));
    return {
      tokens,
      specials,
      size: Math.max(tokens.length, ...[...specialIds].map((id) => id + 1)),
      stripsLeadingSpace: pieces?.stripsLeadingSpace ?? false,
    };
  }

  createDecoder(options: DecodeOptions = {}): StreamDecoder {
    const dropped = this.droppedIds(options);
    if (this.idBytes) return byteLevelDecoder(this.idBytes, dropped);
    const ids: number[] = [];
    let prefixOffset = 0;
    let readOffset = 0;
    const text = (from: number, to: number) => this.decodeDropping(ids.slice(from, to), dropped);
    return {
      push: (id: number) => {
        ids.push(id);
        const prefix = text(prefixOffset, readOffset);
        const full = text(prefixOffset, ids.length);
        if (full.length <= prefix.length || full.endsWith(REPLACEMENT)) return '';
        prefixOffset = readOffset;
        readOffset = ids.length;
        return full.slice(prefix.length);
      },
      flush: () => {
        if (readOffset === ids.length) return '';
        const prefix = text(prefixOffset, readOffset);
        const full = text(prefixOffset, ids.length);
        prefixOffset = readOffset = ids.length;
        return full.slice(prefix.length);
      },
    };
  }
}

interface TokenizerJsonShape {
  model?: { type?: string; vocab?: Record<string, number>; byte_fallback?: boolean };
  decoder?: { type?: string; decoders?: unknown[] } | null;
  normalizer?: unknown;
}

/**
 * For a BPE model whose only decoder is ByteLevel (GPT-2 style), every vocabulary entry maps to
 * raw bytes through the byte-level table and every added token to its UTF-8 content, so streaming
 * needs no re-decoding. Any other tokenizer returns undefined (the generic windowed path).
 */
function byteLevelTable(
  json: TokenizerJsonShape,
  addedTokens: AddedTokenJson[],
): Array<Uint8Array | undefined> | undefined {
  if (json.model?.type !== 'BPE' || json.decoder?.type !== 'ByteLevel' || !json.model.vocab) return undefined;
  const charToByte = byteLevelCharToByte();
  const table: Array<Uint8Array | undefined> = [];
  for (const [piece, id] of Object.entries(json.model.vocab)) {
    const bytes: number[] = [];
    for (const ch of piece) {
      const b = charToByte.get(ch);
      if (b === undefined) return undefined;
      bytes.push(b);
    }
    table[id] = Uint8Array.from(bytes);
  }
  const encoder = new TextEncoder();
  for (const t of addedTokens) table[t.id] = encoder.encode(t.content);
  return table;
}

interface SentencePieceBytes {
  tokens: Array<Uint8Array | undefined>;
  /** The decoder ends in Strip(" ", 1, 0): the decoded text loses one leading space. */
  stripsLeadingSpace: boolean;
}

/** A byte-fallback piece: `<0x41>` decodes to the byte 0x41 (Hugging Face's ByteFallback decoder). */
const BYTE_PIECE = /^<0x([0-9A-Fa-f]{2})>$/;

/**
 * For a SentencePiece BPE vocabulary in the tokenizer.json shape Hugging Face's LlamaConverter
 * writes (checkpoint/tokenizer-json.ts sentencePieceBpeJson: byte_fallback BPE, decoder
 * Replace("▁" → " "), ByteFallback, Fuse, optionally Strip(" ", 1, 0)), the bytes each piece and
 * each added token decodes to: "▁" as a space, `<0xNN>` as that byte, anything else as its UTF-8.
 * Every id passes through the same decoder chain (added tokens included), so a token's text
 * never depends on its neighbours, except for the Strip of the output's first character.
 * Any other decoder returns undefined.
 */
function sentencePieceTable(json: TokenizerJsonShape): SentencePieceBytes | undefined {
  if (json.model?.type !== 'BPE' || json.model.byte_fallback !== true || !json.model.vocab) return undefined;
  const steps = json.decoder?.type === 'Sequence' ? (json.decoder.decoders ?? []) : [];
  const [replace, fallback, fuse, strip, ...rest] = steps as Array<Record<string, unknown> | undefined>;
  const pattern = replace?.pattern as { String?: unknown } | undefined;
  const isStrip = strip?.type === 'Strip' && strip.content === ' ' && strip.start === 1 && strip.stop === 0;
  if (
    replace?.type !== 'Replace' ||
    pattern?.String !== '▁' ||
    replace.content !== ' ' ||
    fallback?.type !== 'ByteFallback' ||
    fuse?.type !== 'Fuse' ||
    (strip !== undefined && !isStrip) ||
    rest.length > 0
  )
    return undefined;
  const encoder = new TextEncoder();
  const bytesOf = (piece: string): Uint8Array => {
    const byte = BYTE_PIECE.exec(piece);
    return byte ? Uint8Array.of(parseInt(byte[1]!, 16)) : encoder.encode(piece.replaceAll('▁', ' '));
  };
  const tokens: Array<Uint8Array | undefined> = [];
  for (const [piece, id] of Object.entries(json.model.vocab)) tokens[id] = bytesOf(piece);
  const added = (json as { added_tokens?: AddedTokenJson[] }).added_tokens ?? [];
  for (const t of added) tokens[t.id] = t.special ? undefined : bytesOf(t.content);
  return { tokens, stripsLeadingSpace: isStrip };
}

/** O(1) per token: the id's bytes through a streaming UTF-8 decoder (holds incomplete sequences). */
function byteLevelDecoder(table: Array<Uint8Array | undefined>, dropped: ReadonlySet<number>): StreamDecoder {
  const utf8 = new TextDecoder('utf-8');
  return {
    push: (id) => {
      const bytes = table[id];
      if (!bytes || dropped.has(id)) return '';
      return utf8.decode(bytes, { stream: true });
    },
    flush: () => utf8.decode(),
  };
}

async function readJson(path: string): Promise<object | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    return undefined;
  }
  try {
    return JSON.parse(text) as object;
  } catch (err) {
    throw new TokenizerError(`${path} is not valid JSON: ${(err as Error).message}`);
  }
}

/**
 * The TypeScript Engine interface: what the rest of Maya sees of the engine. The model runtime
 * (runtime/) holds one; the Responses run (responses/run-response.ts) drives it, GET /v1/status
 * reads its info and stats through the runtime, and `maya generate` (cli/generate.ts) drives a
 * NativeEngine directly. An Engine turns a prompt (token ids) into a stream of token events and
 * ends with usage and a finish reason.
 * Implementations: NativeEngine (native-engine.ts, the C library through ffi.ts) and FakeEngine
 * (tests of handler logic only).
 */
import type { Constraint } from '../grammar/constraint.ts';
import type { VocabularyData } from '../grammar/token-mask.ts';

export type FinishReason = 'stop' | 'length' | 'cancelled' | 'error';

export interface GenerateRequest {
  /** Prompt token ids (already rendered through the chat template and tokenised). */
  promptIds: number[];
  /** Most tokens to generate. */
  maxTokens: number;
  /** 0 (or below) = greedy. */
  temperature?: number;
  /** (0, 1]; 1 = off. */
  topP?: number;
  /** Integer >= 0: sample among the topK most likely ids only (after a constraint's mask), then topP; 0 = off. */
  topK?: number;
  seed?: number;
  /** Token ids that end the turn (reported as a token event, then finish 'stop'). */
  stopIds?: number[];
  /** Keep each step's logits (debug CLI `--top-logits`, oracle tests). */
  keepLogits?: boolean;
  /** Report a 'prefill_progress' event after each prompt chunk, before 'prefilled' (Chat Completions' return_progress). */
  reportProgress?: boolean;
  /** Constrained decoding: every sampled token keeps the output inside this grammar (needs setVocabulary). */
  constraint?: Constraint;
  /**
   * Images of a multimodal prompt (needs EngineInfo.vision), in prompt order: image i takes the i-th
   * run of grid t*h*w / 4 image placeholder ids (config.json image_token_id) in promptIds. The native
   * engine transfers each pixel buffer to its worker (the caller's Float32Array is detached after
   * generate() when it spans its whole ArrayBuffer; otherwise it is copied).
   */
  images?: EngineImage[];
}

/** One image as the engine takes it: Glm4vImageProcessor's output for it. */
export interface EngineImage {
  /** pixel_values rows: t*h*w patches of 3*2*14*14 floats, in the processor's merge-window order. */
  pixels: Float32Array;
  /** Grid in patches (image_grid_thw): t (1 for an image), h, w (multiples of the merge size 2). */
  grid: [t: number, h: number, w: number];
  /** A hash of the pixels: equal hashes share prefix-cache blocks, different ones never do. */
  hash: bigint;
}

/**
 * 'prefill_progress' (reportProgress only): a prompt chunk was prefilled; processedTokens counts the
 * prompt tokens whose K/V are in the cache now, the cachedTokens served from the prefix cache included.
 */
export type TokenEvent =
  | { type: 'prefill_progress'; cachedTokens: number; processedTokens: number }
  | { type: 'prefilled'; cachedTokens: number }
  | { type: 'token'; id: number; logits?: Float32Array };

export interface FinishInfo {
  reason: FinishReason;
  usage: { inputTokens: number; cachedTokens: number; outputTokens: number };
  /** Detail when reason is 'error'. */
  error?: string;
}

export interface EngineInfo {
  arch: 'glm4' | 'llama' | 'qwen3' | 'qwen3_moe' | 'glm4_moe' | 'deepseek_v3' | 'glm4v' | 'glm4v_moe';
  backend: 'cpu' | 'cuda';
  numVocab: number;
  /** Context limit in tokens (prompt + output). */
  contextLength: number;
  numLayers: number;
  hiddenSize: number;
  numParams: number;
  /** Parameters one token uses (MoE: only its routed experts); absent = numParams. */
  numActiveParams?: number;
  blockSize: number;
  numBlocks: number;
  /** Bytes of weights one decoded token reads (ENG_INFO_WEIGHT_BYTES; MoE: its active experts). */
  weightBytes?: number;
  /** CPU kernel path (ENG_INFO_SIMD; MAYA_ENGINE_SIMD forces one). */
  simd: 'scalar' | 'avx2' | 'avx512';
  /** The checkpoint has a vision encoder: GenerateRequest.images is accepted. */
  vision: boolean;
  /** The weight matrices' dtype as the engine runs them (ENG_INFO_WEIGHT_DTYPE): as stored, or q8 when
   * quantized at load (MAYA_WEIGHT_DTYPE=q8). */
  weightDtype:
    'f32' | 'f16' | 'bf16' | 'fp8' | 'q8' | 'q8_0' | 'q4_0' | 'q4_1' | 'q5_0' | 'q5_1' | 'q4_k' | 'q5_k' | 'q6_k';
  /** CPU worker threads (ENG_INFO_N_THREADS). */
  numThreads: number;
  /** Speculative decoding as run ('off', 'ngram': prompt lookup, 'mtp': the checkpoint's MTP layer) and its most
   * drafted tokens per step. */
  speculative?: 'off' | 'ngram' | 'mtp';
  specMaxDraft?: number;
  /** The KV cache's rows (ENG_INFO_KV_DTYPE; MAYA_KV_DTYPE). */
  kvDtype: 'f32' | 'f16' | 'bf16' | 'q8_0';
  /** KV cache bytes one token takes, all layers (ENG_INFO_KV_BYTES_PER_TOKEN). */
  kvBytesPerToken: number;
  /** Tokens the whole KV cache holds (ENG_INFO_KV_CAPACITY). */
  kvCapacityTokens: number;
}

export interface EngineStats {
  blocksTotal: number;
  blocksFree: number;
  blocksCached: number;
  seqsWaiting: number;
  seqsRunning: number;
  steps: number;
  prefillTokens: number;
  cachedTokens: number;
  decodeTokens: number;
  preemptions: number;
  /** Images run through the vision encoder (a cached image is not re-encoded). */
  imagesEncoded: number;
  /** Time spent encoding them, in microseconds. */
  encodeMicros: number;
  /** CPU time of the engine's process meanwhile (all threads), in microseconds. */
  encodeCpuMicros: number;
  /** Speculative decoding: drafted tokens scored by verification passes, and those accepted. */
  draftTokens: number;
  draftAccepted: number;
  /** Decode passes (one per decoding sequence and step): decodeTokens / decodePasses = tokens per pass. */
  decodePasses: number;
  /**
   * Of the drafts, the MTP layer's (prompt lookup's and constrained sequences' not counted): passes
   * that verified one, those whose first drafted token was accepted, their drafted tokens (chained
   * ones included) and those accepted.
   */
  mtpDrafts: number;
  mtpFirstAccepted: number;
  mtpDraftTokens: number;
  mtpDraftAccepted: number;
  /** The turn-down's current cost of one more token in a decode pass, in generated tokens' worth of time (0: not measured yet). */
  tokenCost: number;
}

export interface GenerateOptions {
  /** Aborting cancels the sequence at the next step boundary. */
  signal?: AbortSignal;
}

export interface Engine {
  readonly info: EngineInfo;
  /**
   * Starts a generation. Throws EngineError synchronously-on-first-next for bad requests
   * (e.g. code 'context_overflow') before any work is queued. Breaking out of the loop,
   * calling return(), or aborting the signal cancels the sequence.
   */
  generate(request: GenerateRequest, options?: GenerateOptions): AsyncGenerator<TokenEvent, FinishInfo, void>;
  stats(): Promise<EngineStats>;
  /** The tokenizer's vocabulary as bytes; enables GenerateRequest.constraint. Optional for test doubles. */
  setVocabulary?(vocab: VocabularyData): void;
  close(): Promise<void>;
}

export type EngineErrorCode =
  | 'invalid_arg'
  | 'io'
  | 'bad_checkpoint'
  | 'unsupported'
  | 'context_overflow'
  | 'out_of_memory'
  | 'unknown_seq'
  | 'backend'
  | 'internal'
  | 'abi_mismatch'
  | 'closed';

/** The one error type the engine boundary throws (made from C status codes in ffi.ts). */
export class EngineError extends Error {
  constructor(
    readonly code: EngineErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'EngineError';
  }
}

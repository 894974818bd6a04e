/**
 * What the Responses and Chat Completions pipelines need from a loaded model: the engine, a
 * tokenizer with a streaming detokeniser, and the model family's dialect.
 */
import type { ChatTurn, Dialect, ParserOptions, RenderOptions } from '../dialects/dialect.ts';
import type { Engine } from '../engine-cuda/engine.ts';
import type { JsonLimits } from '../grammar/json-schema.ts';
import type { ImageProcessorConfig, ProcessedImage, RgbImage } from '../checkpoint/image-processor.ts';

/** A model with a vision path: how images become pixel rows and prompt tokens. */
export interface VisionConfig {
  /** config.json `image_token_id`: the token repeated once per image embedding in the prompt. */
  imageTokenId: number;
  /** The checkpoint's preprocessor_config.json. */
  processor: ImageProcessorConfig;
}

export interface StreamingDecoder {
  /** Text completed by this token (never a broken UTF-8 sequence). */
  push(id: number): string;
  /** Whatever is still held back at the end. */
  flush(): string;
}

export interface PipelineTokenizer {
  /**
   * Encodes text whose special tokens are already written out (no BOS added). Added-token strings
   * inside the `plain` strings (contents from users, tools and history) stay ordinary text.
   */
  encode(text: string, plain?: readonly string[]): number[];
  tokenToId(token: string): number | undefined;
  /** UTF-8 bytes of the vocabulary's longest token (bounds how few tokens a text can take). */
  readonly maxTokenBytes?: number;
  /** A streaming detokeniser for generated ids. Special tokens are dropped from the text, except
   * those whose content occurs in one of `markers` (the dialect's: Dialect.markerTokens). */
  createDecoder(markers: readonly string[]): StreamingDecoder;
}

/** Renders and tokenises conversations, and processes images, on other threads (runtime/prompt-pool.ts). */
export interface PromptRenderer {
  /** The image processor off the main thread; absent = on the calling thread. */
  processImage?(config: ImageProcessorConfig, image: RgbImage): Promise<ProcessedImage>;
  render(
    turns: ChatTurn[],
    options: RenderOptions,
    plain: string[],
  ): Promise<{ promptIds: number[]; parser: ParserOptions }>;
}

export interface GenerationRuntime {
  readonly id: string;
  readonly contextLength: number;
  readonly engine: Engine;
  readonly tokenizer: PipelineTokenizer;
  readonly dialect: Dialect;
  /** The checkpoint's generation_config.json sampling defaults, used when a request omits them. */
  readonly samplingDefaults?: { temperature?: number; topP?: number };
  /** Renders large inputs off the main thread; absent = always on the calling thread. */
  readonly promptWorkers?: PromptRenderer;
  /** Grammar-constrained decoding (tool calls, JSON output) where the dialect has a grammar;
   * off with MAYA_CONSTRAINED_DECODING=0. */
  readonly constrainedDecoding?: boolean;
  /** Soft limits on unbounded JSON strings/arrays under constraint (MAYA_GRAMMAR_MAX_STRING / _MAX_ITEMS). */
  readonly grammarLimits?: JsonLimits;
  /** Present when the engine has a vision encoder (EngineInfo.vision): input_image parts are served. */
  readonly vision?: VisionConfig;
}

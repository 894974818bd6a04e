/**
 * Loads a Hugging Face model directory (or a GGUF file) into a ModelRuntime: the checkpoint into the native engine
 * (its own worker thread), the tokenizer, and the model family's dialect. Progress is reported
 * per stage; any failure closes what was already loaded and rethrows with the stage named.
 */
import { DEFAULT_DECODING_SETTINGS } from '../config/settings.ts';
import { loadDialect } from '../dialects/select.ts';
import { NativeEngine, type NativeEngineOptions } from '../engine-cuda/native-engine.ts';
import { readModelDir } from '../checkpoint/model-dir.ts';
import { Tokenizer } from '../checkpoint/tokenizer.ts';
import type { JsonLimits } from '../grammar/json-schema.ts';
import { readImageProcessorConfig } from '../checkpoint/image-processor.ts';
import type { PipelineTokenizer, VisionConfig } from './generation-runtime.ts';
import type { LoadProgress, ModelRuntime } from './model-runtime.ts';
import { PromptPool } from './prompt-pool.ts';

/** Threads that render and tokenise large inputs (each loads its own tokenizer, started on first use). */
const PROMPT_WORKERS = 2;

/** Each option comes from config/ (ServerSettings) through the caller; unset = its default there. */
export interface LoadOptions {
  onProgress?: (progress: LoadProgress) => void;
  /** Dialect override (MAYA_DIALECT), e.g. 'glm47'. */
  dialect?: string;
  /** MAYA_CHAT_TEMPLATE: a chat template file replacing the checkpoint's (needed by GGUF files without one). */
  chatTemplate?: string;
  /** Constrained decoding (MAYA_CONSTRAINED_DECODING); default DEFAULT_DECODING_SETTINGS (on). */
  constrainedDecoding?: boolean;
  /** Soft limits under constraint (MAYA_GRAMMAR_MAX_STRING / _MAX_ITEMS); default DEFAULT_DECODING_SETTINGS. */
  grammarLimits?: JsonLimits;
  /** How the engine is created (MAYA_WEIGHT_DTYPE, MAYA_ENGINE_*, MAYA_CUDA_*: config's engineOptions()). */
  engine?: NativeEngineOptions;
}

export function pipelineTokenizer(tokenizer: Tokenizer): PipelineTokenizer {
  return {
    encode: (text, plain) => (plain ? tokenizer.encodePrompt(text, plain) : tokenizer.encode(text)),
    tokenToId: (token) => tokenizer.tokenId(token),
    ...(tokenizer.maxTokenBytes ? { maxTokenBytes: tokenizer.maxTokenBytes } : {}),
    createDecoder: (markers) => tokenizer.createDecoder({ skipSpecialTokens: true, keepTokens: markers }),
  };
}

const DEFAULT_GRAMMAR_LIMITS: JsonLimits = {
  maxStringLength: DEFAULT_DECODING_SETTINGS.maxString,
  maxItems: DEFAULT_DECODING_SETTINGS.maxItems,
};

function samplingDefaults(config: Record<string, unknown> | null): { temperature?: number; topP?: number } {
  const number = (value: unknown) => (typeof value === 'number' && Number.isFinite(value) ? value : undefined);
  if (!config) return {};
  // do_sample:false means greedy in transformers' generation_config.
  const temperature = config.do_sample === false ? 0 : number(config.temperature);
  return {
    ...(temperature !== undefined ? { temperature } : {}),
    ...(number(config.top_p) !== undefined ? { topP: number(config.top_p) } : {}),
  };
}

/**
 * The vision path of a checkpoint whose engine has a vision encoder: config.json `image_token_id`
 * and the preprocessor_config.json image processor. Throws when either is missing.
 */
export async function visionConfig(dir: string, config: Record<string, unknown>): Promise<VisionConfig> {
  const imageTokenId = config.image_token_id;
  if (typeof imageTokenId !== 'number' || !Number.isInteger(imageTokenId) || imageTokenId < 0)
    throw new Error(`${dir}/config.json: a vision model needs an integer "image_token_id"`);
  const processor = await readImageProcessorConfig(dir);
  if (!processor) throw new Error(`${dir}: a vision model needs preprocessor_config.json`);
  return { imageTokenId, processor };
}

export async function loadModelRuntime(dir: string, options: LoadOptions = {}): Promise<ModelRuntime> {
  const progress = options.onProgress ?? (() => {});
  progress({ stage: 'config', fraction: 0 });
  const modelDir = await readModelDir(dir, options.chatTemplate);
  progress({ stage: 'tokenizer', fraction: 0.1 });
  const tokenizer = await Tokenizer.fromDir(modelDir.dir);
  progress({ stage: 'template', fraction: 0.2 });
  const dialect = await loadDialect(modelDir.dir, options.dialect, options.chatTemplate);
  progress({ stage: 'weights', fraction: 0.3 });
  const engine = await NativeEngine.load(modelDir.dir, options.engine ?? {});
  let vision: VisionConfig | undefined;
  try {
    vision = engine.info.vision === true ? await visionConfig(modelDir.dir, modelDir.config) : undefined;
  } catch (error) {
    await engine.close();
    throw error;
  }
  const promptWorkers = new PromptPool(
    {
      dir: modelDir.dir,
      ...(options.dialect ? { dialect: options.dialect } : {}),
      ...(options.chatTemplate ? { chatTemplate: options.chatTemplate } : {}),
    },
    PROMPT_WORKERS,
  );
  // Masks need each token's bytes: a tokenizer that is neither byte-level BPE nor SentencePiece
  // (vocabularyBytes) is not constrained.
  const vocabulary = tokenizer.vocabularyBytes();
  const constrainedDecoding =
    (options.constrainedDecoding ?? DEFAULT_DECODING_SETTINGS.constrained) &&
    vocabulary.tokens.some((bytes) => bytes !== undefined);
  if (constrainedDecoding) engine.setVocabulary(vocabulary);
  progress({ stage: `ready (engine backend: ${engine.info.backend})`, fraction: 1 });
  return {
    id: modelDir.id,
    dir: modelDir.dir,
    contextLength: engine.info.contextLength,
    dialectName: dialect.name,
    createdAt: Math.floor(Date.now() / 1000),
    engine,
    tokenizer: pipelineTokenizer(tokenizer),
    dialect,
    samplingDefaults: samplingDefaults(modelDir.generationConfig),
    constrainedDecoding,
    grammarLimits: options.grammarLimits ?? DEFAULT_GRAMMAR_LIMITS,
    promptWorkers,
    ...(vision ? { vision } : {}),
    close: async () => {
      await promptWorkers.close();
      await engine.close();
    },
  };
}

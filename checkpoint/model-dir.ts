/**
 * readModelDir: what the TypeScript side needs from a Hugging Face model directory before the
 * engine loads the weights: the architecture and context length (config.json), the end-of-turn
 * token ids (generation_config.json `eos_token_id`, else config.json's; a number or a list), the
 * tokenizer files' presence, and the chat template source (chat_template.jinja, else
 * tokenizer_config.json `chat_template`, read by checkpoint/chat-template.ts). A path ending in
 * `.gguf` is a llama.cpp GGUF file (of a split set, the first): the same facts from its metadata
 * (checkpoint/gguf.ts).
 */
import { readFile, stat } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { readCheckpointTemplate, type SpecialTokens } from './chat-template.ts';
import { isGgufPath, readGgufModel } from './gguf.ts';

export class ModelDirError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ModelDirError';
  }
}

export interface ModelDir {
  /** Absolute path (of the directory, or of the GGUF file). */
  dir: string;
  /** A GGUF file rather than a directory. */
  isGguf: boolean;
  /** The directory's name (the model id clients send). */
  id: string;
  /** config.json `architectures[0]`, e.g. 'Glm4ForCausalLM'; the engine decides whether it can load it. */
  architecture: string;
  /** config.json `max_position_embeddings` (0 when absent). */
  contextLength: number;
  vocabSize: number;
  /** End-of-turn ids: generation_config.json `eos_token_id`, else config.json's; deduplicated. */
  eosIds: number[];
  config: Record<string, unknown>;
  generationConfig: Record<string, unknown> | null;
  /** tokenizer.json exists. */
  hasTokenizer: boolean;
  /** Chat template source, or null when the checkpoint ships none. */
  chatTemplate: string | null;
  /** bos/eos/unk/pad token strings from tokenizer_config.json. */
  specialTokens: SpecialTokens;
}

/** Reads a model directory or GGUF file; templateFile (MAYA_CHAT_TEMPLATE) replaces its chat
 * template. Throws ModelDirError naming the file and field at fault. */
export async function readModelDir(dirPath: string, templateFile?: string): Promise<ModelDir> {
  const dir = resolve(dirPath);
  if (isGgufPath(dir)) return readGgufModelDir(dir, templateFile);
  const info = await stat(dir).catch(() => null);
  if (!info?.isDirectory()) throw new ModelDirError(`model directory ${dir} does not exist`);
  const config = await readJsonObject(join(dir, 'config.json'));
  if (!config) throw new ModelDirError(`${dir} has no config.json`);
  const generationConfig = await readJsonObject(join(dir, 'generation_config.json'));
  const architectures = config.architectures;
  const architecture = Array.isArray(architectures) && typeof architectures[0] === 'string' ? architectures[0] : '';
  if (!architecture) throw new ModelDirError(`${join(dir, 'config.json')}: "architectures" is missing`);
  const eosIds =
    idList(generationConfig?.eos_token_id, 'generation_config.json eos_token_id') ??
    idList(config.eos_token_id, 'config.json eos_token_id') ??
    [];
  const hasTokenizer = (await stat(join(dir, 'tokenizer.json')).catch(() => null))?.isFile() ?? false;
  const template = await readCheckpointTemplate(dir, templateFile).catch((err: Error) => {
    throw new ModelDirError(err.message);
  });
  return {
    dir,
    isGguf: false,
    id: basename(dir),
    architecture,
    contextLength: positiveInt(config.max_position_embeddings),
    vocabSize: positiveInt(config.vocab_size),
    eosIds,
    config,
    generationConfig,
    hasTokenizer,
    chatTemplate: template.source,
    specialTokens: template.specialTokens,
  };
}

async function readGgufModelDir(file: string, templateFile?: string): Promise<ModelDir> {
  const info = await stat(file).catch(() => null);
  if (!info?.isFile()) throw new ModelDirError(`model file ${file} does not exist`);
  const gguf = await readGgufModel(file).catch((err: Error) => {
    throw new ModelDirError(err.message);
  });
  const template = await readCheckpointTemplate(file, templateFile).catch((err: Error) => {
    throw new ModelDirError(err.message);
  });
  return {
    dir: file,
    isGguf: true,
    // The model id: the file's name without .gguf (and a split set's -00001-of-0000N).
    id: basename(file).replace(/(-\d{5}-of-\d{5})?\.gguf$/i, ''),
    architecture: gguf.architecture,
    contextLength: gguf.contextLength,
    vocabSize: gguf.vocabSize,
    eosIds: gguf.eosIds,
    config: {
      architectures: [gguf.architecture],
      max_position_embeddings: gguf.contextLength,
      vocab_size: gguf.vocabSize,
    },
    generationConfig: null,
    hasTokenizer: true,
    chatTemplate: template.source,
    specialTokens: template.specialTokens,
  };
}

function positiveInt(value: unknown): number {
  return typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : 0;
}

function idList(value: unknown, what: string): number[] | undefined {
  if (value === undefined || value === null) return undefined;
  const list = Array.isArray(value) ? value : [value];
  for (const id of list) {
    if (typeof id !== 'number' || !Number.isInteger(id) || id < 0)
      throw new ModelDirError(`${what} must be token ids, got ${JSON.stringify(value)}`);
  }
  return [...new Set(list as number[])];
}

async function readJsonObject(path: string): Promise<Record<string, unknown> | null> {
  const text = await readFile(path, 'utf8').catch(() => null);
  if (text === null) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new ModelDirError(`${path} is not valid JSON: ${(err as Error).message}`);
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new ModelDirError(`${path} is not a JSON object`);
  return parsed as Record<string, unknown>;
}

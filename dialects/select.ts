/**
 * Chooses a checkpoint's dialect: an explicit override name wins; otherwise DeepSeek V3.2/V4/V4.1
 * are recognised by `model_type` / `architectures` (they ship no usable Jinja template), and GLM,
 * DeepSeek-V3.1 and Qwen by markers in their chat template text (the role and tool-call tokens
 * each family's Hugging Face chat template writes).
 * Any other template gets `plain` (chat and `<think>` reasoning, no function tools).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ChatTemplate, readCheckpointTemplate, type SpecialTokens } from '../checkpoint/chat-template.ts';
import { isGgufPath } from '../checkpoint/gguf.ts';
import { createDeepseekV31Dialect } from './deepseek.ts';
import { DialectError, type Dialect } from './dialect.ts';
import { createDsmlDialect } from './dsml.ts';
import { createGlmDialect } from './glm.ts';
import { createPlainDialect, createQwenDialect } from './hermes.ts';

export const DIALECT_NAMES = [
  'glm45',
  'glm47',
  'deepseek-v31',
  'deepseek-v32',
  'deepseek-v4',
  'deepseek-v41',
  'qwen3',
  'plain',
] as const;
export type DialectName = (typeof DIALECT_NAMES)[number];
/** Dialects that render without the checkpoint's chat template. */
const TEMPLATE_FREE = new Set<string>(['deepseek-v32', 'deepseek-v4', 'deepseek-v41']);

export interface CheckpointInfo {
  /** The chat template text (readCheckpointTemplate), or null. */
  chatTemplate: string | null;
  specialTokens?: SpecialTokens;
  /** config.json `architectures`. */
  architectures?: readonly string[];
  /** config.json `model_type`. */
  modelType?: string;
}

const BY_MODEL_TYPE: Record<string, DialectName> = {
  deepseek_v32: 'deepseek-v32',
  deepseek_v4: 'deepseek-v4',
  deepseek_v41: 'deepseek-v41',
};
const BY_ARCHITECTURE: Record<string, DialectName> = {
  DeepseekV32ForCausalLM: 'deepseek-v32',
  DeepseekV4ForCausalLM: 'deepseek-v4',
  DeepseekV41ForCausalLM: 'deepseek-v41',
};

/** The dialect a checkpoint speaks (`plain` for an unrecognised template), or null without a template. */
export function detectDialect(info: CheckpointInfo): DialectName | null {
  const byType = info.modelType ? BY_MODEL_TYPE[info.modelType] : undefined;
  if (byType) return byType;
  for (const arch of info.architectures ?? []) {
    const byArch = BY_ARCHITECTURE[arch];
    if (byArch) return byArch;
  }
  const t = info.chatTemplate;
  if (!t) return null;
  if (t.includes('｜DSML｜')) return 'deepseek-v32';
  if (t.includes('<｜tool▁sep｜>') || (t.includes('<｜Assistant｜>') && t.includes('</think>'))) return 'deepseek-v31';
  if (t.includes('<arg_key>') && t.includes('<tool_call>')) {
    // GLM-4.7 writes calls without newlines and prefills `<think>` in the generation prompt.
    return t.includes('{function-name}<arg_key>') || t.includes("else '<think>'") ? 'glm47' : 'glm45';
  }
  if (t.includes('<tool_call>') && t.includes('<|im_start|>')) return 'qwen3';
  // Any other template still serves plain chat (no tool-call syntax).
  return 'plain';
}

export function isDialectName(name: string): name is DialectName {
  return (DIALECT_NAMES as readonly string[]).includes(name);
}

/** Builds the dialect; throws DialectError for an unknown override or a checkpoint it cannot serve. */
export function selectDialect(info: CheckpointInfo, override?: string): Dialect {
  if (override !== undefined && !isDialectName(override)) {
    throw new DialectError(`unknown dialect "${override}" (known: ${DIALECT_NAMES.join(', ')})`);
  }
  const name = override ?? detectDialect(info);
  if (name === null) {
    throw new DialectError(`no dialect recognised for this checkpoint (set one of: ${DIALECT_NAMES.join(', ')})`);
  }
  switch (name) {
    case 'deepseek-v32':
      return createDsmlDialect('v32');
    case 'deepseek-v4':
      return createDsmlDialect('v4');
    case 'deepseek-v41':
      return createDsmlDialect('v41');
    default: {
      if (!info.chatTemplate)
        throw new DialectError(`dialect ${name} renders through the checkpoint's chat template, and it has none`);
      const template = new ChatTemplate(info.chatTemplate, info.specialTokens);
      if (name === 'deepseek-v31') return createDeepseekV31Dialect(template);
      if (name === 'qwen3') return createQwenDialect(template);
      if (name === 'plain') return createPlainDialect(template);
      return createGlmDialect(name, template);
    }
  }
}

/** Reads config.json and the chat template of a Hugging Face model directory (or a GGUF file's
 * metadata), then selects; templateFile (MAYA_CHAT_TEMPLATE) replaces the checkpoint's template. */
export async function loadDialect(dir: string, override?: string, templateFile?: string): Promise<Dialect> {
  const template = await readCheckpointTemplate(dir, templateFile);
  if (isGgufPath(dir)) {
    if (template.source === null && !(override && TEMPLATE_FREE.has(override)))
      throw new DialectError(
        `${dir} has no chat template (no tokenizer.chat_template in its metadata): ` +
          'give one with --chat-template FILE (MAYA_CHAT_TEMPLATE)',
      );
    const info: CheckpointInfo = { chatTemplate: template.source, specialTokens: template.specialTokens };
    return selectDialect(info, override);
  }
  const configText = await readFile(join(dir, 'config.json'), 'utf8').catch(() => '{}');
  let config: { architectures?: unknown; model_type?: unknown };
  try {
    config = JSON.parse(configText) as typeof config;
  } catch (err) {
    throw new DialectError(`${join(dir, 'config.json')} is not valid JSON: ${(err as Error).message}`);
  }
  const info: CheckpointInfo = { chatTemplate: template.source, specialTokens: template.specialTokens };
  if (Array.isArray(config.architectures))
    info.architectures = config.architectures.filter((a): a is string => typeof a === 'string');
  if (typeof config.model_type === 'string') info.modelType = config.model_type;
  return selectDialect(info, override);
}

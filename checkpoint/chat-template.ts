/**
 * A model's own Jinja chat template, rendered with @huggingface/jinja the way Hugging Face
 * transformers renders it (`apply_chat_template`): the template sees `messages`, `tools`,
 * `add_generation_prompt`, the special-token strings (`bos_token`, `eos_token`, ...) and any extra
 * keyword arguments (`enable_thinking`, `thinking`, `clear_thinking`, ...).
 *
 * Python semantics the GLM/DeepSeek templates rely on, and where they come from:
 * - `tojson` = Python `json.dumps(x, ensure_ascii=False)` with `", "` / `": "` separators
 *   (transformers' `tojson` filter; @huggingface/jinja implements it that way, checked by
 *   test/checkpoint/chat-template.test.ts against the Python-rendered golden prompts);
 * - `raise_exception(msg)` throws (surfaced here as ChatTemplateError), `strftime_now(fmt)`;
 * - string methods (`split`, `strip`, `rstrip('\n')`, `endswith`, ...), `dict.items()`,
 *   `dict.get()`, `namespace`, `loop.index0`, `is mapping`, negative indexing.
 * @huggingface/jinja 0.5.11 ignores the argument of `strip`/`lstrip`/`rstrip` (it always strips
 * whitespace); Qwen3's `reasoning_content.strip('\n')` needs Python's character-set form, so
 * installPythonStrip() below redefines those three string methods once, at load.
 * Known gaps of the JS engine: printing a boolean or None renders `true`/`` instead of Python's
 * `True`/`None`, and containers print as JSON rather than Python repr. None of the supported
 * templates print those directly.
 *
 * Whitespace control (`trim_blocks`, `lstrip_blocks`) matches transformers' settings.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Environment, Template } from '@huggingface/jinja';
import { isGgufPath, readGgufModel } from './gguf.ts';

/** A content part of a chat-completions message (only text reaches text-only templates). */
export type TemplateContentPart = { type: 'text'; text: string } | { type: string; [key: string]: unknown };

export interface TemplateToolCall {
  id?: string;
  type: 'function';
  function: {
    name: string;
    /** An object for templates that iterate `arguments.items()` (GLM), a JSON string for
     * templates that concatenate it (DeepSeek V3.1). The dialect decides. */
    arguments: Record<string, unknown> | string;
  };
}

/** One message in the chat-completions shape the templates expect. */
export interface TemplateMessage {
  role: string;
  content: string | TemplateContentPart[] | null;
  reasoning_content?: string;
  tool_calls?: TemplateToolCall[];
  tool_call_id?: string;
  [key: string]: unknown;
}

/** A function tool in the chat-completions wrapper shape (what vLLM passes to templates). */
export interface TemplateTool {
  type: 'function';
  function: { name: string; description?: string; parameters: Record<string, unknown> };
}

export interface TemplateRenderOptions {
  tools?: TemplateTool[];
  addGenerationPrompt: boolean;
  /** Extra template variables, e.g. `{ enable_thinking: false }`. Omit a key to leave it undefined. */
  kwargs?: Record<string, unknown>;
}

/** Special-token strings from tokenizer_config.json, exposed to the template by name. */
export interface SpecialTokens {
  bos_token?: string;
  eos_token?: string;
  unk_token?: string;
  pad_token?: string;
}

export class ChatTemplateError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ChatTemplateError';
  }
}

type Side = 'both' | 'start' | 'end';

/** Python `str.strip([chars])`: whitespace without an argument, else any of `chars`. */
export function pythonStrip(s: string, chars: unknown, side: Side): string {
  if (typeof chars !== 'string') return side === 'both' ? s.trim() : side === 'start' ? s.trimStart() : s.trimEnd();
  let from = 0;
  let to = s.length;
  if (side !== 'end') while (from < to && chars.includes(s[from]!)) from++;
  if (side !== 'start') while (to > from && chars.includes(s[to - 1]!)) to--;
  return s.slice(from, to);
}

const PATCHED = Symbol.for('maya.chat-template.python-strip');

/**
 * Redefines the string values' `strip`, `lstrip` and `rstrip` with Python semantics. The value
 * classes are not exported, so they are reached through values the public Environment creates.
 * Returns false when the library's shape changed (the chat-template tests then fail).
 */
function installPythonStrip(): boolean {
  const env = new Environment();
  const sample = env.set('s', '') as object;
  const proto = Object.getPrototypeOf(sample) as Record<symbol, unknown>;
  if (proto[PATCHED]) return true;
  const getter = Object.getOwnPropertyDescriptor(proto, 'builtins')?.get;
  if (!getter) return false;
  const StringValue = sample.constructor as new (value: string) => unknown;
  const FunctionValue = (env.set('f', () => null) as object).constructor as new (
    fn: (args: { value?: unknown }[]) => unknown,
  ) => unknown;
  Object.defineProperty(proto, 'builtins', {
    configurable: true,
    get(this: { value: string }) {
      const map = getter.call(this) as Map<string, unknown> & { [PATCHED]?: true };
      if (!map[PATCHED]) {
        const value = this.value;
        const method = (side: Side) =>
          new FunctionValue((args) => new StringValue(pythonStrip(value, args[0]?.value, side)));
        map.set('strip', method('both'));
        map.set('lstrip', method('start'));
        map.set('rstrip', method('end'));
        map[PATCHED] = true;
      }
      return map;
    },
  });
  proto[PATCHED] = true;
  return true;
}

installPythonStrip();

export class ChatTemplate {
  private readonly template: Template;

  /** Parses once; throws ChatTemplateError on a syntax error. */
  constructor(
    readonly source: string,
    readonly specialTokens: SpecialTokens = {},
  ) {
    try {
      this.template = new Template(source);
    } catch (err) {
      throw new ChatTemplateError(`chat template does not parse: ${(err as Error).message}`);
    }
  }

  render(messages: TemplateMessage[], options: TemplateRenderOptions): string {
    const context: Record<string, unknown> = {
      ...this.specialTokens,
      ...options.kwargs,
      messages,
      add_generation_prompt: options.addGenerationPrompt,
    };
    // transformers passes tools=None when there are none; an absent key renders the same in
    // every supported template (`if tools`, `tools is defined and tools is not none`).
    if (options.tools && options.tools.length > 0) context.tools = options.tools;
    try {
      return this.template.render(context);
    } catch (err) {
      throw new ChatTemplateError(`chat template failed: ${(err as Error).message}`);
    }
  }
}

export interface CheckpointTemplate {
  /** The template text, or null when the checkpoint ships none. */
  source: string | null;
  specialTokens: SpecialTokens;
}

/**
 * Reads a Hugging Face model directory's chat template (or a GGUF file's `tokenizer.chat_template`;
 * templateFile, MAYA_CHAT_TEMPLATE, replaces either): `chat_template.jinja` if present, else
 * `tokenizer_config.json` `chat_template` (a string, or a list of `{name, template}` where the
 * one named "default" wins). Special tokens come from tokenizer_config.json (strings or
 * AddedToken objects with `content`).
 */
export async function readCheckpointTemplate(dir: string, templateFile?: string): Promise<CheckpointTemplate> {
  const override =
    templateFile === undefined
      ? null
      : await readFile(templateFile, 'utf8').catch((err: Error) => {
          throw new ChatTemplateError(`cannot read the chat template ${templateFile}: ${err.message}`);
        });
  if (isGgufPath(dir)) {
    // A GGUF file: tokenizer.chat_template and the special tokens of its metadata (checkpoint/gguf.ts).
    const gguf = await readGgufModel(dir).catch((err: Error) => {
      throw new ChatTemplateError(err.message);
    });
    return { source: override ?? gguf.chatTemplate, specialTokens: gguf.specialTokens };
  }
  const config = await readJsonIfExists(join(dir, 'tokenizer_config.json'));
  const specialTokens: SpecialTokens = {};
  for (const key of ['bos_token', 'eos_token', 'unk_token', 'pad_token'] as const) {
    const token = tokenText(config?.[key]);
    if (token !== undefined) specialTokens[key] = token;
  }
  if (override !== null) return { source: override, specialTokens };
  const file = await readFile(join(dir, 'chat_template.jinja'), 'utf8').catch(() => null);
  if (file !== null) return { source: file, specialTokens };
  return { source: templateFromConfig(config?.chat_template), specialTokens };
}

function templateFromConfig(value: unknown): string | null {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) {
    const named = value as { name?: unknown; template?: unknown }[];
    const pick = named.find((t) => t.name === 'default') ?? named[0];
    return typeof pick?.template === 'string' ? pick.template : null;
  }
  return null;
}

function tokenText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object' && typeof (value as { content?: unknown }).content === 'string') {
    return (value as { content: string }).content;
  }
  return undefined;
}

async function readJsonIfExists(path: string): Promise<Record<string, unknown> | null> {
  const text = await readFile(path, 'utf8').catch(() => null);
  if (text === null) return null;
  try {
    const parsed: unknown = JSON.parse(text);
    return parsed && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : null;
  } catch (err) {
    throw new ChatTemplateError(`${path} is not valid JSON: ${(err as Error).message}`);
  }
}

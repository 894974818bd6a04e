/**
 * A loaded model: the engine, its tokenizer and its dialect, behind one handle that the CLI
 * creates at start-up and the handlers use. The implementation (loadModelRuntime) joins the
 * engine, tokenizer and dialect modules; this file states the contract.
 */
import type { Engine } from '../engine-cuda/engine.ts';
import type { GenerationRuntime } from './generation-runtime.ts';

export interface ModelRuntime extends GenerationRuntime {
  /** The model id clients send and /v1/models lists (the model directory's name). */
  readonly id: string;
  /** Absolute path of the Hugging Face model directory. */
  readonly dir: string;
  /** Context limit in tokens (prompt + output). */
  readonly contextLength: number;
  /** Dialect module name, e.g. 'glm45', 'glm47', 'deepseek-v31'. */
  readonly dialectName: string;
  /** Unix seconds when loading finished (the /v1/models `created` field). */
  readonly createdAt: number;
  readonly engine: Engine;
  close(): Promise<void>;
}

export interface LoadProgress {
  /** 'weights' | 'tokenizer' | 'template' ... */
  stage: string;
  /** 0..1 */
  fraction: number;
}

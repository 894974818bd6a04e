/**
 * End-to-end fixture: the real service (startService + loadModelRuntime: NativeEngine on the
 * embedded demo checkpoint, its tokenizer and GLM-4.5 dialect) on 127.0.0.1 with a free port,
 * and an official openai SDK client pointed at it. Also `waitForReady()` for tests that spawn
 * the CLI.
 */
import path from 'node:path';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import type { RunningService } from '../../cli/serve.ts';
import type { McpSettings, ResponsesOptIns } from '../../config/settings.ts';
import { loadModelRuntime } from '../../runtime/load-model-runtime.ts';
import type { ModelRuntime } from '../../runtime/model-runtime.ts';
import type { EngineSettings } from '../../config/engine-settings.ts';
import { TEST_ENGINE_SETTINGS } from '../helpers/test-engine.ts';
import { startLoopbackService } from '../helpers/loopback-service.ts';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const DEMO_MODEL_DIR = path.join(ROOT, 'models/maya-demo');

export interface DemoService {
  service: RunningService;
  runtime: ModelRuntime;
  client: OpenAI;
  /** e.g. http://127.0.0.1:41234 (no /v1). */
  origin: string;
  stop(): Promise<void>;
}

export async function startDemoService(
  apiKeys: string[] = [],
  options: {
    constrainedDecoding?: boolean;
    optIns?: ResponsesOptIns;
    mcp?: McpSettings;
    corsOrigins?: string[];
    engine?: EngineSettings;
    /** A model other than the demo directory (a GGUF file). */
    modelDir?: string;
    /** A dialect override (MAYA_DIALECT). */
    dialect?: string;
    /** Wraps the loaded runtime (a test watching what reaches the engine). */
    wrapRuntime?: (runtime: ModelRuntime) => ModelRuntime;
  } = {},
): Promise<DemoService> {
  const { constrainedDecoding, optIns, mcp, wrapRuntime = (runtime) => runtime } = options;
  const service = await startLoopbackService({
    server: {
      apiKeys,
      corsOrigins: options.corsOrigins,
      engine: { ...TEST_ENGINE_SETTINGS, ...options.engine },
      ...(optIns ? { optIns } : {}),
      ...(mcp ? { mcp } : {}),
    },
    modelDir: options.modelDir ?? DEMO_MODEL_DIR,
    loadRuntime: async (dir, load) =>
      wrapRuntime(
        await loadModelRuntime(dir, {
          ...load,
          ...(constrainedDecoding === undefined ? {} : { constrainedDecoding }),
          ...(options.dialect === undefined ? {} : { dialect: options.dialect }),
        }),
      ),
  });
  const runtime = await service.loaded;
  const client = new OpenAI({ baseURL: `${service.origin}/v1`, apiKey: apiKeys[0] ?? 'unused', maxRetries: 0 });
  return { service, runtime, client, origin: service.origin, stop: () => service.stop() };
}

/** Resolves once the CLI's stderr says the model is ready; rejects if it exits first. */
export function waitForReady(stderr: Readable, exited: Promise<unknown>, timeoutMs = 120_000): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => reject(new Error(`not ready after ${timeoutMs} ms:\n${text}`)), timeoutMs);
    stderr.setEncoding('utf8');
    stderr.on('data', (chunk: string) => {
      text += chunk;
      if (/model \S+ ready/.test(text)) {
        clearTimeout(timer);
        resolve(text);
      }
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`exited before ready:\n${text}`));
    });
  });
}

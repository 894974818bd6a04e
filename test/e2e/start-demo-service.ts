/**
 * End-to-end fixture: the real service (startService + loadModelRuntime: NativeEngine on the
 * embedded demo checkpoint, its tokenizer and GLM-4.5 dialect) on 127.0.0.1 with a free port,
 * and an official openai SDK client pointed at it. Also `freePort()` and `waitForReady()` for
 * tests that spawn the CLI.
 */
import { createServer } from 'node:net';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { startService, type RunningService } from '../../cli/serve.ts';
import { DEFAULT_MAX_BODY_BYTES, DEFAULT_RESPONSES_SETTINGS, type ResponsesOptIns } from '../../config/settings.ts';
import { silentLogger } from '../../handlers/app-deps.ts';
import { loadModelRuntime } from '../../runtime/load-model-runtime.ts';
import type { ModelRuntime } from '../../runtime/model-runtime.ts';
import { TEST_ENGINE_SETTINGS } from '../helpers/test-engine.ts';

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
  options: { constrainedDecoding?: boolean; optIns?: ResponsesOptIns; modelDir?: string } = {},
): Promise<DemoService> {
  const { constrainedDecoding, optIns } = options;
  const service = await startService({
    settings: DEFAULT_RESPONSES_SETTINGS,
    server: {
      host: '127.0.0.1',
      port: 0,
      model: undefined,
      apiKeys,
      corsOrigins: undefined,
      maxBodyBytes: DEFAULT_MAX_BODY_BYTES,
      engine: TEST_ENGINE_SETTINGS,
      ...(optIns ? { optIns } : {}),
    },
    modelDir: options.modelDir ?? DEMO_MODEL_DIR,
    loadRuntime:
      constrainedDecoding === undefined
        ? loadModelRuntime
        : (dir, load) => loadModelRuntime(dir, { ...load, constrainedDecoding }),
    logger: silentLogger,
  });
  const runtime = await service.loaded;
  const client = new OpenAI({ baseURL: `${service.origin}/v1`, apiKey: apiKeys[0] ?? 'unused', maxRetries: 0 });
  return { service, runtime, client, origin: service.origin, stop: () => service.stop() };
}

/** A port that was free a moment ago on 127.0.0.1. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
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

/**
 * What the handler tests of the three generation endpoints (POST /v1/responses, /v1/chat/completions,
 * /v1/messages) share: an app whose model replays scripts over the GLM-4.5 dialect, the scripts
 * they all use, and a client that goes away mid-stream.
 */
import { request as httpRequest } from 'node:http';
import { expect, vi } from 'vitest';
import type { ResponsesOptIns } from '../../config/settings.ts';
import type { FakeEngine, FakeScript } from '../helpers/fake-engine.ts';
import { createTestApp, stubRuntime } from '../helpers/test-app.ts';
import { glmToolCall, scriptedRuntime } from '../responses/scripted-runtime.ts';

export type Script = { pieces: string[]; finishReason?: FakeScript['finishReason']; cachedTokens?: number };

export interface ScriptedAppOptions {
  contextLength?: number;
  apiKeys?: string[];
  /** Delay before each token (a stream a client can leave midway). */
  tokenDelayMs?: number;
  optIns?: ResponsesOptIns;
  maxBodyBytes?: number;
}

/** An app whose model replays `scripts` (one per request, in order) over the GLM-4.5 dialect. */
export function scriptedApp(scripts: Script[], options: ScriptedAppOptions = {}) {
  const base = scriptedRuntime(scripts, options.contextLength, options.tokenDelayMs);
  const runtime = stubRuntime({ ...base, id: 'maya-test' });
  const server = {
    apiKeys: options.apiKeys ?? [],
    ...(options.optIns ? { optIns: options.optIns } : {}),
    ...(options.maxBodyBytes ? { maxBodyBytes: options.maxBodyBytes } : {}),
  };
  return { ...createTestApp({ runtime, server }), engine: base.engine, runtime };
}

export type ScriptedApp = ReturnType<typeof scriptedApp>;

/** Reasoning then text, two prompt tokens from the prefix cache. */
export const THINK_TEXT: Script = {
  pieces: ['<think>', 'The user', ' greets.', '</think>', '\n', 'Hello', ' there!', '<|user|>'],
  cachedTokens: 2,
};
/** A get_weather call for Paris. */
export const CALL = glmToolCall('get_weather', { city: 'Paris' });
/** 200 words, long enough to leave midway at a 5 ms token delay. */
export const LONG: Script = { pieces: ['\n', ...Array.from({ length: 200 }, (_, i) => ` w${i}`), '<|user|>'] };

/** POSTs `body` to `url` as a stream and drops the socket once the answer so far includes `marker`. */
export function leaveMidStream(url: string, body: unknown, marker: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const req = httpRequest(url, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
        if (text.includes(marker)) {
          req.destroy();
          resolve();
        }
      });
      res.on('error', () => {});
    });
    req.on('error', (err) => (err.message.includes('socket hang up') ? undefined : reject(err)));
    req.end(JSON.stringify(body));
  });
}

/** The engine's one sequence was cancelled and none runs, well before `script` ended. */
export async function expectCancelled(engine: FakeEngine, script: Script): Promise<void> {
  await vi.waitFor(
    () => {
      expect(engine.cancelledCount).toBe(1);
      expect(engine.activeCount).toBe(0);
    },
    { timeout: 10_000, interval: 20 },
  );
  expect((await engine.stats()).decodeTokens).toBeLessThan(script.pieces.length);
}

/**
 * HTTP fixtures for the background-task tests: a FakeEngine-backed runtime with a plain-text
 * dialect (every output token is one character, id = char code; id 0 ends the turn) and a test
 * app with a JobManager wired into AppDeps, plus a small SSE reader for raw streams.
 */
import type { ChatTurn, Dialect, OutputParser, RenderedPrompt } from '../../dialects/dialect.ts';
import { FakeEngine, type FakeEngineOptions } from '../helpers/fake-engine.ts';
import { createResponse } from '../../handlers/create-response.ts';
import { cancelResponse } from '../../handlers/cancel-response.ts';
import type { PipelineTokenizer } from '../../runtime/generation-runtime.ts';
import type { ResponsesSettings } from '../../config/settings.ts';
import { DEFAULT_RESPONSES_SETTINGS } from '../../config/settings.ts';
import { JobManager } from '../../store/jobs/job-manager.ts';
import { MemoryResponseStore } from '../../store/responses/memory-response-store.ts';
import { createRegistry } from '../../metrics/http-metrics.ts';
import { createTestApp, listenTestApp, stubRuntime, type TestAppOptions } from '../helpers/test-app.ts';

export const EOS = 0;

const plainTokenizer: PipelineTokenizer = {
  encode: (text) => [...text].map((char) => Math.max(1, char.charCodeAt(0) % 1000)),
  tokenToId: (token) => (token === '<eos>' ? EOS : undefined),
  createDecoder: () => ({ push: (id) => (id === EOS ? '' : String.fromCharCode(id)), flush: () => '' }),
};

const plainDialect: Dialect = {
  name: 'plain',
  stopTokens: ['<eos>'],
  markerTokens: [],
  thinkingControl: () => ({ thinking: false }),
  renderPrompt: (turns: ChatTurn[]): RenderedPrompt => ({
    text: turns.map((turn) => `${turn.role}: ${turn.content}\n`).join('') + 'assistant: ',
    parser: { tools: [], startInReasoning: false },
  }),
  createParser: (): OutputParser => ({
    push: (chunk) => (chunk === '' ? [] : [{ type: 'text_delta', text: chunk }]),
    end: () => [],
  }),
};

/** Token ids spelling `text`, then the end-of-turn id. */
export function says(text: string): number[] {
  return [...[...text].map((char) => char.charCodeAt(0)), EOS];
}

export interface JobsAppOptions extends TestAppOptions {
  engine?: FakeEngineOptions;
  jobSettings?: Partial<ResponsesSettings>;
  now?: () => number;
}

function buildDeps(options: JobsAppOptions) {
  const settings = { ...DEFAULT_RESPONSES_SETTINGS, ...options.jobSettings };
  const registry = createRegistry();
  const engine = new FakeEngine(options.engine ?? { script: { tokens: says('hello') } });
  // No registry: the helper's own (unused) store registers the cache series on it.
  const store = new MemoryResponseStore({ settings, now: options.now });
  const jobs = new JobManager({ settings, store, registry, now: options.now });
  const runtime = stubRuntime({ engine, tokenizer: plainTokenizer, dialect: plainDialect } as never);
  return { settings, registry, engine, store, jobs, runtime };
}

/** createTestApp with a JobManager, the jobs' handlers and a scripted FakeEngine. */
export function createJobsApp(options: JobsAppOptions = {}) {
  const built = buildDeps(options);
  const testApp = createTestApp({
    ...options,
    settings: built.settings,
    runtime: built.runtime,
    deps: { registry: built.registry, store: built.store, jobs: built.jobs, ...options.deps },
    handlers: { createResponse, cancelResponse, ...options.handlers },
  });
  return { ...testApp, ...built };
}

/** The same app on a loopback port, for the openai SDK. */
export async function listenJobsApp(options: JobsAppOptions = {}) {
  const built = buildDeps(options);
  const listening = await listenTestApp({
    ...options,
    settings: built.settings,
    runtime: built.runtime,
    deps: { registry: built.registry, store: built.store, jobs: built.jobs, ...options.deps },
    handlers: { createResponse, cancelResponse, ...options.handlers },
  });
  return { ...listening, ...built };
}

export interface SseMessage {
  event: string | undefined;
  data: string;
}

/** Parses an SSE body into messages (comments skipped). */
export function parseSse(text: string): SseMessage[] {
  const messages: SseMessage[] = [];
  for (const block of text.split('\n\n')) {
    let event: string | undefined;
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith('event: ')) event = line.slice(7);
      else if (line.startsWith('data: ')) data.push(line.slice(6));
    }
    if (data.length > 0) messages.push({ event, data: data.join('\n') });
  }
  return messages;
}

/** The JSON events of an SSE body (the trailing [DONE] dropped). */
export function sseEvents(text: string): Array<{ type: string; sequence_number: number } & Record<string, unknown>> {
  return parseSse(text)
    .filter((message) => message.data !== '[DONE]')
    .map((message) => JSON.parse(message.data));
}

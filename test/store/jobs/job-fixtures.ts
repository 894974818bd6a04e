/**
 * Fixtures for the job manager tests: scripted runs shaped like runResponse (created,
 * in_progress, text deltas, one terminal event; abort → status cancelled, no terminal event),
 * gates that hold a run at a chosen point, and a manual deadline scheduler.
 */
import { Registry } from 'prom-client';
import { DEFAULT_RESPONSES_SETTINGS, type ResponsesSettings } from '../../../config/settings.ts';
import { newId } from '../../../responses/ids.ts';
import { newResponseObject, type ResponseObject } from '../../../responses/response-object.ts';
import { JobManager, type JobRunHooks, type JobSpec } from '../../../store/jobs/job-manager.ts';
import { MemoryResponseStore } from '../../../store/responses/memory-response-store.ts';
import type { StreamEvent } from '../../../contract/stream-events.ts';

/** A latch: wait() resolves once open() was called (or the signal aborted). */
export class Gate {
  isOpen = false;
  private waiters: Array<() => void> = [];

  open(): void {
    this.isOpen = true;
    for (const waiter of this.waiters.splice(0)) waiter();
  }

  wait(signal?: AbortSignal): Promise<void> {
    if (this.isOpen || signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      this.waiters.push(resolve);
      signal?.addEventListener('abort', () => resolve(), { once: true });
    });
  }
}

export interface ScriptOptions {
  deltas?: number;
  /** Each delta waits for this gate (open = free running). */
  gate?: Gate;
  /** After an abort, the run holds its "resources" until this gate opens (a slow backend). */
  cleanup?: Gate;
  status?: 'completed' | 'incomplete' | 'failed';
  /** Text of each delta (size tests). */
  text?: string;
  /** Terminal output text (size tests of the final event). */
  outputText?: string;
}

export interface ScriptedTask {
  spec: JobSpec;
  response: ResponseObject;
  /** How often run() was called (0 = no generation started). */
  runs: number;
  released: number;
  saved: ResponseObject[];
  /** Set while the run holds resources (between start and return). */
  isHolding: boolean;
}

export function newQueuedResponse(): ResponseObject {
  return newResponseObject({ model: 'maya-test', background: true, store: true }, newId('resp'), 'maya-test', 'queued');
}

export function scriptedTask(options: ScriptOptions = {}): ScriptedTask {
  const response = newQueuedResponse();
  const task: ScriptedTask = {
    response,
    runs: 0,
    released: 0,
    saved: [],
    isHolding: false,
    spec: {
      response,
      historyItems: [
        {
          id: newId('msg'),
          type: 'message',
          role: 'user',
          status: 'completed',
          content: [{ type: 'input_text', text: 'hello' }],
        },
      ],
      run: (hooks) => {
        task.runs++;
        return scriptedRun(task, options, hooks);
      },
      save: async (final) => void task.saved.push(structuredClone(final)),
      release: () => void task.released++,
    },
  };
  return task;
}

async function* scriptedRun(
  task: ScriptedTask,
  options: ScriptOptions,
  hooks: JobRunHooks,
): AsyncGenerator<StreamEvent, ResponseObject, void> {
  const { signal, sequencer } = hooks;
  const response = task.response;
  const lifecycle = (type: string) => sequencer.number({ type, response: structuredClone(response) });
  task.isHolding = true;
  try {
    response.status = 'in_progress';
    yield lifecycle('response.created');
    yield lifecycle('response.in_progress');
    for (let i = 0; i < (options.deltas ?? 3); i++) {
      await options.gate?.wait(signal);
      if (signal.aborted) break;
      yield sequencer.number({
        type: 'response.output_text.delta',
        item_id: 'msg_1',
        output_index: 0,
        content_index: 0,
        delta: options.text ?? `d${i}`,
        logprobs: [],
      });
    }
    if (signal.aborted) {
      await options.cleanup?.wait();
      response.status = 'cancelled';
      return response;
    }
    response.status = options.status ?? 'completed';
    response.output = [
      {
        type: 'message',
        id: 'msg_1',
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: options.outputText ?? 'done', annotations: [], logprobs: [] }],
      },
    ] as never;
    if (response.status !== 'failed') await hooks.beforeTerminal(response);
    yield lifecycle(`response.${response.status}`);
    return response;
  } finally {
    task.isHolding = false;
  }
}

/** A deadline scheduler the test fires by hand. */
export class ManualTimers {
  readonly pending = new Map<number, { fn: () => void; ms: number }>();
  private nextId = 0;

  readonly schedule = (fn: () => void, ms: number): (() => void) => {
    const id = this.nextId++;
    this.pending.set(id, { fn, ms });
    return () => void this.pending.delete(id);
  };

  fireAll(): void {
    const due = [...this.pending.values()];
    this.pending.clear();
    for (const { fn } of due) fn();
  }
}

export interface ManagerFixture {
  jobs: JobManager;
  store: MemoryResponseStore;
  registry: Registry;
  timers: ManualTimers;
  clock: { now: number };
}

export function createManager(settings: Partial<ResponsesSettings> = {}): ManagerFixture {
  const all = { ...DEFAULT_RESPONSES_SETTINGS, ...settings };
  const registry = new Registry();
  const store = new MemoryResponseStore({ settings: all });
  const timers = new ManualTimers();
  const clock = { now: 1_800_000_000_000 };
  const jobs = new JobManager({ settings: all, store, registry, now: () => clock.now, schedule: timers.schedule });
  return { jobs, store, registry, timers, clock };
}

/** Lets pending promise callbacks and setImmediate hops run. */
export async function flush(rounds = 5): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise((resolve) => setImmediate(resolve));
}

export async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of iterable) out.push(item);
  return out;
}

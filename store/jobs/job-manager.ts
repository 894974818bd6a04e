/**
 * JobManager: background responses (`background:true`, `store:true`) from admission to the end
 * of their retention. It owns the bounded records (JOB_ENTRIES, JOB_OWNER_ENTRIES, JOB_TTL_S),
 * the JOB_WORKERS worker slots that drive each task's run and cleanup (the engine's FIFO still
 * orders compute), each task's resumable event buffer, reader admission, cancellation, the
 * JOB_TIMEOUT_S deadline and shutdown.
 *
 * Lifecycle: queued → in_progress → exactly one of completed | incomplete | failed | cancelled.
 * A terminal state is published only after the run returned and the task's resources were
 * released: a cancelled or timed-out task is never reported finished while a worker owns it.
 * Events: admission publishes `response.created` and `response.queued` (numbers 0 and 1); the
 * run's events follow; a cancelled task's stream ends with the standard `error` event
 * (`code: "response_cancelled"`), a timed-out or oversized one with `response.failed`.
 *
 * Every lookup takes the caller's credential scope; another scope's ids behave as unknown ids.
 * Errors for callers are ApiErrors (the handlers' one error shape).
 */
import type { Registry } from 'prom-client';
import type { ResponsesSettings } from '../../config/settings.ts';
import {
  ApiError,
  sseErrorEvent,
  tooLarge,
  tooManyRequests,
  typedFailure,
  unavailable,
} from '../../contract/errors.ts';
import { drainEvents, type StreamEvent, type UnnumberedEvent } from '../../contract/stream-events.ts';
import type { ResponseFailure as ResponseError, ResponseObject, ResponseStatus } from '../../contract/types.ts';
import { JobEventBuffer, eventBytes, type JobEvent } from './job-event-buffer.ts';
import { JobMetrics, type JobRejection } from './job-metrics.ts';
import { JobReaders, type ReaderLease } from './job-readers.ts';
import { JobRecord, type JobSpec, type StopReason } from './job-record.ts';
import { checkCursor, checkRemovable, continuationHistory, pageHistory } from './job-rules.ts';
import {
  StoreError,
  type InputItemPage,
  type ListInputItemsOptions,
  type ResponseStore,
  type StoredHistory,
} from '../responses/response-store.ts';

export type { JobRunHooks, JobSpec } from './job-record.ts';
export type { JobRecord } from './job-record.ts';

export type JobSettings = Pick<
  ResponsesSettings,
  | 'JOB_WORKERS'
  | 'JOB_ENTRIES'
  | 'JOB_OWNER_ENTRIES'
  | 'JOB_TIMEOUT_S'
  | 'JOB_TTL_S'
  | 'JOB_INPUT_BYTES'
  | 'EVENT_BYTES'
  | 'EVENT_COUNT'
  | 'STREAM_READERS'
  | 'STREAM_OWNER_READERS'
>;

export interface JobManagerOptions {
  settings: JobSettings;
  /** The store's assembly budget, charged for continuation histories read from job records. */
  store: Pick<ResponseStore, 'reserveAssembly'>;
  registry?: Registry;
  /** Milliseconds since the epoch (tests inject a clock for retention). */
  now?: () => number;
  /** Runs `fn` after `ms` (the deadline timer); returns a canceller. Tests inject a manual one. */
  schedule?: (fn: () => void, ms: number) => () => void;
}

/**
 * Told about each task's admission, start and end, in that order (a shared-record mirror such as
 * redis-job-mirror.ts); called synchronously, so it must not throw or block.
 */
export interface JobObserver {
  admitted(record: JobRecord): void;
  started(record: JobRecord): void;
  finished(record: JobRecord): void;
}

export interface OpenStreamOptions {
  /** Aborted when the reader goes away; ends the replay without touching the task. */
  signal?: AbortSignal;
  /** A slot taken beforehand (creation with stream:true); otherwise one is acquired here. */
  lease?: ReaderLease;
}

/** Shutdown could not confirm that every task released its resources within the wait. */
export class JobCleanupError extends Error {
  constructor(
    readonly numTasks: number,
    readonly waitMs: number,
  ) {
    super(
      `${numTasks} background task(s) still held resources ${waitMs} ms after cancellation; they were not cleanly cancelled.`,
    );
    this.name = 'JobCleanupError';
  }
}

/** Default wait of `close()` (the CLI's shutdown) for running tasks to release. */
export const SHUTDOWN_WAIT_MS = 10_000;
/** How long POST …/cancel waits for a running task's cleanup (the spec's five seconds). */
export const CANCEL_WAIT_MS = 5_000;

/** setTimeout's largest delay; longer ones would fire at once (Node clamps them to 1 ms). */
const MAX_TIMER_MS = 2 ** 31 - 1;

function defaultSchedule(fn: () => void, ms: number): () => void {
  const timer = setTimeout(fn, Math.min(ms, MAX_TIMER_MS));
  timer.unref();
  return () => clearTimeout(timer);
}

function cancelledError(): ApiError {
  return new ApiError(400, 'The response was cancelled.', 'invalid_request_error', 'response_cancelled');
}

export class JobManager {
  readonly readers: JobReaders;
  readonly metrics: JobMetrics;
  private readonly settings: JobSettings;
  private readonly store: Pick<ResponseStore, 'reserveAssembly'>;
  private readonly now: () => number;
  private readonly schedule: (fn: () => void, ms: number) => () => void;
  /** Active and retained records in admission order. */
  private readonly records = new Map<string, JobRecord>();
  private readonly queue: JobRecord[] = [];
  private readonly running = new Set<JobRecord>();
  private readonly activeByScope = new Map<string, number>();
  private isClosed = false;
  /** Mirrors the records elsewhere (set once by the mirror). */
  observer: JobObserver | undefined;

  constructor(options: JobManagerOptions) {
    this.settings = options.settings;
    this.store = options.store;
    this.now = options.now ?? Date.now;
    this.schedule = options.schedule ?? defaultSchedule;
    this.metrics = new JobMetrics(options.registry, () => {
      this.expire();
      return {
        queued: this.queue.length,
        running: this.running.size,
        records: this.records.size,
        eventBytes: this.eventBytes(),
        readers: this.readers.count,
      };
    });
    this.readers = new JobReaders(options.settings.STREAM_READERS, options.settings.STREAM_OWNER_READERS, (reason) =>
      this.metrics.reject(reason),
    );
  }

  /**
   * Admits a task and returns its queued snapshot. 503 after shutdown began; 413 when the input
   * snapshot exceeds JOB_INPUT_BYTES (or its first event exceeds EVENT_BYTES); 429 when the
   * caller already has JOB_OWNER_ENTRIES active tasks or JOB_ENTRIES records are all active.
   */
  submit(scope: string, spec: JobSpec): ResponseObject {
    if (this.isClosed)
      throw this.reject(
        'shutting_down',
        unavailable('The server is shutting down; background tasks are not accepted.', 'shutting_down'),
      );
    const inputBytes = eventBytes({ response: spec.response, input: spec.historyItems });
    if (inputBytes > this.settings.JOB_INPUT_BYTES) {
      throw this.reject(
        'input_too_large',
        tooLarge(
          `The background task's input snapshot is ${inputBytes} bytes; the limit is ${this.settings.JOB_INPUT_BYTES} (JOB_INPUT_BYTES).`,
          'input_too_large',
          'input',
        ),
      );
    }
    const record = new JobRecord(
      scope,
      spec,
      new JobEventBuffer(this.settings.EVENT_COUNT, this.settings.EVENT_BYTES),
      this.now(),
    );
    for (const type of ['response.created', 'response.queued']) {
      if (!record.events.append(record.sequencer.number({ type, response: structuredClone(spec.response) }))) {
        throw this.reject(
          'input_too_large',
          tooLarge(
            `The background task's first event exceeds the event buffer of ${this.settings.EVENT_BYTES} bytes (EVENT_BYTES).`,
            'input_too_large',
            'input',
          ),
        );
      }
    }
    this.expire();
    if ((this.activeByScope.get(scope) ?? 0) >= this.settings.JOB_OWNER_ENTRIES) {
      throw this.reject(
        'owner_entries',
        tooManyRequests(
          `This API key already has ${this.settings.JOB_OWNER_ENTRIES} active background tasks (JOB_OWNER_ENTRIES); wait for one to finish.`,
          'too_many_tasks',
          1,
        ),
      );
    }
    if (this.records.size >= this.settings.JOB_ENTRIES && !this.evictOldestFinished()) {
      throw this.reject(
        'entries',
        tooManyRequests(
          `All ${this.settings.JOB_ENTRIES} background task records are active (JOB_ENTRIES); retry later.`,
          'too_many_tasks',
          1,
        ),
      );
    }
    this.records.set(record.id, record);
    this.activeByScope.set(scope, (this.activeByScope.get(scope) ?? 0) + 1);
    this.queue.push(record);
    this.observer?.admitted(record);
    this.metrics.admit();
    record.cancelDeadline = this.schedule(() => this.stop(record, 'deadline'), this.settings.JOB_TIMEOUT_S * 1000);
    const snapshot = record.snapshot();
    this.pump();
    return snapshot;
  }

  /** The current snapshot (queued, in_progress or terminal), or undefined when not a job record. */
  snapshot(scope: string, id: string): ResponseObject | undefined {
    const record = this.find(scope, id);
    return record?.snapshot();
  }

  /** Whether `id` is a job record of `scope` (active or retained). */
  has(scope: string, id: string): boolean {
    return this.find(scope, id) !== undefined;
  }

  /**
   * Cancels a task: a queued one at once (no generation), a running one by signalling it and
   * waiting up to `waitMs` for its cleanup. Idempotent: a finished task answers its snapshot.
   * undefined when `id` is not a job record of `scope`.
   */
  async cancel(scope: string, id: string, waitMs = CANCEL_WAIT_MS): Promise<ResponseObject | undefined> {
    const record = this.find(scope, id);
    if (!record) return undefined;
    this.stop(record, 'cancel');
    if (record.state !== 'done') await settledWithin([record], waitMs);
    return record.snapshot();
  }

  /** DELETE: drops a finished record (true), 409 for an active one, false when unknown. */
  remove(scope: string, id: string): boolean {
    const record = this.find(scope, id);
    if (!record) return false;
    checkRemovable(record);
    this.records.delete(id);
    return true;
  }

  /**
   * A retained record's history for previous_response_id (its input history then its output),
   * with its bytes reserved from ASSEMBLY_BYTES until release. 409 while the task is active,
   * 400 for a cancelled or failed one, undefined when `id` is not a job record of `scope`.
   */
  async continuationHistory(scope: string, id: string): Promise<StoredHistory | undefined> {
    const record = this.find(scope, id);
    if (!record) return undefined;
    return continuationHistory(
      { id, status: record.status, isDone: record.isDone, output: record.response.output },
      this.store,
      () => record.historyItems,
    );
  }

  /**
   * input_items of a job record (its input history, not its output), paged like the store's
   * listing; available while the task is still active and during its retention. 400 for an
   * `after` id that is not in the listing; undefined when `id` is not a job record of `scope`.
   */
  listInputItems(scope: string, id: string, options: ListInputItemsOptions = {}): InputItemPage | undefined {
    const record = this.find(scope, id);
    return record && pageHistory(record.historyItems, options);
  }

  /**
   * The task's events strictly after `startingAfter` (all retained events when undefined), then
   * its live events until its terminal event. undefined when `id` is not a job record of
   * `scope`. Before streaming: 400 for a cursor past the newest event, 410 for one behind the
   * retained window, 429 past the reader limits. While streaming, a window that slides past the
   * reader ends the iteration with a 410 ApiError (sse.ts turns it into the `error` event).
   */
  openStream(
    scope: string,
    id: string,
    startingAfter: number | undefined,
    options: OpenStreamOptions = {},
  ): AsyncIterable<JobEvent> | undefined {
    const record = this.find(scope, id);
    if (!record) return undefined;
    const after = startingAfter ?? -1;
    const events = record.events;
    const behind = checkCursor(id, after, { last: events.lastSequence, dropped: events.droppedThrough });
    const lease = options.lease ?? this.readers.acquire(scope);
    return follow(
      events.read(after, () => behind(events.droppedThrough), options.signal),
      lease,
    );
  }

  /** The `responses_jobs` section of /v1/status. */
  stats(): Record<string, unknown> {
    this.expire();
    const metrics = this.metrics;
    return {
      queued: this.queue.length,
      running: this.running.size,
      records: this.records.size,
      event_bytes: this.eventBytes(),
      readers: this.readers.count,
      admissions: metrics.admissions,
      rejections: metrics.rejectionCount,
      rejections_by_reason: { ...metrics.rejections },
      cancellations: metrics.cancellations,
      deadline_failures: metrics.deadlineFailures,
    };
  }

  /**
   * Stops admission, cancels queued and running tasks and waits up to `waitMs` for the workers
   * to release them. Throws JobCleanupError when some task still holds resources by then.
   */
  async shutdown(waitMs = SHUTDOWN_WAIT_MS): Promise<void> {
    this.isClosed = true;
    for (const record of [...this.queue]) this.stop(record, 'shutdown');
    const running = [...this.running];
    for (const record of running) this.stop(record, 'shutdown');
    if (!(await settledWithin(running, waitMs))) {
      throw new JobCleanupError(running.filter((record) => record.state !== 'done').length, waitMs);
    }
  }

  /** AppDeps.jobs.close: shutdown with the default wait. */
  close(): Promise<void> {
    return this.shutdown();
  }

  private find(scope: string, id: string): JobRecord | undefined {
    this.expire();
    const record = this.records.get(id);
    return record?.scope === scope ? record : undefined;
  }

  private reject(reason: JobRejection, error: ApiError): ApiError {
    this.metrics.reject(reason);
    return error;
  }

  private eventBytes(): number {
    let bytes = 0;
    for (const record of this.records.values()) bytes += record.events.bytes;
    return bytes;
  }

  private expire(): void {
    const cutoff = this.now() - this.settings.JOB_TTL_S * 1000;
    for (const [id, record] of this.records) {
      if (record.state === 'done' && record.finishedAt <= cutoff) this.records.delete(id);
    }
  }

  private evictOldestFinished(): boolean {
    let oldest: JobRecord | undefined;
    for (const record of this.records.values()) {
      if (record.state === 'done' && (!oldest || record.finishedAt < oldest.finishedAt)) oldest = record;
    }
    if (oldest) this.records.delete(oldest.id);
    return oldest !== undefined;
  }

  private pump(): void {
    while (this.running.size < this.settings.JOB_WORKERS && this.queue.length > 0) {
      void this.execute(this.queue.shift()!);
    }
  }

  private stop(record: JobRecord, reason: StopReason): void {
    if (record.state === 'done') return;
    record.stopReason ??= reason;
    if (record.state === 'queued') {
      this.queue.splice(this.queue.indexOf(record), 1);
      this.conclude(record, undefined);
    } else {
      record.controller.abort();
    }
  }

  /** One worker slot: drives the run to its end (cleanup included), then concludes. */
  private async execute(record: JobRecord): Promise<void> {
    record.state = 'running';
    record.status = 'in_progress';
    record.startedAt = this.now();
    this.running.add(record);
    this.observer?.started(record);
    this.metrics.started((record.startedAt - record.admittedAt) / 1000);
    let final: ResponseObject | undefined;
    try {
      const run = record.spec!.run({
        signal: record.controller.signal,
        sequencer: record.sequencer,
        beforeTerminal: (response) => this.beforeTerminal(record, response),
      });
      final = await drainEvents(run, (event) => this.publishRunEvent(record, event));
    } catch (error) {
      record.failure ??= saveFailure(error);
    }
    this.conclude(record, final);
  }

  private publishRunEvent(record: JobRecord, event: StreamEvent): void {
    if (event.sequence_number < 0 || record.failure) return;
    if (!record.events.append(event)) {
      record.failure = this.oversized(event.type);
      record.controller.abort();
    }
  }

  private async beforeTerminal(record: JobRecord, final: ResponseObject): Promise<void> {
    if (record.failure) return;
    const type = `response.${final.status}`;
    if (eventBytes({ type, sequence_number: record.sequencer.count, response: final }) > this.settings.EVENT_BYTES) {
      record.failure = this.oversized(type);
      return;
    }
    await record.spec?.save?.(final);
  }

  private oversized(type: string): ResponseError {
    return {
      code: 'event_too_large',
      message: `A ${type} event exceeded the task's event buffer of ${this.settings.EVENT_BYTES} bytes (EVENT_BYTES).`,
    };
  }

  /**
   * Publishes the terminal state of a task whose run has returned (or never started). The run's
   * own terminal event is already published unless the task failed here, timed out or was
   * cancelled; then this adds `response.failed` or the `response_cancelled` error event.
   */
  private conclude(record: JobRecord, final: ResponseObject | undefined): void {
    record.releaseSpec();
    const response = record.response;
    const isStopped = final === undefined || final.status === 'cancelled';
    const isDeadline = !record.failure && isStopped && record.stopReason === 'deadline';
    if (isDeadline) {
      record.failure = {
        code: 'job_timeout',
        message: `The background task did not finish within ${this.settings.JOB_TIMEOUT_S} s of its admission (JOB_TIMEOUT_S).`,
      };
    }
    let status: ResponseStatus;
    if (record.failure) {
      status = 'failed';
      Object.assign(response, {
        status,
        error: typedFailure(record.failure),
        output: [],
        completed_at: Math.floor(this.now() / 1000),
      });
      this.publishTerminal(record, { type: 'response.failed', response: structuredClone(response) });
    } else if (isStopped) {
      status = 'cancelled';
      response.status = status;
      const { sequence_number: _unused, ...event } = sseErrorEvent(cancelledError(), 0);
      this.publishTerminal(record, event);
    } else {
      status = final.status;
    }
    record.cancelDeadline();
    record.state = 'done';
    record.status = status;
    record.finishedAt = this.now();
    record.events.close();
    this.running.delete(record);
    const left = (this.activeByScope.get(record.scope) ?? 1) - 1;
    if (left === 0) this.activeByScope.delete(record.scope);
    else this.activeByScope.set(record.scope, left);
    this.metrics.finished(status, (record.finishedAt - record.admittedAt) / 1000, isDeadline);
    this.observer?.finished(record);
    record.settle();
    this.pump();
  }

  /** A terminal event always fits: a failed event that cannot becomes the smaller error event. */
  private publishTerminal(record: JobRecord, event: UnnumberedEvent): void {
    if (record.events.append(record.sequencer.number(event))) return;
    const { sequence_number: _unused, ...error } = sseErrorEvent(
      new ApiError(
        500,
        record.failure?.message ?? 'The background task failed.',
        'server_error',
        record.failure?.code ?? 'server_error',
      ),
      0,
    );
    record.events.append(record.sequencer.number(error));
  }
}

/** A failure of the run as the task's error: the store's refusal of its save, or a generic one. */
function saveFailure(error: unknown): ResponseError {
  if (error instanceof StoreError) {
    const code = error.code;
    if (code === 'store_unavailable') return { code: 'server_error', message: error.message };
    if (code !== 'unknown_cursor' && code !== 'invalid_page') return { code, message: error.message };
  }
  return { code: 'server_error', message: 'The background task failed.' };
}

async function* follow(
  events: AsyncGenerator<JobEvent, void, void>,
  lease: ReaderLease,
): AsyncGenerator<JobEvent, void, void> {
  try {
    yield* events;
  } finally {
    lease.release();
  }
}

/** True when every record settled within `ms`. */
async function settledWithin(records: JobRecord[], ms: number): Promise<boolean> {
  let cancelTimer = () => {};
  const timeout = new Promise<boolean>((resolve) => (cancelTimer = defaultSchedule(() => resolve(false), ms)));
  const result = await Promise.race([Promise.all(records.map((record) => record.settled)).then(() => true), timeout]);
  cancelTimer();
  return result;
}

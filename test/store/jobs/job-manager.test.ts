import { describe, expect, it } from 'vitest';
import { ApiError } from '../../../contract/errors.ts';
import { DEFAULT_RESPONSES_SETTINGS } from '../../../config/settings.ts';
import { JobCleanupError, JobManager } from '../../../store/jobs/job-manager.ts';
import { MemoryResponseStore } from '../../../store/responses/memory-response-store.ts';
import type { JobEvent } from '../../../store/jobs/job-event-buffer.ts';
import { collect, createManager, flush, Gate, scriptedTask } from './job-fixtures.ts';

const A = 'scope-a';
const B = 'scope-b';

function apiError(fn: () => unknown): ApiError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
  throw new Error('expected an ApiError');
}

async function apiErrorAsync(promise: Promise<unknown>): Promise<ApiError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
  throw new Error('expected an ApiError');
}

const types = (events: JobEvent[]) => events.map((event) => event.type);

describe('creation and states', () => {
  it('returns a queued snapshot at once, then runs to exactly one terminal state', async () => {
    const { jobs } = createManager();
    const task = scriptedTask({ deltas: 2 });
    const queued = jobs.submit(A, task.spec);
    expect(queued.status).toBe('queued');
    expect(queued.id).toBe(task.response.id);
    const events = await collect(jobs.openStream(A, task.response.id, undefined)!);
    expect(types(events)).toEqual([
      'response.created',
      'response.queued',
      'response.in_progress',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.completed',
    ]);
    expect(events.map((event) => event.sequence_number)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(events[0]).toMatchObject({ response: { status: 'queued' } });
    expect(jobs.snapshot(A, task.response.id)!.status).toBe('completed');
    expect(task.saved).toHaveLength(1);
    expect(task.saved[0]!.status).toBe('completed');
    expect(task.released).toBe(1);
  });

  it('reports in_progress while a worker owns the task', async () => {
    const { jobs } = createManager();
    const gate = new Gate();
    const task = scriptedTask({ gate });
    jobs.submit(A, task.spec);
    await flush();
    expect(jobs.snapshot(A, task.response.id)!.status).toBe('in_progress');
    gate.open();
    await flush(20);
    expect(jobs.snapshot(A, task.response.id)!.status).toBe('completed');
  });

  it('runs at most JOB_WORKERS tasks at once; the rest wait queued', async () => {
    const { jobs } = createManager({ JOB_WORKERS: 2 });
    const gate = new Gate();
    const tasks = [scriptedTask({ gate }), scriptedTask({ gate }), scriptedTask({ gate })];
    for (const task of tasks) jobs.submit(A, task.spec);
    await flush();
    expect(jobs.stats()).toMatchObject({ running: 2, queued: 1, records: 3, admissions: 3 });
    expect(tasks.map((task) => task.runs)).toEqual([1, 1, 0]);
    gate.open();
    await flush(30);
    expect(tasks.map((task) => jobs.snapshot(A, task.response.id)!.status)).toEqual([
      'completed',
      'completed',
      'completed',
    ]);
    expect(jobs.stats()).toMatchObject({ running: 0, queued: 0 });
  });

  it('rejects an input snapshot over JOB_INPUT_BYTES with 413 before admitting it', () => {
    const { jobs } = createManager({ JOB_INPUT_BYTES: 4096 });
    const task = scriptedTask();
    task.spec.historyItems = [
      { id: 'msg_big', type: 'message', role: 'user', content: [{ type: 'input_text', text: 'x'.repeat(5000) }] },
    ];
    const error = apiError(() => jobs.submit(A, task.spec));
    expect(error.status).toBe(413);
    expect(error.code).toBe('input_too_large');
    expect(jobs.stats()).toMatchObject({ records: 0, rejections: 1 });
    expect(task.runs).toBe(0);
  });
});

describe('cancellation', () => {
  it('removes a queued task without starting generation and ends its stream with response_cancelled', async () => {
    const { jobs } = createManager({ JOB_WORKERS: 1 });
    const gate = new Gate();
    const first = scriptedTask({ gate });
    const second = scriptedTask();
    jobs.submit(A, first.spec);
    jobs.submit(A, second.spec);
    const cancelled = await jobs.cancel(A, second.response.id);
    expect(cancelled!.status).toBe('cancelled');
    expect(second.runs).toBe(0);
    expect(second.released).toBe(1);
    const events = await collect(jobs.openStream(A, second.response.id, undefined)!);
    expect(types(events)).toEqual(['response.created', 'response.queued', 'error']);
    expect(events[2]).toMatchObject({
      code: 'response_cancelled',
      sequence_number: 2,
      error: { code: 'response_cancelled' },
    });
    expect(types(events)).not.toContain('response.cancelled');
    gate.open();
  });

  it('signals a running task, waits for its cleanup, and only then reports cancelled', async () => {
    const { jobs } = createManager();
    const gate = new Gate();
    const cleanup = new Gate();
    const task = scriptedTask({ gate, cleanup });
    jobs.submit(A, task.spec);
    await flush();
    const pending = jobs.cancel(A, task.response.id, 60_000);
    await flush();
    expect(task.isHolding).toBe(true);
    expect(jobs.snapshot(A, task.response.id)!.status).toBe('in_progress');
    cleanup.open();
    const result = await pending;
    expect(task.isHolding).toBe(false);
    expect(result!.status).toBe('cancelled');
    const events = await collect(jobs.openStream(A, task.response.id, undefined)!);
    expect(events.at(-1)).toMatchObject({ type: 'error', code: 'response_cancelled' });
    expect(task.saved).toHaveLength(0);
    expect(jobs.stats()).toMatchObject({ cancellations: 1 });
  });

  it('returns in_progress when cleanup outlasts the wait, and the client may poll', async () => {
    const { jobs } = createManager();
    const cleanup = new Gate();
    const task = scriptedTask({ gate: new Gate(), cleanup });
    jobs.submit(A, task.spec);
    await flush();
    const early = await jobs.cancel(A, task.response.id, 10);
    expect(early!.status).toBe('in_progress');
    cleanup.open();
    await flush(10);
    expect(jobs.snapshot(A, task.response.id)!.status).toBe('cancelled');
  });

  it('is idempotent and answers a finished task with its own state', async () => {
    const { jobs } = createManager();
    const task = scriptedTask({ gate: new Gate() });
    jobs.submit(A, task.spec);
    await flush();
    expect((await jobs.cancel(A, task.response.id))!.status).toBe('cancelled');
    expect((await jobs.cancel(A, task.response.id))!.status).toBe('cancelled');
    expect(jobs.stats()).toMatchObject({ cancellations: 1 });
    const done = scriptedTask();
    jobs.submit(A, done.spec);
    await flush(20);
    expect((await jobs.cancel(A, done.response.id))!.status).toBe('completed');
  });
});

describe('deadline (JOB_TIMEOUT_S from admission)', () => {
  it('fails a queued task without running it', async () => {
    const { jobs, timers } = createManager({ JOB_WORKERS: 1, JOB_TIMEOUT_S: 7 });
    const gate = new Gate();
    const first = scriptedTask({ gate });
    const second = scriptedTask();
    jobs.submit(A, first.spec);
    jobs.submit(A, second.spec);
    expect([...timers.pending.values()].map((timer) => timer.ms)).toEqual([7000, 7000]);
    timers.fireAll();
    await flush(10);
    const snapshot = jobs.snapshot(A, second.response.id)!;
    expect(snapshot.status).toBe('failed');
    expect(snapshot.error).toMatchObject({ code: 'job_timeout' });
    expect(second.runs).toBe(0);
    expect(jobs.stats()).toMatchObject({ deadline_failures: 2 });
  });

  it('fails a running task only after its cleanup, with a response.failed event', async () => {
    const { jobs, timers } = createManager();
    const cleanup = new Gate();
    const task = scriptedTask({ gate: new Gate(), cleanup });
    jobs.submit(A, task.spec);
    await flush();
    timers.fireAll();
    await flush();
    expect(jobs.snapshot(A, task.response.id)!.status).toBe('in_progress');
    cleanup.open();
    await flush(10);
    expect(jobs.snapshot(A, task.response.id)!.status).toBe('failed');
    const events = await collect(jobs.openStream(A, task.response.id, undefined)!);
    expect(events.at(-1)).toMatchObject({
      type: 'response.failed',
      response: { status: 'failed', error: { code: 'job_timeout' } },
    });
    expect(task.saved).toHaveLength(0);
  });
});

describe('deadline timer', () => {
  it("never fires early for a deadline beyond setTimeout's range", async () => {
    const store = new MemoryResponseStore({ settings: DEFAULT_RESPONSES_SETTINGS });
    const jobs = new JobManager({ settings: { ...DEFAULT_RESPONSES_SETTINGS, JOB_TIMEOUT_S: 10_000_000 }, store });
    const gate = new Gate();
    const task = scriptedTask({ gate });
    jobs.submit(A, task.spec);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(jobs.snapshot(A, task.response.id)!.status).toBe('in_progress');
    gate.open();
    await flush(20);
    expect(jobs.snapshot(A, task.response.id)!.status).toBe('completed');
  });
});

describe('rules: delete and continuation', () => {
  it('refuses to delete an active task (409) and deletes a finished record', async () => {
    const { jobs } = createManager();
    const gate = new Gate();
    const task = scriptedTask({ gate });
    jobs.submit(A, task.spec);
    const error = apiError(() => jobs.remove(A, task.response.id));
    expect(error.status).toBe(409);
    gate.open();
    await flush(20);
    expect(jobs.remove(A, task.response.id)).toBe(true);
    expect(jobs.snapshot(A, task.response.id)).toBeUndefined();
  });

  it('refuses to continue a running task (409) and cancelled or failed ones (400)', async () => {
    const { jobs } = createManager();
    const running = scriptedTask({ gate: new Gate() });
    jobs.submit(A, running.spec);
    await flush();
    const active = await apiErrorAsync(jobs.continuationHistory(A, running.response.id));
    expect(active).toMatchObject({ status: 409, param: 'previous_response_id' });
    await jobs.cancel(A, running.response.id);
    const cancelled = await apiErrorAsync(jobs.continuationHistory(A, running.response.id));
    expect(cancelled).toMatchObject({ status: 400, param: 'previous_response_id' });
    const failed = scriptedTask({ status: 'failed' });
    jobs.submit(A, failed.spec);
    await flush(20);
    expect(jobs.snapshot(A, failed.response.id)!.status).toBe('failed');
    expect(await apiErrorAsync(jobs.continuationHistory(A, failed.response.id))).toMatchObject({ status: 400 });
  });

  it('serves a finished record as continuation history with its bytes reserved from ASSEMBLY_BYTES', async () => {
    const { jobs, store } = createManager();
    const task = scriptedTask();
    jobs.submit(A, task.spec);
    await flush(20);
    const history = (await jobs.continuationHistory(A, task.response.id))!;
    expect(history.responseId).toBe(task.response.id);
    expect(history.items.map((item) => item.type)).toEqual(['message', 'message']);
    expect(history.items[1]).toMatchObject({ role: 'assistant', id: 'msg_1' });
    expect((await store.stats()).assembly_bytes).toBe(history.bytes);
    history.release();
    expect((await store.stats()).assembly_bytes).toBe(0);
    expect(await jobs.continuationHistory(B, task.response.id)).toBeUndefined();
  });

  it('answers 503 when the assembly budget is exhausted', async () => {
    const { jobs } = createManager({ ASSEMBLY_BYTES: 10 });
    const task = scriptedTask();
    jobs.submit(A, task.spec);
    await flush(20);
    expect(await apiErrorAsync(jobs.continuationHistory(A, task.response.id))).toMatchObject({
      status: 503,
      code: 'assembly_busy',
    });
  });
});

describe('records: JOB_ENTRIES, JOB_OWNER_ENTRIES, JOB_TTL_S', () => {
  it('limits active tasks per credential with 429; other keys are unaffected', async () => {
    const { jobs } = createManager({ JOB_OWNER_ENTRIES: 1 });
    const gate = new Gate();
    jobs.submit(A, scriptedTask({ gate }).spec);
    const error = apiError(() => jobs.submit(A, scriptedTask().spec));
    expect(error).toMatchObject({ status: 429, code: 'too_many_tasks' });
    expect(() => jobs.submit(B, scriptedTask({ gate }).spec)).not.toThrow();
    expect(jobs.stats()).toMatchObject({ rejections_by_reason: { owner_entries: 1 } });
    gate.open();
  });

  it('evicts the oldest finished record early to admit a task, never an active one', async () => {
    const { jobs } = createManager({ JOB_ENTRIES: 2 });
    const gate = new Gate();
    const done = scriptedTask();
    jobs.submit(A, done.spec);
    await flush(20);
    const active = scriptedTask({ gate });
    jobs.submit(A, active.spec);
    jobs.submit(B, scriptedTask({ gate }).spec);
    expect(jobs.snapshot(A, done.response.id)).toBeUndefined();
    expect(jobs.snapshot(A, active.response.id)).toBeDefined();
    const error = apiError(() => jobs.submit(B, scriptedTask().spec));
    expect(error).toMatchObject({ status: 429 });
    expect(jobs.stats()).toMatchObject({ records: 2, rejections_by_reason: { entries: 1 } });
    gate.open();
  });

  it('keeps finished records for JOB_TTL_S after they finish, active ones indefinitely', async () => {
    const { jobs, clock } = createManager({ JOB_TTL_S: 60, JOB_TIMEOUT_S: 100_000 });
    const finished = scriptedTask();
    const active = scriptedTask({ gate: new Gate() });
    jobs.submit(A, finished.spec);
    jobs.submit(A, active.spec);
    await flush(20);
    clock.now += 59_999;
    expect(jobs.snapshot(A, finished.response.id)!.status).toBe('completed');
    clock.now += 1;
    expect(jobs.snapshot(A, finished.response.id)).toBeUndefined();
    clock.now += 10_000_000;
    expect(jobs.snapshot(A, active.response.id)!.status).toBe('in_progress');
    expect(jobs.stats()).toMatchObject({ records: 1 });
  });
});

describe('resumable event streams', () => {
  it('replays strictly after starting_after and equals the live stream', async () => {
    const { jobs } = createManager();
    const gate = new Gate();
    const task = scriptedTask({ gate, deltas: 4 });
    jobs.submit(A, task.spec);
    const live = collect(jobs.openStream(A, task.response.id, undefined)!);
    gate.open();
    const liveEvents = await live;
    expect(await collect(jobs.openStream(A, task.response.id, undefined)!)).toEqual(liveEvents);
    const tail = await collect(jobs.openStream(A, task.response.id, 3)!);
    expect(tail.map((event) => event.sequence_number)).toEqual([4, 5, 6, 7]);
    expect(await collect(jobs.openStream(A, task.response.id, 7)!)).toEqual([]);
  });

  it('answers 400 for a future cursor and 410 for one behind the retained window', async () => {
    const { jobs } = createManager({ EVENT_COUNT: 3 });
    const task = scriptedTask({ deltas: 4 });
    jobs.submit(A, task.spec);
    await flush(20);
    expect(apiError(() => jobs.openStream(A, task.response.id, 8))).toMatchObject({
      status: 400,
      param: 'starting_after',
    });
    expect(apiError(() => jobs.openStream(A, task.response.id, undefined))).toMatchObject({ status: 410 });
    expect(apiError(() => jobs.openStream(A, task.response.id, 3))).toMatchObject({
      status: 410,
      param: 'starting_after',
    });
    const tail = await collect(jobs.openStream(A, task.response.id, 4)!);
    expect(tail.map((event) => event.sequence_number)).toEqual([5, 6, 7]);
  });

  it('ends a connected reader with a 410 error once the window slides past it', async () => {
    const { jobs } = createManager({ EVENT_COUNT: 2 });
    const gate = new Gate();
    const task = scriptedTask({ gate, deltas: 5 });
    jobs.submit(A, task.spec);
    const reader = jobs.openStream(A, task.response.id, undefined)![Symbol.asyncIterator]();
    expect((await reader.next()).value).toMatchObject({ sequence_number: 0 });
    gate.open();
    await flush(20);
    await expect(reader.next()).rejects.toMatchObject({ status: 410 });
    expect(jobs.stats()).toMatchObject({ readers: 0 });
  });

  it('fails a task whose event is larger than the whole buffer, explicitly', async () => {
    const { jobs } = createManager({ EVENT_BYTES: 4096 });
    const task = scriptedTask({ deltas: 2, text: 'y'.repeat(5000) });
    jobs.submit(A, task.spec);
    await flush(20);
    const snapshot = jobs.snapshot(A, task.response.id)!;
    expect(snapshot.status).toBe('failed');
    expect(snapshot.error).toMatchObject({ code: 'event_too_large' });
    const events = await collect(jobs.openStream(A, task.response.id, undefined)!);
    expect(types(events)).toEqual(['response.created', 'response.queued', 'response.in_progress', 'response.failed']);
    expect(task.saved).toHaveLength(0);
  });

  it('fails rather than publish a terminal event larger than the buffer, and does not store it', async () => {
    const { jobs } = createManager({ EVENT_BYTES: 4096 });
    const task = scriptedTask({ deltas: 1, outputText: 'z'.repeat(5000) });
    jobs.submit(A, task.spec);
    await flush(20);
    expect(jobs.snapshot(A, task.response.id)).toMatchObject({ status: 'failed', error: { code: 'event_too_large' } });
    expect(task.saved).toHaveLength(0);
  });

  it('keeps every task within EVENT_COUNT and EVENT_BYTES', async () => {
    const { jobs } = createManager({ EVENT_COUNT: 5, EVENT_BYTES: 4096 });
    const task = scriptedTask({ deltas: 40, text: 'w'.repeat(300) });
    jobs.submit(A, task.spec);
    await flush(60);
    const stats = jobs.stats() as { event_bytes: number };
    expect(stats.event_bytes).toBeLessThanOrEqual(4096);
    expect(stats.event_bytes).toBeGreaterThan(0);
    expect(jobs.snapshot(A, task.response.id)!.status).toBe('completed');
    expect(apiError(() => jobs.openStream(A, task.response.id, 30))).toMatchObject({ status: 410 });
    const tail = await collect(jobs.openStream(A, task.response.id, 42)!);
    expect(tail.map((event) => [event.type, event.sequence_number])).toEqual([['response.completed', 43]]);
  });
});

describe('readers', () => {
  it('admits STREAM_READERS globally and STREAM_OWNER_READERS per key; release frees the slot', async () => {
    const { jobs } = createManager({ STREAM_READERS: 3, STREAM_OWNER_READERS: 2 });
    const gate = new Gate();
    const a = scriptedTask({ gate });
    const b = scriptedTask({ gate });
    jobs.submit(A, a.spec);
    jobs.submit(B, b.spec);
    const controller = new AbortController();
    const first = jobs.openStream(A, a.response.id, undefined, { signal: controller.signal })!;
    const firstDone = collect(first);
    const second = collect(jobs.openStream(A, a.response.id, undefined)!);
    await flush();
    expect(apiError(() => jobs.openStream(A, a.response.id, undefined))).toMatchObject({
      status: 429,
      code: 'too_many_readers',
    });
    const third = collect(jobs.openStream(B, b.response.id, undefined)!);
    await flush();
    expect(apiError(() => jobs.openStream(B, b.response.id, undefined))).toMatchObject({ status: 429 });
    expect(jobs.stats()).toMatchObject({ readers: 3 });
    controller.abort();
    await firstDone;
    expect(jobs.stats()).toMatchObject({ readers: 2 });
    expect(jobs.snapshot(A, a.response.id)!.status).toBe('in_progress');
    gate.open();
    await Promise.all([second, third]);
    expect(jobs.stats()).toMatchObject({ readers: 0 });
    expect(jobs.snapshot(A, a.response.id)!.status).toBe('completed');
  });
});

describe('isolation', () => {
  it("treats another scope's ids as unknown on every operation", async () => {
    const { jobs } = createManager();
    const task = scriptedTask({ gate: new Gate() });
    jobs.submit(A, task.spec);
    const id = task.response.id;
    expect(jobs.snapshot(B, id)).toBeUndefined();
    expect(jobs.has(B, id)).toBe(false);
    expect(await jobs.cancel(B, id)).toBeUndefined();
    expect(jobs.openStream(B, id, undefined)).toBeUndefined();
    expect(await jobs.continuationHistory(B, id)).toBeUndefined();
    expect(jobs.remove(B, id)).toBe(false);
    expect(jobs.snapshot(A, id)!.status).not.toBe('cancelled');
  });
});

describe('shutdown', () => {
  it('stops admission, cancels queued and running tasks and joins the workers', async () => {
    const { jobs } = createManager({ JOB_WORKERS: 1 });
    const running = scriptedTask({ gate: new Gate() });
    const queued = scriptedTask();
    jobs.submit(A, running.spec);
    jobs.submit(A, queued.spec);
    await flush();
    await jobs.shutdown(60_000);
    expect(jobs.snapshot(A, running.response.id)!.status).toBe('cancelled');
    expect(jobs.snapshot(A, queued.response.id)!.status).toBe('cancelled');
    expect(running.isHolding).toBe(false);
    expect(queued.runs).toBe(0);
    expect(apiError(() => jobs.submit(A, scriptedTask().spec))).toMatchObject({ status: 503, code: 'shutting_down' });
  });

  it('raises an explicit cleanup error when a task has not released within the wait', async () => {
    const { jobs } = createManager();
    const cleanup = new Gate();
    const task = scriptedTask({ gate: new Gate(), cleanup });
    jobs.submit(A, task.spec);
    await flush();
    await expect(jobs.shutdown(10)).rejects.toBeInstanceOf(JobCleanupError);
    expect(jobs.snapshot(A, task.response.id)!.status).toBe('in_progress');
    cleanup.open();
    await flush(10);
    expect(jobs.snapshot(A, task.response.id)!.status).toBe('cancelled');
  });
});

describe('metrics', () => {
  it('exports maya:responses_jobs_* without credential scopes or content', async () => {
    const { jobs, registry, clock } = createManager({ JOB_OWNER_ENTRIES: 1 });
    const gate = new Gate();
    const task = scriptedTask({ gate });
    jobs.submit('secret-scope-value', task.spec);
    expect(() => jobs.submit('secret-scope-value', scriptedTask().spec)).toThrow();
    await flush();
    const text = await registry.metrics();
    expect(text).toContain('maya:responses_jobs_running 1');
    expect(text).toContain('maya:responses_jobs_records 1');
    expect(text).toContain('maya:responses_jobs_admissions_total 1');
    expect(text).toContain('maya:responses_jobs_rejections_total{reason="owner_entries"} 1');
    expect(text).toMatch(/maya:responses_jobs_event_bytes [1-9]/);
    gate.open();
    await flush(20);
    const after = await registry.metrics();
    expect(after).toContain('maya:responses_jobs_finished_total{status="completed"} 1');
    expect(after).toContain('maya:responses_jobs_run_seconds_count 1');
    expect(after).not.toContain('secret-scope-value');
    clock.now += DEFAULT_RESPONSES_SETTINGS.JOB_TTL_S * 1000;
    const expired = await registry.metrics();
    expect(expired).toContain('maya:responses_jobs_records 0');
    expect(expired).toContain('maya:responses_jobs_event_bytes 0');
    expect(after).not.toContain('hello');
  });
});

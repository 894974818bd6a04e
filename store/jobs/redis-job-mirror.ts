/**
 * Background tasks across replicas (MAYA_STORE_URL=redis://…). A task still runs on the replica
 * that admitted it (its JobManager owns admission, workers, deadline and cleanup); this mirror
 * copies the task's record, status and bounded event log (EVENT_COUNT / EVENT_BYTES, dropped from
 * the front exactly like JobEventBuffer) into Redis as they change, so that ANY replica can
 * retrieve the task, page its input items, replay and follow its stream with `starting_after`,
 * delete it once finished, continue from it, and cancel it: a cancel from another replica sets a
 * flag that the owner's heartbeat (every HEARTBEAT_MS) turns into a local cancel, which stops
 * generation at the next step; the caller waits up to five seconds for the terminal state.
 *
 * Repair: the shared record only ever converges on the owner's own. Its event log grows by the next
 * sequence number only (a lost or failed write is a gap, never a hole), and on every heartbeat the
 * owner compares each of its tasks with Redis and writes what is missing from its own buffer: a
 * record Redis lost (re-admitted while the task runs), events, the end of a finished task (kept
 * under watch for LEASE_MS after Redis confirmed it). So a write lost to a Redis failover or outage
 * costs a delay of about a heartbeat, not a stream with a hole or a task left `in_progress`. With
 * `durable`, a task's admission and its end count only once that many Redis replicas hold them.
 *
 * Leases: every replica refreshes `replica:<id>` every HEARTBEAT_MS with a LEASE_MS expiry. A task
 * whose owner's lease is gone (the replica died) is marked failed, with a `response.failed` event
 * a reader can see, by the first replica that notices: its heartbeat sweep, a retrieval or a
 * reader. So a dead replica's tasks fail within LEASE_MS + HEARTBEAT_MS.
 *
 * Readers: STREAM_READERS / STREAM_OWNER_READERS count the readers of every replica (counts in
 * Redis, per replica, dropped with a dead replica's lease) for streams opened by retrieval; a
 * reader attached at creation (background + stream) is counted on its replica only. Per replica:
 * queue/worker limits and the JOB_ENTRIES / JOB_OWNER_ENTRIES admission bounds.
 * Refusals are the local ones (job-rules.ts, job-readers.ts), so both copies answer alike; Redis
 * unreachable → StoreError `store_unavailable`.
 */
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { ResponseObject } from '../../contract/types.ts';
import { defineScripts, storeFailure, waitForReplicas } from '../redis/redis-connection.ts';
import type {
  InputItemPage,
  ListInputItemsOptions,
  ResponseStore,
  StoredHistory,
  StoredItem,
} from '../responses/response-store.ts';
import { eventBytes, type JobEvent } from './job-event-buffer.ts';
import { readersRefusal } from './job-readers.ts';
import {
  CANCEL_WAIT_MS,
  type JobManager,
  type JobObserver,
  type JobRecord,
  type JobSettings,
  type OpenStreamOptions,
} from './job-manager.ts';
import { checkCursor, checkRemovable, continuationHistory, pageHistory } from './job-rules.ts';
import { JOB_SCRIPTS } from './redis-job-scripts.ts';

export const LEASE_MS = 3_000;
export const HEARTBEAT_MS = 500;
/** How long a finished task's admission outcome waits for its creator's confirmAdmission. */
const ADMISSION_KEEP_MS = 60_000;
/** How often a reader on another replica looks for new events. */
const POLL_MS = 50;

type ScriptName = keyof typeof JOB_SCRIPTS;
type Reply = (string | number | Reply)[];
type ScriptClient = Redis & Record<ScriptName, (...args: (string | number)[]) => Promise<Reply | number>>;

/** One of this replica's tasks, watched until Redis holds its end. */
interface Tracked {
  record: JobRecord;
  /** The newest sequence number Redis acknowledged; a smaller `last` read back there means a lost write. */
  sharedLast: number;
  /** Its admission reached Redis: from then on a missing record was lost there. */
  isAdmitted: boolean;
  /** A write of its events failed: the next heartbeat fills the gap. */
  isBehind: boolean;
  /** A repair is queued (one at a time). */
  isRepairing: boolean;
  /** When Redis confirmed the task's end (FINISH, and WAIT with `durable`); 0 = not yet. */
  finishedAt: number;
}

interface SharedRecord {
  id: string;
  scope: string;
  owner: string;
  status: string;
  snapshot: ResponseObject;
  last: number;
  dropped: number;
  isDone: boolean;
  isOwnerAlive: boolean;
  events: string[];
}

export interface RedisJobMirrorOptions {
  client: Redis;
  prefix: string;
  jobs: JobManager;
  settings: Pick<JobSettings, 'EVENT_COUNT' | 'EVENT_BYTES' | 'JOB_TTL_S' | 'STREAM_READERS' | 'STREAM_OWNER_READERS'>;
  /** The store's assembly budget, charged for continuation histories. */
  store: Pick<ResponseStore, 'reserveAssembly'>;
  leaseMs?: number;
  heartbeatMs?: number;
  onError?: (error: unknown) => void;
  /** MAYA_STORE_WAIT_REPLICAS > 0: admissions and task ends run here and wait for that many replicas. */
  durable?: { client: Redis; replicas: number };
}

export class RedisJobMirror implements JobObserver {
  readonly replicaId = randomBytes(8).toString('hex');
  private readonly client: ScriptClient;
  private readonly prefix: string;
  private readonly jobs: JobManager;
  private readonly settings: RedisJobMirrorOptions['settings'];
  private readonly store: RedisJobMirrorOptions['store'];
  private readonly leaseMs: number;
  private readonly heartbeatMs: number;
  private readonly onError: (error: unknown) => void;
  private readonly durable: { client: ScriptClient; replicas: number } | undefined;
  /** Per task, the chain of its pending writes (in event order). */
  private readonly writes = new Map<string, Promise<void>>();
  /** This replica's tasks until Redis confirmed their end (and LEASE_MS after). */
  private readonly tracked = new Map<string, Tracked>();
  /** Each admitted task's first write (record + admission events), until confirmed. */
  private readonly admissions = new Map<string, Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private isTicking = false;

  constructor(options: RedisJobMirrorOptions) {
    this.client = options.client as ScriptClient;
    this.prefix = options.prefix;
    this.jobs = options.jobs;
    this.settings = options.settings;
    this.store = options.store;
    this.leaseMs = options.leaseMs ?? LEASE_MS;
    this.heartbeatMs = options.heartbeatMs ?? HEARTBEAT_MS;
    this.onError = options.onError ?? (() => {});
    this.durable = options.durable && {
      client: options.durable.client as ScriptClient,
      replicas: options.durable.replicas,
    };
    defineScripts([this.client, this.durable?.client], JOB_SCRIPTS);
    this.jobs.observer = this;
  }

  /** Takes the lease and starts the heartbeat. */
  async start(): Promise<void> {
    await this.call(() => this.client.set(this.key('replica', this.replicaId), '1', 'PX', this.leaseMs));
    this.timer = setInterval(() => void this.tick(), this.heartbeatMs);
    this.timer.unref();
  }

  /** Stops the heartbeat after the job manager shut down; flushes pending writes; drops the lease. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await Promise.all([...this.writes.values()]);
    await this.client.del(this.key('replica', this.replicaId), this.key('readers', this.replicaId)).catch(() => {});
  }

  admitted(record: JobRecord): void {
    const tracked: Tracked = {
      record,
      sharedLast: -1,
      isAdmitted: false,
      isBehind: false,
      isRepairing: false,
      finishedAt: 0,
    };
    this.tracked.set(record.id, tracked);
    const events = record.events.retained();
    // Everything is captured now: the writes run later, when the record has moved on.
    const { status } = record;
    const snapshot = JSON.stringify(record.snapshot());
    const admission = this.enqueue(record.id, () => this.admitNow(tracked, status, snapshot, events), true);
    admission.catch(() => {});
    this.admissions.set(record.id, admission);
    record.events.onAppend = (event) => this.enqueue(record.id, () => this.appendNow(tracked, [event]));
  }

  started(record: JobRecord): void {
    const { status } = record;
    const snapshot = JSON.stringify(record.snapshot());
    this.enqueue(
      record.id,
      async () => void (await this.client.mayaJobStatus(this.prefix, record.id, status, snapshot)),
    );
  }

  finished(record: JobRecord): void {
    const tracked = this.tracked.get(record.id);
    if (!tracked) return;
    const done = this.enqueue(record.id, () => this.finishNow(tracked));
    void done.then(() => {
      if (this.writes.get(record.id) === done) this.writes.delete(record.id);
      // A creator that has not confirmed yet still needs the admission's outcome; nobody later does.
      setTimeout(() => this.admissions.delete(record.id), ADMISSION_KEEP_MS).unref();
    });
  }

  /**
   * Resolves once the admitted task's record is in Redis, so other replicas see it before its
   * creator answers; throws StoreError `store_unavailable` when it could not be written.
   */
  async confirmAdmission(id: string): Promise<void> {
    const admission = this.admissions.get(id);
    this.admissions.delete(id);
    await this.call(async () => admission);
  }

  /** The task's snapshot on any replica; undefined when `id` is no task record of `scope`. */
  async snapshot(scope: string, id: string): Promise<ResponseObject | undefined> {
    return (await this.find(scope, id))?.snapshot;
  }

  /** Whether `id` is a task record of `scope` (active or retained), on any replica. */
  async has(scope: string, id: string): Promise<boolean> {
    return (await this.find(scope, id)) !== undefined;
  }

  /**
   * Cancels a task wherever it runs: on this replica directly; on another by the cancel flag its
   * owner picks up within HEARTBEAT_MS, waiting up to `waitMs` for the terminal state.
   */
  async cancel(scope: string, id: string, waitMs = CANCEL_WAIT_MS): Promise<ResponseObject | undefined> {
    const record = await this.find(scope, id);
    if (!record) return undefined;
    if (record.isDone) return record.snapshot;
    if (record.owner === this.replicaId && this.jobs.has(scope, id)) {
      await this.jobs.cancel(scope, id, waitMs);
      await this.writes.get(id);
    } else {
      await this.call(() => this.client.hset(this.key('job', id), 'cancel', '1'));
      const deadline = Date.now() + waitMs;
      while (Date.now() < deadline) {
        const now = await this.find(scope, id);
        if (!now || now.isDone) return now?.snapshot ?? record.snapshot;
        await sleep(POLL_MS);
      }
    }
    return (await this.find(scope, id))?.snapshot ?? record.snapshot;
  }

  /** DELETE: a finished record (true), 409 for an active one, false when unknown. */
  async remove(scope: string, id: string): Promise<boolean> {
    const record = await this.find(scope, id);
    if (!record) return false;
    checkRemovable(record);
    // The local record first: if this replica still runs it (the shared one was marked finished by
    // another replica), that is a 409 and the shared record stays.
    if (this.jobs.has(scope, id)) this.jobs.remove(scope, id);
    this.tracked.delete(id);
    await this.call(() => this.client.del(this.key('job', id), this.key('job', id, 'ev'), this.key('job', id, 'eb')));
    return true;
  }

  /** A finished task's history for previous_response_id (see JobManager.continuationHistory). */
  async continuationHistory(scope: string, id: string): Promise<StoredHistory | undefined> {
    const record = await this.find(scope, id);
    if (!record) return undefined;
    const task = { id, status: record.status, isDone: record.isDone, output: record.snapshot.output };
    return continuationHistory(task, this.store, () => this.history(id));
  }

  /** input_items of a task record, paged like the store's listing. */
  async listInputItems(
    scope: string,
    id: string,
    options: ListInputItemsOptions = {},
  ): Promise<InputItemPage | undefined> {
    if (!(await this.find(scope, id))) return undefined;
    const items = await this.history(id);
    return items && pageHistory(items, options);
  }

  /**
   * The task's events strictly after `startingAfter`, then its new ones until its terminal event,
   * read from Redis (any replica). Same refusals as JobManager.openStream (job-rules.ts
   * checkCursor): 400 future cursor, 410 behind the window, 429 past the reader limits.
   */
  async openStream(
    scope: string,
    id: string,
    startingAfter: number | undefined,
    options: OpenStreamOptions = {},
  ): Promise<AsyncIterable<JobEvent> | undefined> {
    const record = await this.find(scope, id);
    if (!record) return undefined;
    const after = startingAfter ?? -1;
    const behind = checkCursor(id, after, record);
    const lease = options.lease ?? (await this.acquireReader(scope));
    return this.follow(scope, id, after, behind, lease, options.signal);
  }

  /** A reader slot counted on this replica and across all replicas; 429 past either limit. */
  private async acquireReader(scope: string): Promise<{ release(): void }> {
    const local = this.jobs.readers.acquire(scope);
    const { STREAM_READERS, STREAM_OWNER_READERS } = this.settings;
    const count = (delta: number) =>
      this.client.mayaJobReader(
        this.prefix,
        this.replicaId,
        scope,
        delta,
        STREAM_READERS,
        STREAM_OWNER_READERS,
        this.leaseMs,
      );
    let verdict: unknown;
    try {
      verdict = await this.call(() => count(1));
    } catch (error) {
      local.release();
      throw error;
    }
    if (verdict !== 'ok') {
      local.release();
      const reason = verdict === 'readers' ? 'readers' : 'owner_readers';
      this.jobs.metrics.reject(reason);
      throw readersRefusal(reason, reason === 'readers' ? STREAM_READERS : STREAM_OWNER_READERS, ', all replicas');
    }
    let isReleased = false;
    return {
      release: () => {
        if (isReleased) return;
        isReleased = true;
        local.release();
        count(-1).catch((error: unknown) => this.onError(error));
      },
    };
  }

  private async *follow(
    scope: string,
    id: string,
    after: number,
    behind: (dropped: number) => Error,
    lease: { release(): void },
    signal?: AbortSignal,
  ): AsyncGenerator<JobEvent, void, void> {
    let cursor = after;
    try {
      while (!signal?.aborted) {
        const record = await this.read(id, cursor);
        if (!record || record.scope !== scope) return;
        if (cursor < record.dropped) throw behind(record.dropped);
        for (const json of record.events) {
          const event = JSON.parse(json) as JobEvent;
          cursor = event.sequence_number;
          yield event;
        }
        if (record.isDone && cursor >= record.last) return;
        if (!record.isDone && !record.isOwnerAlive) await this.failOrphan(record);
        else if (record.events.length === 0) await sleep(POLL_MS, signal);
      }
    } finally {
      lease.release();
    }
  }

  /** The record of `id` if it belongs to `scope`, failing it first when its owner is gone. */
  private async find(scope: string, id: string): Promise<SharedRecord | undefined> {
    let record = await this.read(id, -2);
    if (record && !record.isDone && !record.isOwnerAlive) {
      await this.failOrphan(record);
      record = await this.read(id, -2);
    }
    return record?.scope === scope ? record : undefined;
  }

  private async read(id: string, after: number): Promise<SharedRecord | undefined> {
    const reply = (await this.call(() => this.client.mayaJobRead(this.prefix, id, after))) as Reply;
    if (reply.length === 0) return undefined;
    const [scope, owner, status, snapshot, last, dropped, done, , alive, events] = reply as [
      string,
      string,
      string,
      string,
      string,
      string,
      string,
      string,
      number,
      string[],
    ];
    const parsed = JSON.parse(snapshot) as ResponseObject;
    return {
      id,
      scope,
      owner,
      status,
      snapshot: { ...parsed, status: status as ResponseObject['status'] },
      last: Number(last),
      dropped: Number(dropped),
      isDone: done === '1',
      isOwnerAlive: Number(alive) === 1,
      events,
    };
  }

  private async history(id: string): Promise<StoredItem[] | undefined> {
    const json = await this.call(() => this.client.hget(this.key('job', id), 'history'));
    return json === null ? undefined : (JSON.parse(json) as StoredItem[]);
  }

  /** Marks a task failed whose owner's lease is gone (once, whichever replica gets there first). */
  private async failOrphan(record: SharedRecord): Promise<void> {
    const error = {
      code: 'server_error',
      message: 'The replica running this background task stopped (its lease expired) before the task finished.',
      type: 'server_error',
    };
    const failed = {
      ...record.snapshot,
      status: 'failed',
      error,
      output: [],
      completed_at: Math.floor(Date.now() / 1000),
    };
    const event = { type: 'response.failed', sequence_number: record.last + 1, response: failed };
    await this.call(() =>
      this.client.mayaJobFailOrphan(
        this.prefix,
        record.id,
        record.last,
        JSON.stringify(failed),
        JSON.stringify(event),
        eventBytes(event),
        this.settings.EVENT_COUNT,
        this.settings.EVENT_BYTES,
        this.settings.JOB_TTL_S * 1000,
      ),
    );
  }

  /** Heartbeat: renew the lease, check this replica's tasks against Redis (cancels, repairs), fail orphaned tasks. */
  private async tick(): Promise<void> {
    if (this.isTicking) return;
    this.isTicking = true;
    try {
      await this.client.set(this.key('replica', this.replicaId), '1', 'PX', this.leaseMs);
      await this.client.pexpire(this.key('readers', this.replicaId), this.leaseMs);
      for (const tracked of [...this.tracked.values()]) await this.check(tracked);
      for (const id of await this.client.smembers(this.key('jobs', 'active'))) {
        if (this.tracked.has(id)) continue;
        const record = await this.read(id, -2);
        if (record && !record.isDone && !record.isOwnerAlive) await this.failOrphan(record);
      }
    } catch (error) {
      this.onError(error);
    } finally {
      this.isTicking = false;
    }
  }

  /**
   * One of this replica's tasks against its shared record: a cancel from another replica; a
   * record Redis lost (re-admitted while the task runs; a finished one is left to the store);
   * events missing there; an end not yet (or no longer) there. Repairs queue behind the task's
   * pending writes.
   */
  private async check(tracked: Tracked): Promise<void> {
    const { record } = tracked;
    if (!tracked.isAdmitted || tracked.isRepairing) return;
    const [last, done, cancel] = await this.client.hmget(this.key('job', record.id), 'last', 'done', 'cancel');
    const isRunning = record.state !== 'done';
    if (isRunning && cancel === '1') void this.jobs.cancel(record.scope, record.id, 0);
    if (last === null) {
      if (!isRunning) this.tracked.delete(record.id);
      else
        this.repair(tracked, () =>
          this.admitNow(
            tracked,
            record.status,
            JSON.stringify(record.snapshot()),
            record.events.retained(),
            record.events.droppedThrough,
          ),
        );
    } else if (isRunning) {
      if (done === '0' && (tracked.isBehind || Number(last) < tracked.sharedLast)) {
        tracked.sharedLast = Math.min(tracked.sharedLast, Number(last));
        this.repair(tracked, () => this.appendNow(tracked, []));
      }
    } else if (tracked.finishedAt === 0 || done !== '1') {
      tracked.finishedAt = 0;
      tracked.sharedLast = Math.min(tracked.sharedLast, Number(last));
      this.repair(tracked, () => this.finishNow(tracked));
    } else if (Date.now() - tracked.finishedAt > this.leaseMs) {
      this.tracked.delete(record.id);
    }
  }

  /** Queues one repair of `tracked` behind its pending writes. */
  private repair(tracked: Tracked, write: () => Promise<void>): void {
    const { id } = tracked.record;
    tracked.isRepairing = true;
    tracked.isBehind = false;
    const repaired = this.enqueue(id, write);
    void repaired.finally(() => {
      tracked.isRepairing = false;
      if (this.writes.get(id) === repaired && tracked.record.state === 'done') this.writes.delete(id);
    });
  }

  /** (Re-)creates the shared record with `events` (the retained ones), on the durable connection when set. */
  private async admitNow(
    tracked: Tracked,
    status: string,
    snapshot: string,
    events: JobEvent[],
    dropped = -1,
  ): Promise<void> {
    const { record } = tracked;
    const client = this.durable?.client ?? this.client;
    const history = JSON.stringify(record.historyItems);
    await client.mayaJobAdmit(this.prefix, record.id, record.scope, this.replicaId, snapshot, history, status, dropped);
    tracked.sharedLast = dropped;
    await this.appendNow(tracked, events, client);
    if (this.durable) await waitForReplicas(this.durable.client, this.durable.replicas);
    tracked.isAdmitted = true;
  }

  /**
   * Appends `events` (none: whatever Redis's log misses); when the log stops short of them (a
   * write was lost), first what it misses from this replica's buffer. A failure marks the task
   * behind, for the next heartbeat.
   */
  private async appendNow(tracked: Tracked, events: JobEvent[], client = this.client): Promise<void> {
    const { record } = tracked;
    const { EVENT_COUNT, EVENT_BYTES } = this.settings;
    const append = (batch: JobEvent[]) =>
      client.mayaJobAppend(this.prefix, record.id, EVENT_COUNT, EVENT_BYTES, ...triples(batch)) as Promise<Reply>;
    try {
      let reply = await append(events);
      if (reply[0] === 'gap' || (events.length === 0 && reply[0] === 'ok')) {
        reply = await append(record.events.retained().filter((event) => event.sequence_number > Number(reply[1])));
      }
      if (reply[0] === 'gap')
        throw new Error(`the shared event log of ${record.id} misses events this replica no longer holds`);
      tracked.sharedLast = Math.max(tracked.sharedLast, Number(reply[1]));
    } catch (error) {
      tracked.isBehind = true;
      throw error;
    }
  }

  /** Ends the shared record with the task's final state and whatever events it still misses. */
  private async finishNow(tracked: Tracked): Promise<void> {
    const { record } = tracked;
    const client = this.durable?.client ?? this.client;
    const { EVENT_COUNT, EVENT_BYTES, JOB_TTL_S } = this.settings;
    const snapshot = JSON.stringify(record.snapshot());
    for (let attempt = 0; attempt < 3; attempt++) {
      const missing = record.events.retained().filter((event) => event.sequence_number > tracked.sharedLast);
      const reply = (await client.mayaJobFinish(
        this.prefix,
        record.id,
        record.status,
        snapshot,
        JOB_TTL_S * 1000,
        EVENT_COUNT,
        EVENT_BYTES,
        record.events.lastSequence,
        ...triples(missing),
      )) as Reply;
      // A record Redis lost after the task ended: its stored response (if any) is what remains.
      if (reply[0] === 'missing') return void this.tracked.delete(record.id);
      tracked.sharedLast = Number(reply[1]);
      if (reply[0] === 'gap') continue;
      if (this.durable) await waitForReplicas(this.durable.client, this.durable.replicas);
      tracked.finishedAt = Date.now();
      return;
    }
  }

  /** Chains `write` after the task's earlier writes; a failure is reported, and rethrown when `isReported`. */
  private enqueue(id: string, write: () => Promise<void>, isReported = false): Promise<void> {
    const attempt = (this.writes.get(id) ?? Promise.resolve()).then(write);
    const next = attempt.catch((error: unknown) => this.onError(error));
    this.writes.set(id, next);
    return isReported ? attempt : next;
  }

  private async call<T>(run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      throw storeFailure(error);
    }
  }

  private key(...parts: string[]): string {
    return this.prefix + parts.join(':');
  }
}

/** Events as APPEND/FINISH arguments: sequence number, JSON, bytes. */
function triples(events: JobEvent[]): (string | number)[] {
  return events.flatMap((event) => {
    const json = JSON.stringify(event);
    return [event.sequence_number, json, Buffer.byteLength(json)];
  });
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

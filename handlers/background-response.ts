/**
 * Background responses (`background:true`, explicit `store:true`): hands a prepared request to
 * the job manager and answers with the queued Response, or attaches to its live event stream;
 * and the job paths of the resource endpoints: retrieval (snapshot or resumable event stream)
 * and deletion of a job record. The job manager (store/jobs/job-manager.ts) owns the rules; these
 * functions only translate between HTTP and it.
 */
import type { AppDeps, MayaContext } from './app-deps.ts';
import { unavailable } from '../contract/errors.ts';
import { streamSse } from './sse.ts';
import type { PreparedResponse } from './create-response.ts';
import type { GetResponseQuery } from '../contract/types.ts';
import { runResponse } from '../responses/run-response.ts';
import type { ResponseObject } from '../responses/response-object.ts';
import type { JobManager, JobSpec } from '../store/jobs/job-manager.ts';
import type { ReaderLease } from '../store/jobs/job-readers.ts';
import type { StoredItem } from '../store/responses/response-store.ts';

function jobSpec(prepared: PreparedResponse): JobSpec {
  const { runtime, plan, response, request } = prepared;
  return {
    response,
    historyItems: [...(prepared.previous?.items ?? []), ...prepared.newItems] as StoredItem[],
    run: ({ signal, sequencer, beforeTerminal }) => runResponse(runtime, plan, response, { signal, beforeTerminal, seed: request.seed }, sequencer),
    save: prepared.save,
    release: () => prepared.previous?.release(),
  };
}

/**
 * createResponse with `background:true`: 200 with the queued Response, or (stream:true) the
 * task's event stream from `response.created` on. The task runs on regardless of this
 * connection. 413/429/503 from admission are answered before anything is queued.
 */
export async function startBackgroundResponse(ctx: MayaContext, deps: AppDeps, prepared: PreparedResponse): Promise<void> {
  const jobs = deps.jobs;
  let lease: ReaderLease | undefined;
  let queued: ResponseObject;
  try {
    if (!jobs) throw unavailable('Background responses are not available on this server.', 'background_unavailable');
    if (prepared.request.stream) lease = jobs.readers.acquire(prepared.scope);
    queued = jobs.submit(prepared.scope, jobSpec(prepared));
  } catch (error) {
    lease?.release();
    prepared.previous?.release();
    throw error;
  }
  if (!lease) {
    ctx.body = queued;
    return;
  }
  await streamJob(ctx, deps, jobs!, queued.id, undefined, lease);
}

/**
 * Streams a job's events after `startingAfter` as SSE; false (nothing written) when `id` is not a
 * job record of the caller. Cursor and reader-limit errors are thrown before the headers.
 */
async function streamJob(ctx: MayaContext, deps: AppDeps, jobs: JobManager, id: string, startingAfter: number | undefined, lease?: ReaderLease): Promise<boolean> {
  const disconnect = new AbortController();
  const events = jobs.openStream(ctx.state.scope, id, startingAfter, { signal: disconnect.signal, lease });
  if (!events) {
    lease?.release();
    return false;
  }
  await streamSse(ctx, events, { onDisconnect: disconnect, writeTimeoutMs: deps.settings.STREAM_TIMEOUT_S * 1000 });
  return true;
}

/**
 * getResponse's job path: when `response_id` is a job record of the caller, answers its current
 * snapshot, or with `stream=true` its events strictly after `starting_after` (all retained
 * events without it), and returns true. Returns false for ids the job manager does not hold;
 * getResponse then answers from the store (404, or 409 for stream=true).
 */
export async function getBackgroundResponse(ctx: MayaContext, deps: AppDeps): Promise<boolean> {
  const jobs = deps.jobs;
  const id = ctx.state.params.response_id as string;
  if (!jobs?.has(ctx.state.scope, id)) return false;
  const query = ctx.state.query as GetResponseQuery;
  if (query.stream === true) return streamJob(ctx, deps, jobs, id, query.starting_after);
  const snapshot = jobs.snapshot(ctx.state.scope, id);
  if (!snapshot) return false;
  ctx.body = snapshot;
  return true;
}

/**
 * deleteResponse's job path: 409 while the caller's task is queued or running; true when a
 * finished record was removed (the store's copy is deleted by deleteResponse as usual).
 */
export function deleteBackgroundRecord(ctx: MayaContext, deps: AppDeps): boolean {
  return deps.jobs?.remove(ctx.state.scope, ctx.state.params.response_id as string) ?? false;
}

/**
 * createResponse (POST /v1/responses): a validated, supported request → the Response object as
 * JSON, or its event stream as SSE. `background:true` requests are prepared the same way and
 * handed to the job manager (handlers/background-response.ts). The request has already passed
 * schema validation and the rejection table; everything else that can be a 400 is found by
 * planResponse before any engine work is queued.
 */
import type { AppDeps, Handler, MayaContext } from './app-deps.ts';
import { badRequest, fromStoreError, notFound, tooLarge, unavailable } from '../contract/errors.ts';
import { streamSse } from './sse.ts';
import type { CreateResponseBody } from '../contract/types.ts';
import { startBackgroundResponse } from './background-response.ts';
import type { ModelRuntime } from '../runtime/model-runtime.ts';
import { newId } from '../responses/ids.ts';
import { normaliseInput, type HistoryItem } from '../responses/input-history.ts';
import { newResponseObject, type ResponseObject } from '../responses/response-object.ts';
import { planResponse, withSamplingDefaults, type PlanRequest, type ResponsePlan } from '../responses/response-plan.ts';
import { runResponse } from '../responses/run-response.ts';
import type { StoredHistory } from '../store/responses/response-store.ts';

export type CreateRequest = PlanRequest & { input?: string | Record<string, unknown>[]; stream?: boolean; background?: boolean; store?: boolean };

/** A request ready to run: everything a foreground run or a background job needs. */
export interface PreparedResponse {
  scope: string;
  request: CreateRequest;
  runtime: ModelRuntime;
  plan: ResponsePlan;
  /** The Response object the run fills in (status queued or in_progress). */
  response: ResponseObject;
  /** This turn's input items with their ids. */
  newItems: HistoryItem[];
  /** The continued response's history (its bytes are reserved until release). */
  previous?: StoredHistory;
  /** Saves the final response (store:true); undefined when nothing is stored. */
  save?: (final: ResponseObject) => Promise<void>;
}

/** The continued response's history (404 for unknown, expired, deleted or other-key ids). */
async function previousHistory(ctx: MayaContext, deps: AppDeps, id: string | null | undefined): Promise<StoredHistory | undefined> {
  if (!id) return undefined;
  const fromJobs = await deps.jobs?.continuationHistory(ctx.state.scope, id);
  if (fromJobs) return fromJobs;
  const history = await deps.store.history(ctx.state.scope, id).catch((error: unknown) => { throw fromStoreError(error); });
  if (!history) throw notFound('response', id, 'previous_response_id');
  return history;
}

/**
 * A response that will be stored must be storable: unique item ids, and an expanded snapshot
 * within ENTRY_BYTES. Checked before generation so the model never runs for a refused save.
 */
function checkStorable(history: HistoryItem[], newItems: HistoryItem[], previous: StoredHistory | undefined, entryBytes: number): void {
  const seen = new Set<string>();
  history.forEach((item, index) => {
    if (seen.has(item.id)) throw badRequest(`input[${Math.max(0, index - (previous?.items.length ?? 0))}].id`, `Item id '${item.id}' appears twice in the conversation history.`, 'duplicate_item');
    seen.add(item.id);
  });
  const bytes = (previous?.bytes ?? 0) + Buffer.byteLength(JSON.stringify(newItems));
  if (bytes > entryBytes) throw tooLarge(`The conversation history (${bytes} bytes) exceeds the stored-response limit of ${entryBytes} bytes.`, 'snapshot_too_large', 'input');
}

async function prepare(ctx: MayaContext, deps: AppDeps, runtime: ModelRuntime): Promise<PreparedResponse> {
  const request = withSamplingDefaults(runtime, ctx.state.body as CreateResponseBody as unknown as CreateRequest);
  const scope = ctx.state.scope;
  const previous = await previousHistory(ctx, deps, request.previous_response_id);
  try {
    const newItems = normaliseInput(request.input ?? []);
    const history: HistoryItem[] = [...((previous?.items ?? []) as HistoryItem[]), ...newItems];
    if (request.store) checkStorable(history, newItems, previous, deps.settings.ENTRY_BYTES);
    const plan = planResponse(runtime, request, history, -(previous?.items.length ?? 0));
    const response = newResponseObject(request, newId('resp'), runtime.id, request.background ? 'queued' : 'in_progress');
    const save = request.store === true
      ? (final: ResponseObject) => deps.store.put(scope, { response: final as never, inputItems: newItems as never, previous }).catch((error: unknown) => { throw fromStoreError(error); })
      : undefined;
    return { scope, request, runtime, plan, response, newItems, previous, save };
  } catch (error) {
    previous?.release();
    throw error;
  }
}

export const createResponse: Handler = async (ctx, deps) => {
  const runtime = deps.getRuntime();
  if (!runtime) throw unavailable('The model is still loading.', 'model_loading', 5);
  const prepared = await prepare(ctx, deps, runtime);
  if (prepared.request.background) return startBackgroundResponse(ctx, deps, prepared);
  try {
    const disconnect = new AbortController();
    const events = runResponse(runtime, prepared.plan, prepared.response, { signal: disconnect.signal, beforeTerminal: prepared.save, seed: prepared.request.seed });
    if (prepared.request.stream) {
      await streamSse(ctx, events, { onDisconnect: disconnect });
      return;
    }
    ctx.res.once('close', () => { if (!ctx.res.writableFinished) disconnect.abort(); });
    let step = await events.next();
    while (!step.done) step = await events.next();
    ctx.body = step.value;
  } finally {
    prepared.previous?.release();
  }
};

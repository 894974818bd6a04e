/**
 * The Responses service: everything between a validated request and its result, with plain inputs
 * (the caller's scope, the request body, an abort signal) and no HTTP. Handlers translate HTTP to
 * these functions and back; the CLI builds the dependencies once.
 *
 * - createResponse: the loaded model or 503 → continued history → storage limits → plan → the
 *   Response object → a foreground run (events to drain or stream) or a queued background task.
 * - startTranslatedRun: the same plan and run for a request translated from another API
 *   (chat-completions.ts translates Chat Completions onto it, anthropic-messages.ts Anthropic's
 *   Messages API); countTranslatedTokens: the same plan's prompt size, without a run.
 * - The resource operations (retrieve, stream, delete, cancel, input items, continuation) find a
 *   response id in one place, `taskRecords`: a background task's record first (it is the newer and
 *   fuller copy while it is retained), then the store.
 */
import { conflict, badRequest, notFound, tooLarge, unavailable } from '../contract/errors.ts';
import { drainEvents, type EventSequencer, type StreamEvent } from '../contract/stream-events.ts';
import type { McpTool as McpToolParam, ResponseObject } from '../contract/types.ts';
import type { ImageSettings, ResponsesOptIns, ResponsesSettings } from '../config/settings.ts';
import type { ModelRuntime } from '../runtime/model-runtime.ts';
import type { McpServers } from '../mcp/mcp-servers.ts';
import type { JobManager, JobSpec } from '../store/jobs/job-manager.ts';
import type { JobEvent } from '../store/jobs/job-event-buffer.ts';
import type { RedisJobMirror } from '../store/jobs/redis-job-mirror.ts';
import type { ReaderLease } from '../store/jobs/job-readers.ts';
import type {
  InputItemPage,
  ListInputItemsOptions,
  ResponseStore,
  StoredHistory,
  StoredResponse,
} from '../store/responses/response-store.ts';
import { indexStoredItems, reasoningSealer, resolveInput } from './client-features.ts';
import type { ReasoningContent } from './encrypted-reasoning.ts';
import { newId } from './ids.ts';
import { normaliseInput, type HistoryItem } from './input-history.ts';
import { newResponseObject } from './response-object.ts';
import { planResponseAsync, withSamplingDefaults, type PlanRequest, type ResponsePlan } from './response-plan.ts';
import { runResponse, type RunHooks } from './run-response.ts';
import type { Registry } from 'prom-client';
import { generationMetrics } from '../metrics/generation-metrics.ts';
import { runToolLoop, type HostedTools, type PlanRound } from './tool-loop.ts';
import { prepareMcpRun, type McpRun } from './mcp-responses.ts';

export interface ServiceDeps {
  readonly store: ResponseStore;
  /** Background tasks; absent where the server runs none. */
  readonly jobs?: JobManager;
  /**
   * Background task records shared by replicas (MAYA_STORE_URL): when present, every lookup of a
   * task goes through it, so all replicas answer alike; tasks still run on `jobs`.
   */
  readonly sharedJobs?: RedisJobMirror;
  readonly settings: Pick<ResponsesSettings, 'ENTRY_BYTES'>;
  /** The loaded model, or undefined while it is still loading. */
  readonly getRuntime: () => ModelRuntime | undefined;
  /** True once shutdown began: nothing new is generated (503 shutting_down). */
  readonly isStopping?: () => boolean;
  /** Where `maya:time_to_first_token_seconds` is recorded; absent = nowhere. */
  readonly registry?: Registry;
  /** The operator's MCP servers (MAYA_MCP_CONFIG); absent when none are configured. */
  readonly mcp?: McpServers;
  /** Server settings the service reads: the opt-in features (item references, encrypted reasoning; absent = all off) and the input-image limits (absent = the defaults). */
  readonly server?: { readonly optIns?: ResponsesOptIns; readonly images?: ImageSettings };
}

/** The validated CreateResponse fields the service reads; `tools` may hold `mcp` tools (MAYA_GLM_RESPONSES_MCP). */
export type CreateRequest = Omit<PlanRequest, 'tools'> & {
  tools?: Array<NonNullable<PlanRequest['tools']>[number] | McpToolParam>;
  input?: string | Record<string, unknown>[];
  stream?: boolean | null;
  background?: boolean | null;
  store?: boolean | null;
  include?: string[] | null;
};

/** A created response: a foreground run to drain or stream, or a queued background task. */
export type Created =
  | { kind: 'foreground'; stream: boolean; events: AsyncGenerator<StreamEvent, ResponseObject, void> }
  | { kind: 'queued'; response: ResponseObject }
  | { kind: 'attached'; events: AsyncIterable<JobEvent> };

/** The loaded model, or 503 `model_loading` (Retry-After: 5) while it is still loading. */
export function requireRuntime(deps: Pick<ServiceDeps, 'getRuntime' | 'isStopping'>): ModelRuntime {
  if (deps.isStopping?.() === true) {
    throw unavailable(
      'The server is shutting down; retry on another instance or after it restarts.',
      'shutting_down',
      1,
    );
  }
  const runtime = deps.getRuntime();
  if (runtime === undefined) throw unavailable('The model is still loading; retry shortly.', 'model_loading', 5);
  return runtime;
}

/** Drains a run to its final Response (the JSON answers of both creation endpoints). */
export function runToEnd(events: AsyncGenerator<StreamEvent, ResponseObject, void>): Promise<ResponseObject> {
  return drainEvents(events);
}

/** What the resource operations ask of background-task records (this process's, or shared through Redis). */
interface TaskRecords {
  snapshot(scope: string, id: string): ResponseObject | undefined | Promise<ResponseObject | undefined>;
  continuationHistory(scope: string, id: string): Promise<StoredHistory | undefined>;
  openStream(
    scope: string,
    id: string,
    startingAfter: number | undefined,
    options: { signal: AbortSignal },
  ): AsyncIterable<JobEvent> | undefined | Promise<AsyncIterable<JobEvent> | undefined>;
  remove(scope: string, id: string): boolean | Promise<boolean>;
  cancel(scope: string, id: string): Promise<ResponseObject | undefined>;
  listInputItems(
    scope: string,
    id: string,
    options: ListInputItemsOptions,
  ): InputItemPage | undefined | Promise<InputItemPage | undefined>;
}

/**
 * The one lookup of a response id: the task records to ask first (replicas sharing Redis ask the
 * shared ones, which answer undefined for ids they do not hold; otherwise this process's job
 * manager when it holds `id` for `scope`), then the store, which answers undefined for unknown,
 * expired, deleted and other-scope ids.
 */
function taskRecords(deps: ServiceDeps, scope: string, id: string): TaskRecords | undefined {
  if (deps.sharedJobs) return deps.sharedJobs;
  return deps.jobs?.has(scope, id) === true ? deps.jobs : undefined;
}

/** A request ready to run: everything a foreground run or a background task needs. */
interface PreparedResponse {
  scope: string;
  request: CreateRequest;
  runtime: ModelRuntime;
  plan: ResponsePlan;
  /** The Response object the run fills in (status queued or in_progress). */
  response: ResponseObject;
  /** This turn's input items with their ids. */
  newItems: HistoryItem[];
  /** The continued response's history (its bytes are reserved until released). */
  previous?: StoredHistory;
  /** Saves the final response (store:true); undefined when nothing is stored. */
  save?: (final: ResponseObject) => Promise<void>;
  /** Seals reasoning output as `encrypted_content` (include reasoning.encrypted_content). */
  sealReasoning?: (content: ReasoningContent) => string;
  /** Records the run's time to first token (ServiceDeps.registry). */
  onFirstToken?: (seconds: number) => void;
  /** The request's mcp tools (MAYA_GLM_RESPONSES_MCP): the run is a tool loop. */
  tools?: { run: McpRun; planRound: PlanRound };
}

/**
 * createResponse. `signal` stops a foreground run (the client went away) or ends an attached
 * background stream without touching the task. A foreground run's events must be iterated
 * (drained or streamed): the continued history's reservation is released when they end.
 */
export async function createResponse(
  deps: ServiceDeps,
  scope: string,
  body: CreateRequest,
  signal: AbortSignal,
): Promise<Created> {
  const prepared = await prepare(deps, scope, body, requireRuntime(deps), signal);
  if (prepared.request.background) return startBackground(deps, prepared, signal);
  return { kind: 'foreground', stream: prepared.request.stream === true, events: runForeground(prepared, signal) };
}

async function* runForeground(
  prepared: PreparedResponse,
  signal: AbortSignal,
): AsyncGenerator<StreamEvent, ResponseObject, void> {
  try {
    return yield* run(prepared, { signal, beforeTerminal: prepared.save });
  } finally {
    prepared.previous?.release();
  }
}

/** The prepared run: one runResponse, or the tool loop when the request has mcp tools. */
function run(
  prepared: PreparedResponse,
  hooks: { signal: AbortSignal; beforeTerminal?: (response: ResponseObject) => Promise<void> },
  sequencer?: EventSequencer,
): AsyncGenerator<StreamEvent, ResponseObject, void> {
  const { runtime, plan, response, request, sealReasoning, onFirstToken, tools } = prepared;
  const all = { ...hooks, seed: request.seed, sealReasoning, onFirstToken };
  if (!tools) return runResponse(runtime, plan, response, all, sequencer);
  const loop = { ...all, prelude: tools.run.prelude, maxOutputTokens: request.max_output_tokens ?? undefined };
  return runToolLoop(runtime, plan, tools.planRound, response, tools.run.hosted, loop, sequencer);
}

async function prepare(
  deps: ServiceDeps,
  scope: string,
  body: CreateRequest,
  runtime: ModelRuntime,
  signal: AbortSignal,
): Promise<PreparedResponse> {
  const request = withSamplingDefaults(runtime, body);
  const previous = request.previous_response_id
    ? await continuation(deps, scope, request.previous_response_id)
    : undefined;
  try {
    const newItems = normaliseInput(await resolveInput(deps, scope, request.input ?? []));
    const history: HistoryItem[] = [...((previous?.items ?? []) as HistoryItem[]), ...newItems];
    if (request.store) checkStorable(history, newItems, previous, deps.settings.ENTRY_BYTES);
    const mcpRun =
      deps.server?.optIns?.mcp === true
        ? await prepareMcpRun(deps.mcp, request.tools ?? [], history, newItems, signal)
        : undefined;
    const planRequest: PlanRequest = {
      ...request,
      tools: [...functionTools(request), ...(mcpRun?.hosted.tools ?? [])],
    };
    const planHistory = mcpRun?.history ?? history;
    const offset = -(previous?.items.length ?? 0);
    const options = { ...(deps.server?.images ? { images: deps.server.images } : {}), signal };
    const plan = await planResponseAsync(runtime, planRequest, planHistory, offset, options);
    const planRound: PlanRound = (extra, maxOutputTokens) =>
      planResponseAsync(
        runtime,
        { ...planRequest, max_output_tokens: maxOutputTokens },
        [...planHistory, ...extra],
        offset,
        options,
      );
    const response = newResponseObject(
      request,
      newId('resp'),
      runtime.id,
      request.background ? 'queued' : 'in_progress',
    );
    const save = request.store === true ? saver(deps, scope, newItems, previous) : undefined;
    const sealReasoning = reasoningSealer(deps, scope, request);
    const onFirstToken = firstTokenObserver(deps);
    const tools = mcpRun ? { run: mcpRun, planRound } : undefined;
    return { scope, request, runtime, plan, response, newItems, previous, save, sealReasoning, onFirstToken, tools };
  } catch (error) {
    previous?.release();
    throw error;
  }
}

/** The request's function tools (its mcp tools are hosted ones: prepareMcpRun). */
function functionTools(request: CreateRequest): NonNullable<PlanRequest['tools']> {
  return (request.tools ?? []).filter(
    (tool): tool is NonNullable<PlanRequest['tools']>[number] => tool.type === 'function',
  );
}

/** Stores the final response; with item references on, indexes its items for later references. */
function saver(
  deps: ServiceDeps,
  scope: string,
  newItems: HistoryItem[],
  previous: StoredHistory | undefined,
): (final: ResponseObject) => Promise<void> {
  return async (final) => {
    await deps.store.put(scope, { response: final, inputItems: newItems, previous });
    indexStoredItems(deps, scope, final.id, [...(previous?.items ?? []), ...newItems, ...final.output]);
  };
}

/** The continued response's history (404 for unknown, expired, deleted or other-key ids). */
async function continuation(deps: ServiceDeps, scope: string, id: string): Promise<StoredHistory> {
  const fromJobs = await taskRecords(deps, scope, id)?.continuationHistory(scope, id);
  const history = fromJobs ?? (await deps.store.history(scope, id));
  if (!history) throw notFound('response', id, 'previous_response_id');
  return history;
}

/**
 * A response that will be stored must be storable: unique item ids, and an expanded snapshot
 * within ENTRY_BYTES. Checked before generation so the model never runs for a refused save.
 */
function checkStorable(
  history: HistoryItem[],
  newItems: HistoryItem[],
  previous: StoredHistory | undefined,
  entryBytes: number,
): void {
  const seen = new Set<string>();
  const previousCount = previous?.items.length ?? 0;
  history.forEach((item, index) => {
    if (seen.has(item.id)) {
      const param = `input[${Math.max(0, index - previousCount)}].id`;
      throw badRequest(param, `Item id '${item.id}' appears twice in the conversation history.`, 'duplicate_item');
    }
    seen.add(item.id);
  });
  const bytes = (previous?.bytes ?? 0) + Buffer.byteLength(JSON.stringify(newItems));
  if (bytes > entryBytes) {
    throw tooLarge(
      `The conversation history (${bytes} bytes) exceeds the stored-response limit of ${entryBytes} bytes.`,
      'snapshot_too_large',
      'input',
    );
  }
}

/**
 * `background:true`: hands the prepared request to the job manager. With stream:true a reader slot
 * is taken first (429 before anything is queued) and the task's events are returned from
 * `response.created` on; the task runs on whatever happens to that reader.
 */
async function startBackground(deps: ServiceDeps, prepared: PreparedResponse, signal: AbortSignal): Promise<Created> {
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
  // With shared task records, answer only once other replicas can see the task (else 503, task cancelled).
  try {
    await deps.sharedJobs?.confirmAdmission(queued.id);
  } catch (error) {
    lease?.release();
    await jobs.cancel(prepared.scope, queued.id);
    throw error;
  }
  const events = lease ? jobs.openStream(prepared.scope, queued.id, undefined, { signal, lease }) : undefined;
  if (events) return { kind: 'attached', events };
  // No stream asked for, or the record already went (it finished and was evicted meanwhile): the
  // queued snapshot, and the reader slot goes back.
  lease?.release();
  return { kind: 'queued', response: queued };
}

function jobSpec(prepared: PreparedResponse): JobSpec {
  const { response } = prepared;
  return {
    response,
    historyItems: [...(prepared.previous?.items ?? []), ...prepared.newItems],
    run: ({ signal, sequencer, beforeTerminal }) => run(prepared, { signal, beforeTerminal }, sequencer),
    save: prepared.save,
    release: () => prepared.previous?.release(),
  };
}

/** getResponse: the caller's task snapshot (queued, running or retained) or stored response; 404 otherwise. */
export async function retrieveResponse(
  deps: ServiceDeps,
  scope: string,
  id: string,
): Promise<ResponseObject | StoredResponse> {
  const snapshot = await taskRecords(deps, scope, id)?.snapshot(scope, id);
  const found = snapshot ?? (await deps.store.get(scope, id));
  if (!found) throw notFound('response', id);
  return found;
}

/**
 * getResponse with stream=true: a background task's retained events strictly after
 * `startingAfter`. A stored response without a retained event record is 409 (retrieve it
 * without stream), never an empty stream; unknown ids are 404.
 */
export async function streamResponse(
  deps: ServiceDeps,
  scope: string,
  id: string,
  startingAfter: number | undefined,
  signal: AbortSignal,
): Promise<AsyncIterable<JobEvent>> {
  const events = await taskRecords(deps, scope, id)?.openStream(scope, id, startingAfter, { signal });
  if (events) return events;
  if (!(await deps.store.get(scope, id))) throw notFound('response', id);
  throw conflict(
    `Response '${id}' has no retained event stream; retrieve it without stream=true.`,
    'stream_not_available',
    'stream',
  );
}

/**
 * deleteResponse: removes the caller's finished task record (409 while it is active) and its
 * stored copy; 404 when neither existed.
 */
export async function deleteResponse(deps: ServiceDeps, scope: string, id: string): Promise<void> {
  const isRecordDeleted = (await taskRecords(deps, scope, id)?.remove(scope, id)) === true;
  if (!(await deps.store.delete(scope, id)) && !isRecordDeleted) throw notFound('response', id);
}

/**
 * cancelResponse: cancels the caller's background task (queued: removed at once; running:
 * signalled, waiting up to five seconds for its cleanup) and answers its snapshot. A stored
 * response created without background → 400; a finished one whose record expired answers its
 * final state; unknown ids → 404.
 */
export async function cancelResponse(
  deps: ServiceDeps,
  scope: string,
  id: string,
): Promise<ResponseObject | StoredResponse> {
  const snapshot = await taskRecords(deps, scope, id)?.cancel(scope, id);
  if (snapshot) return snapshot;
  const stored = await deps.store.get(scope, id);
  if (!stored) throw notFound('response', id);
  if (stored.background !== true) {
    throw badRequest(
      null,
      `Response '${id}' was not created with background=true; only background responses can be cancelled.`,
      'not_background',
    );
  }
  return stored;
}

/** listInputItems: one page of the response's input history (a running task's too). */
export async function listInputItems(
  deps: ServiceDeps,
  scope: string,
  id: string,
  options: ListInputItemsOptions,
): Promise<InputItemPage> {
  const fromJobs = await taskRecords(deps, scope, id)?.listInputItems(scope, id, options);
  const page = fromJobs ?? (await deps.store.listInputItems(scope, id, options));
  if (!page) throw notFound('response', id);
  return page;
}

/** Records a run's time to first token on the app's registry (generation-metrics.ts); none without one. */
export function firstTokenObserver(deps: Pick<ServiceDeps, 'registry'>): ((seconds: number) => void) | undefined {
  return deps.registry ? generationMetrics(deps.registry).observeFirstToken : undefined;
}

/** What a translated run may add to its plan and run: input-image limits, run hooks, hosted tools, progress. */
export interface TranslatedRunOptions {
  /** Input-image limits (vision models); absent = the defaults. */
  images?: ImageSettings;
  /** Sealing of reasoning output, the stop-sequence report, the time to first token (firstTokenObserver). */
  hooks?: Pick<RunHooks, 'sealReasoning' | 'onStopSequence' | 'onFirstToken'>;
  /** Tools the server runs (MCP), offered beside the request's own: the run is a tool loop (tool-loop.ts). */
  hosted?: HostedTools;
  /** Internal `maya.prompt_progress` events while the prompt is prefilled (run-response.ts). */
  reportProgress?: boolean;
}

/** A started translated run: its Response, its events, and the prompt and output budget it was planned with. */
export interface TranslatedRun {
  response: ResponseObject;
  events: AsyncGenerator<StreamEvent, ResponseObject, void>;
  /** Prompt tokens (images included). */
  promptTokens: number;
  /** The most output tokens the run may generate (the request's, or the context's room when clamped). */
  maxTokens: number;
}

/**
 * A foreground run of a request translated from another API (chat-completions.ts,
 * anthropic-messages.ts) on the loaded model (requireRuntime): the plan of `request` over
 * `history`, never stored, never in the background, continuing nothing. Planning raises the
 * request's 4xx (`signal` also stops image downloads); the events must be iterated (drained or
 * streamed).
 */
export async function startTranslatedRun(
  runtime: ModelRuntime,
  request: PlanRequest,
  history: HistoryItem[],
  signal: AbortSignal,
  options: TranslatedRunOptions = {},
): Promise<TranslatedRun> {
  const planned = withSamplingDefaults(runtime, request);
  const offered = options.hosted ? { ...planned, tools: [...(planned.tools ?? []), ...options.hosted.tools] } : planned;
  const planOptions = { images: options.images, signal };
  const plan = await planResponseAsync(runtime, offered, history, 0, planOptions);
  const response = newResponseObject(planned, newId('resp'), runtime.id, 'in_progress');
  const hooks = {
    ...options.hooks,
    signal,
    seed: planned.seed,
    ...(options.reportProgress ? { reportProgress: true } : {}),
  };
  const started = { response, promptTokens: plan.promptIds.length, maxTokens: plan.maxTokens };
  if (!options.hosted) return { ...started, events: runResponse(runtime, plan, response, hooks) };
  const planRound: PlanRound = (extra, maxOutputTokens) =>
    planResponseAsync(
      runtime,
      { ...offered, max_output_tokens: maxOutputTokens },
      [...history, ...extra],
      0,
      planOptions,
    );
  const maxOutputTokens = planned.max_output_tokens ?? undefined;
  return {
    ...started,
    events: runToolLoop(runtime, plan, planRound, response, options.hosted, { ...hooks, maxOutputTokens }),
  };
}

/** The prompt tokens (images included) of a translated request's plan, without running it: the same 4xx as a run. */
export async function countTranslatedTokens(
  runtime: ModelRuntime,
  request: PlanRequest,
  history: HistoryItem[],
  signal: AbortSignal,
  options: Pick<TranslatedRunOptions, 'images'> = {},
): Promise<number> {
  const plan = await planResponseAsync(runtime, request, history, 0, { images: options.images, signal });
  return plan.promptIds.length;
}

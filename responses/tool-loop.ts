/**
 * The hosted-tool loop: tools the server runs itself (MCP) during one generation, for any API
 * translated onto the service. The model is offered the hosted tools beside the request's own; a
 * round is one runResponse. When a round ends in calls to hosted tools, they run, their results are
 * appended to the conversation as function results (the dialect renders them in its tool-result
 * format) and the next round continues the same answer from the engine's prefix cache (the
 * rendered prompt is the previous one plus the round's output and the results, so only the new
 * tokens are prefilled). All rounds make one Response: one lifecycle, one output, one usage.
 *
 * - Hosted calls appear as OpenAI's `mcp_call` items with `response.mcp_call_arguments.*` and
 *   `response.mcp_call.*` events (a translator maps them to its own wire form); a call that needs
 *   the client's approval becomes an `mcp_approval_request` item and ends the response unrun.
 * - Usage is the sum over rounds: every round's prompt counts as input (its cached part as
 *   cached_tokens), every generated token as output. max_output_tokens bounds all rounds together.
 * - Calls to the request's own tools end the loop and go back to the client as usual.
 * - After `maxRounds` rounds of calls a further call is not run: its item fails with
 *   TOOL_LIMIT_ERROR and the response completes with what was written.
 * - Tool failures are results for the model (ok:false), never a failed response. A client that
 *   goes away (the signal) cancels the running call and ends the response `cancelled`.
 */
import { ApiError } from '../contract/errors.ts';
import { EventSequencer, isInternalEvent, type StreamEvent, type UnnumberedEvent } from '../contract/stream-events.ts';
import type { FunctionCallItem, McpApprovalRequestItem, McpCallItem, ResponseObject } from '../contract/types.ts';
import { typedFailure } from '../contract/errors.ts';
import type { GenerationRuntime } from '../runtime/generation-runtime.ts';
import { newId } from './ids.ts';
import type { HistoryItem } from './input-history.ts';
import { makeUsage } from './response-object.ts';
import type { ResponsePlan } from './response-plan.ts';
import { lifecycleEvent, openLifecycle, runResponse, type RunHooks } from './run-response.ts';

/** Where an offered hosted tool lives. */
export interface HostedRoute {
  /** The server label (`server_label`). */
  server: string;
  /** The tool's own name on that server. */
  tool: string;
}

export interface HostedResult {
  ok: boolean;
  /** What the model reads (an error's reason when not ok). */
  text: string;
}

/** Tools the server runs during a generation; offered to the model as function tools. */
export interface HostedTools {
  /** Function tools to offer beside the request's own. */
  readonly tools: ReadonlyArray<{
    type: 'function';
    name: string;
    description?: string;
    parameters: Record<string, unknown>;
  }>;
  /** The route of an offered name; undefined for names that are not hosted (the request's own tools). */
  route(name: string): HostedRoute | undefined;
  /** Runs a call; failures are results (ok:false). Throws only when `signal` aborted. */
  call(route: HostedRoute, args: string, signal: AbortSignal): Promise<HostedResult>;
  /** Whether a call must wait for the client's approval (an mcp_approval_request) instead of running. */
  needsApproval?(route: HostedRoute): boolean;
  /** Rounds of calls one request may run. */
  readonly maxRounds: number;
}

/** Plans round `n` (n >= 2): the conversation plus `extra` (earlier rounds' output and results), at most `maxOutputTokens`. */
export type PlanRound = (extra: HistoryItem[], maxOutputTokens: number | undefined) => Promise<ResponsePlan>;

/** The error of a call not run because the request reached MAYA_MCP_MAX_ROUNDS. */
export const TOOL_LIMIT_ERROR = 'not run: this request reached its limit of tool-call rounds';

/** Items and events added before the first round (the Responses mcp tool's list and approved calls). */
export interface Prelude {
  items: Array<McpCallItem | ResponseObject['output'][number]>;
  /** Their events, with output_index relative to `items`. */
  events: UnnumberedEvent[];
}

const LIFECYCLE = new Set([
  'response.created',
  'response.in_progress',
  'response.completed',
  'response.incomplete',
  'response.failed',
]);

interface Totals {
  input: number;
  cached: number;
  output: number;
  reasoning: number;
}

/**
 * Runs `first` and the rounds after it as one Response (see the module comment). `hooks`: the
 * signal, seed, reasoning seal and progress apply to every round (progress to the first only);
 * `beforeTerminal` runs once, for the whole response.
 */
export async function* runToolLoop(
  runtime: GenerationRuntime,
  first: ResponsePlan,
  planRound: PlanRound,
  response: ResponseObject,
  hosted: HostedTools,
  hooks: RunHooks & { maxOutputTokens?: number; prelude?: Prelude },
  sequencer = new EventSequencer(),
): AsyncGenerator<StreamEvent, ResponseObject, void> {
  yield* openLifecycle(sequencer, response);
  const output = response.output;
  if (hooks.prelude) {
    output.push(...hooks.prelude.items);
    for (const event of hooks.prelude.events) yield sequencer.number(event);
  }
  const totals: Totals = { input: 0, cached: 0, output: 0, reasoning: 0 };
  const extra: HistoryItem[] = [];
  let plan = first;
  let final: ResponseObject | undefined;
  for (let round = 1; ; round++) {
    const inner: ResponseObject = { ...structuredClone({ ...response, output: [] }), output: [] };
    const mapper = new HostedEventMapper(hosted, output.length);
    const run = runResponse(runtime, plan, inner, {
      ...(hooks.signal ? { signal: hooks.signal } : {}),
      ...(hooks.seed !== undefined ? { seed: hooks.seed } : {}),
      ...(hooks.sealReasoning ? { sealReasoning: hooks.sealReasoning } : {}),
      ...(hooks.reportProgress && round === 1 ? { reportProgress: true } : {}),
      ...(hooks.onFirstToken && round === 1 ? { onFirstToken: hooks.onFirstToken } : {}),
      ...(hooks.onStopSequence ? { onStopSequence: hooks.onStopSequence } : {}),
    });
    let step = await run.next();
    while (!step.done) {
      const event = step.value;
      if (isInternalEvent(event)) yield event;
      else if (!LIFECYCLE.has(event.type)) for (const out of mapper.map(event)) yield sequencer.number(out);
      step = await run.next();
    }
    const done = step.value;
    addUsage(totals, done);
    if (done.status === 'cancelled') {
      response.status = 'cancelled';
      return response;
    }
    const { calls, own } = mapper.finishRound(done, output);
    const ran: Array<{ call: FunctionCallItem; text: string }> = [];
    if (done.status === 'completed' && calls.length > 0) {
      for (const pending of calls) {
        const outcome = yield* runHosted(pending, hosted, round, hooks.signal, sequencer);
        if (outcome === 'cancelled') {
          response.status = 'cancelled';
          return response;
        }
        if (outcome !== undefined) ran.push({ call: pending.call, text: outcome });
      }
    }
    const stop = done.status !== 'completed' || own || ran.length === 0 || ran.length < calls.length;
    if (stop) {
      final = done;
      break;
    }
    extra.push(
      ...(done.output as HistoryItem[]),
      ...ran.map(({ call, text }) => ({
        type: 'function_call_output',
        id: newId('fco'),
        call_id: call.call_id,
        output: text,
        status: 'completed',
      })),
    );
    const remaining = hooks.maxOutputTokens === undefined ? undefined : hooks.maxOutputTokens - totals.output;
    if (remaining !== undefined && remaining < 1) {
      final = { ...done, status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } };
      break;
    }
    try {
      plan = await planRound(extra, remaining);
    } catch (error) {
      final = { ...done, status: 'failed', error: typedFailure(roundPlanFailure(error)) };
      break;
    }
  }
  response.status = final.status;
  response.error = final.error;
  response.incomplete_details = final.incomplete_details;
  response.usage = makeUsage(totals.input, totals.cached, totals.output, totals.reasoning);
  response.completed_at = Math.floor(Date.now() / 1000);
  if (response.status !== 'failed') await hooks.beforeTerminal?.(response);
  yield lifecycleEvent(sequencer, response, `response.${response.status}`);
  return response;
}

function addUsage(totals: Totals, done: ResponseObject): void {
  const usage = done.usage;
  if (!usage) return;
  totals.input += usage.input_tokens;
  totals.cached += usage.input_tokens_details.cached_tokens;
  totals.output += usage.output_tokens;
  totals.reasoning += usage.output_tokens_details.reasoning_tokens;
}

/** A later round that cannot be planned (its conversation outgrew the context): the response fails. */
function roundPlanFailure(error: unknown): { code: 'invalid_prompt' | 'server_error'; message: string } {
  if (error instanceof ApiError)
    return {
      code: 'invalid_prompt',
      message: `The conversation with the tool results cannot continue: ${error.message}`,
    };
  return { code: 'server_error', message: 'The next round of the tool loop could not be planned.' };
}

/** A hosted call of the finished round: its function_call item and the mcp_call item shown for it. */
interface PendingCall {
  call: FunctionCallItem;
  item: McpCallItem | McpApprovalRequestItem;
  route: HostedRoute;
  outputIndex: number;
}

/**
 * Runs (or, at the limit or awaiting approval, closes) one hosted call, yielding its events.
 * Returns the text for the model when it ran, undefined when it did not, 'cancelled' when the
 * client went away meanwhile.
 */
async function* runHosted(
  pending: PendingCall,
  hosted: HostedTools,
  round: number,
  signal: AbortSignal | undefined,
  sequencer: EventSequencer,
): AsyncGenerator<StreamEvent, string | undefined | 'cancelled', void> {
  const { item, outputIndex } = pending;
  const emit = (type: string, fields: Record<string, unknown> = {}) =>
    sequencer.number({ type, item_id: item.id, output_index: outputIndex, ...fields });
  if (item.type === 'mcp_approval_request') {
    yield sequencer.number({ type: 'response.output_item.added', output_index: outputIndex, item: { ...item } });
    yield sequencer.number({ type: 'response.output_item.done', output_index: outputIndex, item: { ...item } });
    return undefined;
  }
  if (round > hosted.maxRounds) {
    item.status = 'failed';
    item.error = TOOL_LIMIT_ERROR;
    yield emit('response.mcp_call.failed');
    yield sequencer.number({ type: 'response.output_item.done', output_index: outputIndex, item: { ...item } });
    return undefined;
  }
  yield emit('response.mcp_call.in_progress');
  let result: HostedResult;
  try {
    result = await hosted.call(pending.route, pending.call.arguments, signal ?? new AbortController().signal);
  } catch (error) {
    if (signal?.aborted) return 'cancelled';
    result = { ok: false, text: `error: ${(error as Error).message}` };
  }
  item.status = result.ok ? 'completed' : 'failed';
  if (result.ok) item.output = result.text;
  else item.error = result.text;
  yield emit(result.ok ? 'response.mcp_call.completed' : 'response.mcp_call.failed');
  yield sequencer.number({ type: 'response.output_item.done', output_index: outputIndex, item: { ...item } });
  return result.text;
}

/**
 * One round's events with output_index shifted past the earlier rounds' items, and function calls
 * to hosted tools shown as mcp_call items: their arguments stream as response.mcp_call_arguments.*,
 * their output_item.done waits for the call (approval requests are shown whole after the round).
 */
class HostedEventMapper {
  private readonly items = new Map<string, McpCallItem>();

  constructor(
    private readonly hosted: HostedTools,
    private readonly offset: number,
  ) {}

  map(event: StreamEvent): UnnumberedEvent[] {
    const { sequence_number: _numbered, ...rest } = event;
    const out: UnnumberedEvent = { ...rest };
    if (typeof out.output_index === 'number') out.output_index += this.offset;
    const item = out.item as FunctionCallItem | undefined;
    if (out.type === 'response.output_item.added' && item?.type === 'function_call') {
      const route = this.hosted.route(item.name);
      if (!route) return [out];
      const approval = this.hosted.needsApproval?.(route) === true;
      const shown: McpCallItem = {
        type: 'mcp_call',
        id: newId(approval ? 'mcpr' : 'mcp'),
        server_label: route.server,
        name: route.tool,
        arguments: '',
        status: 'in_progress',
      };
      this.items.set(item.id, shown);
      return approval ? [] : [{ ...out, item: { ...shown } }];
    }
    const shown = typeof out.item_id === 'string' ? this.items.get(out.item_id) : undefined;
    const doneItem =
      out.type === 'response.output_item.done' ? this.items.get((out.item as { id: string }).id) : undefined;
    if (doneItem) {
      const call = out.item as FunctionCallItem;
      if (call.status === 'completed' || doneItem.id.startsWith('mcpr_')) return [];
      // Cut short (the output limit): the call will not run.
      return [{ ...out, item: { ...doneItem, arguments: call.arguments, status: 'incomplete' } }];
    }
    if (!shown) return [out];
    if (shown.id.startsWith('mcpr_')) return [];
    if (out.type === 'response.function_call_arguments.delta')
      return [
        {
          type: 'response.mcp_call_arguments.delta',
          item_id: shown.id,
          output_index: out.output_index,
          delta: out.delta,
        },
      ];
    if (out.type === 'response.function_call_arguments.done')
      return [
        {
          type: 'response.mcp_call_arguments.done',
          item_id: shown.id,
          output_index: out.output_index,
          arguments: out.arguments,
        },
      ];
    return [];
  }

  /**
   * Appends the round's items to `output` (hosted calls as their mcp items) and returns the hosted
   * calls to run, and whether the round also called one of the request's own tools.
   */
  finishRound(done: ResponseObject, output: ResponseObject['output']): { calls: PendingCall[]; own: boolean } {
    const calls: PendingCall[] = [];
    let own = false;
    for (const item of done.output) {
      const shown = item.type === 'function_call' ? this.items.get(item.id) : undefined;
      if (!shown || item.type !== 'function_call') {
        if (item.type === 'function_call') own = true;
        output.push(item);
        continue;
      }
      shown.arguments = item.arguments;
      const route = this.hosted.route(item.name)!;
      const shownItem: McpCallItem | McpApprovalRequestItem = shown.id.startsWith('mcpr_')
        ? {
            type: 'mcp_approval_request',
            id: shown.id,
            server_label: shown.server_label,
            name: shown.name,
            arguments: item.arguments,
          }
        : shown;
      if (item.status !== 'completed' && shownItem.type === 'mcp_call') shownItem.status = 'incomplete';
      output.push(shownItem);
      if (item.status === 'completed')
        calls.push({ call: item, item: shownItem, route, outputIndex: output.length - 1 });
    }
    return { calls, own };
  }
}

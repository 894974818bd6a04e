/**
 * Runs a planned response on the engine and yields the numbered stream events of its lifecycle;
 * returns the final Response object. Foreground JSON, foreground SSE and background jobs all
 * drive this one generator.
 *
 * Order: response.created → response.in_progress → item events… → one terminal event
 * (response.completed | response.incomplete | response.failed). With a buffered plan
 * (json_schema, json_object, strict tools) item events are held until the whole output is valid;
 * invalid output fails the response without publishing any of it.
 */
import type { FinishInfo } from '../engine-cuda/engine.ts';
import { EngineError } from '../engine-cuda/engine.ts';
import type { ParserEvent } from '../dialects/dialect.ts';
import { typedFailure } from '../contract/errors.ts';
import { EventSequencer, internalEvent, type StreamEvent, type UnnumberedEvent } from '../contract/stream-events.ts';
import type { GenerationRuntime } from '../runtime/generation-runtime.ts';
import { OutputAssembler, type ReasoningOutputItem } from './output-assembler.ts';
import { StopSequenceMatcher } from './stop-sequences.ts';
import type { ResponsePlan } from './response-plan.ts';
import { makeUsage, type ResponseError, type ResponseObject } from './response-object.ts';

/** Events buffered for validation may not exceed this many bytes (the spec's 4 MiB budget). */
export const PUBLISH_BUFFER_BYTES = 4 * 1024 * 1024;

export interface RunHooks {
  signal?: AbortSignal;
  /** Called with the final response before its terminal event is published (the store's put). */
  beforeTerminal?: (response: ResponseObject) => Promise<void>;
  seed?: number;
  /** When set, each finished reasoning item gets `encrypted_content` = this of its content. */
  sealReasoning?: (content: ReasoningOutputItem['content']) => string;
  /** Called once with the seconds from handing the sequence to the engine to its first token. */
  onFirstToken?: (seconds: number) => void;
  /** Called with the stop sequence that ended the text (plan.stopSequences), before the terminal event. */
  onStopSequence?: (sequence: string) => void;
  /**
   * Yield internal `maya.prompt_progress` events (contract/stream-events.ts) while the prompt is
   * prefilled: one at the start (processed = the cached tokens), then one per prefill chunk.
   */
  reportProgress?: boolean;
}

/** llama.cpp's `prompt_progress` (tools/server): counts are cumulative; `processed` includes `cache`. */
export interface PromptProgress {
  total: number;
  cache: number;
  processed: number;
  time_ms: number;
}

const promptProgressEvent = (progress: PromptProgress): StreamEvent =>
  internalEvent('maya.prompt_progress', { prompt_progress: progress });

type Failure = ResponseError;

const SHUTDOWN_FAILURE: Failure = {
  code: 'server_shutdown',
  message: 'The server stopped before the response finished; the output was cut short and is not returned.',
};

class RunState {
  readonly startedAt = performance.now();
  private processed = -1;
  reasoningTokens = 0;
  outputTokens = 0;
  cachedTokens = 0;
  failure: Failure | undefined;
  stoppedAtCall = false;
  bufferBytes = 0;

  /** The progress updates one engine report makes: the start update first, never going back. */
  progress(total: number, report: { cachedTokens: number; processedTokens: number }): PromptProgress[] {
    const at = (processed: number, timeMs: number) => ({
      total,
      cache: report.cachedTokens,
      processed,
      time_ms: timeMs,
    });
    const updates = this.processed < 0 ? [at(report.cachedTokens, 0)] : [];
    this.processed = Math.max(this.processed, report.processedTokens);
    updates.push(at(this.processed, Math.round(performance.now() - this.startedAt)));
    return updates;
  }
}

/** A lifecycle event (response.created, response.in_progress, the terminal one) with a snapshot of `response`. */
export function lifecycleEvent(sequencer: EventSequencer, response: ResponseObject, type: string): StreamEvent {
  return sequencer.number({ type, response: structuredClone(response) });
}

/** The response turns in_progress: response.created, then response.in_progress. */
export function* openLifecycle(sequencer: EventSequencer, response: ResponseObject): Generator<StreamEvent> {
  response.status = 'in_progress';
  yield lifecycleEvent(sequencer, response, 'response.created');
  yield lifecycleEvent(sequencer, response, 'response.in_progress');
}

export async function* runResponse(
  runtime: GenerationRuntime,
  plan: ResponsePlan,
  response: ResponseObject,
  hooks: RunHooks = {},
  sequencer = new EventSequencer(),
): AsyncGenerator<StreamEvent, ResponseObject, void> {
  yield* openLifecycle(sequencer, response);

  const state = new RunState();
  const buffered: UnnumberedEvent[] = [];
  const ready: StreamEvent[] = [];
  const assembler = new OutputAssembler((event) => {
    if (!plan.isBuffered) return void ready.push(sequencer.number(event));
    state.bufferBytes += JSON.stringify(event).length;
    if (state.bufferBytes > PUBLISH_BUFFER_BYTES)
      state.failure ??= { code: 'output_buffer_exceeded', message: 'The output exceeded the 4 MiB validation buffer.' };
    else buffered.push(event);
  }, hooks.sealReasoning);
  const parser = runtime.dialect.createParser(plan.parser);
  const decoder = runtime.tokenizer.createDecoder(runtime.dialect.markerTokens);
  const control = new AbortController();
  const onAbort = () => control.abort();
  hooks.signal?.addEventListener('abort', onAbort, { once: true });
  // A client gone before the run started (e.g. during planning): no event will come, stop at once.
  if (hooks.signal?.aborted) control.abort();

  let finish: FinishInfo | undefined;
  let inReasoning = plan.parser.startInReasoning;
  const stops = plan.stopSequences ? new StopSequenceMatcher(plan.stopSequences) : undefined;
  const releaseHeldText = () => {
    const held = stops?.flush();
    if (held) assembler.push({ type: 'text_delta', text: held });
  };
  const consume = (events: ParserEvent[]) => {
    for (const event of events) {
      // The text ended at a stop sequence: nothing the model wrote after it counts.
      if (stops?.matched !== undefined) return;
      if (event.type === 'reasoning_done') inReasoning = false;
      else if (event.type === 'error') state.failure ??= { code: event.code, message: event.message };
      else if (event.type === 'text_delta' && stops) {
        const text = stops.push(event.text);
        if (text !== '') assembler.push({ type: 'text_delta', text });
      } else {
        releaseHeldText();
        if (event.type === 'reasoning_delta') inReasoning = true;
        if (event.type === 'tool_call_done') checkStrictArguments(plan, assembler, event, state);
        assembler.push(event);
        if (event.type === 'tool_call_done' && !plan.parallelToolCalls) state.stoppedAtCall = true;
      }
    }
  };

  const started = performance.now();
  const generation = runtime.engine.generate(
    {
      promptIds: plan.promptIds,
      maxTokens: plan.maxTokens,
      temperature: plan.temperature,
      topP: plan.topP,
      ...(plan.topK > 0 ? { topK: plan.topK } : {}),
      stopIds: plan.stopIds,
      seed: hooks.seed,
      ...(hooks.reportProgress ? { reportProgress: true } : {}),
      ...(plan.constraint ? { constraint: plan.constraint } : {}),
      ...(plan.images ? { images: plan.images } : {}),
    },
    { signal: control.signal },
  );
  try {
    while (true) {
      const step = await generation.next();
      if (step.done) {
        finish = step.value;
        break;
      }
      const event = step.value;
      if (event.type === 'prefill_progress') {
        const progress = state.progress(plan.promptIds.length, event);
        if (hooks.reportProgress) yield* progress.map((p) => promptProgressEvent(p));
        continue;
      }
      if (event.type === 'prefilled') {
        state.cachedTokens = event.cachedTokens;
        continue;
      }
      if (state.outputTokens++ === 0) hooks.onFirstToken?.((performance.now() - started) / 1000);
      if (plan.stopIds.includes(event.id)) continue;
      const wasReasoning = inReasoning;
      consume(parser.push(decoder.push(event.id)));
      if (wasReasoning || inReasoning) state.reasoningTokens++;
      yield* ready.splice(0);
      if (state.failure || state.stoppedAtCall || stops?.matched !== undefined) break;
    }
  } catch (error) {
    state.failure ??= {
      code: 'server_error',
      message: error instanceof EngineError ? `The engine failed: ${error.message}` : 'The engine failed.',
    };
  } finally {
    hooks.signal?.removeEventListener('abort', onAbort);
    if (!finish) await generation.return(undefined as never).catch(() => undefined);
  }
  if (hooks.signal?.aborted) {
    response.status = 'cancelled';
    return response;
  }

  const reason = state.stoppedAtCall || stops?.matched !== undefined ? 'stop' : (finish?.reason ?? 'error');
  // The engine ended the sequence without the client asking (the server is shutting down): the
  // output is cut short, so the response fails rather than passing as complete.
  if (reason === 'cancelled') state.failure ??= SHUTDOWN_FAILURE;
  if (!state.failure) {
    consume([...parser.push(decoder.flush()), ...parser.end(reason)]);
    releaseHeldText();
  }
  if (reason === 'error' && !state.failure)
    state.failure = { code: 'server_error', message: finish?.error ?? 'The engine failed.' };
  const isIncomplete = reason === 'length' && !state.failure;
  assembler.finish(isIncomplete ? 'incomplete' : 'completed');
  if (!state.failure) state.failure = checkCompleteness(plan, assembler, isIncomplete);

  if (plan.isBuffered && !state.failure && !isIncomplete) state.failure = validateText(plan, assembler);
  if (!plan.isBuffered || (!state.failure && !isIncomplete))
    for (const event of buffered) ready.push(sequencer.number(event));
  yield* ready.splice(0);

  response.output = plan.isBuffered && (state.failure || isIncomplete) ? [] : assembler.output;
  response.usage = makeUsage(
    plan.promptIds.length,
    finish?.usage.cachedTokens ?? state.cachedTokens,
    state.outputTokens,
    state.reasoningTokens,
  );
  response.completed_at = Math.floor(Date.now() / 1000);
  if (state.failure) {
    response.status = 'failed';
    response.error = typedFailure(state.failure);
  } else if (isIncomplete) {
    response.status = 'incomplete';
    response.incomplete_details = { reason: 'max_output_tokens' };
  } else {
    response.status = 'completed';
  }
  if (response.status !== 'failed' && stops?.matched !== undefined) hooks.onStopSequence?.(stops.matched);
  if (response.status !== 'failed') await hooks.beforeTerminal?.(response);
  yield lifecycleEvent(sequencer, response, `response.${response.status}`);
  return response;
}

/** strict:true tools: arguments must match the schema before the call is published. */
function checkStrictArguments(
  plan: ResponsePlan,
  assembler: OutputAssembler,
  event: { index: number; arguments: string },
  state: RunState,
): void {
  const call = assembler.functionCalls.at(-1);
  const validator = call && plan.strictTools.get(call.name);
  if (!validator) return;
  const result = validator(event.arguments);
  if (!result.ok)
    state.failure ??= {
      code: 'invalid_tool_arguments',
      message: `Arguments of '${call.name}' do not match its schema: ${result.message}`,
    };
}

/** required / named tool_choice needs a complete call; an end of turn without one fails. */
function checkCompleteness(plan: ResponsePlan, assembler: OutputAssembler, isIncomplete: boolean): Failure | undefined {
  if (!plan.forced || isIncomplete) return undefined;
  const complete = assembler.functionCalls.filter((call) => call.status === 'completed');
  if (complete.length === 0)
    return {
      code: 'missing_tool_call',
      message: 'tool_choice requires a function call, and the model produced no complete call.',
    };
  return undefined;
}

function validateText(plan: ResponsePlan, assembler: OutputAssembler): Failure | undefined {
  if (!plan.textValidator) return undefined;
  const text = assembler.output
    .flatMap((item) => (item.type === 'message' ? item.content.map((part) => part.text) : []))
    .join('');
  if (assembler.functionCalls.length > 0 && text === '') return undefined;
  const result = plan.textValidator(text);
  return result.ok ? undefined : { code: result.code, message: result.message };
}

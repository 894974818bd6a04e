/**
 * FakeEngine: a deterministic Engine for handler unit tests only (never a default path; `npm start`
 * and end-to-end tests run NativeEngine on a real tiny model). It replays scripted token
 * sequences, applies the same request rules as the native engine (context check before any work,
 * stop ids, max tokens, cancellation by break / return() / abort) and records every queued
 * request so a test can assert that no engine work was queued.
 */
import {
  EngineError,
  type Engine,
  type EngineInfo,
  type EngineStats,
  type FinishInfo,
  type FinishReason,
  type GenerateOptions,
  type GenerateRequest,
  type TokenEvent,
} from '../../engine-cuda/engine.ts';

/** What one generation replays. */
export interface FakeScript {
  /** Token ids produced in order (cut by stopIds and maxTokens like the real engine). */
  tokens: number[];
  /** Finish reason when the script runs out before maxTokens or a stop id; default 'stop'. */
  finishReason?: FinishReason;
  /** Reported in the 'prefilled' event and in usage; default 0. */
  cachedTokens?: number;
  /** Detail reported with finishReason 'error'. */
  error?: string;
  /** Overrides of the reported usage (default: prompt length, cachedTokens, tokens produced). */
  usage?: Partial<FinishInfo['usage']>;
  /** Logits attached to each token event when the request keeps logits (index = step). */
  logits?: Float32Array[];
}

export type FakeScriptSource = FakeScript | FakeScript[] | ((request: GenerateRequest, index: number) => FakeScript);

export interface FakeEngineOptions {
  script?: FakeScriptSource;
  info?: Partial<EngineInfo>;
  /** Delay before each token event in ms (0: only a microtask/macrotask hop). */
  tokenDelayMs?: number;
  /**
   * Time a request with images spends "encoding" them before its prefill, in ms. Like the native
   * engine (encoding runs inside one eng_step), an abort meanwhile takes effect only afterwards.
   */
  imageEncodeMs?: number;
}

export const FAKE_ENGINE_INFO: EngineInfo = {
  arch: 'glm4',
  backend: 'cpu',
  numVocab: 1000,
  contextLength: 4096,
  numLayers: 2,
  hiddenSize: 64,
  numParams: 100_000,
  blockSize: 16,
  numBlocks: 256,
  simd: 'scalar',
  vision: false,
  numThreads: 1,
  weightDtype: 'f32',
  kvDtype: 'f32',
  kvBytesPerToken: 2 * 2 * 64 * 4,
  kvCapacityTokens: 256 * 16,
};

export class FakeEngine implements Engine {
  readonly info: EngineInfo;
  /** Every request that passed validation and was queued, in order. */
  readonly calls: GenerateRequest[] = [];
  /** How many generations ended cancelled (break, return(), abort). */
  cancelledCount = 0;
  /** Generations started and not yet finished. */
  activeCount = 0;
  private readonly script: FakeScriptSource;
  private readonly tokenDelayMs: number;
  private readonly imageEncodeMs: number;
  /** Images "encoded" so far (requests with images that reached their prefill). */
  imagesEncoded = 0;
  private closed = false;
  private readonly counters = { steps: 0, prefillTokens: 0, cachedTokens: 0, decodeTokens: 0 };

  constructor(options: FakeEngineOptions = {}) {
    this.info = { ...FAKE_ENGINE_INFO, ...options.info };
    this.script = options.script ?? { tokens: [] };
    this.tokenDelayMs = options.tokenDelayMs ?? 0;
    this.imageEncodeMs = options.imageEncodeMs ?? 0;
  }

  generate(request: GenerateRequest, options: GenerateOptions = {}): AsyncGenerator<TokenEvent, FinishInfo, void> {
    return this.run(request, options);
  }

  private pickScript(request: GenerateRequest, index: number): FakeScript {
    const source = this.script;
    if (typeof source === 'function') return source(request, index);
    if (Array.isArray(source)) {
      const script = source[index % Math.max(source.length, 1)];
      return script ?? { tokens: [] };
    }
    return source;
  }

  private validate(request: GenerateRequest): void {
    if (this.closed) throw new EngineError('closed', 'engine is closed');
    if (request.promptIds.length < 1) throw new EngineError('invalid_arg', 'promptIds must not be empty');
    if (!Number.isInteger(request.maxTokens) || request.maxTokens < 1) {
      throw new EngineError('invalid_arg', 'maxTokens must be a positive integer');
    }
    const topK = request.topK ?? 0;
    if (!Number.isInteger(topK) || topK < 0)
      throw new EngineError('invalid_arg', 'topK must be an integer >= 0 (0 = off)');
    if ((request.images?.length ?? 0) > 0 && !this.info.vision) {
      throw new EngineError('unsupported', 'this model has no vision encoder: images are not supported');
    }
    if (request.promptIds.length + request.maxTokens > this.info.contextLength) {
      throw new EngineError(
        'context_overflow',
        `prompt (${request.promptIds.length}) + max tokens (${request.maxTokens}) exceeds the context (${this.info.contextLength})`,
      );
    }
  }

  private async *run(request: GenerateRequest, options: GenerateOptions): AsyncGenerator<TokenEvent, FinishInfo, void> {
    this.validate(request);
    const index = this.calls.length;
    this.calls.push({ ...request, promptIds: [...request.promptIds] });
    const script = this.pickScript(request, index);
    const cachedTokens = Math.min(script.cachedTokens ?? 0, request.promptIds.length - 1);
    const stopIds = new Set(request.stopIds ?? []);
    let outputTokens = 0;
    let finishedAs: FinishReason | undefined;
    const finish = (reason: FinishReason, error?: string): FinishInfo => {
      finishedAs = reason;
      const usage = { inputTokens: request.promptIds.length, cachedTokens, outputTokens, ...script.usage };
      return error === undefined ? { reason, usage } : { reason, usage, error };
    };
    this.activeCount++;
    this.counters.prefillTokens += request.promptIds.length - cachedTokens;
    this.counters.cachedTokens += cachedTokens;
    try {
      await this.pause(0);
      if (options.signal?.aborted) return finish('cancelled');
      if ((request.images?.length ?? 0) > 0) {
        await this.pause(this.imageEncodeMs); // not interruptible, as inside eng_step
        this.imagesEncoded += request.images?.length ?? 0;
        if (options.signal?.aborted) return finish('cancelled');
      }
      if (request.reportProgress)
        yield { type: 'prefill_progress', cachedTokens, processedTokens: request.promptIds.length };
      yield { type: 'prefilled', cachedTokens };
      for (const id of script.tokens) {
        if (outputTokens >= request.maxTokens) return finish('length');
        await this.pause(this.tokenDelayMs);
        // Like NativeEngine: a client abort, or close() ending live generations, is 'cancelled'.
        if (options.signal?.aborted || this.closed) return finish('cancelled');
        outputTokens++;
        this.counters.steps++;
        this.counters.decodeTokens++;
        const logits = request.keepLogits ? script.logits?.[outputTokens - 1] : undefined;
        yield logits ? { type: 'token', id, logits } : { type: 'token', id };
        if (stopIds.has(id)) return finish('stop');
      }
      if (outputTokens >= request.maxTokens) return finish('length');
      const reason = script.finishReason ?? 'stop';
      return finish(reason, reason === 'error' ? (script.error ?? 'scripted error') : undefined);
    } finally {
      this.activeCount--;
      if (finishedAs === undefined || finishedAs === 'cancelled') this.cancelledCount++;
    }
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => (ms > 0 ? setTimeout(resolve, ms) : setImmediate(resolve)));
  }

  async stats(): Promise<EngineStats> {
    return {
      blocksTotal: this.info.numBlocks,
      blocksFree: this.info.numBlocks,
      blocksCached: 0,
      seqsWaiting: 0,
      seqsRunning: this.activeCount,
      ...this.counters,
      preemptions: 0,
      imagesEncoded: this.imagesEncoded,
      encodeMicros: this.imagesEncoded * this.imageEncodeMs * 1000,
      encodeCpuMicros: 0,
      draftTokens: 0,
      draftAccepted: 0,
      decodePasses: this.counters.decodeTokens,
      mtpDrafts: 0,
      mtpFirstAccepted: 0,
      mtpDraftTokens: 0,
      mtpDraftAccepted: 0,
      tokenCost: 0,
    };
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}

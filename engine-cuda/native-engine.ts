/**
 * NativeEngine: the Engine over the C library. A worker thread (engine-worker.ts) owns the FFI
 * context and runs the one pump loop; this side keeps a queue per sequence (mini-sglang's
 * event_map) and each generate() drains its own. The main thread only routes messages, so a long
 * engine step never blocks the event loop.
 *
 * Cancellation: break / return() / an aborted signal all reach the generator's finally, which
 * sends a cancel unless FINISH already arrived. After an abort the generator keeps draining
 * until FINISH (tokens are no longer yielded) and returns reason 'cancelled'.
 */
import type { Worker } from 'node:worker_threads';
import {
  EngineError,
  type Engine,
  type EngineImage,
  type EngineInfo,
  type EngineStats,
  type FinishInfo,
  type FinishReason,
  type GenerateOptions,
  type GenerateRequest,
  type TokenEvent,
} from './engine.ts';
import type { VocabularyData } from '../grammar/token-mask.ts';
import { ENG, defaultLibraryPath, type ContextParams } from './ffi.ts';
import { startModuleWorker } from './module-worker.ts';
import type { FromWorker, ToWorker, WireError, WorkerInit } from './engine-worker.ts';

export interface NativeEngineOptions extends ContextParams {
  /** Library path; default engine-cuda/build/libmaya_engine.so (defaultLibraryPath()). */
  libPath?: string;
  /** The CUDA backend's library; default libmaya_engine_cuda.so beside the engine library. */
  cudaLibPath?: string;
}

/** Per-sequence state: the queue generate() drains. */
interface SeqState {
  queue: TokenEvent[];
  cachedTokens: number;
  outputTokens: number;
  finish?: { reason: FinishReason; error?: string };
  wake: (() => void) | null;
}

const FINISH_REASONS: Record<number, FinishReason> = {
  [ENG.FINISH_STOP]: 'stop',
  [ENG.FINISH_LENGTH]: 'length',
  [ENG.FINISH_CANCELLED]: 'cancelled',
  [ENG.FINISH_ERROR]: 'error',
};

/** ENG_INFO_SPECULATIVE's values by name (ENG_SPEC_OFF when absent). */
const SPECULATIVE_RUN: Record<number, NonNullable<EngineInfo['speculative']>> = {
  [ENG.SPEC_OFF]: 'off',
  [ENG.SPEC_NGRAM]: 'ngram',
  [ENG.SPEC_MTP]: 'mtp',
};

const ARCHS: Record<number, EngineInfo['arch']> = {
  [ENG.ARCH_GLM4]: 'glm4',
  [ENG.ARCH_LLAMA]: 'llama',
  [ENG.ARCH_QWEN3]: 'qwen3',
  [ENG.ARCH_GLM4_MOE]: 'glm4_moe',
  [ENG.ARCH_DEEPSEEK_V3]: 'deepseek_v3',
  [ENG.ARCH_GLM4V]: 'glm4v',
  [ENG.ARCH_GLM4V_MOE]: 'glm4v_moe',
  [ENG.ARCH_QWEN3_MOE]: 'qwen3_moe',
};

const SIMD_PATHS: Record<number, EngineInfo['simd']> = {
  [ENG.SIMD_SCALAR]: 'scalar',
  [ENG.SIMD_AVX2]: 'avx2',
  [ENG.SIMD_AVX512]: 'avx512',
};

const WEIGHT_DTYPES: Record<number, EngineInfo['weightDtype']> = {
  [ENG.WEIGHT_DTYPE_F32]: 'f32',
  [ENG.WEIGHT_DTYPE_F16]: 'f16',
  [ENG.WEIGHT_DTYPE_BF16]: 'bf16',
  [ENG.WEIGHT_DTYPE_FP8]: 'fp8',
  [ENG.WEIGHT_DTYPE_Q8]: 'q8',
  [ENG.WEIGHT_DTYPE_Q8_0]: 'q8_0',
  [ENG.WEIGHT_DTYPE_Q4_0]: 'q4_0',
  [ENG.WEIGHT_DTYPE_Q4_1]: 'q4_1',
  [ENG.WEIGHT_DTYPE_Q5_0]: 'q5_0',
  [ENG.WEIGHT_DTYPE_Q5_1]: 'q5_1',
  [ENG.WEIGHT_DTYPE_Q4_K]: 'q4_k',
  [ENG.WEIGHT_DTYPE_Q5_K]: 'q5_k',
  [ENG.WEIGHT_DTYPE_Q6_K]: 'q6_k',
};

const KV_DTYPES: Record<number, EngineInfo['kvDtype']> = {
  [ENG.KV_DTYPE_F32]: 'f32',
  [ENG.KV_DTYPE_F16]: 'f16',
  [ENG.KV_DTYPE_BF16]: 'bf16',
  [ENG.KV_DTYPE_Q8_0]: 'q8_0',
};

/** Maps eng_ctx_info() fields to EngineInfo. */
export function engineInfoFromFields(f: number[]): EngineInfo {
  const at = (i: number) => f[i] ?? 0;
  return {
    arch: ARCHS[at(ENG.INFO_ARCH)] ?? 'llama',
    backend: at(ENG.INFO_BACKEND) === ENG.BACKEND_CUDA ? 'cuda' : 'cpu',
    numVocab: at(ENG.INFO_N_VOCAB),
    contextLength: at(ENG.INFO_N_CTX),
    numLayers: at(ENG.INFO_N_LAYER),
    hiddenSize: at(ENG.INFO_N_EMBD),
    numParams: at(ENG.INFO_N_PARAMS),
    numActiveParams: at(ENG.INFO_N_PARAMS_ACTIVE),
    blockSize: at(ENG.INFO_BLOCK_SIZE),
    numBlocks: at(ENG.INFO_N_BLOCKS),
    weightBytes: at(ENG.INFO_WEIGHT_BYTES),
    simd: SIMD_PATHS[at(ENG.INFO_SIMD)] ?? 'scalar',
    vision: at(ENG.INFO_VISION) === 1,
    weightDtype: WEIGHT_DTYPES[at(ENG.INFO_WEIGHT_DTYPE)] ?? 'f32',
    numThreads: at(ENG.INFO_N_THREADS),
    speculative: SPECULATIVE_RUN[at(ENG.INFO_SPECULATIVE)] ?? 'off',
    specMaxDraft: at(ENG.INFO_SPEC_MAX_DRAFT),
    kvDtype: KV_DTYPES[at(ENG.INFO_KV_DTYPE)] ?? 'f32',
    kvBytesPerToken: at(ENG.INFO_KV_BYTES_PER_TOKEN),
    kvCapacityTokens: at(ENG.INFO_KV_CAPACITY),
  };
}

/**
 * The pixel buffers to move (not copy) to the engine worker: each distinct plain ArrayBuffer that
 * one image's Float32Array spans whole. Views into larger or shared buffers are copied instead.
 */
export function pixelTransfers(images: readonly EngineImage[] | undefined): ArrayBuffer[] {
  const out = new Set<ArrayBuffer>();
  for (const { pixels } of images ?? []) {
    const buf = pixels.buffer;
    if (buf instanceof ArrayBuffer && pixels.byteOffset === 0 && pixels.byteLength === buf.byteLength) out.add(buf);
  }
  return [...out];
}

export function engineStatsFromFields(f: number[]): EngineStats {
  const at = (i: number) => f[i] ?? 0;
  return {
    blocksTotal: at(ENG.STAT_BLOCKS_TOTAL),
    blocksFree: at(ENG.STAT_BLOCKS_FREE),
    blocksCached: at(ENG.STAT_BLOCKS_CACHED),
    seqsWaiting: at(ENG.STAT_SEQS_WAITING),
    seqsRunning: at(ENG.STAT_SEQS_RUNNING),
    steps: at(ENG.STAT_STEPS),
    prefillTokens: at(ENG.STAT_PREFILL_TOKENS),
    cachedTokens: at(ENG.STAT_CACHED_TOKENS),
    decodeTokens: at(ENG.STAT_DECODE_TOKENS),
    preemptions: at(ENG.STAT_PREEMPTIONS),
    imagesEncoded: at(ENG.STAT_IMAGES_ENCODED),
    encodeMicros: at(ENG.STAT_ENCODE_US),
    encodeCpuMicros: at(ENG.STAT_ENCODE_CPU_US),
    draftTokens: at(ENG.STAT_DRAFT_TOKENS),
    draftAccepted: at(ENG.STAT_DRAFT_ACCEPTED),
    decodePasses: at(ENG.STAT_DECODE_PASSES),
    mtpDrafts: at(ENG.STAT_MTP_DRAFTS),
    mtpFirstAccepted: at(ENG.STAT_MTP_FIRST_ACCEPTED),
    mtpDraftTokens: at(ENG.STAT_MTP_DRAFT_TOKENS),
    mtpDraftAccepted: at(ENG.STAT_MTP_DRAFT_ACCEPTED),
    tokenCost: at(ENG.STAT_TOKEN_COST_PPM) / 1e6,
  };
}

function toError(e: WireError): EngineError {
  return new EngineError(e.code, e.message);
}

/** Starts engine-worker.ts in its own thread. */
function startWorker(init: WorkerInit): Worker {
  return startModuleWorker(new URL('./engine-worker.ts', import.meta.url), init);
}

export class NativeEngine implements Engine {
  private readonly seqs = new Map<number, SeqState>();
  private readonly pending = new Map<
    number,
    { resolve: (value: unknown) => void; reject: (e: Error) => void; state?: SeqState }
  >();
  private nextReqId = 1;
  private closed = false;
  private closing: Promise<void> | null = null;

  private constructor(
    private readonly worker: Worker,
    readonly info: EngineInfo,
  ) {
    worker.on('message', (msg: FromWorker) => this.onMessage(msg));
    worker.on('error', (err) => this.failAll(new EngineError('internal', `engine worker failed: ${err.message}`)));
    worker.on('exit', (code) => {
      if (this.closing === null) this.failAll(new EngineError('internal', `engine worker exited (${code})`));
    });
    worker.unref();
  }

  /** Loads a model directory in a new worker thread. Throws EngineError (io, bad_checkpoint, abi_mismatch, ...). */
  static async load(modelDir: string, options: NativeEngineOptions = {}): Promise<NativeEngine> {
    const { libPath, cudaLibPath, ...params } = options;
    const worker = startWorker({
      libPath: libPath ?? defaultLibraryPath(),
      ...(cudaLibPath !== undefined ? { cudaLibPath } : {}),
      modelDir,
      params,
    });
    // Only our own listeners may be removed: Node's Worker keeps internal ones on itself.
    let onMessage: (msg: FromWorker) => void = () => {};
    let onError: (err: Error) => void = () => {};
    let onExit: (code: number) => void = () => {};
    const first = await new Promise<FromWorker>((resolve, reject) => {
      onMessage = resolve;
      onError = reject;
      onExit = (code) => reject(new EngineError('internal', `engine worker exited (${code}) while loading`));
      worker.once('message', onMessage).once('error', onError).once('exit', onExit);
    }).catch((err: unknown) => {
      void worker.terminate();
      throw err instanceof EngineError ? err : new EngineError('internal', String((err as Error)?.message ?? err));
    });
    worker.off('message', onMessage).off('error', onError).off('exit', onExit);
    if (first.op !== 'ready') {
      await worker.terminate();
      throw first.op === 'init_failed' ? toError(first.error) : new EngineError('internal', `unexpected ${first.op}`);
    }
    return new NativeEngine(worker, engineInfoFromFields(first.info));
  }

  generate(request: GenerateRequest, options: GenerateOptions = {}): AsyncGenerator<TokenEvent, FinishInfo, void> {
    return this.run(request, options);
  }

  private validate(request: GenerateRequest): void {
    if (this.closed) throw new EngineError('closed', 'engine is closed');
    if (request.promptIds.length < 1) throw new EngineError('invalid_arg', 'promptIds must not be empty');
    if (!Number.isInteger(request.maxTokens) || request.maxTokens < 1) {
      throw new EngineError('invalid_arg', 'maxTokens must be a positive integer');
    }
    const isId = (id: number) => Number.isInteger(id) && id >= 0 && id < this.info.numVocab;
    if (!request.promptIds.every(isId) || !(request.stopIds ?? []).every(isId)) {
      throw new EngineError('invalid_arg', `token ids must be integers in [0, ${this.info.numVocab})`);
    }
    const { temperature = 0, topP = 1, topK = 0 } = request;
    if (!Number.isFinite(temperature) || !(topP > 0 && topP <= 1)) {
      throw new EngineError('invalid_arg', 'temperature must be finite and topP in (0, 1]');
    }
    if (!Number.isInteger(topK) || topK < 0 || topK > 0x7fffffff) {
      throw new EngineError('invalid_arg', 'topK must be an integer >= 0 (0 = off)');
    }
    const images = request.images ?? [];
    if (images.length > 0 && !this.info.vision) {
      throw new EngineError('unsupported', 'this model has no vision encoder: images are not supported');
    }
    for (const img of images) {
      const [t, h, w] = img.grid;
      if (![t, h, w].every((n) => Number.isInteger(n) && n > 0) || !(img.pixels instanceof Float32Array)) {
        throw new EngineError('invalid_arg', 'an image needs a positive integer grid and Float32Array pixels');
      }
    }
    if (request.promptIds.length + request.maxTokens > this.info.contextLength) {
      throw new EngineError(
        'context_overflow',
        `prompt (${request.promptIds.length} tokens) + max tokens (${request.maxTokens}) exceeds the context (${this.info.contextLength})`,
      );
    }
  }

  private async *run(request: GenerateRequest, options: GenerateOptions): AsyncGenerator<TokenEvent, FinishInfo, void> {
    this.validate(request);
    const signal = options.signal;
    if (signal?.aborted) {
      return {
        reason: 'cancelled',
        usage: { inputTokens: request.promptIds.length, cachedTokens: 0, outputTokens: 0 },
      };
    }
    const state: SeqState = { queue: [], cachedTokens: 0, outputTokens: 0, wake: null };
    const seqId = (await this.request(
      {
        op: 'add',
        reqId: 0,
        args: {
          tokens: request.promptIds,
          stopIds: request.stopIds,
          maxTokens: request.maxTokens,
          temperature: request.temperature ?? 0,
          topP: request.topP ?? 1,
          topK: request.topK ?? 0,
          seed: request.seed ?? 0,
          flags:
            (request.keepLogits ? ENG.SEQ_KEEP_LOGITS : 0) | (request.reportProgress ? ENG.SEQ_REPORT_PROGRESS : 0),
          ...(request.images && request.images.length > 0 ? { images: request.images } : {}),
        },
        ...(request.constraint ? { constraint: request.constraint } : {}),
      },
      state,
      pixelTransfers(request.images),
    )) as number;
    let aborted = false;
    const onAbort = () => {
      aborted = true;
      this.cancel(seqId, state);
      state.wake?.();
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      for (;;) {
        const event = state.queue.shift();
        if (event) {
          if (!aborted) yield event;
          continue;
        }
        if (state.finish) {
          const reason = aborted && state.finish.reason !== 'error' ? 'cancelled' : state.finish.reason;
          const usage = {
            inputTokens: request.promptIds.length,
            cachedTokens: state.cachedTokens,
            outputTokens: state.outputTokens,
          };
          return state.finish.error !== undefined ? { reason, usage, error: state.finish.error } : { reason, usage };
        }
        await new Promise<void>((resolve) => (state.wake = resolve));
        state.wake = null;
      }
    } finally {
      signal?.removeEventListener('abort', onAbort);
      this.cancel(seqId, state);
    }
  }

  /** Asks the worker to cancel a live sequence (no-op once FINISH arrived or after close). */
  private cancel(seqId: number, state: SeqState): void {
    if (state.finish || this.closed) return;
    this.post({ op: 'cancel', seqId });
  }

  private post(msg: ToWorker, transfer: ArrayBuffer[] = []): void {
    this.worker.postMessage(msg, transfer);
  }

  /** Sends a request that the worker answers by reqId. */
  private request(
    msg: Extract<ToWorker, { reqId: number }>,
    state?: SeqState,
    transfer: ArrayBuffer[] = [],
  ): Promise<unknown> {
    if (this.closed && msg.op !== 'close') return Promise.reject(new EngineError('closed', 'engine is closed'));
    const reqId = this.nextReqId++;
    return new Promise((resolve, reject) => {
      this.pending.set(reqId, { resolve, reject, state });
      this.refresh();
      this.post({ ...msg, reqId } as ToWorker, transfer);
    });
  }

  /** Keeps the process alive only while something waits on the worker. */
  private refresh(): void {
    if (this.pending.size > 0 || this.seqs.size > 0) this.worker.ref();
    else this.worker.unref();
  }

  private onMessage(msg: FromWorker): void {
    switch (msg.op) {
      case 'added': {
        const p = this.settle(msg.reqId);
        if (p?.state) this.seqs.set(msg.seqId, p.state);
        p?.resolve(msg.seqId);
        break;
      }
      case 'add_failed':
        this.settle(msg.reqId)?.reject(toError(msg.error));
        break;
      case 'stats':
        this.settle(msg.reqId)?.resolve(engineStatsFromFields(msg.stats));
        break;
      case 'closed':
        this.settle(msg.reqId)?.resolve(undefined);
        break;
      case 'events':
        this.route(msg.events, new Map(msg.logits));
        break;
      case 'step_failed':
        for (const seqId of msg.seqIds) this.finishSeq(seqId, 'error', msg.error.message);
        break;
      default:
        break;
    }
    this.refresh();
  }

  private settle(reqId: number) {
    const p = this.pending.get(reqId);
    this.pending.delete(reqId);
    return p;
  }

  /** Hands one step's events to their sequences' queues. */
  private route(events: Int32Array, logits: Map<number, Float32Array>): void {
    for (let i = 0; i * ENG.EVENT_INTS < events.length; i++) {
      const o = i * ENG.EVENT_INTS;
      const seqId = events[o] ?? -1;
      const kind = events[o + 1];
      const state = this.seqs.get(seqId);
      if (!state) continue;
      if (kind === ENG.EVENT_PREFILL_PROGRESS) {
        state.queue.push({
          type: 'prefill_progress',
          cachedTokens: events[o + 2] ?? 0,
          processedTokens: events[o + 3] ?? 0,
        });
      } else if (kind === ENG.EVENT_PREFILLED) {
        state.cachedTokens = events[o + 3] ?? 0;
        state.queue.push({ type: 'prefilled', cachedTokens: state.cachedTokens });
      } else if (kind === ENG.EVENT_TOKEN) {
        state.outputTokens++;
        const l = logits.get(i);
        const id = events[o + 2] ?? -1;
        state.queue.push(l ? { type: 'token', id, logits: l } : { type: 'token', id });
      } else if (kind === ENG.EVENT_FINISH) {
        const reason = FINISH_REASONS[events[o + 3] ?? 0] ?? 'error';
        this.finishSeq(
          seqId,
          reason,
          reason === 'error' ? 'the engine reported an error for this sequence' : undefined,
        );
        continue;
      }
      state.wake?.();
    }
  }

  private finishSeq(seqId: number, reason: FinishReason, error?: string): void {
    const state = this.seqs.get(seqId);
    if (!state) return;
    this.seqs.delete(seqId);
    state.finish = error !== undefined ? { reason, error } : { reason };
    state.wake?.();
  }

  private failAll(err: EngineError): void {
    for (const [reqId, p] of this.pending) {
      this.pending.delete(reqId);
      p.reject(err);
    }
    for (const seqId of [...this.seqs.keys()]) this.finishSeq(seqId, 'error', err.message);
    this.closed = true;
    this.refresh();
  }

  setVocabulary(vocab: VocabularyData): void {
    if (!this.closed) this.post({ op: 'vocab', vocab });
  }

  async stats(): Promise<EngineStats> {
    return (await this.request({ op: 'stats', reqId: 0 })) as EngineStats;
  }

  /** Frees the context and ends the worker; live generations finish as 'cancelled'. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      if (!this.closed) {
        const done = this.request({ op: 'close', reqId: 0 });
        this.closed = true;
        await done.catch(() => undefined);
      }
      for (const seqId of [...this.seqs.keys()]) this.finishSeq(seqId, 'cancelled');
      await this.worker.terminate();
    })();
    return this.closing;
  }
}

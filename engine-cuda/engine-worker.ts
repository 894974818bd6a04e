/**
 * engine-worker.ts: the worker thread that owns one NativeContext and runs the pump loop. It
 * receives add / cancel / stats / close messages from NativeEngine (main thread), calls eng_step
 * while any sequence is live, and posts each step's events as one batch (with the kept logits of
 * KEEP_LOGITS sequences). Messages are handled at step boundaries: steps run in bursts of up to
 * BURST_MS, taking the messages queued meanwhile synchronously between two steps
 * (receiveMessageOnPort), and the worker returns to its event loop between bursts; when nothing is
 * live it sleeps until the next add. One event-loop turn per step cost about 0.1-0.2 ms a step, long
 * enough for the engine's idle pool threads to go to sleep: batch-1 decode through NativeEngine
 * went from about 174 to 196 tok/s on the 2-core box (deepseek3-mla-fp8, 3 alternating rounds).
 */
import * as workerThreads from 'node:worker_threads';
import { parentPort, workerData } from 'node:worker_threads';
import { ConstraintCache, type Constraint } from '../grammar/constraint.ts';
import type { TokenMatcher, VocabularyData } from '../grammar/token-mask.ts';
import { ConstrainedDrafter, DraftCost } from './constrained-drafts.ts';
import { EngineError } from './engine.ts';
import { ENG, NativeLib, type ContextParams, type NativeContext, type SeqAddArgs } from './ffi.ts';

/** Longest run of steps between two turns of the worker's event loop. */
const BURST_MS = 50;

export interface WorkerInit {
  libPath: string;
  /** The CUDA backend's library (eng_cuda_lib_set); undefined = beside the engine library. */
  cudaLibPath?: string;
  modelDir: string;
  params: ContextParams;
}

export type ToWorker =
  /** constraint: the grammar the sequence's output must follow (needs a 'vocab' first). */
  | { op: 'add'; reqId: number; args: SeqAddArgs; constraint?: Constraint }
  /** The tokenizer's vocabulary as bytes, for constrained decoding (sent once). */
  | { op: 'vocab'; vocab: VocabularyData }
  | { op: 'cancel'; seqId: number }
  | { op: 'stats'; reqId: number }
  | { op: 'close'; reqId: number };

export interface WireError {
  code: EngineError['code'];
  message: string;
}

export type FromWorker =
  | { op: 'ready'; info: number[] }
  | { op: 'init_failed'; error: WireError }
  | { op: 'added'; reqId: number; seqId: number }
  | { op: 'add_failed'; reqId: number; error: WireError }
  | { op: 'stats'; reqId: number; stats: number[] }
  /** events: ENG.EVENT_INTS ints per event; logits[i] belongs to event i (TOKEN of a KEEP_LOGITS seq). */
  | { op: 'events'; events: Int32Array; logits: [number, Float32Array][] }
  /** eng_step failed: the listed live sequences are abandoned. */
  | { op: 'step_failed'; seqIds: number[]; error: WireError }
  | { op: 'closed'; reqId: number };

function wireError(err: unknown): WireError {
  if (err instanceof EngineError) return { code: err.code, message: err.message };
  return { code: 'internal', message: err instanceof Error ? err.message : String(err) };
}

class Pump {
  /** Live sequence id -> keeps logits. */
  private readonly live = new Map<number, boolean>();
  /** Constrained sequences: their matcher sets the mask of their next token after every step. */
  private readonly matchers = new Map<number, TokenMatcher>();
  /** Constrained sequences' drafts (speculative decoding; the engine drafts for the others itself). */
  private readonly drafters = new Map<number, ConstrainedDrafter>();
  /** What a drafted position costs here (constrained-drafts.ts DraftCost). */
  private readonly draftCost = new DraftCost();
  private vocab: VocabularyData | undefined;
  private constraints: ConstraintCache | undefined;
  private events = new Int32Array(64 * ENG.EVENT_INTS);
  private scheduled = false;
  private closed = false;

  constructor(
    private readonly ctx: NativeContext,
    private readonly numVocab: number,
    private readonly maxDraft: number,
    private readonly post: (msg: FromWorker, transfer?: ArrayBuffer[]) => void,
    /** The next message already queued for the worker, taken synchronously (undefined: none). */
    private readonly drain?: () => ToWorker | undefined,
  ) {}

  handle(msg: ToWorker): void {
    if (this.closed) return;
    switch (msg.op) {
      case 'add':
        try {
          const seqId = this.ctx.seqAdd(msg.args);
          this.live.set(seqId, ((msg.args.flags ?? 0) & ENG.SEQ_KEEP_LOGITS) !== 0);
          if (msg.constraint) this.constrain(seqId, msg.constraint);
          if (this.matchers.has(seqId) && this.maxDraft > 0)
            this.drafters.set(seqId, new ConstrainedDrafter(msg.args.tokens, this.maxDraft));
          this.post({ op: 'added', reqId: msg.reqId, seqId });
          this.schedule();
        } catch (err) {
          this.post({ op: 'add_failed', reqId: msg.reqId, error: wireError(err) });
        }
        return;
      case 'cancel':
        // A sequence that already finished is unknown to the library; nothing to do then.
        if (!this.live.has(msg.seqId)) return;
        try {
          this.ctx.seqCancel(msg.seqId);
        } catch (err) {
          if (!(err instanceof EngineError && err.code === 'unknown_seq')) throw err;
        }
        return;
      case 'vocab':
        // The mask covers the model's vocabulary, which may be larger than the tokenizer's.
        this.vocab = { ...msg.vocab, size: this.numVocab };
        this.constraints = undefined;
        return;
      case 'stats':
        this.post({ op: 'stats', reqId: msg.reqId, stats: this.ctx.stats() });
        return;
      case 'close':
        this.closed = true;
        this.ctx.free();
        this.post({ op: 'closed', reqId: msg.reqId });
        return;
    }
  }

  /** Starts a constraint (without a vocabulary the sequence runs unconstrained). */
  private constrain(seqId: number, constraint: Constraint): void {
    if (!this.vocab) return;
    try {
      this.constraints ??= new ConstraintCache(this.vocab);
      const matcher = this.constraints.matcher(constraint);
      this.matchers.set(seqId, matcher);
      this.applyMask(seqId, matcher);
    } catch {
      // A grammar that cannot be compiled leaves the sequence unconstrained: validation still decides.
      this.unconstrain(seqId);
    }
  }

  /** Drops a sequence's matcher and lifts any mask it had set (the engine keeps a mask until replaced). */
  private unconstrain(seqId: number): void {
    this.matchers.delete(seqId);
    this.drafters.delete(seqId);
    try {
      this.ctx.seqMask(seqId, null);
    } catch {
      // The sequence is gone already: nothing to lift.
    }
  }

  /** Sets the sequence's next-token mask; a dead end (nothing allowed) lifts the constraint. */
  private applyMask(seqId: number, matcher: TokenMatcher): void {
    const mask = matcher.mask();
    this.ctx.seqMask(seqId, mask);
    if (!mask) this.matchers.delete(seqId);
  }

  /** Advances a constrained sequence by its sampled token and sets the next mask. */
  private advance(seqId: number, token: number): void {
    const matcher = this.matchers.get(seqId);
    if (!matcher) return;
    if (!matcher.advance(token)) {
      this.matchers.delete(seqId);
      this.ctx.seqMask(seqId, null);
      return;
    }
    this.applyMask(seqId, matcher);
  }

  private schedule(): void {
    if (this.scheduled || this.closed || this.live.size === 0) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      // A burst of steps without returning to the event loop: messages that arrived meanwhile
      // are taken synchronously at each step boundary (the same boundaries as before).
      const until = performance.now() + BURST_MS;
      do {
        this.stepOnce();
        if (this.drain) for (let m = this.drain(); m; m = this.drain()) this.handle(m);
      } while (this.drain && !this.closed && this.live.size > 0 && performance.now() < until);
      this.schedule();
    });
  }

  private stepOnce(): void {
    if (this.closed) return;
    const t0 = performance.now();
    // A sequence yields up to 3 + the most drafted tokens events a step (its verified draft's tokens).
    const needed = ((3 + this.maxDraft) * this.live.size + 1) * ENG.EVENT_INTS;
    if (this.events.length < needed) this.events = new Int32Array(needed * 2);
    let n: number;
    try {
      n = this.ctx.step(this.events);
    } catch (err) {
      const seqIds = [...this.live.keys()];
      this.live.clear();
      this.matchers.clear();
      this.post({ op: 'step_failed', seqIds, error: wireError(err) });
      return;
    }
    if (n === 0) return;
    const events = this.events.slice(0, n * ENG.EVENT_INTS);
    const logits: [number, Float32Array][] = [];
    for (let i = 0; i < n; i++) {
      const seqId = events[i * ENG.EVENT_INTS] ?? -1;
      const kind = events[i * ENG.EVENT_INTS + 1];
      if (kind === ENG.EVENT_TOKEN && this.live.get(seqId)) {
        const out = new Float32Array(this.numVocab);
        this.ctx.seqLogits(seqId, out);
        logits.push([i, out]);
      } else if (kind === ENG.EVENT_FINISH) {
        this.live.delete(seqId);
        this.matchers.delete(seqId);
        this.drafters.delete(seqId);
      }
    }
    // Masks for the next step, set before it runs (a finished sequence has no matcher left).
    for (let i = 0; i < n; i++) {
      const o = i * ENG.EVENT_INTS;
      const seqId = events[o] ?? -1;
      if (events[o + 1] !== ENG.EVENT_TOKEN || !this.matchers.has(seqId)) continue;
      try {
        this.advance(seqId, events[o + 2] ?? -1);
      } catch {
        // A matcher that fails (e.g. its grammar's limits) lifts the constraint: validation decides.
        this.unconstrain(seqId);
      }
    }
    this.draftConstrained(events, n);
    if (this.drafters.size > 0) {
      let tokens = 0;
      for (let i = 0; i < n; i++) if (events[i * ENG.EVENT_INTS + 1] === ENG.EVENT_TOKEN) tokens++;
      this.draftCost.step(performance.now() - t0, tokens);
    }
    this.post({ op: 'events', events, logits }, [events.buffer, ...logits.map(([, l]) => l.buffer as ArrayBuffer)]);
  }

  /** Drafts for the constrained sequences that produced tokens in this step (constrained-drafts.ts). */
  private draftConstrained(events: Int32Array, n: number): void {
    if (this.drafters.size === 0) return;
    const produced = new Map<number, number[]>();
    for (let i = 0; i < n; i++) {
      const o = i * ENG.EVENT_INTS;
      const seqId = events[o] ?? -1;
      if (events[o + 1] !== ENG.EVENT_TOKEN || !this.drafters.has(seqId)) continue;
      const list = produced.get(seqId) ?? [];
      list.push(events[o + 2] ?? -1);
      produced.set(seqId, list);
    }
    if (produced.size === 0) return;
    const words = Math.ceil(this.numVocab / 32);
    const cost = this.draftCost.relative(this.ctx.stats()[ENG.STAT_TOKEN_COST_PPM] ?? 0);
    let positions = 0;
    let buildMs = 0;
    for (const [seqId, tokens] of produced) {
      const drafter = this.drafters.get(seqId);
      const matcher = this.matchers.get(seqId);
      drafter?.observe(tokens);
      if (!drafter || !matcher) {
        this.drafters.delete(seqId);
        continue;
      }
      try {
        const draft = drafter.next(matcher, words, cost);
        positions += draft.tokens.length;
        buildMs += drafter.buildMs;
        if (draft.tokens.length > 0) this.ctx.seqDraft(seqId, draft.tokens, draft.masks);
      } catch {
        this.drafters.delete(seqId); // a draft is an optimisation only: decoding goes on without
      }
    }
    this.draftCost.drafted(buildMs, positions);
  }
}

async function main(): Promise<void> {
  const port = parentPort;
  if (!port) throw new Error('engine-worker.ts must run in a worker thread');
  const init = workerData as WorkerInit;
  const post = (msg: FromWorker, transfer?: ArrayBuffer[]) => port.postMessage(msg, transfer);
  let ctx: NativeContext;
  try {
    const lib = await NativeLib.open(init.libPath);
    if (init.cudaLibPath !== undefined) lib.setCudaLibrary(init.cudaLibPath);
    ctx = lib.createContext(init.modelDir, init.params);
  } catch (err) {
    post({ op: 'init_failed', error: wireError(err) });
    return;
  }
  const info = ctx.info();
  // Node's synchronous receive; a runtime without it keeps one step per event-loop turn.
  const receive = (workerThreads as { receiveMessageOnPort?: typeof workerThreads.receiveMessageOnPort })
    .receiveMessageOnPort;
  const drain = receive ? () => receive(port)?.message as ToWorker | undefined : undefined;
  const pump = new Pump(ctx, info[ENG.INFO_N_VOCAB] ?? 0, info[ENG.INFO_SPEC_MAX_DRAFT] ?? 0, post, drain);
  port.on('message', (msg: ToWorker) => pump.handle(msg));
  post({ op: 'ready', info });
}

void main();

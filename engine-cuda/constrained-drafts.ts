/**
 * constrained-drafts.ts: drafts for constrained sequences, made on the engine worker where their
 * grammar matcher lives (speculative decoding, issue 35). The engine drafts for itself only while no
 * mask is set, because the mask of a drafted position depends on the tokens before it; here a copy
 * of the sequence's matcher advances over the draft, the draft is cut before the first token the
 * grammar forbids, and the mask after each drafted token goes with it (eng_seq_draft), so the engine
 * verifies every position under the mask decoding without drafts would have used.
 *
 * A draft grows one position at a time, from what the matcher's copy says there:
 * - forced: the grammar allows exactly one token (a tool-call marker, a closing quote the schema
 *   leaves no choice about). Decoding would take it whatever the logits say (greedy, and sampling
 *   under a one-token mask), so it is always accepted and costs only its row in the pass;
 * - remembered: a narrow state (at most NARROW_MAX tokens allowed: a JSON key, punctuation, a
 *   tool's name) where the model was seen before, under the same grammar (any sequence), takes the
 *   token it chose then. A key that several tokenizations spell (`s` `ender` or `se` `nder`) is
 *   drafted the way the model spells it;
 * - looked up: elsewhere (the inside of a string, free text), prompt lookup: the tokens that
 *   followed the most recent earlier occurrence of the last m tokens (m = 4, 3, 2) of the prompt,
 *   the output and the draft so far, as the engine's (scheduler.cpp lookup). A run of looked-up
 *   tokens goes on from where it matched until a position the grammar or memory decides.
 * The draft stops at the first position none of these gives a token the matcher allows.
 * The turn-down weighs each drafted position's cost, in generated tokens' worth of time: the
 * engine's measured cost of one more token in a pass (ENG_STAT_TOKEN_COST_PPM) plus this worker's
 * own time to build a position (the matcher's mask after it), both measured (DraftCost). Drafted
 * token j of the ones not forced is accepted with probability about alpha^j (alpha: the sequence's
 * decayed per-token acceptance of such tokens) and is drafted only while alpha^j >= cost; below that,
 * one such token every 16th step keeps alpha current. A forced token is always accepted, so forced
 * tokens are drafted while a position costs less than the token it gains (cost < 1).
 */
import { isAllowed, type MaskBuilder, TokenMatcher } from '../grammar/token-mask.ts';

const NGRAM_MAX = 4;
const NGRAM_MIN = 2;
/** What one more drafted token costs, in generated tokens' worth of time, before any is measured. */
const TOKEN_COST = 0.25;
const COST_DECAY = 0.95; // as the engine's cost model: about the latest 20 steps

/**
 * What a drafted position costs on the engine worker: decayed sums of the time spent building drafts
 * and the positions they held, and of whole steps (the engine's pass, the masks, the drafts) and the
 * tokens they produced; relative() adds the engine's own measured cost of a token in a pass.
 */
export class DraftCost {
  private buildMs = 0;
  private built = 0;
  private stepMs = 0;
  private tokens = 0;

  drafted(ms: number, positions: number): void {
    this.buildMs = COST_DECAY * this.buildMs + ms;
    this.built = COST_DECAY * this.built + positions;
  }

  step(ms: number, tokens: number): void {
    this.stepMs = COST_DECAY * this.stepMs + ms;
    this.tokens = COST_DECAY * this.tokens + tokens;
  }

  /** A position's cost in generated tokens' worth of time; engineCostPpm: ENG_STAT_TOKEN_COST_PPM (0: not measured). */
  relative(engineCostPpm: number): number {
    if (engineCostPpm <= 0 || this.tokens <= 0 || this.built <= 0) return TOKEN_COST;
    return engineCostPpm / 1e6 + this.buildMs / this.built / (this.stepMs / this.tokens);
  }
}
const PROBE_EVERY = 16;
/** A state allowing at most this many tokens is narrow: the token the model took there is remembered. */
export const NARROW_MAX = 64;
/** Remembered states per grammar (cleared when full). */
const MEMORY_MAX = 4096;

/** The tokens that followed the most recent earlier occurrence of the history's last m tokens. */
export function lookupDraft(history: readonly number[], max: number): number[] {
  const at = lookupAt(history);
  return at < 0 ? [] : history.slice(at, Math.min(history.length, at + max));
}

/** Where the tokens after the most recent earlier occurrence of the history's last m tokens start (-1: none). */
function lookupAt(history: readonly number[]): number {
  const n = history.length;
  for (let m = Math.min(NGRAM_MAX, n - 1); m >= NGRAM_MIN; m--) {
    for (let j = n - m - 1; j >= 0; j--) {
      let k = 0;
      while (k < m && history[j + k] === history[n - m + k]) k++;
      if (k === m) return j + m;
    }
  }
  return -1;
}

/** The token the model took at each narrow state of a grammar (shared by its sequences). */
const memories = new WeakMap<MaskBuilder, Map<number, number>>();

function memoryOf(builder: MaskBuilder): Map<number, number> {
  let memory = memories.get(builder);
  if (!memory) {
    memory = new Map();
    memories.set(builder, memory);
  }
  return memory;
}

/** What a draft's token came from (forced tokens are always accepted). */
export type DraftSource = 'forced' | 'remembered' | 'lookup';

export interface ConstrainedDraft {
  tokens: number[];
  /** The mask after each token (tokens.length x words). */
  masks: Uint32Array;
  sources: DraftSource[];
}

/**
 * A draft from the matcher's state: forced, remembered and looked-up tokens (see the file comment),
 * at most `max` tokens of which at most `maxGuessed` are not forced. `scratch`: a matcher over the same
 * grammar to advance (its state is overwritten), saving a new one's bitset.
 */
export function buildDraft(
  matcher: TokenMatcher,
  history: readonly number[],
  max: number,
  maxGuessed: number,
  words: number,
  scratch?: TokenMatcher,
): ConstrainedDraft {
  const copy = scratch?.builder === matcher.builder ? scratch : new TokenMatcher(matcher.builder);
  copy.state = matcher.state;
  const memory = memoryOf(matcher.builder);
  const tokens: number[] = [];
  const sources: DraftSource[] = [];
  const masks = new Uint32Array(max * words);
  const seen = [...history];
  let guessed = 0;
  let from = -1; // the next looked-up token's index in `seen` (-1: no run under way)
  while (tokens.length < max) {
    const allowed = copy.mask();
    if (!allowed) break;
    let id = copy.forced();
    let source: DraftSource = 'forced';
    if (id < 0) {
      if (guessed >= maxGuessed) break;
      const remembered = memory.get(copy.state);
      if (remembered !== undefined && isAllowed(allowed, remembered)) {
        id = remembered;
        source = 'remembered';
      } else {
        if (from < 0 || from >= seen.length) from = lookupAt(seen);
        if (from < 0 || !isAllowed(allowed, seen[from]!)) break;
        id = seen[from]!;
        source = 'lookup';
      }
    }
    // A looked-up run goes on past tokens the grammar or memory decided when they agree with it.
    from = from >= 0 && from < seen.length && seen[from] === id ? from + 1 : -1;
    if (!copy.advance(id)) break;
    const after = copy.mask();
    if (!after) break;
    masks.set(after.subarray(0, words), tokens.length * words);
    tokens.push(id);
    sources.push(source);
    seen.push(id);
    if (source !== 'forced') guessed++;
  }
  return { tokens, masks: masks.subarray(0, tokens.length * words), sources };
}

/** One constrained sequence's history, its latest draft and its acceptance record. */
export class ConstrainedDrafter {
  private readonly history: number[];
  private pending: ConstrainedDraft | undefined;
  private accepted = 1;
  private rejected = 1;
  private idle = 0;
  /** The tokens of steps since the latest draft, and the matcher state before them (memory). */
  private unseen: number[] = [];
  private stateBefore: number | undefined;
  /** The matcher the drafts and the memory advance (one per sequence: a matcher's bitset is V/8 bytes). */
  private scratch: TokenMatcher | undefined;
  /** The time the latest draft took to build (ms; its masks included, the memory's update not). */
  buildMs = 0;

  constructor(
    prompt: ArrayLike<number>,
    private readonly maxDraft: number,
  ) {
    this.history = Array.from(prompt);
  }

  /** The tokens one step produced for the sequence, in order (updates the acceptance record). */
  observe(tokens: readonly number[]): void {
    const pending = this.pending;
    if (pending && pending.tokens.length > 0) {
      // The record counts the tokens that were not forced: a forced one is never rejected.
      let a = 0;
      let i = 0;
      while (i < pending.tokens.length && i < tokens.length && tokens[i] === pending.tokens[i]) {
        if (pending.sources[i] !== 'forced') a++;
        i++;
      }
      this.accepted = 0.8 * this.accepted + a;
      this.rejected = 0.8 * this.rejected + (i < pending.tokens.length ? 1 : 0);
    }
    this.pending = undefined;
    for (const t of tokens) {
      this.history.push(t);
      this.unseen.push(t);
    }
  }

  /**
   * The next draft and its masks (empty: none), for the matcher's current state; cost: a drafted
   * position's, in generated tokens' worth of time (DraftCost.relative).
   */
  next(matcher: TokenMatcher, words: number, cost = TOKEN_COST): ConstrainedDraft {
    this.remember(matcher);
    const alpha = this.accepted / (this.accepted + this.rejected);
    let k = 0;
    for (let p = alpha; k < this.maxDraft && p >= cost; p *= alpha) k++;
    if (k === 0 && ++this.idle >= PROBE_EVERY) k = 1;
    const max = cost < 1 ? this.maxDraft : k; // forced tokens pay while a position costs less than one
    const t0 = performance.now();
    const draft = buildDraft(matcher, this.history, max, k, words, this.scratch);
    this.buildMs = performance.now() - t0;
    if (draft.sources.some((s) => s !== 'forced')) this.idle = 0;
    this.pending = draft;
    return draft;
  }

  /** Records the model's tokens at the narrow states it passed since the latest draft. */
  private remember(matcher: TokenMatcher): void {
    if (this.scratch?.builder !== matcher.builder) this.scratch = new TokenMatcher(matcher.builder);
    const copy = this.scratch;
    copy.state = this.stateBefore ?? matcher.builder.run.start;
    const memory = memoryOf(matcher.builder);
    for (const id of this.unseen) {
      const n = copy.countAllowed(NARROW_MAX);
      if (n > 1 && n <= NARROW_MAX) {
        if (memory.size >= MEMORY_MAX) memory.clear();
        memory.set(copy.state, id);
      }
      if (!copy.advance(id)) break;
    }
    this.unseen = [];
    this.stateBefore = matcher.state;
  }
}

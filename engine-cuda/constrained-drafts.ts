/**
 * constrained-drafts.ts: prompt-lookup drafts for constrained sequences, made on the engine worker
 * where their grammar matcher lives (speculative decoding, issue 35). The engine drafts for itself
 * only while no mask is set, because the mask of a drafted position depends on the tokens before it;
 * here a copy of the sequence's matcher advances over the draft, the draft is cut before the first
 * token the grammar forbids, and the mask after each drafted token goes with it (eng_seq_draft), so
 * the engine verifies every position under the mask decoding without drafts would have used.
 * The same lookup as the engine's (scheduler.cpp propose): the most recent earlier occurrence of the
 * last m tokens, m = 4, 3, 2, in the prompt and output, and what followed it. The same turn-down:
 * drafted token j is accepted with probability about alpha^j (alpha: the sequence's decayed per-token
 * acceptance), and is drafted only while alpha^j >= TOKEN_COST; below that, one token every 16th
 * step keeps alpha current.
 */
import { isAllowed, TokenMatcher } from '../grammar/token-mask.ts';

const NGRAM_MAX = 4;
const NGRAM_MIN = 2;
/** What one more drafted token costs, in generated tokens' worth of time (the engine measures its own). */
const TOKEN_COST = 0.25;
const PROBE_EVERY = 16;

/** The tokens that followed the most recent earlier occurrence of the history's last m tokens. */
export function lookupDraft(history: readonly number[], max: number): number[] {
  const n = history.length;
  for (let m = Math.min(NGRAM_MAX, n - 1); m >= NGRAM_MIN; m--) {
    for (let j = n - m - 1; j >= 0; j--) {
      let k = 0;
      while (k < m && history[j + k] === history[n - m + k]) k++;
      if (k < m) continue;
      return history.slice(j + m, Math.min(n, j + m + max));
    }
  }
  return [];
}

/** A draft cut to what the matcher allows, with the mask after each of its tokens (n x words). */
export function maskDraft(
  matcher: TokenMatcher,
  draft: readonly number[],
  words: number,
): { tokens: number[]; masks: Uint32Array } {
  const copy = new TokenMatcher(matcher.builder);
  copy.state = matcher.state;
  const tokens: number[] = [];
  const masks = new Uint32Array(draft.length * words);
  for (const id of draft) {
    const allowed = copy.mask();
    if (!allowed || !isAllowed(allowed, id) || !copy.advance(id)) break;
    const after = copy.mask();
    if (!after) break;
    masks.set(after.subarray(0, words), tokens.length * words);
    tokens.push(id);
  }
  return { tokens, masks: masks.subarray(0, tokens.length * words) };
}

/** One constrained sequence's history, its latest draft and its acceptance record. */
export class ConstrainedDrafter {
  private readonly history: number[];
  private pending: number[] = [];
  private accepted = 1;
  private rejected = 1;
  private idle = 0;

  constructor(
    prompt: ArrayLike<number>,
    private readonly maxDraft: number,
  ) {
    this.history = Array.from(prompt);
  }

  /** The tokens one step produced for the sequence, in order (updates the acceptance record). */
  observe(tokens: readonly number[]): void {
    if (this.pending.length > 0) {
      let a = 0;
      while (a < this.pending.length && a < tokens.length && tokens[a] === this.pending[a]) a++;
      this.accepted = 0.8 * this.accepted + a;
      this.rejected = 0.8 * this.rejected + (a < this.pending.length ? 1 : 0);
      this.pending = [];
    }
    for (const t of tokens) this.history.push(t);
  }

  /** The next draft and its masks (empty: none), for the matcher's current state. */
  next(matcher: TokenMatcher, words: number): { tokens: number[]; masks: Uint32Array } {
    const alpha = this.accepted / (this.accepted + this.rejected);
    let k = 0;
    for (let p = alpha; k < this.maxDraft && p >= TOKEN_COST; p *= alpha) k++;
    if (k === 0 && ++this.idle >= PROBE_EVERY) k = 1;
    const draft =
      k > 0 ? maskDraft(matcher, lookupDraft(this.history, k), words) : { tokens: [], masks: new Uint32Array(0) };
    if (draft.tokens.length > 0) this.idle = 0;
    this.pending = draft.tokens;
    return draft;
  }
}

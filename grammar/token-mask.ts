/**
 * Token masks: which vocabulary ids a grammar state may take next, as a bitset (bit i of word
 * i >> 5 set = id i allowed), the layout eng_seq_mask() reads.
 *
 * Ordinary tokens are byte strings, arranged once per vocabulary in a trie (children in flat
 * arrays). A mask walks the trie from the state: a child byte the state cannot take prunes the
 * whole subtree, and a token is allowed when the walk reaches its node alive, so a token that
 * closes a string, writes `",` and opens the next key is checked byte by byte across grammar
 * symbols. Special tokens are allowed only where the grammar names them; stop tokens only where
 * the grammar accepts. Masks are cached per state (states recur: the inside of a string, the
 * digits of a number), so most steps are one lookup.
 *
 * A mask is computed into one scratch bitset per vocabulary. Most states are narrow (a key, a
 * punctuation mark, a digit: a few dozen tokens), and those are cached as their nonzero words
 * only, written into the matcher's own bitset when asked for; wide ones keep a whole copy. A
 * whole new bitset per new state (V/8 bytes of memory never touched before, 19 KiB for 150k ids)
 * was most of that state's cost where first-touched pages are slow (a VM: ~10 µs a page).
 */
import { DEAD, type GrammarRun } from './matcher.ts';

export interface VocabularyData {
  /** Bytes of each ordinary token by id (undefined: special, unused or unknown). */
  tokens: Array<Uint8Array | undefined>;
  /** Special tokens by content. */
  specials: Record<string, number>;
  size: number;
  /**
   * The tokenizer's decoder drops one leading space of the output (SentencePiece vocabularies:
   * Hugging Face's Strip decoder), so the first token's leading space is never published:
   * matchers start in GrammarRun.start, which takes that space without consuming grammar input.
   */
  stripsLeadingSpace?: boolean;
}

export class TokenTrie {
  /** Children of node n: childByte/childNode[childStart[n] .. childStart[n + 1]). */
  readonly childStart: Int32Array;
  readonly childByte: Uint8Array;
  readonly childNode: Int32Array;
  /** Token ids ending at node n: tokenIds[tokenStart[n] .. tokenStart[n + 1]). */
  readonly tokenStart: Int32Array;
  readonly tokenIds: Int32Array;
  readonly specialIds: Map<string, number>;
  readonly numWords: number;
  /** Bytes of the longest ordinary token. */
  readonly maxTokenBytes: number;
  /**
   * Where MaskBuilders over this vocabulary compute a mask: the bitset (all zero between
   * computations) and the words it has made nonzero, in order.
   */
  readonly work: Uint32Array;
  readonly touched: Int32Array;

  constructor(readonly vocab: VocabularyData) {
    // Ids the model's vocabulary cannot produce (a tokenizer listing more ids than the model has)
    // never enter a mask: the engine rejects masks with bits beyond its vocabulary.
    this.specialIds = new Map(Object.entries(vocab.specials).filter(([, id]) => id < vocab.size));
    this.numWords = (vocab.size + 31) >>> 5;
    this.work = new Uint32Array(this.numWords);
    this.touched = new Int32Array(this.numWords);
    // Sort ids by bytes; a trie node is then a run of equal prefixes (built without per-node maps).
    const ids: number[] = [];
    vocab.tokens.forEach((b, id) => {
      if (b && b.length > 0 && id < vocab.size) ids.push(id);
    });
    const tok = vocab.tokens as Uint8Array[];
    this.maxTokenBytes = ids.reduce((m, id) => Math.max(m, tok[id]!.length), 0);
    ids.sort((a, b) => compareBytes(tok[a]!, tok[b]!));
    const parentOf: number[] = [-1];
    const byteOf: number[] = [0];
    const endsHere: number[][] = [[]];
    const path: number[] = [0]; // path[d] = node at depth d for the previous token
    let prev: Uint8Array = new Uint8Array(0);
    for (const id of ids) {
      const t = tok[id]!;
      let common = 0;
      while (common < t.length && common < prev.length && t[common] === prev[common]) common++;
      path.length = common + 1;
      for (let d = common; d < t.length; d++) {
        const node = parentOf.length;
        parentOf.push(path[d]!);
        byteOf.push(t[d]!);
        endsHere.push([]);
        path.push(node);
      }
      endsHere[path[t.length]!]!.push(id);
      prev = t;
    }
    const n = parentOf.length;
    const counts = new Int32Array(n + 1);
    for (let i = 1; i < n; i++) counts[parentOf[i]! + 1]!++;
    this.childStart = new Int32Array(n + 1);
    for (let i = 0; i < n; i++) this.childStart[i + 1] = this.childStart[i]! + counts[i + 1]!;
    this.childByte = new Uint8Array(n);
    this.childNode = new Int32Array(n);
    const fill = this.childStart.slice(0, n);
    // Nodes were created in sorted order, so children come out sorted by byte.
    for (let i = 1; i < n; i++) {
      const p = parentOf[i]!;
      const at = fill[p]!++;
      this.childByte[at] = byteOf[i]!;
      this.childNode[at] = i;
    }
    this.tokenStart = new Int32Array(n + 1);
    for (let i = 0; i < n; i++) this.tokenStart[i + 1] = this.tokenStart[i]! + endsHere[i]!.length;
    this.tokenIds = Int32Array.from(endsHere.flat());
  }

  get numNodes(): number {
    return this.childByte.length;
  }

  private readonly loops = new Map<string, LoopIndex>();

  /**
   * For a byte class C (a state's self-loop bytes): the tokens made only of C bytes, and every
   * place a token leaves C (the trie child reached by its first non-C byte). Built once per class
   * and vocabulary, shared by every grammar (the inside of a JSON string, a dialect's free text).
   */
  loopIndex(cls: Uint8Array): LoopIndex {
    const key = Buffer.from(cls).toString('latin1');
    let index = this.loops.get(key);
    if (index) return index;
    const allIn = new Uint32Array(this.numWords);
    const exitChild: number[] = [];
    const exitByte: number[] = [];
    const stack = [0];
    while (stack.length > 0) {
      const node = stack.pop()!;
      for (let c = this.childStart[node]!, end = this.childStart[node + 1]!; c < end; c++) {
        const b = this.childByte[c]!;
        const child = this.childNode[c]!;
        if (!cls[b]) {
          exitChild.push(child);
          exitByte.push(b);
          continue;
        }
        for (let t = this.tokenStart[child]!, te = this.tokenStart[child + 1]!; t < te; t++) {
          const id = this.tokenIds[t]!;
          allIn[id >>> 5]! |= 1 << (id & 31);
        }
        stack.push(child);
      }
    }
    index = { allIn, exitChild: Int32Array.from(exitChild), exitByte: Uint8Array.from(exitByte) };
    if (this.loops.size >= 64) this.loops.clear();
    this.loops.set(key, index);
    return index;
  }
}

export interface LoopIndex {
  allIn: Uint32Array;
  exitChild: Int32Array;
  exitByte: Uint8Array;
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}

/** A state looping on at least this many bytes takes the loop-class path (TokenTrie.loopIndex). */
const LOOP_MIN_BYTES = 32;

/**
 * Masks kept per grammar run (a wide one is V/8 bytes, 19 KiB for a 150k vocabulary; a narrow
 * one 8 bytes per nonzero word).
 */
const MAX_MASKS = 512;

/** A mask with at most numWords / SPARSE_SHARE nonzero words is cached as those words only. */
const SPARSE_SHARE = 32;

/**
 * A cached mask: the whole bitset, or a narrow mask's nonzero words as (word index, bits) pairs
 * (the bits as int32: the same 32 bits).
 */
export class CachedMask {
  constructor(
    readonly whole: Uint32Array | undefined,
    readonly pairs: Int32Array | undefined,
  ) {}
}

/** Masks of one GrammarRun over one vocabulary, cached per state (cleared when MAX_MASKS fill up). */
export class MaskBuilder {
  private readonly cache = new Map<number, CachedMask | null>();
  private stackNode = new Int32Array(1024);
  private stackState = new Int32Array(1024);
  /** Words of trie.work made nonzero so far by the computation under way. */
  private numTouched = 0;

  constructor(
    readonly run: GrammarRun,
    readonly trie: TokenTrie,
    readonly stopIds: readonly number[],
  ) {}

  /** The mask of a live state (computed on first use), or null when it allows nothing; do not modify it. */
  cached(state: number): CachedMask | null {
    let m = this.cache.get(state);
    if (m === undefined) {
      const canonical = this.run.canonical(state);
      m = canonical === state ? undefined : this.cache.get(canonical);
      if (m === undefined) {
        m = this.compute(canonical);
        if (this.cache.size >= MAX_MASKS) this.cache.clear();
        this.cache.set(canonical, m);
      }
      this.cache.set(state, m);
    }
    return m;
  }

  /** Computes into trie.work (left all zero again, also when the grammar throws) the mask to cache. */
  private compute(state: number): CachedMask | null {
    try {
      return this.computeInWork(state);
    } catch (e) {
      this.trie.work.fill(0);
      throw e;
    }
  }

  private computeInWork(state: number): CachedMask | null {
    const trie = this.trie;
    const run = this.run;
    const { childStart, childByte, childNode, work, touched } = trie;
    this.numTouched = 0;
    let listed = true;
    let top = 0;
    const loop = this.selfLoop(state);
    if (loop) {
      // Tokens made only of bytes that keep this state are allowed as a block; the walk starts
      // where a token first leaves the loop class.
      const index = trie.loopIndex(loop);
      work.set(index.allIn);
      listed = false; // the words set here are not in `touched`
      const trans = run.states[state]!.trans;
      for (let e = 0; e < index.exitChild.length; e++) {
        const next = trans[index.exitByte[e]!]!;
        if (next === DEAD) continue;
        top = this.visit(index.exitChild[e]!, next, top);
      }
    } else {
      this.stackNode[0] = 0;
      this.stackState[0] = state;
      top = 1;
    }
    while (top > 0) {
      top--;
      const node = this.stackNode[top]!;
      const s = this.stackState[top]!;
      const trans = run.states[s]!.trans;
      for (let c = childStart[node]!, end = childStart[node + 1]!; c < end; c++) {
        const b = childByte[c]!;
        let next = trans[b]!;
        if (next === -1) next = run.stepByte(s, b);
        if (next === DEAD) continue;
        top = this.visit(childNode[c]!, next, top);
      }
    }
    const info = run.states[state]!;
    for (const id of info.specials) this.allow(id);
    if (info.isAccepting) for (const id of this.stopIds) this.allow(id);
    const n = this.numTouched;
    if (listed && n * SPARSE_SHARE <= trie.numWords) {
      if (n === 0) return null;
      const pairs = new Int32Array(2 * n);
      for (let i = 0; i < n; i++) {
        const w = touched[i]!;
        pairs[2 * i] = w;
        pairs[2 * i + 1] = work[w]!;
        work[w] = 0;
      }
      return new CachedMask(undefined, pairs);
    }
    const whole = work.slice();
    work.fill(0);
    return whole.some((word) => word !== 0) ? new CachedMask(whole, undefined) : null;
  }

  /** Sets id's bit in trie.work, listing its word when that word was zero. */
  private allow(id: number): void {
    const { work, touched } = this.trie;
    const w = id >>> 5;
    const old = work[w]!;
    if (old === 0) touched[this.numTouched++] = w;
    work[w] = old | (1 << (id & 31));
  }

  /** Marks the tokens ending at a live trie node and queues its children; returns the new stack top. */
  private visit(child: number, state: number, top: number): number {
    const { childStart, tokenStart, tokenIds } = this.trie;
    for (let t = tokenStart[child]!, te = tokenStart[child + 1]!; t < te; t++) this.allow(tokenIds[t]!);
    if (childStart[child + 1]! > childStart[child]!) {
      if (top === this.stackNode.length) this.grow();
      this.stackNode[top] = child;
      this.stackState[top] = state;
      top++;
    }
    return top;
  }

  /** The bytes that lead from `state` back to itself, when there are many (wide states such as
   * the inside of a string or free text); undefined otherwise (the plain walk is cheap then). */
  private selfLoop(state: number): Uint8Array | undefined {
    // Probe two common bytes first: a narrow state (punctuation, keys, numbers) skips the 256 steps.
    if (this.run.stepByte(state, 0x61) !== state || this.run.stepByte(state, 0x20) !== state) return undefined;
    const loop = new Uint8Array(256);
    let count = 0;
    for (let b = 0; b < 256; b++) {
      if (this.run.stepByte(state, b) === state) {
        loop[b] = 1;
        count++;
      }
    }
    return count >= LOOP_MIN_BYTES ? loop : undefined;
  }

  private grow(): void {
    const n = this.stackNode.length * 2;
    const a = new Int32Array(n);
    a.set(this.stackNode);
    const b = new Int32Array(n);
    b.set(this.stackState);
    this.stackNode = a;
    this.stackState = b;
  }
}

/** Bit test on a mask. */
export function isAllowed(mask: Uint32Array, id: number): boolean {
  return ((mask[id >>> 5]! >>> (id & 31)) & 1) === 1;
}

/**
 * One sequence's constraint: the current state, advanced by each sampled id, and its mask.
 * `advance` returns false when the id was not allowed (the caller then drops the constraint).
 */
export class TokenMatcher {
  state: number;
  /** The bitset narrow masks are written into, and the pairs written there now. */
  private readonly out: Uint32Array;
  private shown: Int32Array | undefined;

  constructor(readonly builder: MaskBuilder) {
    this.state = builder.run.start;
    this.out = new Uint32Array(builder.trie.numWords);
  }

  /**
   * The ids allowed next; null once nothing is (a dead end: the caller lifts the constraint).
   * Do not modify it, and copy it to keep it: a narrow mask is this matcher's one bitset,
   * rewritten by its next mask() call (the engine copies a mask when it is set).
   */
  mask(): Uint32Array | null {
    if (this.state < 0) return null;
    const m = this.builder.cached(this.state);
    if (m === null) return null;
    const pairs = m.pairs;
    if (pairs === undefined) return m.whole!;
    if (pairs !== this.shown) {
      const out = this.out;
      const shown = this.shown;
      if (shown) for (let i = 0; i < shown.length; i += 2) out[shown[i]!] = 0;
      for (let i = 0; i < pairs.length; i += 2) out[pairs[i]!] = pairs[i + 1]!;
      this.shown = pairs;
    }
    return this.out;
  }

  advance(id: number): boolean {
    const { run, trie } = this.builder;
    if (this.state < 0) return false;
    const bytes = trie.vocab.tokens[id];
    const isSpecial = run.states[this.state]!.specials.includes(id);
    const next = isSpecial
      ? run.stepSpecial(this.state, id)
      : bytes && bytes.length > 0
        ? run.stepBytes(this.state, bytes)
        : DEAD;
    this.state = next;
    return next !== DEAD;
  }

  get isAccepting(): boolean {
    return this.builder.run.isAccepting(this.state);
  }

  /**
   * How many ids the current state allows, counted up to `limit` (more: limit + 1; none or a dead
   * end: 0). Cheap on the narrow states this is for (a key, punctuation, a marker): a narrow cached
   * mask lists its few nonzero words, and a wide one stops the count within its first words.
   */
  countAllowed(limit: number): number {
    if (this.state < 0) return 0;
    const m = this.builder.cached(this.state);
    if (m === null) return 0;
    let n = 0;
    if (m.pairs) {
      for (let i = 1; i < m.pairs.length && n <= limit; i += 2) n += popcount(m.pairs[i]!);
    } else {
      const whole = m.whole!;
      for (let w = 0; w < whole.length && n <= limit; w++) if (whole[w] !== 0) n += popcount(whole[w]!);
    }
    return Math.min(n, limit + 1);
  }

  /** The one id the current state allows (a forced token), or -1 when it allows none or several. */
  forced(): number {
    if (this.countAllowed(1) !== 1) return -1;
    const m = this.builder.cached(this.state)!;
    if (m.pairs) return m.pairs[0]! * 32 + 31 - Math.clz32(m.pairs[1]!);
    const whole = m.whole!;
    let w = 0;
    while (whole[w] === 0) w++;
    return w * 32 + 31 - Math.clz32(whole[w]!);
  }
}

function popcount(x: number): number {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  return (Math.imul((x + (x >>> 4)) & 0x0f0f0f0f, 0x01010101) >>> 24) & 0xff;
}

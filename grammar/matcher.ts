/**
 * A Grammar compiled to a byte-level pushdown automaton and run as a lazily built DFA.
 *
 * Compilation (continuation-passing, one pass): every Expr becomes graph nodes that match it and
 * then continue at a given node. Nodes are BYTE (byte-range edges), EPS (choices), CALL (push a
 * return node, enter a rule), RET (pop), SPECIAL (one special token id) and ACCEPT.
 *
 * Run time: a frame is (node, parent frame) hash-consed to an integer, so a stack is one id; the
 * epsilon closure of a frame (its BYTE / SPECIAL / ACCEPT leaves) is memoised per frame; a state
 * is the sorted set of leaf frames, interned to an id, with its 256 byte transitions filled on
 * first use (DEAD from the start for a byte no leaf takes). A step over a byte already seen from
 * a state is one array read, which is what makes walking the vocabulary trie (token-mask.ts) cheap.
 */
import type { Expr, Grammar } from './grammar.ts';

const BYTE = 0,
  EPS = 1,
  CALL = 2,
  RET = 3,
  SPECIAL = 4,
  ACCEPT = 5;
const UNKNOWN = -1;
export const DEAD = -2;

interface GraphNode {
  kind: number;
  /** BYTE: [lo, hi, next] triples. */
  edges?: number[];
  /** EPS: successors. */
  next?: number[];
  /** CALL: rule entry and return node. SPECIAL: token id and successor (in `ret`). */
  rule?: number;
  ret?: number;
  id?: number;
}

export interface StateInfo {
  leaves: Int32Array;
  /** Next state per byte: UNKNOWN (not computed yet), DEAD or a state id. */
  trans: Int32Array;
  isAccepting: boolean;
  /** Special token ids this state can take. */
  specials: number[];
}

const encoder = new TextEncoder();

export class CompiledGrammar {
  readonly nodes: GraphNode[] = [];
  private readonly ruleEntry = new Map<string, number>();
  /**
   * Bounded repetitions: chain nodes by how many more items they allow (index r - 1), and a
   * shadow node repeating the same item without bound before the same continuation.
   */
  private readonly chains: Array<{ nodes: number[]; shadow: number }> = [];
  /** Node → the node it is mask-equivalent to (see GrammarRun.canonical); absent: itself. */
  readonly canon = new Map<number, number>();
  readonly start: number;

  /**
   * specialIds: content → id of the vocabulary's special tokens; a `special` missing here is
   * matched as text. maxTokenBytes: the longest token; a bounded repetition with more items left
   * than that behaves the same for every token, so such positions share one mask.
   */
  constructor(
    readonly grammar: Grammar,
    readonly specialIds: ReadonlyMap<string, number>,
    maxTokenBytes = Infinity,
  ) {
    const accept = this.add({ kind: ACCEPT });
    this.start = this.compile(grammar.root, accept);
    if (Number.isFinite(maxTokenBytes)) {
      // A token of at most maxTokenBytes bytes completes at most that many items, so a position
      // with more items left accepts exactly the tokens the unbounded repetition accepts.
      const keep = maxTokenBytes + 1;
      for (const { nodes, shadow } of this.chains)
        for (let r = keep; r <= nodes.length; r++) this.canon.set(nodes[r - 1]!, shadow);
    }
  }

  private add(node: GraphNode): number {
    this.nodes.push(node);
    return this.nodes.length - 1;
  }

  private entry(name: string): number {
    let at = this.ruleEntry.get(name);
    if (at !== undefined) return at;
    const body = this.grammar.rules[name];
    if (!body) throw new Error(`grammar: unknown rule '${name}'`);
    at = this.add({ kind: EPS, next: [] });
    this.ruleEntry.set(name, at);
    const ret = this.add({ kind: RET });
    this.nodes[at]!.next = [this.compile(body, ret)];
    return at;
  }

  private bytesNode(data: Uint8Array, k: number): number {
    let at = k;
    for (let i = data.length - 1; i >= 0; i--) at = this.add({ kind: BYTE, edges: [data[i]!, data[i]!, at] });
    return at;
  }

  private compile(e: Expr, k: number): number {
    switch (e.k) {
      case 'text':
        return this.bytesNode(encoder.encode(e.v), k);
      case 'bytes': {
        const edges: number[] = [];
        for (let i = 0; i < e.ranges.length; i += 2) edges.push(e.ranges[i]!, e.ranges[i + 1]!, k);
        return this.add({ kind: BYTE, edges });
      }
      case 'seq':
        return e.items.reduceRight((next, item) => this.compile(item, next), k);
      case 'alt':
        return this.add({ kind: EPS, next: e.items.map((item) => this.compile(item, k)) });
      case 'rep':
        return this.compileRep(e.item, e.min, e.max, k);
      case 'ref':
        return this.add({ kind: CALL, rule: this.entry(e.name), ret: k });
      case 'special': {
        const id = this.specialIds.get(e.v);
        return id === undefined ? this.bytesNode(encoder.encode(e.v), k) : this.add({ kind: SPECIAL, id, ret: k });
      }
      case 'avoid':
        return this.compileAvoid(e.markers, k);
    }
  }

  private compileRep(item: Expr, min: number, max: number, k: number): number {
    let tail: number;
    if (max < 0) {
      tail = this.add({ kind: EPS, next: [] });
      this.nodes[tail]!.next = [this.compile(item, tail), k];
    } else {
      tail = k;
      const chain: number[] = [];
      for (let i = 0; i < max - min; i++) {
        tail = this.add({ kind: EPS, next: [this.compile(item, tail), k] });
        chain.push(tail);
      }
      if (chain.length > 1) {
        const shadow = this.add({ kind: EPS, next: [] });
        this.nodes[shadow]!.next = [this.compile(item, shadow), k];
        this.chains.push({ nodes: chain, shadow });
      }
    }
    for (let i = 0; i < min; i++) tail = this.compile(item, tail);
    return tail;
  }

  /**
   * Any byte string without any marker in it: an Aho-Corasick automaton over the markers whose
   * states are graph nodes; a byte completing a marker has no edge; every state may exit to k.
   */
  private compileAvoid(markers: string[], k: number): number {
    const words = markers.map((m) => encoder.encode(m)).filter((m) => m.length > 0);
    const gotoTable: Array<Map<number, number>> = [new Map()];
    const terminal: boolean[] = [false];
    for (const w of words) {
      let s = 0;
      for (const b of w) {
        let t = gotoTable[s]!.get(b);
        if (t === undefined) {
          t = gotoTable.length;
          gotoTable.push(new Map());
          terminal.push(false);
          gotoTable[s]!.set(b, t);
        }
        s = t;
      }
      terminal[s] = true;
    }
    // Full transition table by BFS (failure links folded in).
    const delta: Int32Array[] = gotoTable.map(() => new Int32Array(256));
    const fail = new Int32Array(gotoTable.length);
    const queue: number[] = [];
    for (let b = 0; b < 256; b++) {
      const t = gotoTable[0]!.get(b);
      delta[0]![b] = t ?? 0;
      if (t !== undefined) queue.push(t);
    }
    while (queue.length > 0) {
      const s = queue.shift()!;
      terminal[s] = terminal[s]! || terminal[fail[s]!]!;
      for (let b = 0; b < 256; b++) {
        const t = gotoTable[s]!.get(b);
        if (t !== undefined) {
          fail[t] = delta[fail[s]!]![b]!;
          delta[s]![b] = t;
          queue.push(t);
        } else {
          delta[s]![b] = delta[fail[s]!]![b]!;
        }
      }
    }
    const exits = gotoTable.map(() => this.add({ kind: EPS, next: [] }));
    gotoTable.forEach((_, s) => {
      if (terminal[s]) return;
      const edges: number[] = [];
      for (let b = 0; b < 256; b++) {
        const t = delta[s]![b]!;
        if (terminal[t]) continue;
        const last = edges.length - 3;
        if (last >= 0 && edges[last + 1] === b - 1 && edges[last + 2] === exits[t]) edges[last + 1] = b;
        else edges.push(b, b, exits[t]!);
      }
      const byteNode = this.add({ kind: BYTE, edges });
      this.nodes[exits[s]!]!.next = [byteNode, k];
    });
    return exits[0]!;
  }

  /** A fresh run over this grammar (states and caches are per run, shared by its sequences). */
  createRun(options: RunOptions = {}): GrammarRun {
    return new GrammarRun(this, options);
  }
}

export interface RunOptions {
  /** The output loses one leading space when decoded (see GrammarRun.start). */
  stripsLeadingSpace?: boolean;
}

/** The lazily determinised automaton of one CompiledGrammar. */
export class GrammarRun {
  private readonly frameNode: number[] = [];
  private readonly frameParent: number[] = [];
  private readonly frameIds = new Map<number, number>();
  private readonly closures: Array<Int32Array | undefined> = [];
  private readonly canonFrames: number[] = [];
  private readonly canonStates: number[] = [];
  readonly states: StateInfo[] = [];
  private readonly stateIds = new Map<string, number>();
  /** The grammar's own initial state: nothing written yet. */
  readonly initial: number;
  /**
   * Where a sequence's output starts (TokenMatcher). `initial`, or with stripsLeadingSpace a
   * state of its own for a decoder that drops the output's first character when it is a space
   * (Hugging Face's Strip(" ", 1, 0) after Fuse, SentencePiece vocabularies): a leading space
   * byte there is never published, so it leads to `initial` without consuming grammar input; any
   * other byte or special token steps as from `initial`, and the output no longer starts. A
   * first token " {" is then checked as "{", and a first token " " as nothing.
   */
  readonly start: number;

  constructor(
    readonly grammar: CompiledGrammar,
    options: RunOptions = {},
  ) {
    this.initial = this.internState(this.closure(this.frame(grammar.start, -1)));
    this.start = options.stripsLeadingSpace === true && this.initial >= 0 ? this.strippedStart() : this.initial;
  }

  /** The start state of a run whose output's leading space is stripped (see `start`). */
  private strippedStart(): number {
    const init = this.states[this.initial]!;
    const trans = new Int32Array(256);
    for (let b = 0; b < 256; b++) trans[b] = b === 0x20 ? this.initial : this.stepByte(this.initial, b);
    // Not interned: its leaves are initial's, and only its transitions differ. Its own canonical.
    const id = this.states.length;
    this.states.push({ leaves: init.leaves, trans, isAccepting: init.isAccepting, specials: init.specials });
    this.canonStates[id] = id;
    return id;
  }

  private frame(node: number, parent: number): number {
    const key = node * 0x4000000 + parent + 1;
    let id = this.frameIds.get(key);
    if (id === undefined) {
      id = this.frameNode.length;
      this.frameNode.push(node);
      this.frameParent.push(parent);
      this.frameIds.set(key, id);
    }
    return id;
  }

  private closure(frame: number): Int32Array {
    const cached = this.closures[frame];
    if (cached) return cached;
    const leaves = new Set<number>();
    const seen = new Set<number>();
    const stack = [frame];
    const nodes = this.grammar.nodes;
    while (stack.length > 0) {
      const f = stack.pop()!;
      if (seen.has(f)) continue;
      seen.add(f);
      if (seen.size > 100_000) throw new Error('grammar: closure too large (left recursion?)');
      const node = nodes[this.frameNode[f]!]!;
      const parent = this.frameParent[f]!;
      switch (node.kind) {
        case BYTE:
        case SPECIAL:
        case ACCEPT:
          leaves.add(f);
          break;
        case EPS:
          for (const n of node.next!) stack.push(this.frame(n, parent));
          break;
        case CALL:
          stack.push(this.frame(node.rule!, this.frame(node.ret!, parent)));
          break;
        case RET:
          if (parent >= 0) stack.push(parent);
          break;
      }
    }
    const out = Int32Array.from([...leaves].sort((a, b) => a - b));
    this.closures[frame] = out;
    return out;
  }

  private internState(leaves: Int32Array): number {
    if (leaves.length === 0) return DEAD;
    const key = leaves.join(',');
    let id = this.stateIds.get(key);
    if (id !== undefined) return id;
    id = this.states.length;
    const nodes = this.grammar.nodes;
    const specials: number[] = [];
    let isAccepting = false;
    // A byte outside every leaf's edges leads nowhere: DEAD from the start (what stepByte would
    // find), so a trie walk skips it with one read. Only the bytes some edge takes stay UNKNOWN.
    const trans = new Int32Array(256).fill(DEAD);
    for (const f of leaves) {
      const node = nodes[this.frameNode[f]!]!;
      if (node.kind === BYTE) {
        const edges = node.edges!;
        for (let i = 0; i < edges.length; i += 3) trans.fill(UNKNOWN, edges[i]!, edges[i + 1]! + 1);
      }
      if (node.kind === SPECIAL && !specials.includes(node.id!)) specials.push(node.id!);
      if (node.kind === ACCEPT) isAccepting = true;
    }
    this.states.push({ leaves, trans, isAccepting, specials });
    this.stateIds.set(key, id);
    return id;
  }

  private union(frames: number[]): number {
    if (frames.length === 0) return DEAD;
    const all = new Set<number>();
    for (const f of frames) for (const leaf of this.closure(f)) all.add(leaf);
    return this.internState(Int32Array.from([...all].sort((a, b) => a - b)));
  }

  /** The state after one byte (DEAD when the grammar cannot take it). */
  stepByte(state: number, byte: number): number {
    const info = this.states[state]!;
    const known = info.trans[byte]!;
    if (known !== UNKNOWN) return known;
    const nodes = this.grammar.nodes;
    const next: number[] = [];
    for (const f of info.leaves) {
      const node = nodes[this.frameNode[f]!]!;
      if (node.kind !== BYTE) continue;
      const edges = node.edges!;
      for (let i = 0; i < edges.length; i += 3) {
        if (byte >= edges[i]! && byte <= edges[i + 1]!) next.push(this.frame(edges[i + 2]!, this.frameParent[f]!));
      }
    }
    const id = this.union(next);
    info.trans[byte] = id;
    return id;
  }

  stepBytes(state: number, data: Uint8Array): number {
    for (let i = 0; i < data.length && state >= 0; i++) state = this.stepByte(state, data[i]!);
    return state;
  }

  stepSpecial(state: number, id: number): number {
    const nodes = this.grammar.nodes;
    const next: number[] = [];
    for (const f of this.states[state]!.leaves) {
      const node = nodes[this.frameNode[f]!]!;
      if (node.kind === SPECIAL && node.id === id) next.push(this.frame(node.ret!, this.frameParent[f]!));
    }
    return this.union(next);
  }

  /**
   * The state with every bounded-repetition position that has more items left than any token can
   * use replaced by the unbounded repetition of the same item (never reached by a real run): it
   * allows exactly the same tokens, so all those positions share one mask (a string of maxLength
   * 128 needs a handful of masks, not 128), and that state loops on its item's bytes, so its mask
   * takes the loop-class path of token-mask.ts.
   */
  canonical(state: number): number {
    if (this.grammar.canon.size === 0 || state < 0) return state;
    const known = this.canonStates[state];
    if (known !== undefined) return known;
    const leaves = new Set<number>();
    for (const f of this.states[state]!.leaves) leaves.add(this.canonicalFrame(f));
    const id = this.internState(Int32Array.from([...leaves].sort((a, b) => a - b)));
    this.canonStates[state] = id;
    return id;
  }

  private canonicalFrame(f: number): number {
    if (f < 0) return f;
    const known = this.canonFrames[f];
    if (known !== undefined) return known;
    const node = this.frameNode[f]!;
    const id = this.frame(this.grammar.canon.get(node) ?? node, this.canonicalFrame(this.frameParent[f]!));
    this.canonFrames[f] = id;
    return id;
  }

  isAccepting(state: number): boolean {
    return state >= 0 && this.states[state]!.isAccepting;
  }

  /** True when the whole text (special tokens spelled as content) is a sentence of the grammar. */
  matches(text: string): boolean {
    return this.isAccepting(this.stepBytes(this.initial, encoder.encode(text)));
  }
}

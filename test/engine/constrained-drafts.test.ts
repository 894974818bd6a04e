/**
 * Drafts for constrained sequences (engine-cuda/constrained-drafts.ts) over a small byte-level
 * vocabulary: a position the grammar allows one token at is drafted as forced (TokenMatcher.forced,
 * countAllowed); a narrow state where the model was seen before takes the token it chose then, for
 * any sequence under the same grammar; elsewhere prompt lookup continues a quoted run; every draft is
 * cut to what the matcher allows and carries the mask after each token (what a replay of the
 * matcher gives); the acceptance record counts the tokens that were guessed, not forced ones, and a
 * turned-down sequence still drafts forced tokens while a position costs less than a generated token
 * (DraftCost: the engine's measured cost plus the worker's own). The engine-level proof (same tokens with the
 * worker's drafts) is in speculative-engine.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { buildDraft, ConstrainedDrafter, DraftCost, lookupDraft } from '../../engine-cuda/constrained-drafts.ts';
import { CompiledGrammar } from '../../grammar/matcher.ts';
import { alt, avoid, seq, special, text, type Grammar } from '../../grammar/grammar.ts';
import { isAllowed, MaskBuilder, TokenMatcher, TokenTrie, type VocabularyData } from '../../grammar/token-mask.ts';

const PIECES = ['<', 'a', 'b', 'c', 'ab', 'abc', 'bc', '"', ':', ' ', 'k', 'ke', 'key', 'x', 'y', 'z', 'xy', 'yz'];
const enc = new TextEncoder();

/** Every single byte, the pieces above, and two specials (<call>, <end>). */
function vocabulary(): VocabularyData {
  const tokens: Array<Uint8Array | undefined> = PIECES.map((p) => enc.encode(p));
  for (let b = 0; b < 256; b++) if (!tokens.some((t) => t?.length === 1 && t[0] === b)) tokens.push(Uint8Array.of(b));
  tokens.push(undefined, undefined);
  return { tokens, specials: { '<call>': tokens.length - 2, '<end>': tokens.length - 1 }, size: tokens.length };
}

const vocab = vocabulary();
const trie = new TokenTrie(vocab);
const CALL = vocab.specials['<call>']!;
const END = vocab.specials['<end>']!;
const id = (piece: string) => PIECES.indexOf(piece);
/** The stop id the grammars below allow where they accept. */
const STOP = id('z');
const words = trie.numWords;

function matcherFor(g: Grammar, stops: number[] = []): TokenMatcher {
  return new TokenMatcher(new MaskBuilder(new CompiledGrammar(g, trie.specialIds).createRun(), trie, stops));
}

/** A replay of the draft on a fresh copy of the matcher: each token allowed, and the mask after it. */
function replay(m: TokenMatcher, tokens: number[]): Uint32Array {
  const copy = new TokenMatcher(m.builder);
  copy.state = m.state;
  const masks = new Uint32Array(tokens.length * words);
  tokens.forEach((t, i) => {
    expect(isAllowed(copy.mask()!, t)).toBe(true);
    expect(copy.advance(t)).toBe(true);
    masks.set(copy.mask()!.subarray(0, words), i * words);
  });
  return masks;
}

describe('TokenMatcher.forced and countAllowed', () => {
  it('names the one token a state allows, and counts the allowed tokens up to a limit', () => {
    const m = matcherFor({ rules: {}, root: seq(special('<call>'), text('ab'), special('<end>')) }, [STOP]);
    expect(m.forced()).toBe(CALL); // only the special
    expect(m.countAllowed(10)).toBe(1);
    m.advance(CALL);
    expect(m.forced()).toBe(-1); // "ab": the tokens a and ab
    expect(m.countAllowed(10)).toBe(2);
    expect(m.countAllowed(1)).toBe(2); // more than the limit: limit + 1
    m.advance(id('a'));
    expect(m.forced()).toBe(id('b'));
    m.advance(id('b'));
    expect(m.forced()).toBe(END);
    m.advance(END);
    expect(m.forced()).toBe(STOP); // accepting: the stop id only
    const free = matcherFor({ rules: {}, root: avoid('<') });
    expect(free.countAllowed(5)).toBe(6); // free text: many tokens, counted up to the limit + 1
    expect(free.forced()).toBe(-1);
  });
});

describe('buildDraft', () => {
  it('drafts forced tokens whatever the turn-down allows, with the mask after each', () => {
    const m = matcherFor({ rules: {}, root: seq(special('<call>'), text('k'), special('<end>')) }, [STOP]);
    const d = buildDraft(m, [], 8, 0, words); // no guessed tokens allowed
    // (a stop id is never drafted: the grammar has no step for it, and the engine stops there)
    expect(d.tokens).toEqual([CALL, id('k'), END]);
    expect(d.sources).toEqual(['forced', 'forced', 'forced']);
    expect(Array.from(d.masks)).toEqual(Array.from(replay(m, d.tokens)));
    expect(m.state).toBe(m.builder.run.initial); // the sequence's matcher is not advanced
  });

  it('continues a quoted run by lookup, through forced tokens, cut where the grammar forbids', () => {
    // the output is "<call>" then free text without '<'; the prompt has "k<call>xy yz<"
    const m = matcherFor({ rules: {}, root: seq(special('<call>'), avoid('<'), special('<end>')) });
    const history = [id('k'), CALL, id('xy'), id(' '), id('yz'), id('<'), id('c'), id('k')];
    const d = buildDraft(m, history, 8, 8, words);
    // forced <call>; the lookup after "k <call>": "xy", " ", "yz", then "<" is cut (free text forbids it)
    expect(d.tokens).toEqual([CALL, id('xy'), id(' '), id('yz')]);
    expect(d.sources).toEqual(['forced', 'lookup', 'lookup', 'lookup']);
    expect(Array.from(d.masks)).toEqual(Array.from(replay(m, d.tokens)));
  });

  it('caps guessed tokens at maxGuessed and the whole draft at max', () => {
    const m = matcherFor({ rules: {}, root: seq(special('<call>'), avoid('<')) });
    const history = [id('a'), CALL, id('b'), id('c'), id('x'), id('y'), id('a')];
    expect(buildDraft(m, history, 8, 2, words).tokens).toEqual([CALL, id('b'), id('c')]);
    expect(buildDraft(m, history, 2, 8, words).tokens).toEqual([CALL, id('b')]);
  });
});

describe('ConstrainedDrafter', () => {
  const keyGrammar: Grammar = { rules: {}, root: seq(text('key'), text(':'), alt(text('x'), text('y'))) };

  it('remembers the token the model took at a narrow state, for every sequence under the grammar', () => {
    const m = matcherFor(keyGrammar);
    const first = new ConstrainedDrafter([1, 2, 3], 8);
    // nothing known yet at "key" (k, ke, key allowed): no draft
    expect(first.next(m, words).tokens).toEqual([]);
    // the model spelled it "ke" "y"
    for (const t of [id('ke'), id('y')]) m.advance(t);
    first.observe([id('ke'), id('y')]);
    first.next(m, words); // records what it saw
    const m2 = matcherFor(keyGrammar);
    m2.state = m2.builder.run.initial;
    const second = new ConstrainedDrafter([4, 5, 6], 8);
    // a matcher built for the same grammar object shares nothing: memory is per MaskBuilder
    expect(second.next(m2, words).tokens).toEqual([]);
    const again = new TokenMatcher(m.builder); // a new sequence under the first one's grammar
    const d = second.next(again, words);
    expect(d.tokens.slice(0, 3)).toEqual([id('ke'), id('y'), id(':')]);
    expect(d.sources.slice(0, 3)).toEqual(['remembered', 'forced', 'forced']);
  });

  it('counts guessed tokens in its record, not forced ones, and drafts forced tokens when turned down', () => {
    const g: Grammar = { rules: {}, root: seq(special('<call>'), avoid('<'), special('<end>')) };
    const m = matcherFor(g);
    const prompt = [id('a'), id('b'), id('c'), id('a'), id('b')];
    const drafter = new ConstrainedDrafter(prompt, 8);
    // a run of steps where the forced tokens are taken and every guessed token is wrong: the
    // turn-down stops guessing (the forced ones raised nothing)
    let guessed = 0;
    for (let step = 0; step < 12; step++) {
      const d = drafter.next(m, words);
      let n = 0;
      while (n < d.tokens.length && d.sources[n] === 'forced') n++;
      if (n < d.tokens.length) guessed++;
      const wrong = d.tokens[n] === id('x') ? id('y') : id('x');
      const produced = [...d.tokens.slice(0, n), wrong];
      for (const t of produced) m.advance(t);
      drafter.observe(produced);
    }
    expect(guessed).toBeGreaterThan(0); // it did guess (lookups of the x / y history) before turning down
    const d = drafter.next(m, words);
    expect(d.tokens).toEqual([]);
    // a fresh sequence at <call>: the forced token is drafted even with the record at its worst
    const fresh = matcherFor(g);
    expect(drafter.next(fresh, words).tokens[0]).toBe(CALL);
  });

  it('weighs a position at its measured cost: forced tokens only while one costs less than a generated token', () => {
    const g: Grammar = { rules: {}, root: seq(special('<call>'), text('"key":'), special('<end>')) };
    const drafter = new ConstrainedDrafter([id('a')], 8);
    // <call> and the quote are forced (the key has several spellings): drafted at a cost below one,
    // a guess not (alpha 0.5 < 0.9); nothing at a cost of one or more
    const d = drafter.next(matcherFor(g), words, 0.9);
    expect(d.tokens).toEqual([CALL, id('"')]);
    expect(d.sources).toEqual(['forced', 'forced']);
    expect(drafter.next(matcherFor(g), words, 1.2).tokens).toEqual([]);

    // the cost: the engine's (ENG_STAT_TOKEN_COST_PPM) plus the worker's build time per position over
    // the time per generated token, both decayed sums; a fixed 0.25 before anything is measured
    const cost = new DraftCost();
    expect(cost.relative(300_000)).toBe(0.25);
    cost.drafted(2, 4); // 0.5 ms a position
    cost.step(10, 5); // 2 ms a generated token
    expect(cost.relative(0)).toBe(0.25); // the engine's not measured yet
    expect(cost.relative(300_000)).toBeCloseTo(0.3 + 0.25, 9);
    cost.drafted(0, 0);
    cost.step(10, 5); // decayed: 0.95 * 2 ms over 0.95 * 4 positions; 19.5 ms over 9.75 tokens
    expect(cost.relative(300_000)).toBeCloseTo(0.3 + 1.9 / 3.8 / (19.5 / 9.75), 9);
  });

  it('keeps the lookup of the engine (lookupDraft: the most recent earlier match of 4, 3 or 2 tokens)', () => {
    expect(lookupDraft([1, 2, 3, 9, 1, 2, 3, 7, 1, 2, 3], 2)).toEqual([7, 1]);
    expect(lookupDraft([5, 6, 7, 5, 6], 4)).toEqual([7, 5, 6]);
    expect(lookupDraft([1, 2, 3], 4)).toEqual([]);
  });
});

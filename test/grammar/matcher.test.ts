/**
 * The grammar automaton (grammar/matcher.ts) and token masks (grammar/token-mask.ts): each IR
 * form admits exactly its language, and a mask bit is set exactly when the token's bytes (or the
 * special token) keep the automaton alive — checked against a brute-force walk, for tokens that
 * span several grammar symbols and split UTF-8 characters.
 */
import { describe, expect, it } from 'vitest';
import { RuleSet, alt, avoid, bytes, opt, ref, rep, seq, special, text, type Grammar } from '../../grammar/grammar.ts';
import { CompiledGrammar, DEAD, type GrammarRun } from '../../grammar/matcher.ts';
import { jsonSchemaValue } from '../../grammar/json-schema.ts';
import { MaskBuilder, TokenMatcher, TokenTrie, isAllowed, type VocabularyData } from '../../grammar/token-mask.ts';
import { ConstraintCache } from '../../grammar/constraint.ts';

const run = (g: Grammar, specials = new Map<string, number>()): GrammarRun =>
  new CompiledGrammar(g, specials).createRun();
const lang = (g: Grammar) => {
  const r = run(g);
  return (s: string) => r.matches(s);
};

describe('grammar automaton', () => {
  it('literals, classes, alternatives and bounded repetition', () => {
    const m = lang({ rules: {}, root: seq(text('a'), rep(bytes([0x30, 0x39]), 1, 3), alt(text('x'), text('yz'))) });
    for (const ok of ['a1x', 'a123yz', 'a9yz']) expect(m(ok)).toBe(true);
    for (const bad of ['ax', 'a1234x', 'a1y', 'a1xx', '']) expect(m(bad)).toBe(false);
  });

  it('recursion through rules (balanced brackets)', () => {
    const m = lang({ rules: { b: rep(seq(text('['), ref('b'), text(']')), 0, -1) }, root: ref('b') });
    for (const ok of ['', '[]', '[[]][]', '[[[]]]']) expect(m(ok)).toBe(true);
    for (const bad of ['[', '][', '[[]', '[]]']) expect(m(bad)).toBe(false);
  });

  it('avoid: any text without a marker, overlapping prefixes included', () => {
    const m = lang({ rules: {}, root: seq(avoid('<ab>', 'bb'), text('!')) });
    for (const ok of ['!', 'hello!', '<a<ab!', 'b<b!', '<ab!']) expect(m(ok)).toBe(true);
    for (const bad of ['<ab>!', 'xbbx!', 'a<<ab>!']) expect(m(bad)).toBe(false);
  });

  it('special tokens are ids when the vocabulary has them, text otherwise', () => {
    const g: Grammar = { rules: {}, root: seq(text('a'), special('<s>'), text('b')) };
    expect(run(g).matches('a<s>b')).toBe(true);
    const r = run(g, new Map([['<s>', 7]]));
    expect(r.matches('a<s>b')).toBe(false);
    const s = r.stepBytes(r.initial, new TextEncoder().encode('a'));
    expect(r.states[s]!.specials).toEqual([7]);
    expect(r.isAccepting(r.stepBytes(r.stepSpecial(s, 7), new TextEncoder().encode('b')))).toBe(true);
    expect(r.stepSpecial(s, 8)).toBe(DEAD);
  });
});

/**
 * A small byte-level vocabulary with multi-symbol and UTF-8-splitting tokens. Like every
 * byte-level BPE it has all 256 single bytes, so any live state can continue.
 */
function vocabulary(): VocabularyData {
  const pieces = [
    '{',
    '}',
    '"',
    '":',
    '": ',
    '", "',
    '"}',
    ',',
    ', ',
    ' ',
    'a',
    'ab',
    'abc',
    '"a',
    '1',
    '12',
    '0',
    '-',
    '.5',
    'true',
    'tr',
    'ue',
    'null',
    '[',
    ']',
    '[]',
    '{"',
    '"]',
    '\\',
    '\\n',
    '\\u',
    'é',
    'é"',
    '\n',
    'x',
  ];
  const enc = new TextEncoder();
  const tokens: Array<Uint8Array | undefined> = pieces.map((p) => enc.encode(p));
  tokens.push(Uint8Array.of(0xc3), Uint8Array.of(0xa9, 0x22), Uint8Array.of(0xff)); // split é, é" tail, invalid byte
  for (let b = 0; b < 256; b++) if (!tokens.some((t) => t?.length === 1 && t[0] === b)) tokens.push(Uint8Array.of(b));
  tokens.push(undefined, undefined); // two special ids
  return { tokens, specials: { '<end>': tokens.length - 2, '<x>': tokens.length - 1 }, size: tokens.length + 3 };
}

describe('token masks', () => {
  const vocab = vocabulary();
  const trie = new TokenTrie(vocab);
  const rules = new RuleSet();
  const schema = {
    type: 'object',
    properties: {
      a: { type: 'string' },
      ab: { type: 'array', items: { type: 'integer' } },
      n: { type: ['number', 'null'] },
    },
    required: ['a'],
  };
  const grammar = rules.grammar(seq(jsonSchemaValue(rules, schema), opt(special('<x>'))));
  const stopId = vocab.size - 1;

  const bounded = new RuleSet();
  const boundedSchema = {
    type: 'object',
    properties: { s: { type: 'string', maxLength: 30 }, l: { type: 'array', items: { type: 'string' }, maxItems: 20 } },
    required: ['s', 'l'],
  };
  const boundedGrammar = bounded.grammar(jsonSchemaValue(bounded, boundedSchema, { maxStringLength: 25, maxItems: 0 }));
  const cases: Array<[string, Grammar, number]> = [
    ['nested schema', grammar, Infinity],
    ['bounded lengths, positions sharing masks', boundedGrammar, trie.maxTokenBytes],
  ];
  for (const [label, g, maxTokenBytes] of cases)
    it(`${label}: masks allow exactly the tokens whose bytes keep the automaton alive (brute force) at every state of sampled walks`, () => {
      const r = new CompiledGrammar(g, trie.specialIds, maxTokenBytes).createRun();
      const builder = new MaskBuilder(r, trie, [stopId]);
      let checked = 0;
      let shared = 0;
      for (let walk = 0; walk < 30; walk++) {
        const matcher = new TokenMatcher(builder);
        let seed = walk * 7919 + 1;
        for (let step = 0; step < 60; step++) {
          const mask = matcher.mask();
          expect(mask).not.toBeNull();
          if (r.canonical(matcher.state) !== matcher.state) shared++;
          const allowed: number[] = [];
          const wrong: number[] = [];
          vocab.tokens.forEach((bytes, id) => {
            const expected = bytes
              ? r.stepBytes(matcher.state, bytes) !== DEAD
              : r.states[matcher.state]!.specials.includes(id);
            if (isAllowed(mask!, id) !== expected) wrong.push(id);
            if (expected) allowed.push(id);
            checked++;
          });
          expect(wrong).toEqual([]);
          expect(isAllowed(mask!, stopId)).toBe(matcher.isAccepting);
          if (allowed.length === 0) break;
          seed = (seed * 1103515245 + 12345) & 0x7fffffff;
          expect(matcher.advance(allowed[seed % allowed.length]!)).toBe(true);
        }
      }
      expect(checked).toBeGreaterThan(10_000);
      if (Number.isFinite(maxTokenBytes)) expect(shared).toBeGreaterThan(50);
    });

  it('a token spanning the end of a string and the next key is allowed only where that fits', () => {
    const r = new CompiledGrammar(grammar, trie.specialIds).createRun();
    const builder = new MaskBuilder(r, trie, [stopId]);
    const m = new TokenMatcher(builder);
    const id = (p: string) => vocab.tokens.findIndex((t) => t && new TextDecoder().decode(t) === p);
    for (const p of ['{"', 'a', '": ', '"a']) expect(m.advance(id(p))).toBe(true);
    expect(isAllowed(m.mask()!, id('", "'))).toBe(true);
    expect(isAllowed(m.mask()!, id('"}'))).toBe(true);
    expect(isAllowed(m.mask()!, id('"]'))).toBe(false);
    expect(isAllowed(m.mask()!, vocab.size - 2)).toBe(false);
    expect(m.advance(id('"}'))).toBe(true);
    expect(m.isAccepting).toBe(true);
    expect(isAllowed(m.mask()!, vocab.size - 1)).toBe(true); // <x> special, then the stop id
    expect(m.advance(id('x'))).toBe(false);
  });

  it('a UTF-8 character split across tokens', () => {
    const r = new CompiledGrammar(grammar, trie.specialIds).createRun();
    const m = new TokenMatcher(new MaskBuilder(r, trie, []));
    const lead = vocab.tokens.findIndex((t) => t?.length === 1 && t[0] === 0xc3);
    for (const p of ['{"', 'a', '": ', '"'])
      m.advance(vocab.tokens.findIndex((t) => t && new TextDecoder().decode(t) === p));
    expect(isAllowed(m.mask()!, lead)).toBe(true);
    expect(isAllowed(m.mask()!, lead + 2)).toBe(false); // 0xff never
    m.advance(lead);
    const mask = m.mask()!;
    expect(isAllowed(mask, lead + 1)).toBe(true); // 0xa9 0x22 completes é and closes the string
    vocab.tokens.forEach((t, id) =>
      expect(isAllowed(mask, id)).toBe(t !== undefined && t[0]! >= 0x80 && t[0]! <= 0xbf),
    );
    expect(
      isAllowed(
        mask,
        vocab.tokens.findIndex((t) => t && new TextDecoder().decode(t) === 'a'),
      ),
    ).toBe(false);
  });
});

/**
 * A decoder that drops the output's leading space (SentencePiece's Strip): the first token is
 * checked as the text that is published, its leading space removed.
 */
describe('stripsLeadingSpace: the first token loses its leading space', () => {
  const pieces = [' {', '{', '}', ' ', ' }', '{}', ' {}', 'a', ' a'];
  const encoder = new TextEncoder();
  const vocab: VocabularyData = {
    tokens: pieces.map((p) => encoder.encode(p)),
    specials: { '<s>': pieces.length },
    size: pieces.length + 1,
    stripsLeadingSpace: true,
  };
  const trie = new TokenTrie(vocab);
  const id = (p: string) => pieces.indexOf(p);
  const allowed = (m: TokenMatcher) => pieces.filter((p) => isAllowed(m.mask()!, id(p)));
  /** What the decoder publishes for a first token: one leading space dropped. */
  const published = (bytes: Uint8Array) => (bytes[0] === 0x20 ? bytes.subarray(1) : bytes);

  it('at the start, a token is allowed exactly when its published text fits; " " alone publishes nothing', () => {
    const r = new CompiledGrammar(
      { rules: {}, root: seq(text('{'), opt(text(' ')), text('}')) },
      trie.specialIds,
    ).createRun({
      stripsLeadingSpace: true,
    });
    const m = new TokenMatcher(new MaskBuilder(r, trie, []));
    expect(m.state).toBe(r.start);
    expect(r.start).not.toBe(r.initial);
    for (const p of pieces) {
      const bytes = encoder.encode(p);
      const fits = bytes.length === 1 && bytes[0] === 0x20 ? true : r.stepBytes(r.initial, published(bytes)) !== DEAD;
      expect(isAllowed(m.mask()!, id(p)), p).toBe(fits);
    }
    expect(allowed(m)).toEqual([' {', '{', ' ', '{}', ' {}']);
    // " " first: the space is gone, and the output has started: " {" would now publish " {"
    expect(m.advance(id(' '))).toBe(true);
    expect(m.state).toBe(r.initial);
    expect(allowed(m)).toEqual(['{', '{}']);
    // " {" first publishes "{"; the space inside the braces is the grammar's own
    const n = new TokenMatcher(new MaskBuilder(r, trie, []));
    expect(n.advance(id(' {'))).toBe(true);
    expect(allowed(n)).toEqual(['}', ' ', ' }']);
    expect(n.advance(id(' }'))).toBe(true);
    expect(n.isAccepting).toBe(true);
  });

  it('a grammar that itself starts with a space still needs it after the stripped one', () => {
    const r = new CompiledGrammar({ rules: {}, root: seq(text(' a')) }, trie.specialIds).createRun({
      stripsLeadingSpace: true,
    });
    const m = new TokenMatcher(new MaskBuilder(r, trie, []));
    // " a" publishes "a": wrong; " " publishes nothing, then " a" publishes " a"
    expect(allowed(m)).toEqual([' ']);
    expect(m.advance(id(' '))).toBe(true);
    expect(allowed(m)).toEqual([' ', ' a']);
    expect(m.advance(id(' a'))).toBe(true);
    expect(m.isAccepting).toBe(true);
  });

  it('without the flag the first token is checked as its bytes', () => {
    const r = new CompiledGrammar({ rules: {}, root: text('{}') }, trie.specialIds).createRun();
    expect(r.start).toBe(r.initial);
    expect(allowed(new TokenMatcher(new MaskBuilder(r, trie, [])))).toEqual(['{', '{}']);
  });

  it('ConstraintCache takes the flag from the vocabulary', () => {
    const grammar: Grammar = { rules: {}, root: text('{}') };
    const on = new ConstraintCache(vocab).matcher({ grammar, stopIds: [] });
    expect(allowed(on)).toEqual([' {', '{', ' ', '{}', ' {}']);
    const off = new ConstraintCache({ ...vocab, stripsLeadingSpace: false }).matcher({ grammar, stopIds: [] });
    expect(allowed(off)).toEqual(['{', '{}']);
  });
});

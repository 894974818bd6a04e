/**
 * How token masks are kept (grammar/token-mask.ts): a narrow mask is cached as its nonzero words
 * and written into the matcher's own bitset, a wide one as a whole bitset. Over a vocabulary
 * large enough for both forms, every mask two interleaved matchers return must equal, word for
 * word, the mask a brute-force walk over every token gives, whichever form it was kept in and
 * whatever the other matcher asked for in between.
 */
import { describe, expect, it } from 'vitest';
import { RuleSet, alt, opt, ref, seq, special, text, type Grammar } from '../../grammar/grammar.ts';
import { CompiledGrammar, DEAD, type GrammarRun } from '../../grammar/matcher.ts';
import { jsonSchemaValue } from '../../grammar/json-schema.ts';
import { MaskBuilder, TokenMatcher, TokenTrie, type VocabularyData } from '../../grammar/token-mask.ts';

/** xorshift32, seeded. */
function random(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 0x100000000;
  };
}

/** A byte-level vocabulary of `size` ids: all 256 bytes, words, numbers, JSON punctuation runs, split UTF-8, two specials. */
function vocabulary(size: number): VocabularyData {
  const rand = random(99);
  const enc = new TextEncoder();
  const seen = new Set<string>();
  const tokens: Array<Uint8Array | undefined> = [];
  const add = (b: Uint8Array) => {
    const key = Buffer.from(b).toString('latin1');
    if (b.length > 0 && !seen.has(key)) {
      seen.add(key);
      tokens.push(b);
    }
  };
  for (let b = 0; b < 256; b++) add(Uint8Array.of(b));
  const punct = ['"', '",', '":', '": ', '", "', '"}', '{"', '["', '"]', '},', '}]', ', ', ',', ':', '-', '0.', 'é'];
  while (tokens.length < size - 2) {
    const r = rand();
    if (r < 0.6) {
      let w = '';
      for (let i = 0, n = 1 + Math.floor(rand() * 7); i < n; i++) w += 'abcdeflnorstuxy'[Math.floor(rand() * 15)];
      add(enc.encode(rand() < 0.5 ? ` ${w}` : w));
    } else if (r < 0.75) {
      add(enc.encode(String(Math.floor(rand() * 1000))));
    } else if (r < 0.92) {
      add(enc.encode(punct[Math.floor(rand() * punct.length)]! + (rand() < 0.5 ? 'ab'[Math.floor(rand() * 2)]! : '')));
    } else {
      const b = enc.encode('éà北京'.slice(Math.floor(rand() * 3)));
      add(b.subarray(Math.floor(rand() * 2), b.length - Math.floor(rand() * 2)));
    }
  }
  tokens.push(undefined, undefined);
  return { tokens, specials: { '<end>': tokens.length - 2, '<x>': tokens.length - 1 }, size: tokens.length };
}

/** The mask by definition: each token's bytes (or special id) keep the automaton alive; stop ids where it accepts. */
function bruteForce(r: GrammarRun, vocab: VocabularyData, state: number, stopIds: number[]): Uint32Array {
  const mask = new Uint32Array((vocab.size + 31) >>> 5);
  const set = (id: number) => (mask[id >>> 5]! |= 1 << (id & 31));
  vocab.tokens.forEach((bytes, id) => {
    if (bytes ? r.stepBytes(state, bytes) !== DEAD : r.states[state]!.specials.includes(id)) set(id);
  });
  if (r.isAccepting(state)) stopIds.forEach(set);
  return mask;
}

describe('mask storage', () => {
  it('narrow (nonzero words) and wide (whole) masks, two matchers interleaved, equal the brute-force masks word for word', () => {
    const vocab = vocabulary(6000);
    const trie = new TokenTrie(vocab);
    const rules = new RuleSet();
    const schema = {
      type: 'object',
      properties: {
        id: { type: 'string' },
        n: { type: 'integer' },
        x: { type: ['number', 'null'] },
        tags: { type: 'array', items: { type: 'string', enum: ['ab', 'a"b', 'é'] } },
        sub: { type: 'object', properties: { a: { type: 'string', maxLength: 12 } }, required: ['a'] },
      },
      required: ['id', 'n', 'tags'],
    };
    const grammar = rules.grammar(
      seq(jsonSchemaValue(rules, schema, { maxStringLength: 40, maxItems: 6 }), opt(special('<x>'))),
    );
    const stopIds = [vocab.specials['<end>']!];
    const r = new CompiledGrammar(grammar, trie.specialIds, trie.maxTokenBytes).createRun();
    const builder = new MaskBuilder(r, trie, stopIds);
    const forms = { narrow: 0, whole: 0 };
    let compared = 0;
    for (let walk = 0; walk < 6; walk++) {
      const rand = random(walk + 1);
      const matchers = [new TokenMatcher(builder), new TokenMatcher(builder)];
      const held: Array<{ mask: Uint32Array; state: number } | undefined> = [undefined, undefined];
      for (let step = 0; step < 80; step++) {
        const k = step % 2;
        const m = matchers[k]!;
        if (m.state < 0) continue;
        const mask = m.mask();
        expect(mask).not.toBeNull();
        const cached = builder.cached(m.state)!;
        if (cached.pairs) forms.narrow++;
        else forms.whole++;
        const expected = bruteForce(r, vocab, m.state, stopIds);
        expect(Array.from(mask!)).toEqual(Array.from(expected));
        // The other matcher's mask, returned before this call, is still its own.
        const other = held[1 - k];
        if (other) expect(Array.from(other.mask)).toEqual(Array.from(bruteForce(r, vocab, other.state, stopIds)));
        held[k] = { mask: mask!, state: m.state };
        compared++;
        const allowed: number[] = [];
        for (let id = 0; id < vocab.size; id++) if ((mask![id >>> 5]! >>> (id & 31)) & 1) allowed.push(id);
        const id = allowed[Math.floor(rand() * allowed.length)]!;
        if (stopIds.includes(id)) {
          m.state = DEAD;
          continue;
        }
        expect(m.advance(id)).toBe(true);
      }
    }
    expect(compared).toBeGreaterThan(300);
    expect(forms.narrow).toBeGreaterThan(50);
    expect(forms.whole).toBeGreaterThan(50);
  });

  it('a grammar that throws in the middle of a mask leaves no bits behind for the next mask over the vocabulary', () => {
    const vocab = vocabulary(2000);
    const trie = new TokenTrie(vocab);
    // Left recursion reached after `q`: the walk allows the token `0` first, then throws at `q`.
    const bad: Grammar = {
      rules: { L: alt(seq(ref('L'), text('x')), text('y')) },
      root: alt(text('0'), seq(text('q'), ref('L'))),
    };
    const badMatcher = new TokenMatcher(
      new MaskBuilder(new CompiledGrammar(bad, trie.specialIds).createRun(), trie, []),
    );
    expect(() => badMatcher.mask()).toThrow(/closure too large/);
    const good: Grammar = { rules: {}, root: alt(text('1'), text('12')) };
    const r = new CompiledGrammar(good, trie.specialIds).createRun();
    const mask = new TokenMatcher(new MaskBuilder(r, trie, [])).mask();
    expect(Array.from(mask!)).toEqual(Array.from(bruteForce(r, vocab, r.initial, [])));
  });
});

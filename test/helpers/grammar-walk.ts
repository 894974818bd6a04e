/**
 * Random sentences of a grammar: a seeded walk over the automaton's live bytes that stops where
 * the grammar accepts. Long walks lean on closing bytes (`"`, `]`, `}`) so they end. Used by the
 * property tests: every sentence a grammar admits must pass the validator.
 */
import { DEAD, type GrammarRun } from '../../grammar/matcher.ts';

export function randomSentence(run: GrammarRun, seed: number, maxBytes = 4000): Uint8Array | 'dead_end' | 'too_long' {
  let s = seed >>> 0 || 1;
  const rand = () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 0x100000000;
  };
  const out: number[] = [];
  let state = run.initial;
  while (out.length < maxBytes) {
    const long = out.length > 48;
    if (run.isAccepting(state) && (long || rand() < 0.2)) return Uint8Array.from(out);
    const live: number[] = [];
    for (let b = 0; b < 256; b++) if (run.stepByte(state, b) !== DEAD) live.push(b);
    if (live.length === 0) return run.isAccepting(state) ? Uint8Array.from(out) : 'dead_end';
    let pick = live[Math.floor(rand() * live.length)]!;
    if (long) {
      const closing = live.filter((b) => b === 0x22 || b === 0x5d || b === 0x7d);
      const ascii = live.filter((b) => b >= 0x30 && b < 0x7b && b !== 0x5c && b !== 0x2c && b !== 0x2e);
      if (closing.length > 0 && rand() < 0.7) pick = closing[Math.floor(rand() * closing.length)]!;
      else if (ascii.length > 0) pick = ascii[Math.floor(rand() * ascii.length)]!;
    }
    out.push(pick);
    state = run.stepByte(state, pick);
  }
  return 'too_long';
}

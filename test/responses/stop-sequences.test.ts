/**
 * StopSequenceMatcher (responses/stop-sequences.ts): the text before the first sequence to
 * appear, however the text is chunked; a tail that may begin a sequence is held back until the
 * next text decides, and released by flush() when the text ends or other output follows.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { StopSequenceMatcher } from '../../responses/stop-sequences.ts';

/** Pushes the chunks and flushes: what was published, and the sequence matched. */
function run(sequences: string[], chunks: string[]): { published: string[]; matched: string | undefined } {
  const matcher = new StopSequenceMatcher(sequences);
  const published = chunks.map((chunk) => matcher.push(chunk));
  published.push(matcher.flush());
  return { published, matched: matcher.matched };
}

describe('StopSequenceMatcher', () => {
  it('cuts the text before a sequence split across chunks and publishes nothing after it', () => {
    expect(run(['STOP'], ['One', ' ST', 'OP', ' two'])).toEqual({
      published: ['One', ' ', '', '', ''],
      matched: 'STOP',
    });
  });

  it('releases a held prefix that does not complete', () => {
    expect(run(['STOP'], ['a S', 'TRAY'])).toEqual({ published: ['a ', 'STRAY', ''], matched: undefined });
    expect(run(['STOP'], ['ends with ST'])).toEqual({ published: ['ends with ', 'ST'], matched: undefined });
  });

  it('the earliest of several sequences wins, wherever each begins', () => {
    expect(run(['world', 'lo w'], ['hello world'])).toMatchObject({ published: ['hel', ''], matched: 'lo w' });
    expect(run(['\n\nHuman:', 'END'], ['x END \n\nHuman:'])).toMatchObject({ matched: 'END' });
  });

  it('for any chunking: the published text is the text before the first match (or all of it)', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: fc.constantFrom('a', 'b', 'c', ' '), maxLength: 40 }),
        fc.array(fc.string({ unit: fc.constantFrom('a', 'b', 'c'), minLength: 1, maxLength: 3 }), {
          minLength: 1,
          maxLength: 3,
        }),
        fc.array(fc.nat(), { maxLength: 6 }),
        (text, sequences, cuts) => {
          const points = [...new Set(cuts.map((cut) => cut % (text.length + 1)))].sort((a, b) => a - b);
          const chunks = [0, ...points, text.length]
            .slice(1)
            .map((end, i, ends) => text.slice(i === 0 ? 0 : ends[i - 1], end));
          const { published, matched } = run(sequences, chunks);
          const firsts = sequences.map((s) => text.indexOf(s)).filter((i) => i >= 0);
          const at = firsts.length === 0 ? -1 : Math.min(...firsts);
          expect(published.join('')).toBe(at < 0 ? text : text.slice(0, at));
          expect(matched === undefined).toBe(at < 0);
        },
      ),
      { numRuns: 500, seed: 38 },
    );
  });
});

/**
 * The constrained-decoding settings read by runtime/load-model-runtime.ts: MAYA_GRAMMAR_MAX_STRING
 * and MAYA_GRAMMAR_MAX_ITEMS (defaults 128 / 16, 0 = no limit, anything else falls back), and
 * MAYA_CONSTRAINED_DECODING=0 turning the runtime's constraint off (the plan then has none).
 */
import { describe, expect, it } from 'vitest';
import { grammarLimits } from '../../runtime/load-model-runtime.ts';

describe('grammarLimits', () => {
  it('defaults, explicit values, zero and bad values', () => {
    expect(grammarLimits({})).toEqual({ maxStringLength: 128, maxItems: 16 });
    expect(grammarLimits({ MAYA_GRAMMAR_MAX_STRING: '40', MAYA_GRAMMAR_MAX_ITEMS: '0' })).toEqual({
      maxStringLength: 40,
      maxItems: 0,
    });
    expect(grammarLimits({ MAYA_GRAMMAR_MAX_STRING: '-3', MAYA_GRAMMAR_MAX_ITEMS: 'x' })).toEqual({
      maxStringLength: 128,
      maxItems: 16,
    });
  });
});

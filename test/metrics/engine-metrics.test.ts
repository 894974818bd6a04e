import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { registerEngineMetrics, type SpeculativeCounters } from '../../metrics/engine-metrics.ts';

describe('engine metrics', () => {
  it('tokens per pass is NaN until the first decode pass (where /v1/status reports null), then tokens / passes', async () => {
    let counters: SpeculativeCounters | undefined;
    const registry = new Registry();
    registerEngineMetrics(registry, () => Promise.resolve(counters));
    const scrape = () => registry.metrics();

    // The model still loading: the counters read 0, tokens per pass NaN.
    let text = await scrape();
    expect(text).toMatch(/^maya:engine_decode_passes 0$/m);
    expect(text).toMatch(/^maya:engine_tokens_per_pass nan$/im); // prom-client writes "Nan"

    counters = { decodeTokens: 0, decodePasses: 0, draftTokens: 0, draftAccepted: 0 };
    text = await scrape();
    expect(text).toMatch(/^maya:engine_decode_tokens 0$/m);
    expect(text).toMatch(/^maya:engine_tokens_per_pass nan$/im); // prom-client writes "Nan"

    counters = { decodeTokens: 6, decodePasses: 4, draftTokens: 3, draftAccepted: 2 };
    text = await scrape();
    expect(text).toMatch(/^maya:engine_tokens_per_pass 1\.5$/m);
    expect(text).toMatch(/^maya:engine_draft_tokens 3$/m);
    expect(text).toMatch(/^maya:engine_draft_accepted 2$/m);
    expect(text).toMatch(/^maya:engine_decode_passes 4$/m);
  });
});

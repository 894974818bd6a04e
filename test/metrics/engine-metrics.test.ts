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

    const mtp = { mtpDrafts: 0, mtpFirstAccepted: 0, mtpDraftTokens: 0, mtpDraftAccepted: 0 };
    counters = { decodeTokens: 0, decodePasses: 0, draftTokens: 0, draftAccepted: 0, ...mtp };
    text = await scrape();
    expect(text).toMatch(/^maya:engine_decode_tokens 0$/m);
    expect(text).toMatch(/^maya:engine_tokens_per_pass nan$/im); // prom-client writes "Nan"

    counters = { decodeTokens: 6, decodePasses: 4, draftTokens: 3, draftAccepted: 2, ...mtp };
    text = await scrape();
    expect(text).toMatch(/^maya:engine_tokens_per_pass 1\.5$/m);
    expect(text).toMatch(/^maya:engine_draft_tokens 3$/m);
    expect(text).toMatch(/^maya:engine_draft_accepted 2$/m);
    expect(text).toMatch(/^maya:engine_decode_passes 4$/m);
    expect(text).toMatch(/^maya:engine_mtp_drafts 0$/m);

    // The MTP layer's drafts: 5 passes, 4 first tokens accepted, 6 of 9 drafted tokens.
    counters = { ...counters, mtpDrafts: 5, mtpFirstAccepted: 4, mtpDraftTokens: 9, mtpDraftAccepted: 6 };
    text = await scrape();
    expect(text).toMatch(/^maya:engine_mtp_drafts 5$/m);
    expect(text).toMatch(/^maya:engine_mtp_first_accepted 4$/m);
    expect(text).toMatch(/^maya:engine_mtp_draft_tokens 9$/m);
    expect(text).toMatch(/^maya:engine_mtp_draft_accepted 6$/m);
  });
});

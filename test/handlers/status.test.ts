import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { createTestApp, stubRuntime } from '../helpers/test-app.ts';
import { FakeEngine } from '../helpers/fake-engine.ts';
import { defaultDocument, DOCUMENT_ID } from '../../handlers/validation.ts';
import { JobManager } from '../../store/jobs/job-manager.ts';
import { MemoryResponseStore } from '../../store/responses/memory-response-store.ts';
import { DEFAULT_RESPONSES_SETTINGS } from '../../config/settings.ts';

function statusValidator() {
  const ajv = new Ajv2020({ strict: false });
  ajv.addSchema(defaultDocument, DOCUMENT_ID);
  return ajv.compile({ $ref: `${DOCUMENT_ID}#/components/schemas/MayaStatus` });
}

describe('GET /v1/status', () => {
  it('model, context limit, both dialects with their endpoints, engine counters, cache and job sections', async () => {
    const engine = new FakeEngine({ info: { contextLength: 2048, backend: 'cpu' } });
    const { request } = createTestApp({ runtime: stubRuntime({ id: 'maya-demo', contextLength: 2048, engine }) });
    const res = await request.get('/v1/status');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      model: 'maya-demo',
      context_length: 2048,
      dialects: [
        { name: 'responses', endpoint: '/v1/responses' },
        { name: 'chat.completions', endpoint: '/v1/chat/completions' },
      ],
      engine: {
        backend: 'cpu',
        architecture: engine.info.arch,
        parameters: engine.info.numParams,
        active_parameters: engine.info.numParams,
        blocks_total: expect.any(Number),
        steps: 0,
        decode_passes: 0,
        tokens_per_pass: null, // no decode pass yet
      },
      responses_cache: { entries: 0, bytes: 0, hits: 0 },
      responses_jobs: { queued: 0, running: 0, records: 0 },
    });
    const validate = statusValidator();
    expect(validate(res.body), JSON.stringify(validate.errors)).toBe(true);
  });

  it('tokens_per_pass is decode_tokens / decode_passes once the engine has decoded', async () => {
    const engine = new FakeEngine({});
    const stats = await engine.stats();
    engine.stats = async () => ({
      ...stats,
      decodeTokens: 12,
      decodePasses: 8,
      draftTokens: 6,
      draftAccepted: 4,
      mtpDrafts: 3,
      mtpFirstAccepted: 2,
      mtpDraftTokens: 5,
      mtpDraftAccepted: 3,
    });
    const { request } = createTestApp({ runtime: stubRuntime({ engine }) });
    const res = await request.get('/v1/status');
    expect(res.body.engine).toMatchObject({
      decode_tokens: 12,
      decode_passes: 8,
      draft_tokens: 6,
      draft_accepted: 4,
      tokens_per_pass: 1.5,
      mtp_drafts: 3,
      mtp_first_accepted: 2,
      mtp_draft_tokens: 5,
      mtp_draft_accepted: 3,
    });
    const validate = statusValidator();
    expect(validate(res.body), JSON.stringify(validate.errors)).toBe(true);
  });

  it("the About page's facts: version, kernel path, threads, weight dtype, the settings in effect", async () => {
    const engine = new FakeEngine({ info: { simd: 'avx2', numThreads: 6, weightDtype: 'q8' } });
    const inEffect = [
      { name: 'MAYA_API_KEYS', value: '(hidden)' },
      { name: 'MAYA_WEIGHT_DTYPE', value: 'q8' },
    ];
    const { request } = createTestApp({ runtime: stubRuntime({ engine }), server: { inEffect, apiKeys: ['k'] } });
    const res = await request.get('/v1/status').set('Authorization', 'Bearer k');
    const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    expect(res.body).toMatchObject({
      version,
      engine: { simd: 'avx2', threads: 6, weight_dtype: 'q8' },
      settings: inEffect,
    });
    const validate = statusValidator();
    expect(validate(res.body), JSON.stringify(validate.errors)).toBe(true);
  });

  it('the job manager and named providers fill their sections', async () => {
    const store = new MemoryResponseStore({ settings: DEFAULT_RESPONSES_SETTINGS });
    const jobs = new JobManager({ settings: DEFAULT_RESPONSES_SETTINGS, store });
    jobs.stats = () => ({
      queued: 2,
      running: 1,
      records: 3,
      event_bytes: 10,
      readers: 0,
      admissions: 3,
      rejections: 0,
      cancellations: 0,
      deadline_failures: 0,
    });
    const { request } = createTestApp({
      deps: { store, jobs, statusProviders: { vision: () => ({ encoder: 'none' }) } },
    });
    const res = await request.get('/v1/status');
    expect(res.body.responses_jobs).toMatchObject({ queued: 2, running: 1, records: 3 });
    expect(res.body.vision).toEqual({ encoder: 'none' });
  });
});

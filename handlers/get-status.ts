/**
 * getStatus (GET /v1/status): Maya's version, the model, its context limit, the API dialects Maya
 * serves with their endpoints, the engine (backend, kernel path, threads, weight dtype, KV cache
 * dtype, bytes per token and capacity in tokens, counters, speculative drafts and tokens per pass,
 * whether the model has a vision path), the `responses_cache` / `responses_jobs` sections
 * from the store and the job manager (zeros while no job manager is attached) and the settings
 * that differ from the defaults (secrets hidden), and `mcp_servers` (name, transport, state, tool
 * count; never env or headers) when MCP servers are configured. Named AppDeps.statusProviders
 * sections are merged last. Aggregates only: no credential identifiers.
 */
import { readFileSync } from 'node:fs';
import type { Handler } from './app-deps.ts';
import { requireRuntime } from '../responses/service.ts';
import { operations } from '../contract/operations.ts';

const VERSION = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string })
  .version;

const IDLE_JOBS = {
  queued: 0,
  running: 0,
  records: 0,
  event_bytes: 0,
  readers: 0,
  admissions: 0,
  rejections: 0,
  cancellations: 0,
  deadline_failures: 0,
};

export const getStatus: Handler = async (ctx, deps) => {
  const runtime = requireRuntime(deps);
  const stats = await runtime.engine.stats();
  const extra = await Promise.all(
    Object.entries(deps.statusProviders).map(async ([name, provide]) => [name, await provide()] as const),
  );
  const info = runtime.engine.info;
  ctx.body = {
    version: VERSION,
    model: runtime.id,
    context_length: runtime.contextLength,
    model_dialect: runtime.dialectName,
    dialects: [
      { name: 'responses', endpoint: operations.createResponse.path },
      { name: 'chat.completions', endpoint: operations.createChatCompletion.path },
    ],
    engine: {
      backend: runtime.engine.info.backend,
      architecture: runtime.engine.info.arch,
      parameters: runtime.engine.info.numParams,
      active_parameters: runtime.engine.info.numActiveParams ?? runtime.engine.info.numParams,
      vision: runtime.vision !== undefined,
      simd: info.simd,
      threads: info.numThreads,
      weight_dtype: info.weightDtype,
      kv_dtype: info.kvDtype,
      kv_bytes_per_token: info.kvBytesPerToken,
      kv_capacity_tokens: info.kvCapacityTokens,
      blocks_total: stats.blocksTotal,
      blocks_free: stats.blocksFree,
      blocks_cached: stats.blocksCached,
      seqs_waiting: stats.seqsWaiting,
      seqs_running: stats.seqsRunning,
      steps: stats.steps,
      prefill_tokens: stats.prefillTokens,
      cached_tokens: stats.cachedTokens,
      decode_tokens: stats.decodeTokens,
      preemptions: stats.preemptions,
      speculative: info.speculative ?? 'off',
      draft_tokens: stats.draftTokens,
      draft_accepted: stats.draftAccepted,
      decode_passes: stats.decodePasses,
      // null before the first pass (the ratio is undefined); 1 without speculation
      tokens_per_pass: stats.decodePasses > 0 ? stats.decodeTokens / stats.decodePasses : null,
      mtp_drafts: stats.mtpDrafts,
      mtp_first_accepted: stats.mtpFirstAccepted,
      mtp_draft_tokens: stats.mtpDraftTokens,
      mtp_draft_accepted: stats.mtpDraftAccepted,
    },
    responses_cache: await deps.store.stats(),
    responses_jobs: deps.jobs === undefined ? IDLE_JOBS : await deps.jobs.stats(),
    settings: deps.server.inEffect ?? [],
    ...(deps.mcp ? { mcp_servers: deps.mcp.status() } : {}),
    ...Object.fromEntries(extra),
  };
};

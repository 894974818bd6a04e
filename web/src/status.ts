/**
 * What the page reads from GET /v1/status (openapi/openapi.yaml, MayaStatus). Sections the page
 * does not know yet (a later server's speculative decoding or MCP servers) are kept as they come
 * and shown by their names, so they appear as soon as the server reports them.
 */
export interface EngineStatus {
  backend: string;
  architecture?: string;
  parameters?: number;
  active_parameters?: number;
  vision: boolean;
  simd?: string;
  threads?: number;
  weight_dtype?: string;
  blocks_total: number;
  blocks_free: number;
  blocks_cached: number;
  seqs_waiting: number;
  seqs_running: number;
  steps: number;
  prefill_tokens: number;
  cached_tokens: number;
  decode_tokens: number;
  preemptions: number;
  [field: string]: unknown;
}

export interface MayaStatus {
  version?: string;
  model: string;
  context_length: number;
  model_dialect: string;
  dialects: { name: string; endpoint: string }[];
  engine: EngineStatus;
  responses_cache: Record<string, number>;
  responses_jobs: Record<string, number>;
  settings?: { name: string; value: string }[];
  [section: string]: unknown;
}

/** The sections this page shows in their own places; any other object section is shown by name. */
export const KNOWN_SECTIONS = new Set([
  'version',
  'model',
  'context_length',
  'model_dialect',
  'dialects',
  'engine',
  'responses_cache',
  'responses_jobs',
  'settings',
  'responses_store',
]);

/** Object-valued sections of the status the page has no place for (by name), e.g. `speculative`, `mcp`. */
export function extraSections(status: MayaStatus): [string, Record<string, unknown>][] {
  return Object.entries(status).filter(
    (entry): entry is [string, Record<string, unknown>] =>
      !KNOWN_SECTIONS.has(entry[0]) && entry[1] !== null && typeof entry[1] === 'object' && !Array.isArray(entry[1]),
  );
}

/** Whether a setting is on in the server's non-default settings (e.g. encrypted reasoning). */
export function hasSetting(status: MayaStatus, name: string, value: string): boolean {
  return (status.settings ?? []).some((s) => s.name === name && s.value.toLowerCase() === value);
}

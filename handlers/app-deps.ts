/**
 * AppDeps: everything a handler may use, built once by the CLI (or a test helper) and passed to
 * every handler as its second argument. Handlers depend on interfaces only; app.ts never imports
 * an engine or store implementation.
 */
import type Koa from 'koa';
import type { Registry } from 'prom-client';
import type { ResponsesSettings, ServerSettings } from '../config/settings.ts';
import type { McpServers } from '../mcp/mcp-servers.ts';
import type { ModelRuntime } from '../runtime/model-runtime.ts';
import type { JobManager } from '../store/jobs/job-manager.ts';
import type { RedisJobMirror } from '../store/jobs/redis-job-mirror.ts';
import type { ResponseStore } from '../store/responses/response-store.ts';
import type { Logger } from './logger.ts';

export { silentLogger, type Logger } from './logger.ts';

/** One section of /v1/status, e.g. `responses_cache` from the store, `responses_jobs` from jobs. */
export type StatusProvider = () => Record<string, unknown> | Promise<Record<string, unknown>>;

export interface AppDeps {
  /** The spec's MAYA_GLM_RESPONSES_* values, read once at service creation. */
  readonly settings: ResponsesSettings;
  /** Host, port, API keys, CORS origins, body limit. */
  readonly server: ServerSettings;
  /** Per-app Prometheus registry; the store and job manager register maya:responses_* here. */
  readonly registry: Registry;
  /** The loaded model, or undefined while it is still loading (/health then answers 503). */
  readonly getRuntime: () => ModelRuntime | undefined;
  /** True once shutdown began (the CLI's stop()): generation endpoints answer 503 shutting_down. */
  isStopping?: () => boolean;
  /** Stored responses (store:true, previous_response_id, retrieve/delete/input_items). */
  readonly store: ResponseStore;
  /** Background jobs (`background:true`); /v1/status shows zeros when absent. */
  readonly jobs?: JobManager;
  /** Background task records shared by replicas (MAYA_STORE_URL=redis://…); absent in memory. */
  readonly sharedJobs?: RedisJobMirror;
  /**
   * The secret credential scopes are keyed with. Replicas that share a store share it (the
   * Redis backend provides one); absent = a random per-process secret.
   */
  readonly scopeSecret?: Uint8Array;
  /** The operator's MCP servers (MAYA_MCP_CONFIG); absent when none are configured. */
  readonly mcp?: McpServers;
  /** Extra /v1/status sections by name, merged over the built-in ones (model, engine, cache, jobs). */
  readonly statusProviders: Record<string, StatusProvider>;
  /** The one logger (handlers/logger.ts): warnings, errors and the access log. */
  readonly logger: Logger;
  /** Called once by the CLI on SIGINT/SIGTERM after the server stopped accepting. */
  shutdown?: () => Promise<void>;
}

/**
 * What the app puts on ctx.state before a handler runs: the caller's credential scope (a keyed
 * hash, never the key), the operationId, the validated JSON body (cast it with the alias from
 * contract/types.ts) and the validated, coerced query and path parameters.
 */
export interface RequestState {
  scope: string;
  operationId: string;
  body: unknown;
  query: Record<string, unknown>;
  params: Record<string, string>;
}

export type MayaContext = Koa.ParameterizedContext<RequestState>;

/** Every handler: read ctx.state, set ctx.body (or stream), throw ApiError for errors. */
export type Handler = (ctx: MayaContext, deps: AppDeps) => Promise<void>;

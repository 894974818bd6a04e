/**
 * The access log: one line per request through the one logger (handlers/logger.ts), written when
 * the response has finished or the client went away, so streamed bodies are timed to their end.
 * Fields: method, route (the contract's path template, never the raw URL), operation, status,
 * duration_ms, request_id (the `x-request-id` header), scope (the credential scope: a keyed hash,
 * never the key) and, for an error answered with a JSON body, its `param` and `code`. Never the
 * API key, headers, query values or request/response content. Level (levelOf): info below 400,
 * warn for 4xx, error for 5xx, except the health probe: its 503 `loading` while the model loads is
 * the expected answer, logged at info. MAYA_LOG_LEVEL (the logger's level) filters.
 */
import type Koa from 'koa';
import type { AppDeps, RequestState } from './app-deps.ts';
import { operations } from '../contract/operations.ts';
import type { OperationId } from '../contract/types.ts';

/**
 * `param` and `code` of an error body (`{"error":{...}}`), if the body is one; in Anthropic's
 * envelope they are `error.details.param` and `error.details.error_code`.
 */
function errorFields(body: unknown): { param?: string | null; code?: string | null } {
  const error = body !== null && typeof body === 'object' ? (body as { error?: unknown }).error : undefined;
  if (error === null || typeof error !== 'object') return {};
  const { param, code, details } = error as { param?: unknown; code?: unknown; details?: unknown };
  const inner = (details !== null && typeof details === 'object' ? details : {}) as {
    param?: unknown;
    error_code?: unknown;
  };
  const text = (...values: unknown[]) => (values.find((v) => typeof v === 'string') as string | undefined) ?? null;
  return { param: text(param, inner.param), code: text(code, inner.error_code) };
}

/** The line's level: a failure of the server is an error, of the request a warning. */
export function levelOf(status: number, operation: OperationId | undefined): 'info' | 'warn' | 'error' {
  if (operation === 'getHealth') return 'info';
  if (status >= 500) return 'error';
  return status >= 400 ? 'warn' : 'info';
}

export function accessLog(deps: AppDeps): Koa.Middleware<RequestState> {
  const { logger } = deps;
  return async (ctx, next) => {
    const started = process.hrtime.bigint();
    let isLogged = false;
    const log = () => {
      if (isLogged) return;
      isLogged = true;
      const status = ctx.res.statusCode;
      const operation = ctx.state.operationId as OperationId | undefined;
      const line = {
        method: ctx.method,
        route: operation !== undefined && operation in operations ? operations[operation].path : null,
        operation: operation ?? null,
        status,
        duration_ms: Math.round(Number(process.hrtime.bigint() - started) / 1e4) / 100,
        request_id: ctx.response.get('x-request-id') || null,
        scope: ctx.state.scope ?? null,
        ...(status >= 400 ? errorFields(ctx.body) : {}),
        ...(ctx.res.writableFinished ? {} : { aborted: true }),
      };
      logger[levelOf(status, operation)]('request', line);
    };
    ctx.res.once('finish', log);
    ctx.res.once('close', log);
    await next();
  };
}

/**
 * The access log: one structured JSON line (pino) per request, written when the response has
 * finished or the client went away, so streamed bodies are timed to their end. Fields: method,
 * route (the contract's path template, never the raw URL), operation, status, duration_ms,
 * request_id (the `x-request-id` header), scope (the credential scope: a keyed hash, never the
 * key) and, for an error answered with a JSON body, its `param` and `code`. Never the API key,
 * headers, query values or request/response content. Level: info below 400, warn for 4xx, error
 * for 5xx; `MAYA_LOG_LEVEL` (ServerSettings.logLevel) filters, unset = no access log.
 */
import type Koa from 'koa';
import { pino, type DestinationStream, type Logger } from 'pino';
import type { AppDeps, RequestState } from './app-deps.ts';
import type { LogLevel } from '../config/settings.ts';
import { operations } from '../contract/operations.ts';
import type { OperationId } from '../contract/types.ts';

export function createAccessLogger(
  level: LogLevel,
  destination: DestinationStream = pino.destination({ dest: 2, sync: true }),
): Logger {
  return pino({ level, base: undefined, messageKey: 'message', timestamp: pino.stdTimeFunctions.isoTime }, destination);
}

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

export function accessLog(deps: AppDeps): Koa.Middleware<RequestState> {
  const level = deps.server.logLevel;
  if (level === undefined || level === 'silent') return (_ctx, next) => next();
  const logger = createAccessLogger(level, deps.accessLogDestination);
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
      if (status >= 500) logger.error(line, 'request');
      else if (status >= 400) logger.warn(line, 'request');
      else logger.info(line, 'request');
    };
    ctx.res.once('finish', log);
    ctx.res.once('close', log);
    await next();
  };
}

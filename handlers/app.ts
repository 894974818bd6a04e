/**
 * createApp(deps): the Koa application. Order: error + metrics middleware (first, so every error
 * anywhere becomes the one error shape: OpenAI's, or Anthropic's envelope for the operations the
 * contract marks `x-error-format: anthropic` and unknown paths below theirs), CORS (answers
 * preflights), the web page's static files (web-page.ts; not with MAYA_WEB=off), then the routes
 * bound from the contract's operations table (contract/operations.ts). Each route runs auth →
 * query/path validation → body read (size limit, JSON) → the rejection table → body schema
 * validation → the handler, so a handler only sees an authenticated, valid, supported request on
 * ctx.state. Unknown paths → 404, known paths with another method → 405, both in the error shape.
 */
import { randomBytes } from 'node:crypto';
import Koa from 'koa';
import { Router } from '@koa/router';
import type { AppDeps, Handler, MayaContext, RequestState } from './app-deps.ts';
import { accessLog } from './access-log.ts';
import { createAuthenticator, ANONYMOUS_SCOPE } from './auth.ts';
import { readJsonBody } from './body.ts';
import { corsMiddleware } from './cors.ts';
import { loadWebFiles, webPage } from './web-page.ts';
import {
  anthropicError,
  ApiError,
  badRequest,
  methodNotAllowed,
  toApiError,
  unknownRoute,
} from '../contract/errors.ts';
import { handlers as defaultHandlers } from './index.ts';
import { findRejection, rejectionsFor } from './rejections.ts';
import { compileValidators, defaultDocument, type OpenApiDocument, type OperationValidator } from './validation.ts';
import { registerEngineMetrics } from '../metrics/engine-metrics.ts';
import { createHttpMetrics, type HttpMetrics } from '../metrics/http-metrics.ts';
import { operations } from '../contract/operations.ts';
import type { OperationId } from '../contract/types.ts';

export interface AppOptions {
  /** Replace handlers (tests: spies; owners: before index.ts binds theirs). */
  handlers?: Partial<Record<OperationId, Handler>>;
  /** The contract; default openapi/openapi.yaml. */
  document?: OpenApiDocument;
  /** The built web page served at `/` (unless MAYA_WEB=off); default web/dist. */
  webDir?: string;
}

export function createApp(deps: AppDeps, options: AppOptions = {}): Koa<RequestState> {
  const app = new Koa<RequestState>();
  const metrics = createHttpMetrics(deps.registry);
  registerEngineMetrics(deps.registry, async () => deps.getRuntime()?.engine.stats());
  const ids = Object.keys(operations) as OperationId[];
  const validators = compileValidators(options.document ?? defaultDocument, ids);
  const authenticator = createAuthenticator(deps.server.apiKeys, deps.scopeSecret);
  const router = new Router<RequestState>();
  for (const id of ids) {
    const { method, koaPath } = operations[id];
    const handler = options.handlers?.[id] ?? defaultHandlers[id];
    router.register(
      koaPath,
      [method.toUpperCase()],
      operationMiddleware(id, validators.get(id)!, handler, deps, authenticator),
      { name: id },
    );
  }
  // Errors Koa sees after the middleware returned (a streamed body failing, a client reset).
  app.on('error', (err: unknown) => {
    if (isClientGone(err)) deps.logger.debug?.('client went away', { code: (err as { code: string }).code });
    else deps.logger.warn('response stream error', { error: errorSummary(err) });
  });
  app.use(accessLog(deps));
  app.use(errorMiddleware(deps, metrics));
  app.use(corsMiddleware(deps.server.corsOrigins));
  if (deps.server.web !== false) {
    const files = loadWebFiles(options.webDir);
    if (files) app.use(webPage(files));
    else deps.logger.warn('the web page is not built (web/dist): run npm run web:build; / answers 404');
  }
  app.use(router.routes());
  app.use(async (ctx) => {
    const match = router.match(ctx.path, ctx.method);
    if (match.path.length > 0 && !match.route) {
      const allowed = [...new Set(match.path.flatMap((layer) => layer.methods))].filter((m) => m !== 'HEAD');
      ctx.set('Allow', allowed.join(', '));
      throw methodNotAllowed(ctx.method, ctx.path);
    }
    throw unknownRoute(ctx.method, ctx.path);
  });
  return app;
}

/** The paths of the operations whose errors take Anthropic's envelope (`x-error-format: anthropic`). */
const ANTHROPIC_PATHS: readonly string[] = (Object.keys(operations) as OperationId[])
  .filter((id) => operations[id].errorFormat === 'anthropic')
  .map((id) => operations[id].path);

/** An Anthropic operation's path, or a path below one (`/v1/messages/batches`: not served, answered in its envelope). */
function isAnthropicPath(path: string): boolean {
  return ANTHROPIC_PATHS.some((prefix) => path === prefix || path.startsWith(`${prefix}/`));
}

/** The error's status and body in the envelope of the operation (else the path) that failed. */
function errorAnswer(ctx: Koa.ParameterizedContext<RequestState>, api: ApiError): { status: number; body: unknown } {
  const id = ctx.state.operationId as OperationId | undefined;
  const isAnthropic =
    id !== undefined && id in operations ? operations[id].errorFormat === 'anthropic' : isAnthropicPath(ctx.path);
  if (isAnthropic) return anthropicError(api, ctx.response.get('x-request-id') || null);
  return { status: api.status, body: api.toJSON() };
}

function errorMiddleware(deps: AppDeps, metrics: HttpMetrics): Koa.Middleware<RequestState> {
  return async (ctx, next) => {
    const started = process.hrtime.bigint();
    let isObserved = false;
    const observe = () => {
      if (isObserved) return;
      isObserved = true;
      metrics.observe(
        ctx.state.operationId ?? 'unmatched',
        ctx.res.statusCode,
        Number(process.hrtime.bigint() - started) / 1e9,
      );
    };
    ctx.res.once('finish', observe);
    ctx.res.once('close', observe);
    const requestId = `req_${randomBytes(12).toString('hex')}`;
    ctx.set('x-request-id', requestId);
    // Anthropic's SDKs read the request id from `request-id`.
    if (isAnthropicPath(ctx.path)) ctx.set('request-id', requestId);
    try {
      await next();
    } catch (err) {
      const api = toApiError(err);
      if (!(err instanceof ApiError)) {
        // Name, message and frames only: never the request body, headers or credentials.
        deps.logger.error('unhandled error', { operation: ctx.state.operationId, error: errorSummary(err) });
      }
      if (ctx.headerSent || !ctx.writable) return;
      // A request refused before its body was read (401, 413, ...) closes its socket, so a slow
      // or unwanted body cannot hold it open.
      if (!ctx.req.complete) ctx.set('Connection', 'close');
      const answer = errorAnswer(ctx, api);
      ctx.status = answer.status;
      for (const [name, value] of Object.entries(api.headers)) ctx.set(name, value);
      ctx.body = answer.body;
    }
  };
}

/** A write to a client that has already gone (routine for streams): no stack, no warning. */
function isClientGone(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return (
    code === 'EPIPE' ||
    code === 'ECONNRESET' ||
    code === 'ERR_STREAM_PREMATURE_CLOSE' ||
    code === 'ERR_STREAM_DESTROYED'
  );
}

function errorSummary(err: unknown): string {
  if (!(err instanceof Error)) return typeof err;
  return `${err.name}: ${err.message.slice(0, 200)}\n${(err.stack ?? '').split('\n').slice(1, 8).join('\n')}`;
}

function operationMiddleware(
  id: OperationId,
  validator: OperationValidator,
  handler: Handler,
  deps: AppDeps,
  authenticator: ReturnType<typeof createAuthenticator>,
): Koa.Middleware<RequestState> {
  const rejections = rejectionsFor(id, deps.server.optIns);
  return async (ctx) => {
    ctx.state.operationId = id;
    ctx.state.scope = validator.isOpen ? ANONYMOUS_SCOPE : authenticator.scopeFor(ctx.headers);
    ctx.state.query = validator.query(ctx.query);
    // @koa/router sets ctx.params; Koa's context type does not declare it.
    const params: unknown = Reflect.get(ctx, 'params');
    ctx.state.params = validator.params(typeof params === 'object' && params !== null ? { ...params } : {});
    if (validator.hasBody) {
      const body = await readJsonBody(ctx.req, deps.server.maxBodyBytes);
      if (body === undefined && validator.isBodyRequired)
        throw badRequest(null, 'The request body must be a JSON object.', 'invalid_type');
      const value = body ?? {};
      const rejection = findRejection(rejections, value);
      if (rejection !== undefined) throw rejection;
      validator.body(value);
      ctx.state.body = value;
    }
    await handler(ctx as MayaContext, deps);
  };
}

/**
 * One CORS policy for every endpoint. Allowed origins come from MAYA_CORS_ORIGINS (comma list;
 * `*` = any origin); by default only loopback origins (http(s)://localhost, 127.0.0.1 and [::1],
 * any port). An allowed origin gets Access-Control-Allow-Origin echoed (plus Vary: Origin); a
 * disallowed one gets no CORS headers at all, so the browser blocks it. Preflights (OPTIONS with
 * Access-Control-Request-Method) are answered 204 here, before authentication.
 */
import type Koa from 'koa';
import { forbidden } from '../contract/errors.ts';

const ALLOWED_METHODS = 'GET, POST, DELETE, OPTIONS';
/**
 * What browsers running the openai or Anthropic SDK send: their x-stainless-*, openai-* and
 * anthropic-* headers included.
 */
const ALLOWED_HEADERS = [
  'authorization',
  'content-type',
  'x-api-key',
  'accept',
  'idempotency-key',
  'openai-organization',
  'openai-project',
  'openai-beta',
  'anthropic-version',
  'anthropic-beta',
  'anthropic-dangerous-direct-browser-access',
  'x-stainless-arch',
  'x-stainless-lang',
  'x-stainless-os',
  'x-stainless-package-version',
  'x-stainless-retry-count',
  'x-stainless-runtime',
  'x-stainless-runtime-version',
  'x-stainless-timeout',
  'x-stainless-helper-method',
  'x-stainless-poll-helper',
  'x-stainless-custom-poll-interval',
];
const ALLOWED_HEADER_SET = new Set(ALLOWED_HEADERS);
const EXPOSED_HEADERS = 'x-request-id, request-id, retry-after';
const LOOPBACK_ORIGIN = /^https?:\/\/(localhost|127\.0\.0\.1|\[::1\])(:\d{1,5})?$/i;

/**
 * A request that would run MCP tools must not come from a browser page the CORS setting does not
 * allow: a page could otherwise make the server call tools without reading the answer (a "simple"
 * request needs no preflight). 403 `origin_not_allowed`; requests without Origin (not a browser) pass.
 */
export function requireAllowedOrigin(origin: string, allowed: readonly string[] | undefined): void {
  if (origin !== '' && !isOriginAllowed(origin, allowed))
    throw forbidden(
      `Origin ${origin} may not use MCP tools on this server (MAYA_CORS_ORIGINS does not allow it).`,
      'origin_not_allowed',
    );
}

export function isOriginAllowed(origin: string, allowed: readonly string[] | undefined): boolean {
  if (allowed === undefined) return LOOPBACK_ORIGIN.test(origin);
  return allowed.includes('*') || allowed.includes(origin);
}

/** Requested headers we allow: the fixed list plus any other x-stainless-* / openai-* / anthropic-* header. */
function allowedRequestHeaders(requested: string | undefined): string {
  const extra = (requested ?? '')
    .split(',')
    .map((name) => name.trim().toLowerCase())
    .filter((name) => !ALLOWED_HEADER_SET.has(name) && /^(x-stainless-|openai-|anthropic-)[a-z0-9-]+$/.test(name));
  return [...ALLOWED_HEADERS, ...extra].join(', ');
}

export function corsMiddleware(allowed: readonly string[] | undefined): Koa.Middleware {
  return async (ctx, next) => {
    const origin = ctx.get('origin');
    ctx.vary('Origin');
    const isPreflight = ctx.method === 'OPTIONS' && ctx.get('access-control-request-method') !== '';
    if (origin === '' || !isOriginAllowed(origin, allowed)) {
      if (isPreflight) {
        ctx.status = 204;
        return;
      }
      return next();
    }
    ctx.set('Access-Control-Allow-Origin', origin);
    if (isPreflight) {
      ctx.set('Access-Control-Allow-Methods', ALLOWED_METHODS);
      ctx.set('Access-Control-Allow-Headers', allowedRequestHeaders(ctx.get('access-control-request-headers')));
      ctx.set('Access-Control-Max-Age', '600');
      ctx.status = 204;
      return;
    }
    ctx.set('Access-Control-Expose-Headers', EXPOSED_HEADERS);
    return next();
  };
}

/**
 * API-key authentication and credential scopes. `Authorization: Bearer K` and `x-api-key: K` are
 * the same credential. Keys are compared in constant time (SHA-256 of both sides, then
 * timingSafeEqual against every configured key, no early exit). Each request gets ctx.state.scope:
 * an HMAC of the key under a per-process random secret, so the store and job manager can isolate
 * records without ever holding a key. Without configured keys every caller shares ANONYMOUS_SCOPE.
 *
 * Open endpoints (no key needed) are the operations the contract marks `security: []`:
 * GET /health (probes), GET /openapi.json (the public contract) and GET /metrics/prometheus
 * (scrapers; it holds no credentials or content). CORS preflights are answered before auth by
 * cors.ts. Everything else needs a key when keys are configured.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type Koa from 'koa';
import { unauthorized } from '../contract/errors.ts';

export const ANONYMOUS_SCOPE = 'anonymous';

const scopeSecret = randomBytes(32);

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/** The scope id of a key: 32 hex chars of HMAC-SHA256 under the per-process secret. */
export function scopeOf(key: string): string {
  return `key_${createHmac('sha256', scopeSecret).update(key, 'utf8').digest('hex').slice(0, 32)}`;
}

/** The presented credential, or undefined. A malformed Authorization header counts as absent. */
export function presentedKey(headers: Koa.Request['headers']): string | undefined {
  const authorization = headers.authorization;
  if (typeof authorization === 'string') {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (match?.[1] !== undefined) return match[1];
  }
  const apiKey = headers['x-api-key'];
  if (typeof apiKey === 'string' && apiKey.trim() !== '') return apiKey.trim();
  return undefined;
}

export interface Authenticator {
  readonly isEnabled: boolean;
  /** The scope for these headers; throws 401 ApiError when keys are configured and none match. */
  scopeFor(headers: Koa.Request['headers']): string;
}

export function createAuthenticator(keys: readonly string[]): Authenticator {
  const digests = keys.map(digest);
  return {
    isEnabled: digests.length > 0,
    scopeFor(headers) {
      if (digests.length === 0) return ANONYMOUS_SCOPE;
      const key = presentedKey(headers);
      if (key === undefined) {
        throw unauthorized(
          "You didn't provide an API key. Send it as 'Authorization: Bearer KEY' or 'x-api-key: KEY'.",
        );
      }
      const presented = digest(key);
      let isMatch = false;
      for (const known of digests) isMatch = timingSafeEqual(presented, known) || isMatch;
      if (!isMatch) throw unauthorized('Incorrect API key provided.');
      return scopeOf(key);
    },
  };
}

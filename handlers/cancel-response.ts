/**
 * cancelResponse (POST /v1/responses/{response_id}/cancel): cancels the caller's background
 * task. A queued task is removed without generating; a running one is signalled and the call
 * waits up to five seconds for its cleanup, answering `cancelled` once the worker released it or
 * still `in_progress` (poll until it changes). Idempotent: a finished task answers its own final
 * state. A response created without background → 400; unknown and other-key ids → 404.
 */
import type { Handler } from './app-deps.ts';
import { badRequest, notFound } from '../contract/errors.ts';

export const cancelResponse: Handler = async (ctx, deps) => {
  const scope = ctx.state.scope;
  const id = ctx.state.params.response_id as string;
  const snapshot = await deps.jobs?.cancel(scope, id);
  if (snapshot) {
    ctx.body = snapshot;
    return;
  }
  const stored = await deps.store.get(scope, id);
  if (!stored) throw notFound('response', id);
  if (stored.background !== true) {
    throw badRequest(null, `Response '${id}' was not created with background=true; only background responses can be cancelled.`, 'not_background');
  }
  // A finished background response whose job record has expired: its final state.
  ctx.body = stored;
};

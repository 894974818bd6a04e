/**
 * cancelResponse (POST /v1/responses/{response_id}/cancel): cancels the caller's background
 * task. A queued task is removed without generating; a running one is signalled and the call
 * waits up to five seconds for its cleanup, answering `cancelled` once the worker released it or
 * still `in_progress` (poll until it changes). Idempotent: a finished task answers its own final
 * state. A response created without background → 400; unknown and other-key ids → 404.
 */
import type { Handler } from './app-deps.ts';
import { cancelResponse as cancel } from '../responses/service.ts';

export const cancelResponse: Handler = async (ctx, deps) => {
  ctx.body = await cancel(deps, ctx.state.scope, ctx.state.params.response_id as string);
};

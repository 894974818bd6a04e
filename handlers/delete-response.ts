/**
 * deleteResponse: DELETE /v1/responses/{response_id}. Removes the caller's stored response (and a
 * finished background task's record) and answers `{id, object:"response", deleted:true}`;
 * responses that continue it keep their whole history (shared blocks). Unknown, expired,
 * evicted, already deleted and other-key ids are 404; an active background task is 409 (cancel
 * it first). The contract declares no query options, so validation answers any with 400.
 */
import type { Handler } from './app-deps.ts';
import type { DeleteResponseResult } from '../contract/types.ts';
import { deleteResponse as remove } from '../responses/service.ts';

export const deleteResponse: Handler = async (ctx, deps) => {
  const id = ctx.state.params.response_id as string;
  await remove(deps, ctx.state.scope, id);
  const body: DeleteResponseResult = { id, object: 'response', deleted: true };
  ctx.body = body;
};

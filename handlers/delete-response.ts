/**
 * deleteResponse: DELETE /v1/responses/{response_id}. Removes the caller's stored response and
 * answers `{id, object:"response", deleted:true}`; responses that continue it keep their whole
 * history (shared blocks). Unknown, expired, evicted, already deleted and other-key ids are 404.
 * The contract declares no query options, so validation answers any with 400 before this runs.
 * An active background task is 409 (cancel it first); a finished one's job record goes too.
 */
import type { Handler } from './app-deps.ts';
import { deleteBackgroundRecord } from './background-response.ts';
import { notFound } from '../contract/errors.ts';
import type { DeleteResponseResult } from '../contract/types.ts';

export const deleteResponse: Handler = async (ctx, deps) => {
  const id = ctx.state.params.response_id as string;
  const isRecordDeleted = deleteBackgroundRecord(ctx, deps);
  if (!(await deps.store.delete(ctx.state.scope, id)) && !isRecordDeleted) throw notFound('response', id);
  const body: DeleteResponseResult = { id, object: 'response', deleted: true };
  ctx.body = body;
};

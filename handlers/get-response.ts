/**
 * getResponse: GET /v1/responses/{response_id}. Answers the caller's saved final response from
 * the store; unknown, expired, evicted, deleted and other-key ids are 404. `stream=true` replays a
 * background task's retained events, which only the job manager holds: a stored response
 * without a retained event record is 409 (retrieve it without `stream`), never an empty stream.
 * A background task's record (queued, running or retained) is answered by the job manager first.
 */
import type { Handler } from './app-deps.ts';
import { getBackgroundResponse } from './background-response.ts';
import { conflict, notFound } from '../contract/errors.ts';
import type { GetResponseQuery, Response } from '../contract/types.ts';

export const getResponse: Handler = async (ctx, deps) => {
  const id = ctx.state.params.response_id as string;
  const query = ctx.state.query as GetResponseQuery;
  if (await getBackgroundResponse(ctx, deps)) return;
  const response = await deps.store.get(ctx.state.scope, id);
  if (!response) throw notFound('response', id);
  if (query.stream === true) {
    throw conflict(
      `Response '${id}' has no retained event stream; retrieve it without stream=true.`,
      'stream_not_available',
      'stream',
    );
  }
  ctx.body = response as unknown as Response;
};

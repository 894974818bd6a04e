/**
 * getResponse: GET /v1/responses/{response_id}. The caller's response (a background task's live
 * or retained record first, then the store); unknown, expired, evicted, deleted and other-key ids
 * are 404. `stream=true` replays a background task's retained events strictly after
 * `starting_after` (all of them without it) and follows it live; a stored response without a
 * retained event record is 409. The service (responses/service.ts) owns these rules.
 */
import type { Handler } from './app-deps.ts';
import { streamSse } from './sse.ts';
import type { GetResponseQuery } from '../contract/types.ts';
import { retrieveResponse, streamResponse } from '../responses/service.ts';

export const getResponse: Handler = async (ctx, deps) => {
  const id = ctx.state.params.response_id as string;
  const query = ctx.state.query as GetResponseQuery;
  if (query.stream !== true) {
    ctx.body = await retrieveResponse(deps, ctx.state.scope, id);
    return;
  }
  const disconnect = new AbortController();
  const events = await streamResponse(deps, ctx.state.scope, id, query.starting_after, disconnect.signal);
  await streamSse(ctx, events, { onDisconnect: disconnect, writeTimeoutMs: deps.settings.STREAM_TIMEOUT_S * 1000 });
};

/**
 * listInputItems: GET /v1/responses/{response_id}/input_items. One page of the response's full
 * input history (earlier turns' inputs and outputs, then its own inputs; never its own output).
 * `order` asc|desc (default desc) and `limit` 1..100 (default 20) arrive validated with defaults
 * applied; `after` is an item id of this listing and the page starts strictly after it, so the
 * SDK's auto-pagination visits every item once. An `after` id not in the listing is 400 (param
 * `after`), never an empty page. A background task's inputs are listable while it still runs.
 */
import type { Handler } from './app-deps.ts';
import type { ListInputItemsQuery } from '../contract/types.ts';
import { listInputItems as list } from '../responses/service.ts';

export const listInputItems: Handler = async (ctx, deps) => {
  const { order, limit, after } = ctx.state.query as ListInputItemsQuery;
  ctx.body = await list(deps, ctx.state.scope, ctx.state.params.response_id as string, { order, limit, after });
};

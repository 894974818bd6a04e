/**
 * listInputItems: GET /v1/responses/{response_id}/input_items. One page of the stored
 * response's full input history (earlier turns' inputs and outputs, then its own inputs; never
 * its own output). `order` asc|desc (default desc) and `limit` 1..100 (default 20) arrive
 * validated with defaults applied; `after` is an item id of this listing and the page starts
 * strictly after it in the requested order, so the SDK's auto-pagination (`after` = last id,
 * while `has_more`) visits every item once. An `after` id that is not in the listing is 400
 * (param `after`) rather than an empty page, so a wrong cursor is never mistaken for the end.
 * A background task's record answers first: its inputs are listable while it is still running.
 */
import type { Handler } from './app-deps.ts';
import { fromStoreError, notFound } from '../contract/errors.ts';
import type { ListInputItemsQuery, ResponseItemList } from '../contract/types.ts';

export const listInputItems: Handler = async (ctx, deps) => {
  const id = ctx.state.params.response_id as string;
  const { order, limit, after } = ctx.state.query as ListInputItemsQuery;
  const page = deps.jobs?.listInputItems(ctx.state.scope, id, { order, limit, after }) ?? await deps.store.listInputItems(ctx.state.scope, id, { order, limit, after }).catch((error: unknown) => { throw fromStoreError(error); });
  if (!page) throw notFound('response', id);
  ctx.body = page as unknown as ResponseItemList;
};

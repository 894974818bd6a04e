/**
 * createMessage (POST /v1/messages, Anthropic's Messages API): HTTP only. The translator
 * (responses/anthropic-messages.ts) plans the request on the Responses service and answers the
 * message or its events; this handler writes the body, or the events through the one SSE writer
 * in Anthropic's framing. A client that goes away stops the run. Errors take Anthropic's envelope
 * in app.ts (the operation is `x-error-format: anthropic`).
 */
import type { Handler } from './app-deps.ts';
import { abortOnDisconnect, anthropicFormat, streamSse } from './sse.ts';
import type { AnthropicCreateMessageRequest } from '../contract/types.ts';
import { createMessage as create } from '../responses/anthropic-messages.ts';

export const createMessage: Handler = async (ctx, deps) => {
  const request = ctx.state.body as AnthropicCreateMessageRequest;
  // Watched from the start: a client gone during planning stops the run before it generates.
  const disconnect = abortOnDisconnect(ctx.res);
  const created = await create(deps, ctx.state.scope, request, disconnect.signal);
  if (created.stream) return streamSse(ctx, created.events, { format: anthropicFormat, onDisconnect: disconnect });
  ctx.body = created.message;
};

/**
 * createResponse (POST /v1/responses): the validated, supported request goes to the service
 * (responses/service.ts); its answer comes back as the Response JSON, the run's SSE stream, the
 * queued background Response, or the task's live stream. The request has already passed schema
 * validation and the rejection table; every other 400 is raised by the service before any engine
 * work is queued. A client that goes away stops a foreground run (never a background task). A
 * request with `mcp` tools from a browser origin the CORS setting does not allow is refused (403).
 */
import type { Handler } from './app-deps.ts';
import { requireAllowedOrigin } from './cors.ts';
import { abortOnDisconnect, streamSse } from './sse.ts';
import type { CreateResponseBody } from '../contract/types.ts';
import { createResponse as create, runToEnd } from '../responses/service.ts';

export const createResponse: Handler = async (ctx, deps) => {
  const body: CreateResponseBody = ctx.state.body as CreateResponseBody;
  if (body.tools?.some((tool) => tool.type === 'mcp')) requireAllowedOrigin(ctx.get('origin'), deps.server.corsOrigins);
  // Watched from the start: a client gone during planning stops the run before it generates.
  const disconnect = abortOnDisconnect(ctx.res);
  const created = await create(deps, ctx.state.scope, body, disconnect.signal);
  switch (created.kind) {
    case 'queued':
      ctx.body = created.response;
      return;
    case 'attached':
      return streamSse(ctx, created.events, {
        onDisconnect: disconnect,
        writeTimeoutMs: deps.settings.STREAM_TIMEOUT_S * 1000,
      });
    case 'foreground':
      if (created.stream) return streamSse(ctx, created.events, { onDisconnect: disconnect });
      ctx.body = await runToEnd(created.events);
  }
};

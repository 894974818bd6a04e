/**
 * createChatCompletion (POST /v1/chat/completions): HTTP only. The translator
 * (responses/chat-completions.ts) plans the request on the Responses service and answers the
 * chat.completion body or its chunks; this handler writes the body, or the chunks through the one
 * SSE writer. A client that goes away stops the run (and a running MCP tool call). A strata_mcp
 * request from a browser origin the CORS setting does not allow is refused (403).
 */
import type { Handler } from './app-deps.ts';
import { requireAllowedOrigin } from './cors.ts';
import { abortOnDisconnect, chatFormat, streamSse } from './sse.ts';
import { createChatCompletion as create, type ChatRequest } from '../responses/chat-completions.ts';

export const createChatCompletion: Handler = async (ctx, deps) => {
  const chat = ctx.state.body as ChatRequest;
  if (chat.strata_mcp === true) requireAllowedOrigin(ctx.get('origin'), deps.server.corsOrigins);
  // Watched from the start: a client gone during planning stops the run before it generates.
  const disconnect = abortOnDisconnect(ctx.res);
  const created = await create(deps, chat, disconnect.signal);
  if (created.stream) return streamSse(ctx, created.chunks, { format: chatFormat, onDisconnect: disconnect });
  ctx.body = created.completion;
};

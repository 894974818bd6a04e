/**
 * countMessageTokens (POST /v1/messages/count_tokens, Anthropic's `messages.countTokens`): the
 * prompt the same request would run with, rendered and tokenised by the translator
 * (responses/anthropic-messages.ts) without generating.
 */
import type { Handler } from './app-deps.ts';
import { abortOnDisconnect } from './sse.ts';
import type { AnthropicCountTokensRequest } from '../contract/types.ts';
import { countMessageTokens as count } from '../responses/anthropic-messages.ts';

export const countMessageTokens: Handler = async (ctx, deps) => {
  const request = ctx.state.body as AnthropicCountTokensRequest;
  // A client gone while remote images download stops them.
  const disconnect = abortOnDisconnect(ctx.res);
  ctx.body = await count(deps, ctx.state.scope, request, disconnect.signal);
};

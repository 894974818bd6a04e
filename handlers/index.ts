/**
 * The handler map: one Handler per operationId of the contract (`satisfies` makes a missing one
 * a compile error). `notImplemented(id)` is a handler that answers 501 `not_implemented`
 * (openapi-backend's convention), for a route whose operation has no implementation.
 */
import type { Handler } from './app-deps.ts';
import { notImplementedError } from '../contract/errors.ts';
import { cancelResponse } from './cancel-response.ts';
import { countMessageTokens } from './count-message-tokens.ts';
import { createChatCompletion } from './create-chat-completion.ts';
import { createMessage } from './create-message.ts';
import { createResponse } from './create-response.ts';
import { deleteResponse } from './delete-response.ts';
import { getHealth } from './get-health.ts';
import { getMetrics } from './get-metrics.ts';
import { getOpenApi } from './get-open-api.ts';
import { getResponse } from './get-response.ts';
import { getStatus } from './get-status.ts';
import { listInputItems } from './list-input-items.ts';
import { listModels } from './list-models.ts';
import { retrieveModel } from './retrieve-model.ts';
import type { OperationId } from '../contract/types.ts';

export function notImplemented(operationId: string): Handler {
  return async () => {
    throw notImplementedError(operationId);
  };
}

export const handlers = {
  createResponse,
  createChatCompletion,
  createMessage,
  countMessageTokens,
  getResponse,
  deleteResponse,
  listInputItems,
  cancelResponse,
  listModels,
  retrieveModel,
  getStatus,
  getMetrics,
  getHealth,
  getOpenApi,
} satisfies Record<OperationId, Handler>;

/** getOpenApi (GET /openapi.json, no key): the contract openapi/openapi.yaml, served as JSON. */
import type { Handler } from './app-deps.ts';
import { defaultDocument } from './validation.ts';

export const getOpenApi: Handler = async (ctx) => {
  ctx.body = defaultDocument;
};

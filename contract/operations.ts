/**
 * The contract's runtime tables, over generated/: the operations table (operationId → method,
 * path template, request body, security; routes, access-log names and the status page read it)
 * and the OpenAPI document itself (request validation and GET /openapi.json). Like types.ts for
 * the types, the one way in to generated/'s values, so a regenerated table breaks the build here.
 */
export { operations } from '../generated/operations.ts';
export { openapiDocument } from '../generated/openapi-document.ts';

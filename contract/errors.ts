/**
 * ApiError and its constructors: the only place that builds error bodies. Every non-2xx body is
 * exactly `{"error":{"message","type","param","code"}}` (the spec's ErrorResponse), which the
 * openai SDK turns into the APIError subclass for the status (BadRequestError, NotFoundError, ...);
 * the operations the contract marks `x-error-format: anthropic` answer the same ApiError in
 * Anthropic's envelope instead (`anthropicError`).
 *
 * Types follow what OpenAI's API returns: `invalid_request_error` for every 4xx caused by the
 * request (400, 401, 404, 405, 409, 410, 413), `requests` with code `rate_limit_exceeded` for 429,
 * and `server_error` for 5xx. `param` names the offending field as a JSON path (`input[0].content`,
 * `tools[1].type`) or the query parameter's name; null when no single field is at fault.
 */

export type ErrorType = 'invalid_request_error' | 'requests' | 'server_error';

export interface ErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type: ErrorType,
    readonly code: string | null = null,
    readonly param: string | null = null,
    /** Extra response headers, e.g. Retry-After on 429 and 503. */
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
    this.name = 'ApiError';
  }

  toJSON(): ErrorBody {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

export function badRequest(param: string | null, message: string, code = 'invalid_value'): ApiError {
  return new ApiError(400, message, 'invalid_request_error', code, param);
}

export function unauthorized(message = 'Missing or incorrect API key.', code = 'invalid_api_key'): ApiError {
  return new ApiError(401, message, 'invalid_request_error', code, null);
}

/** `notFound('response', id)` → "No response found with id 'resp_…'." */
export function notFound(kind: string, id: string, param: string | null = null): ApiError {
  return new ApiError(404, `No ${kind} found with id '${id}'.`, 'invalid_request_error', 'not_found', param);
}

export function forbidden(message: string, code: string): ApiError {
  return new ApiError(403, message, 'invalid_request_error', code, null);
}

export function unknownRoute(method: string, path: string): ApiError {
  return new ApiError(404, `Invalid URL (${method} ${path}).`, 'invalid_request_error', 'unknown_url', null);
}

export function methodNotAllowed(method: string, path: string): ApiError {
  return new ApiError(
    405,
    `Method ${method} is not allowed for ${path}.`,
    'invalid_request_error',
    'method_not_allowed',
    null,
  );
}

export function conflict(message: string, code = 'conflict', param: string | null = null): ApiError {
  return new ApiError(409, message, 'invalid_request_error', code, param);
}

export function gone(message: string, code = 'gone', param: string | null = null): ApiError {
  return new ApiError(410, message, 'invalid_request_error', code, param);
}

export function tooLarge(message: string, code = 'request_too_large', param: string | null = null): ApiError {
  return new ApiError(413, message, 'invalid_request_error', code, param);
}

export function tooManyRequests(message: string, code = 'rate_limit_exceeded', retryAfterS?: number): ApiError {
  const headers: Record<string, string> = retryAfterS === undefined ? {} : { 'retry-after': String(retryAfterS) };
  return new ApiError(429, message, 'requests', code, null, headers);
}

export function notImplementedError(operation: string): ApiError {
  return new ApiError(501, `${operation} is not implemented yet.`, 'server_error', 'not_implemented', null);
}

export function unavailable(message: string, code = 'service_unavailable', retryAfterS?: number): ApiError {
  const headers: Record<string, string> = retryAfterS === undefined ? {} : { 'retry-after': String(retryAfterS) };
  return new ApiError(503, message, 'server_error', code, null, headers);
}

export function internalError(): ApiError {
  return new ApiError(
    500,
    'The server had an error while processing your request.',
    'server_error',
    'server_error',
    null,
  );
}

/** Any thrown value as an ApiError; unknown errors become the generic 500 (message not exposed). */
export function toApiError(err: unknown): ApiError {
  return err instanceof ApiError ? err : internalError();
}

/**
 * The data of an SSE `error` event for an error raised after the stream's headers were sent.
 * Flat `code/message/param` (OpenAI's ResponseErrorEvent) plus the nested `error` object (Open
 * Responses), so both openai SDK lines throw a proper APIError. The caller (sse.ts) owns framing.
 */
export function sseErrorEvent(
  err: unknown,
  sequenceNumber: number,
): {
  type: 'error';
  sequence_number: number;
  code: string | null;
  message: string;
  param: string | null;
  error: ErrorBody['error'];
} {
  const api = toApiError(err);
  const error = api.toJSON().error;
  return {
    type: 'error',
    sequence_number: sequenceNumber,
    code: error.code,
    message: error.message,
    param: error.param,
    error,
  };
}

/** Failed-response codes caused by the request itself (its history, images or storage limits). */
const REQUEST_FAILURE_CODES = new Set([
  'invalid_prompt',
  'invalid_image',
  'invalid_image_format',
  'invalid_base64_image',
  'invalid_image_url',
  'image_too_large',
  'image_too_small',
  'image_parse_error',
  'invalid_image_mode',
  'unsupported_image_media_type',
  'empty_image_file',
  'failed_to_download_image',
  'snapshot_too_large',
  'duplicate_item',
  'invalid_item',
]);

/**
 * A failed Response's `error` with its `type`: OpenAI's ResponseError is `code` + `message` and
 * open; `type` (the category, as in HTTP error bodies) is what the Vercel AI SDK needs to report it.
 */
export function typedFailure<Failure extends { code: string; message: string }>(
  failure: Failure,
): Failure & { type: 'invalid_request_error' | 'requests' | 'server_error' } {
  const type = REQUEST_FAILURE_CODES.has(failure.code)
    ? 'invalid_request_error'
    : failure.code === 'rate_limit_exceeded'
      ? 'requests'
      : 'server_error';
  return { ...failure, type };
}

/** Anthropic's error types (its API's errors page: one per HTTP status). */
export type AnthropicErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'request_too_large'
  | 'rate_limit_error'
  | 'api_error'
  | 'overloaded_error';

export interface AnthropicErrorBody {
  type: 'error';
  error: {
    type: AnthropicErrorType;
    message: string;
    /** Maya extension (the SDK's `error.details`): the OpenAI envelope's `code` and `param`. */
    details: { error_code: string | null; param: string | null };
  };
  request_id?: string | null;
}

/** Anthropic answers an overloaded service with 529; Maya's 503s (loading, shutting down) become it. */
export const ANTHROPIC_OVERLOADED_STATUS = 529;

const ANTHROPIC_TYPES: Readonly<Record<number, AnthropicErrorType>> = {
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  503: 'overloaded_error',
  529: 'overloaded_error',
};

/**
 * Any thrown value in Anthropic's envelope `{"type":"error","error":{"type","message"}}`, with the
 * status it answers with: the ApiError's own, except 503 → 529 `overloaded_error`. Other 4xx are
 * `invalid_request_error`, other 5xx `api_error`. The message starts with the offending field
 * (Anthropic's `field: problem` form) unless it names it already.
 */
export function anthropicError(err: unknown, requestId?: string | null): { status: number; body: AnthropicErrorBody } {
  const api = toApiError(err);
  const type = ANTHROPIC_TYPES[api.status] ?? (api.status >= 500 ? 'api_error' : 'invalid_request_error');
  const message = api.param !== null && !api.message.includes(api.param) ? `${api.param}: ${api.message}` : api.message;
  const body: AnthropicErrorBody = {
    type: 'error',
    error: { type, message, details: { error_code: api.code, param: api.param } },
    ...(requestId === undefined ? {} : { request_id: requestId }),
  };
  return { status: api.status === 503 ? ANTHROPIC_OVERLOADED_STATUS : api.status, body };
}

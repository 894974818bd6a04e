import { describe, expect, it, expectTypeOf } from 'vitest';
import {
  ApiError,
  badRequest,
  conflict,
  gone,
  internalError,
  notFound,
  sseErrorEvent,
  toApiError,
  tooLarge,
  tooManyRequests,
  unauthorized,
  unavailable,
} from '../../contract/errors.ts';
import type { ErrorResponse } from '../../contract/types.ts';

describe('ApiError', () => {
  it('toJSON is exactly {error:{message,type,param,code}}', () => {
    const err = badRequest('input[0].content', 'bad content', 'invalid_type');
    expect(JSON.parse(JSON.stringify(err))).toEqual({
      error: { message: 'bad content', type: 'invalid_request_error', param: 'input[0].content', code: 'invalid_type' },
    });
    expect(err.status).toBe(400);
    expect(err).toBeInstanceOf(Error);
  });

  it('toJSON is assignable to the contract ErrorResponse', () => {
    expectTypeOf(badRequest(null, 'x').toJSON()).toMatchTypeOf<ErrorResponse>();
  });

  it.each([
    [unauthorized(), 401, 'invalid_request_error', 'invalid_api_key'],
    [notFound('response', 'resp_1'), 404, 'invalid_request_error', 'not_found'],
    [conflict('busy'), 409, 'invalid_request_error', 'conflict'],
    [gone('behind'), 410, 'invalid_request_error', 'gone'],
    [tooLarge('big'), 413, 'invalid_request_error', 'request_too_large'],
    [tooManyRequests('slow down'), 429, 'requests', 'rate_limit_exceeded'],
    [unavailable('later'), 503, 'server_error', 'service_unavailable'],
    [internalError(), 500, 'server_error', 'server_error'],
  ])('constructor → status %#', (err, status, type, code) => {
    expect(err).toBeInstanceOf(ApiError);
    expect(err.status).toBe(status);
    expect(err.toJSON().error).toMatchObject({ type, code });
  });

  it('notFound names the id; param only when given', () => {
    expect(notFound('response', 'resp_9').message).toContain("'resp_9'");
    expect(notFound('response', 'resp_9', 'previous_response_id').param).toBe('previous_response_id');
  });

  it('429 and 503 can carry Retry-After', () => {
    expect(tooManyRequests('x', 'rate_limit_exceeded', 3).headers).toEqual({ 'retry-after': '3' });
    expect(unavailable('x', 'model_loading', 5).headers).toEqual({ 'retry-after': '5' });
  });

  it('unknown errors become the generic 500 without their message', () => {
    const api = toApiError(new Error('internal detail'));
    expect(api.status).toBe(500);
    expect(api.message).not.toContain('internal detail');
  });

  it('sseErrorEvent has flat and nested fields', () => {
    expect(sseErrorEvent(conflict('stop', 'response_cancelled'), 7)).toEqual({
      type: 'error',
      sequence_number: 7,
      code: 'response_cancelled',
      message: 'stop',
      param: null,
      error: { type: 'invalid_request_error', code: 'response_cancelled', message: 'stop', param: null },
    });
  });
});

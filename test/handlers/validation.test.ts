import { describe, expect, it } from 'vitest';
import { paramPath } from '../../handlers/explain-errors.ts';
import { compileValidators, defaultDocument, normaliseQuery } from '../../handlers/validation.ts';
import { ApiError } from '../../contract/errors.ts';
import { operationIds } from '../../generated/operations.ts';

const validators = compileValidators(defaultDocument, operationIds);

function bodyError(operationId: string, body: unknown): ApiError {
  try {
    validators.get(operationId)!.body(body);
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
  throw new Error('expected a validation error');
}

describe('paramPath', () => {
  it.each([
    ['', null],
    ['/input', 'input'],
    ['/input/0/content', 'input[0].content'],
    ['/tools/1/type', 'tools[1].type'],
    ['/metadata/a~1b', 'metadata.a/b'],
  ])('%s → %s', (pointer, expected) => {
    expect(paramPath(pointer)).toBe(expected);
  });
});

describe('normaliseQuery', () => {
  it('folds include[] and repeated names into arrays, keeps scalars', () => {
    expect(normaliseQuery({ 'include[]': 'a', limit: '5', order: ['asc', 'desc'] })).toEqual({
      include: ['a'],
      limit: '5',
      order: ['asc', 'desc'],
    });
    expect(normaliseQuery({ 'include[]': ['a', 'b'], include: 'c' })).toEqual({ include: ['a', 'b', 'c'] });
  });
});

describe('every operation has a validator', () => {
  it('compiles one per operationId, and only the contract public ones are open', () => {
    expect([...validators.keys()].sort()).toEqual([...operationIds].sort());
    const open = operationIds.filter((id) => validators.get(id)!.isOpen).sort();
    expect(open).toEqual(['getHealth', 'getMetrics', 'getOpenApi']);
    expect(validators.get('createResponse')!.hasBody).toBe(true);
    expect(validators.get('getResponse')!.hasBody).toBe(false);
  });
});

describe('body errors name the field', () => {
  it.each([
    [
      'unknown tag of a text format',
      { input: 'hi', text: { format: { type: 'yaml' } } },
      'text.format.type',
      'invalid_value',
    ],
    [
      'json_schema format without a name',
      { input: 'hi', text: { format: { type: 'json_schema', schema: { type: 'object' } } } },
      'text.format.name',
      'missing_required_parameter',
    ],
    [
      'function output without call_id',
      { input: [{ type: 'function_call_output', output: 'x' }] },
      'input[0].call_id',
      'missing_required_parameter',
    ],
    ['unknown tool_choice option', { input: 'hi', tool_choice: 'sometimes' }, 'tool_choice', 'invalid_value'],
    [
      'metadata value too long',
      { input: 'hi', metadata: { k: 'v'.repeat(600) } },
      'metadata.k',
      'string_above_max_length',
    ],
    ['unknown role', { input: [{ role: 'robot', content: 'hi' }] }, 'input[0].role', 'invalid_value'],
    [
      'extra key in a content part',
      { input: [{ role: 'user', content: [{ type: 'input_text', text: 'a', lang: 'en' }] }] },
      'input[0].content[0].lang',
      'unknown_parameter',
    ],
    ['temperature above 2', { input: 'hi', temperature: 3 }, 'temperature', 'integer_above_max_value'],
    ['top_p above 1 (decimal)', { input: 'hi', top_p: 1.5 }, 'top_p', 'decimal_above_max_value'],
  ])('%s → %s', (_name, body, param, code) => {
    const err = bodyError('createResponse', body);
    expect(err.status).toBe(400);
    expect({ param: err.param, code: err.code }).toEqual({ param, code });
    expect(err.message).toContain(param);
  });

  it('chat: messages must not be empty', () => {
    const err = bodyError('createChatCompletion', { messages: [] });
    expect(err.param).toBe('messages');
    expect(err.code).toBe('array_below_min_length');
  });

  it('long values are cut in messages', () => {
    const err = bodyError('createResponse', { input: [{ role: 'x'.repeat(500), content: 'hi' }] });
    expect(err.message.length).toBeLessThan(300);
  });
});

describe('query errors name the parameter', () => {
  it('an unsupported include value', () => {
    expect(() => validators.get('getResponse')!.query({ 'include[]': 'file_search_call.results' })).toThrow(
      expect.objectContaining({ param: 'include' }),
    );
  });

  it('defaults are applied', () => {
    expect(validators.get('listInputItems')!.query({})).toMatchObject({ limit: 20, order: 'desc' });
  });

  it('a negative starting_after', () => {
    expect(() => validators.get('getResponse')!.query({ starting_after: '-1' })).toThrow(
      expect.objectContaining({ param: 'starting_after' }),
    );
  });
});

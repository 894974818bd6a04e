/**
 * Spec-driven fuzzing in npm test (seeded, bounded): 2,400 malformed and boundary requests across
 * every operation of the contract, in-process over FakeEngine + the real GLM-4.5 dialect. No
 * answer may be a 5xx; every 4xx is the operation's error envelope (OpenAI's message, type, param,
 * code; Anthropic's for the Messages API operations); the
 * server still answers /health afterwards. `npm run fuzz -- --count N` runs the same generators
 * against a real `maya serve` on the demo model.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createTestApp, stubRuntime } from '../helpers/test-app.ts';
import { scriptedRuntime } from '../responses/scripted-runtime.ts';
import { anyRequest, answerProblems } from './request-arbitraries.ts';
import { operations } from '../../generated/operations.ts';

const RUNS = 2400;

describe('fuzzing the contract', () => {
  it(`${RUNS} generated requests: no 5xx, every error in its operation's envelope, healthy after`, async () => {
    const base = scriptedRuntime(Array.from({ length: 4 }, () => ({ pieces: ['\n', 'Hi', '<|user|>'] })));
    const { request } = createTestApp({ runtime: stubRuntime({ ...base, id: 'maya-test' }) });
    const seen = new Map<number, number>();
    const perOperation = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(anyRequest, async (req) => {
        let call = request[req.method.toLowerCase() as 'get' | 'post' | 'delete'](req.path);
        if (req.body !== undefined) call = call.set('content-type', 'application/json').send(req.body);
        const res = await call.buffer(true);
        seen.set(res.status, (seen.get(res.status) ?? 0) + 1);
        perOperation.set(req.operation, (perOperation.get(req.operation) ?? 0) + 1);
        const body = res.headers['content-type']?.startsWith('application/json') ? res.body : undefined;
        expect(
          answerProblems(res.status, body, req.operation),
          `${req.method} ${req.path} ${req.body?.slice(0, 300)}`,
        ).toEqual([]);
      }),
      { numRuns: RUNS, seed: 20261201, endOnFailure: true },
    );
    expect((await request.get('/health')).status).toBe(200);
    // Every operation of the contract was fuzzed (the Anthropic Messages ones included).
    for (const id of Object.keys(operations)) expect(perOperation.get(id) ?? 0, id).toBeGreaterThan(50);
    // The generators reach both refusals and successes, not only one kind of answer.
    expect([...seen.keys()].some((status) => status >= 400)).toBe(true);
    expect([...seen.keys()].some((status) => status < 300)).toBe(true);
  }, 240_000);
});

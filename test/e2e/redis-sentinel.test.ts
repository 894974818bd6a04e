/**
 * Two `maya serve` replicas behind haproxy on a Redis primary + replica watched by three Sentinels
 * (test/helpers/replica-bed.ts; MAYA_STORE_URL=redis+sentinel://…, MAYA_STORE_WAIT_REPLICAS left
 * at its Sentinel default of 1). A forced failover: requests during the gap answer 200 or 503
 * with Retry-After (never 500), the replicas then write to the new primary, and every response
 * acknowledged as stored, before or during the failover, is still there on both replicas. A
 * stored response the Redis replica did not confirm is 503, never reported stored.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReplicaBed, sleep, type ReplicaBed } from '../helpers/replica-bed.ts';

const KEY = 'key-sentinel';
let bed: ReplicaBed;

interface Answer {
  status: number;
  retryAfter: string | null;
  body: { id?: string; status?: string; output?: unknown[]; error?: { code: string } };
}

async function call(origin: string, method: string, path: string, body?: object): Promise<Answer> {
  const response = await fetch(`${origin}/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${KEY}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return { status: response.status, retryAfter: response.headers.get('retry-after'), body: await response.json() };
}

const create = (store: boolean) =>
  call(bed.origin, 'POST', '/responses', { model: 'maya-demo', input: 'Hello', store, max_output_tokens: 16 });

/** Every replica answers `id` with the acknowledged output. */
async function expectStored(answer: Answer): Promise<void> {
  for (const replica of bed.replicas) {
    const got = await call(replica.origin, 'GET', `/responses/${answer.body.id}`);
    expect([got.status, got.body.output]).toEqual([200, answer.body.output]);
  }
}

beforeAll(async () => {
  bed = await startReplicaBed({ replicas: 2, apiKeys: [KEY] });
}, 120_000);

afterAll(async () => {
  await bed?.stop();
});

describe('Redis Sentinel behind a load balancer', () => {
  it('stores through the primary the Sentinels name; /v1/status shows the Sentinel URL', async () => {
    const stored = await create(true);
    expect(stored.status).toBe(200);
    await expectStored(stored);
    const status = (await call(bed.replicas[1]!.origin, 'GET', '/status')).body as unknown as {
      responses_store: Record<string, unknown>;
    };
    expect(status.responses_store).toMatchObject({ backend: 'redis', healthy: true, url: bed.storeUrl });
  });

  it('a forced failover: 200 or 503 with Retry-After during the gap, never 500; nothing acknowledged is lost', async () => {
    const before = await create(true);
    expect(before.status).toBe(200);
    const oldPrimary = await bed.primary();
    let isDone = false;
    const failover = bed.failover().finally(() => (isDone = true));
    const answers: Answer[] = [];
    while (!isDone) {
      answers.push(await create(true));
      await sleep(50);
    }
    const newPrimary = await failover;
    expect(newPrimary.port).not.toBe(oldPrimary.port);
    // The Sentinels have promoted the replica; each Maya replica finds it on its next reconnect
    // (ioredis asks the Sentinels again), so a request may still meet the gap for a few seconds.
    const settled = Date.now() + 30_000;
    let after = await create(true);
    while (after.status !== 200 && Date.now() < settled) {
      answers.push(after);
      await sleep(250);
      after = await create(true);
    }
    for (const answer of answers) {
      expect([200, 503]).toContain(answer.status);
      if (answer.status === 503)
        expect([answer.retryAfter, answer.body.error?.code]).toEqual(['1', 'store_unavailable']);
    }
    expect(after.status).toBe(200);
    for (const answer of [before, ...answers.filter((each) => each.status === 200), after]) await expectStored(answer);
  }, 90_000);

  it('a stored response the Redis replica did not confirm (WAIT) is 503, not reported stored', async () => {
    const primary = await bed.primary();
    const replica = bed.redis.find((node) => node !== primary)!;
    replica.child.kill('SIGSTOP');
    try {
      const refused = await create(true);
      expect([refused.status, refused.retryAfter, refused.body.error?.code]).toEqual([503, '1', 'store_unavailable']);
      expect((await create(false)).status).toBe(200);
    } finally {
      replica.child.kill('SIGCONT');
    }
    let stored: Answer | undefined;
    for (let attempt = 0; attempt < 50 && stored?.status !== 200; attempt++) {
      stored = await create(true);
      if (stored.status !== 200) await sleep(100);
    }
    expect(stored?.status).toBe(200);
    await expectStored(stored!);
  }, 60_000);
});

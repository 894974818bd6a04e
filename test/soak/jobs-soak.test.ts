/**
 * Soak: 200 background tasks from 4 keys on a loopback server, with readers that attach at
 * creation, connect later, resume with starting_after and disconnect at random, and some
 * cancellations. Bounded in count (200 tasks) and by the test timeout; deterministic choices
 * (seeded PRNG). Afterwards: no readers or active tasks left, every stitched reader sequence is
 * gap-free and equals the task's replay, buffers within their limits, and no record survives
 * JOB_TTL_S on the injected clock.
 */
import { describe, expect, it } from 'vitest';
import { listenJobsApp, says } from '../handlers/background-fixtures.ts';
import { mulberry32 } from '../helpers/mulberry32.ts';

type Event = { type: string; sequence_number: number } & Record<string, unknown>;

const KEYS = ['soak-1', 'soak-2', 'soak-3', 'soak-4'];
const TASKS_PER_KEY = 50;
const SETTINGS = {
  JOB_WORKERS: 4,
  JOB_ENTRIES: 96,
  JOB_OWNER_ENTRIES: 6,
  JOB_TTL_S: 600,
  STREAM_READERS: 24,
  STREAM_OWNER_READERS: 5,
  EVENT_COUNT: 4096,
  EVENT_BYTES: 2_097_152,
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface SseRead {
  status: number;
  events: Event[];
  /** The stream ended with [DONE] (not cut by us). */
  isFinished: boolean;
}

/** Reads an SSE response; stops (disconnects) after `maxEvents` when given. */
async function readSse(url: string, init: RequestInit, maxEvents = Infinity): Promise<SseRead> {
  const controller = new AbortController();
  const res = await fetch(url, { ...init, signal: controller.signal });
  const events: Event[] = [];
  if (!res.headers.get('content-type')?.includes('text/event-stream')) {
    await res.text();
    return { status: res.status, events, isFinished: false };
  }
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  try {
    while (true) {
      const { value, done } = await reader.read();
      if (done) return { status: res.status, events, isFinished: false };
      text += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = text.indexOf('\n\n')) >= 0) {
        const block = text.slice(0, cut);
        text = text.slice(cut + 2);
        const data = block
          .split('\n')
          .filter((line) => line.startsWith('data: '))
          .map((line) => line.slice(6))
          .join('\n');
        if (data === '') continue;
        if (data === '[DONE]') return { status: res.status, events, isFinished: true };
        events.push(JSON.parse(data) as Event);
        if (events.length >= maxEvents) {
          controller.abort();
          return { status: res.status, events, isFinished: false };
        }
      }
    }
  } catch (error) {
    if (controller.signal.aborted) return { status: res.status, events, isFinished: false };
    throw error;
  }
}

interface TaskLog {
  key: string;
  id: string;
  /** Each reader's stitched sequence (resumed after disconnects), when it reached the end. */
  stitched: Event[][];
  wasCancelRequested: boolean;
}

describe('background jobs soak', () => {
  it('200 tasks, 4 keys, random readers/resumes/disconnects/cancels: no leaks, no gaps, replay = live', async () => {
    const clock = { offset: 0 };
    const app = await listenJobsApp({
      server: { apiKeys: KEYS },
      jobSettings: SETTINGS,
      now: () => Date.now() + clock.offset,
      engine: {
        script: (_request, index) => ({ tokens: says(`t${index}:${'abcdefgh'.repeat(1 + (index % 5))}`) }),
        tokenDelayMs: 1,
      },
    });
    const base = `${app.origin}/v1/responses`;
    const logs: TaskLog[] = [];
    const counts = { created: 0, rejected429: 0, readers429: 0, gone410: 0, cancels: 0 };

    /** Reads a task to its end, disconnecting after random counts and resuming with starting_after. */
    async function follow(log: TaskLog, random: () => number, first: Event[] = []): Promise<void> {
      const stitched = [...first];
      for (let attempt = 0; attempt < 200; attempt++) {
        const last = stitched.at(-1)?.sequence_number;
        const query = last === undefined ? 'stream=true' : `stream=true&starting_after=${last}`;
        const cut = random() < 0.5 ? 1 + Math.floor(random() * 8) : Infinity;
        const read = await readSse(
          `${base}/${log.id}?${query}`,
          { headers: { Authorization: `Bearer ${log.key}` } },
          cut,
        );
        if (read.status === 429) {
          counts.readers429++;
          await sleep(2);
          continue;
        }
        if (read.status === 410) {
          counts.gone410++;
          return;
        }
        expect(read.status).toBe(200);
        stitched.push(...read.events);
        if (read.isFinished) {
          log.stitched.push(stitched);
          return;
        }
      }
    }

    async function runKey(key: string, seed: number): Promise<void> {
      const random = mulberry32(seed);
      const pending: Promise<void>[] = [];
      for (let n = 0; n < TASKS_PER_KEY; n++) {
        const isStream = random() < 0.3;
        const headers = { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' };
        const body = JSON.stringify({
          model: 'maya-test',
          input: `task ${n}`,
          background: true,
          store: true,
          stream: isStream,
        });
        let log: TaskLog | undefined;
        while (!log) {
          if (isStream) {
            const read = await readSse(
              base,
              { method: 'POST', headers, body },
              random() < 0.5 ? 2 + Math.floor(random() * 6) : Infinity,
            );
            if (read.status === 429) {
              counts.rejected429++;
              await sleep(3);
              continue;
            }
            expect(read.status).toBe(200);
            log = { key, id: (read.events[0]!.response as { id: string }).id, stitched: [], wasCancelRequested: false };
            const current = log;
            if (read.isFinished) current.stitched.push(read.events);
            else pending.push(follow(current, random, read.events));
          } else {
            const res = await fetch(base, { method: 'POST', headers, body });
            if (res.status === 429) {
              counts.rejected429++;
              await res.text();
              await sleep(3);
              continue;
            }
            expect(res.status).toBe(200);
            const created = (await res.json()) as { id: string; status: string };
            expect(created.status).toBe('queued');
            log = { key, id: created.id, stitched: [], wasCancelRequested: false };
            const readers = Math.floor(random() * 3);
            for (let r = 0; r < readers; r++) pending.push(follow(log, mulberry32(seed * 1000 + n * 10 + r)));
          }
        }
        counts.created++;
        logs.push(log);
        if (random() < 0.12) {
          const target = log;
          target.wasCancelRequested = true;
          counts.cancels++;
          pending.push(
            sleep(Math.floor(random() * 10)).then(async () => {
              const res = await fetch(`${base}/${target.id}/cancel`, {
                method: 'POST',
                headers: { Authorization: `Bearer ${key}` },
              });
              expect(res.status).toBe(200);
              expect(['cancelled', 'completed', 'in_progress']).toContain(
                ((await res.json()) as { status: string }).status,
              );
            }),
          );
        }
      }
      await Promise.all(pending);
    }

    try {
      await Promise.all(KEYS.map((key, index) => runKey(key, 17 + index)));
      expect(counts.created).toBe(200);

      for (let i = 0; i < 2000 && (app.jobs.stats().running as number) + (app.jobs.stats().queued as number) > 0; i++)
        await sleep(5);
      const stats = app.jobs.stats() as Record<string, number>;
      expect(stats).toMatchObject({ running: 0, queued: 0, readers: 0, admissions: 200 });
      expect(app.engine.activeCount).toBe(0);
      expect(stats.records).toBeLessThanOrEqual(SETTINGS.JOB_ENTRIES);
      expect(stats.event_bytes).toBeLessThanOrEqual(stats.records! * SETTINGS.EVENT_BYTES);

      let verified = 0;
      for (const log of logs) {
        const res = await fetch(`${base}/${log.id}`, { headers: { Authorization: `Bearer ${log.key}` } });
        if (res.status === 404) {
          await res.text();
          continue;
        } // evicted early to admit newer tasks
        const snapshot = (await res.json()) as { status: string };
        expect(snapshot.status === 'completed' || (log.wasCancelRequested && snapshot.status === 'cancelled')).toBe(
          true,
        );
        const replay = await readSse(`${base}/${log.id}?stream=true`, {
          headers: { Authorization: `Bearer ${log.key}` },
        });
        if (replay.status !== 200) continue; // record evicted between the two requests
        expect(replay.isFinished).toBe(true);
        expect(replay.events.length).toBeLessThanOrEqual(SETTINGS.EVENT_COUNT);
        expect(replay.events.map((event) => event.sequence_number)).toEqual(replay.events.map((_, index) => index));
        expect(replay.events.filter((event) => event.type === 'response.created')).toHaveLength(1);
        const terminal = replay.events.at(-1)!;
        expect(terminal.type).toBe(snapshot.status === 'completed' ? 'response.completed' : 'error');
        for (const stitched of log.stitched) {
          expect(stitched).toEqual(replay.events);
          verified++;
        }
      }
      expect(verified).toBeGreaterThan(20);
      expect(counts.gone410).toBe(0);

      clock.offset += (SETTINGS.JOB_TTL_S + 1) * 1000;
      expect(app.jobs.stats()).toMatchObject({ records: 0, event_bytes: 0, readers: 0 });
      console.log('soak', JSON.stringify({ ...counts, verified, jobs: app.jobs.stats() }));
    } finally {
      await app.close();
    }
  });
});

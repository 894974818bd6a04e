/**
 * The same smoke under Bun and Node: `maya serve` spawned once with `bun cli/maya.ts` (bun:ffi)
 * and once with `node --import tsx cli/maya.ts` (koffi), both on the demo checkpoint. Through the
 * openai SDK they list the same model and give the same greedy output, JSON and streamed, and
 * both shut down cleanly on SIGTERM.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { checkResponseStream, type WireEvent } from './stream-contract.ts';
import { ROOT, waitForReady } from './start-demo-service.ts';
import { freePort } from '../helpers/loopback.ts';

interface Spawned {
  name: string;
  child: ChildProcess;
  exited: Promise<number | null>;
  client: OpenAI;
  origin: string;
}

const RUNTIMES: Record<string, string[]> = {
  bun: [path.join(ROOT, 'node_modules/.bin/bun'), 'cli/maya.ts'],
  node: [process.execPath, '--import', 'tsx', 'cli/maya.ts'],
};

async function serve(name: string): Promise<Spawned> {
  const port = await freePort();
  const [command, ...args] = RUNTIMES[name]!;
  const child = spawn(command!, [...args, 'serve', '--port', String(port)], {
    cwd: ROOT,
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, MAYA_API_KEYS: '', MAYA_MODEL: '' },
  });
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  await waitForReady(child.stderr!, exited);
  const origin = `http://127.0.0.1:${port}`;
  return {
    name,
    child,
    exited,
    origin,
    client: new OpenAI({ baseURL: `${origin}/v1`, apiKey: 'unused', maxRetries: 0 }),
  };
}

const servers: Spawned[] = [];
beforeAll(async () => {
  servers.push(await serve('node'), await serve('bun'));
}, 240_000);

afterAll(async () => {
  for (const server of servers) if (server.child.exitCode === null) server.child.kill('SIGKILL');
});

const withoutIds = (value: unknown) =>
  JSON.parse(JSON.stringify(value, (key, inner) => (key === 'id' || key === 'call_id' ? undefined : inner))) as unknown;

describe('bun and node serve the same API', () => {
  it('/v1/models lists the same model', async () => {
    const [node, bun] = await Promise.all(
      servers.map(async (s) => (await s.client.models.list()).data.map(({ created: _created, ...rest }) => rest)),
    );
    expect(node).toEqual([{ id: 'maya-demo', object: 'model', owned_by: 'maya' }]);
    expect(bun).toEqual(node);
  });

  it('a greedy responses.create gives the same output and usage', async () => {
    const params = { model: 'maya-demo', input: 'Hello! What can you do?', temperature: 0, max_output_tokens: 40 };
    const [node, bun] = await Promise.all(servers.map((s) => s.client.responses.create(params)));
    expect(node!.output.length).toBeGreaterThan(0);
    expect(withoutIds(bun!.output)).toEqual(withoutIds(node!.output));
    expect(bun!.usage).toEqual(node!.usage);
    expect(bun!.status).toBe(node!.status);
  });

  it('a greedy stream has the same event types and deltas, and is contract-valid under bun', async () => {
    const body = JSON.stringify({
      model: 'maya-demo',
      input: 'Tell me about the sea.',
      temperature: 0,
      max_output_tokens: 32,
      stream: true,
    });
    const [node, bun] = await Promise.all(
      servers.map(async (s) => {
        const res = await fetch(`${s.origin}/v1/responses`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
        });
        return checkResponseStream(await res.text());
      }),
    );
    expect(bun!.problems).toEqual([]);
    expect(node!.problems).toEqual([]);
    const summary = (events: WireEvent[]) =>
      events.map((e) => `${e.type}:${typeof e.delta === 'string' ? e.delta : ''}`);
    expect(summary(bun!.events)).toEqual(summary(node!.events));
  });

  it("the spec's curl example body streams a valid event sequence from both (as `npm start` / `npm run start:bun` serve it)", async () => {
    const body = '{"input":"Hello","store":false,"stream":true,"max_output_tokens":256}';
    for (const server of servers) {
      const res = await fetch(`${server.origin}/v1/responses`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body,
      });
      expect(res.status).toBe(200);
      const { events, problems } = checkResponseStream(await res.text());
      expect(problems, server.name).toEqual([]);
      expect(['response.completed', 'response.incomplete']).toContain(events.at(-1)!.type);
    }
  });

  it('chat.completions.create gives the same message', async () => {
    const params = {
      model: 'maya-demo',
      messages: [{ role: 'user' as const, content: 'What is 7 plus 5?' }],
      temperature: 0,
      max_tokens: 32,
    };
    const [node, bun] = await Promise.all(servers.map((s) => s.client.chat.completions.create(params)));
    expect(bun!.choices[0]!.message).toEqual(node!.choices[0]!.message);
    expect(bun!.choices[0]!.finish_reason).toBe(node!.choices[0]!.finish_reason);
  });

  it('both exit 0 on SIGTERM', async () => {
    for (const server of servers) server.child.kill('SIGTERM');
    expect(await Promise.all(servers.map((s) => s.exited))).toEqual([0, 0]);
  });
});

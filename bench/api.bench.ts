/**
 * `npm run bench:api`: the server's own time per request and per streamed event, engine excluded.
 * Maya's app (createApp, the real demo tokenizer, chat template and GLM dialect) runs over a
 * FakeEngine with zero token delay (each token is one setImmediate hop, as a token from the real
 * engine's pump is), on 127.0.0.1, beside a bare Koa app measured in the same run:
 *  (a) non-streaming POST /v1/responses with a short output: p50/p90 latency; the bare app
 *      answers a Response-sized JSON body;
 *  (b) a streamed response of ~1000 tokens: total time ÷ SSE events; the bare app writes the same
 *      number of frames of the same size, one per setImmediate hop.
 * Medians of RUNS runs; the overhead is Maya minus bare Koa. Exits 1 when a target is missed
 * (≤ 1 ms p50 per request, ≤ 20 µs per event of overhead, both wall-clock). The CPU rows (this
 * process's user + system time, client included on both sides) are the figures that a shared,
 * oversubscribed machine disturbs least: wall-clock p90 there is mostly time spent descheduled.
 */
import { createServer, request as httpRequest, Agent, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { setImmediate as nextMacrotask } from 'node:timers/promises';
import Koa from 'koa';
import { createApp } from '../handlers/app.ts';
import { silentLogger, type AppDeps } from '../handlers/app-deps.ts';
import { DEFAULT_RESPONSES_SETTINGS } from '../config/settings.ts';
import { FakeEngine } from '../test/helpers/fake-engine.ts';
import { loopbackServer } from '../test/helpers/loopback.ts';
import { loadDialect } from '../dialects/select.ts';
import { createRegistry } from '../metrics/http-metrics.ts';
import { Tokenizer } from '../checkpoint/tokenizer.ts';
import { MemoryResponseStore } from '../store/responses/memory-response-store.ts';
import { pipelineTokenizer } from '../runtime/load-model-runtime.ts';
import type { ModelRuntime } from '../runtime/model-runtime.ts';

const RUNS = 7;
const REQUESTS_PER_RUN = 300;
const STREAMS_PER_RUN = 8;
const STREAM_TOKENS = 1000;
const WARMUP_REQUESTS = 200;
const TARGET_REQUEST_MS = 1;
const TARGET_EVENT_US = 20;
const MODEL_DIR = new URL('../models/maya-demo/', import.meta.url).pathname;
const SHORT_ANSWER = '\nHello there! How can I help you today?';

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const percentile = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * p))]!;

/** The demo model's tokenizer and dialect over a FakeEngine that replays `short` or `long` answers. */
async function fakeRuntime(): Promise<{ runtime: ModelRuntime; longTokens: number }> {
  const tokenizer = await Tokenizer.fromDir(MODEL_DIR);
  const dialect = await loadDialect(MODEL_DIR);
  const stop = tokenizer.tokenId('<|user|>')!;
  const short = tokenizer.encode(SHORT_ANSWER);
  const words = Array.from({ length: STREAM_TOKENS }, (_, i) => ` word${i % 97}`).join('');
  const long = tokenizer.encode(`\n${words}`).slice(0, STREAM_TOKENS);
  const engine = new FakeEngine({
    info: { contextLength: 8192 },
    script: (request) => ({ tokens: [...(request.maxTokens > 100 ? long : short), stop] }),
  });
  const runtime: ModelRuntime = {
    id: 'maya-demo',
    dir: MODEL_DIR,
    contextLength: 8192,
    dialectName: dialect.name,
    createdAt: 0,
    engine,
    dialect,
    tokenizer: pipelineTokenizer(tokenizer),
    close: () => engine.close(),
  };
  return { runtime, longTokens: long.length };
}

function mayaDeps(runtime: ModelRuntime): AppDeps {
  const registry = createRegistry();
  const settings = DEFAULT_RESPONSES_SETTINGS;
  return {
    settings,
    registry,
    logger: silentLogger,
    statusProviders: {},
    getRuntime: () => runtime,
    server: loopbackServer(),
    store: new MemoryResponseStore({ settings, registry }),
  };
}

/** A minimal Koa app: the same JSON body for POST /json, `frames` SSE frames for POST /sse. */
function bareKoa(jsonBody: unknown, frames: string[]): Koa {
  const app = new Koa();
  app.use(async (ctx) => {
    await new Promise<void>((resolve) => {
      ctx.req.on('data', () => {});
      ctx.req.on('end', resolve);
    });
    if (ctx.path === '/json') {
      ctx.body = jsonBody;
      return;
    }
    ctx.respond = false;
    ctx.res.writeHead(200, { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache' });
    for (const frame of frames) {
      await nextMacrotask();
      ctx.res.write(frame);
    }
    ctx.res.end('data: [DONE]\n\n');
  });
  return app;
}

async function listen(handler: Parameters<typeof createServer>[1]): Promise<{ server: Server; port: number }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

const agent = new Agent({ keepAlive: true, maxSockets: 1 });

/** POSTs `body`; resolves with the whole response text. */
function post(port: number, path: string, body: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () =>
          res.statusCode === 200
            ? resolve(text)
            : reject(new Error(`${path}: ${res.statusCode} ${text.slice(0, 200)}`)),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** CPU milliseconds (user + system) of this process since `since`. */
const cpuMs = (since: NodeJS.CpuUsage) => {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1000;
};

/** Wall and CPU milliseconds of each request (client and server share this process). */
async function timeRequests(
  port: number,
  path: string,
  body: string,
  count: number,
): Promise<{ wall: number[]; cpu: number[] }> {
  const wall: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    const cpuStarted = process.cpuUsage();
    await post(port, path, body);
    cpu.push(cpuMs(cpuStarted));
    wall.push(performance.now() - started);
  }
  return { wall, cpu };
}

/** Mean wall and CPU milliseconds per whole stream over `count` streams. */
async function timeStreams(
  port: number,
  path: string,
  body: string,
  count: number,
): Promise<{ wall: number; cpu: number }> {
  const started = performance.now();
  const cpuStarted = process.cpuUsage();
  for (let i = 0; i < count; i++) await post(port, path, body);
  return { wall: (performance.now() - started) / count, cpu: cpuMs(cpuStarted) / count };
}

interface Row {
  name: string;
  maya: number;
  bare: number;
  unit: string;
  target: number;
}

function printTable(rows: Row[]): boolean {
  let ok = true;
  console.log('\n| measure | Maya | bare Koa | ratio | overhead (Maya − bare) | target | |');
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | --- |');
  for (const row of rows) {
    const overhead = row.maya - row.bare;
    const pass = row.target < 0 || overhead <= row.target;
    ok &&= pass;
    const target = row.target < 0 ? '' : `≤ ${row.target} ${row.unit}`;
    console.log(
      `| ${row.name} | ${row.maya.toFixed(3)} ${row.unit} | ${row.bare.toFixed(3)} ${row.unit} | ${(row.maya / row.bare).toFixed(2)} | ${overhead.toFixed(3)} ${row.unit} | ${target} | ${row.target < 0 ? '' : pass ? 'ok' : 'MISSED'} |`,
    );
  }
  return ok;
}

async function main(): Promise<void> {
  const { runtime, longTokens } = await fakeRuntime();
  const maya = await listen(createApp(mayaDeps(runtime)).callback());
  const shortBody = JSON.stringify({
    model: 'maya-demo',
    input: 'Hello',
    max_output_tokens: 64,
    reasoning: { effort: 'none' },
  });
  const streamBody = JSON.stringify({
    model: 'maya-demo',
    input: 'Hello',
    max_output_tokens: 2000,
    stream: true,
    reasoning: { effort: 'none' },
  });

  // One real stream gives the bare app its frames (same count, same sizes) and the JSON body.
  const sample = await post(maya.port, '/v1/responses', streamBody);
  const frames = sample
    .split('\n\n')
    .filter((block) => block.startsWith('event: '))
    .map((block) => `${block}\n\n`);
  const jsonBody = JSON.parse(await post(maya.port, '/v1/responses', shortBody)) as unknown;
  const bare = await listen(bareKoa(jsonBody, frames).callback());
  const events = frames.length;

  await timeRequests(maya.port, '/v1/responses', shortBody, WARMUP_REQUESTS);
  await timeRequests(bare.port, '/json', shortBody, WARMUP_REQUESTS);
  const runs: Array<
    Record<
      | 'mayaP50'
      | 'mayaP90'
      | 'bareP50'
      | 'bareP90'
      | 'mayaCpuP50'
      | 'bareCpuP50'
      | 'mayaCpuP90'
      | 'bareCpuP90'
      | 'mayaEventUs'
      | 'bareEventUs'
      | 'mayaEventCpuUs'
      | 'bareEventCpuUs',
      number
    >
  > = [];
  for (let run = 0; run < RUNS; run++) {
    const mayaTimes = await timeRequests(maya.port, '/v1/responses', shortBody, REQUESTS_PER_RUN);
    const bareTimes = await timeRequests(bare.port, '/json', shortBody, REQUESTS_PER_RUN);
    const mayaStream = await timeStreams(maya.port, '/v1/responses', streamBody, STREAMS_PER_RUN);
    const bareStream = await timeStreams(bare.port, '/sse', streamBody, STREAMS_PER_RUN);
    runs.push({
      mayaP50: median(mayaTimes.wall),
      mayaP90: percentile(mayaTimes.wall, 0.9),
      bareP50: median(bareTimes.wall),
      bareP90: percentile(bareTimes.wall, 0.9),
      mayaCpuP50: median(mayaTimes.cpu),
      bareCpuP50: median(bareTimes.cpu),
      mayaCpuP90: percentile(mayaTimes.cpu, 0.9),
      bareCpuP90: percentile(bareTimes.cpu, 0.9),
      mayaEventUs: (mayaStream.wall * 1000) / events,
      bareEventUs: (bareStream.wall * 1000) / events,
      mayaEventCpuUs: (mayaStream.cpu * 1000) / events,
      bareEventCpuUs: (bareStream.cpu * 1000) / events,
    });
    process.stderr.write(
      `run ${run + 1}/${RUNS}: request p50 ${runs.at(-1)!.mayaP50.toFixed(3)} ms (bare ${runs.at(-1)!.bareP50.toFixed(3)}), event ${runs.at(-1)!.mayaEventUs.toFixed(2)} µs (bare ${runs.at(-1)!.bareEventUs.toFixed(2)})\n`,
    );
  }
  const med = (key: keyof (typeof runs)[number]) => median(runs.map((r) => r[key]));
  console.log(
    `bench:api — ${RUNS} runs × ${REQUESTS_PER_RUN} requests and ${STREAMS_PER_RUN} streams of ${longTokens} tokens (${events} SSE events, ${(sample.length / events).toFixed(0)} B/event); medians of the runs`,
  );
  const ok = printTable([
    {
      name: 'non-streaming request, p50',
      maya: med('mayaP50'),
      bare: med('bareP50'),
      unit: 'ms',
      target: TARGET_REQUEST_MS,
    },
    { name: 'non-streaming request, p90', maya: med('mayaP90'), bare: med('bareP90'), unit: 'ms', target: -1 },
    {
      name: 'non-streaming request, CPU p50',
      maya: med('mayaCpuP50'),
      bare: med('bareCpuP50'),
      unit: 'ms',
      target: -1,
    },
    {
      name: 'non-streaming request, CPU p90',
      maya: med('mayaCpuP90'),
      bare: med('bareCpuP90'),
      unit: 'ms',
      target: -1,
    },
    { name: 'per SSE event', maya: med('mayaEventUs'), bare: med('bareEventUs'), unit: 'µs', target: TARGET_EVENT_US },
    { name: 'per SSE event, CPU', maya: med('mayaEventCpuUs'), bare: med('bareEventCpuUs'), unit: 'µs', target: -1 },
  ]);
  agent.destroy();
  maya.server.close();
  bare.server.close();
  await runtime.close();
  process.exitCode = ok ? 0 : 1;
}

await main();

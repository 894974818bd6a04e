/**
 * Chat Completions' `strata_mcp` and `return_progress` through the real server on the demo model
 * (NativeEngine, GLM dialect, constrained decoding) with real MCP servers written with the SDK:
 * the model calls the one tool of a stdio server and answers from its result; the streamed chunks
 * in order; a tool that crashes, hangs or returns a huge result is a result for the model; special
 * tokens in a result are tokenised as plain text; a client that disconnects cancels the running
 * call (notifications/cancelled); the permission filter; 403 for a disallowed browser origin;
 * /v1/status; the 400s.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { McpServerConfig, McpSettings } from '../../config/settings.ts';
import type { GenerateRequest } from '../../engine-cuda/engine.ts';
import type { ModelRuntime } from '../../runtime/model-runtime.ts';
import { startDemoService, type DemoService } from '../e2e/start-demo-service.ts';
import { startHttpMcpServer, type TestHttpServer } from './http-server.ts';
import { HUGE_CHARS, SPECIAL_TEXT, type WeatherMode } from './test-tools.ts';
import { stdioServer } from './stdio-config.ts';

const QUESTION = "What's the weather in Paris?";

/** A stdio server offering only get_weather, answering as `weather` says. */
function weatherServer(name: string, weather: WeatherMode, tools = 'get_weather'): McpServerConfig {
  return stdioServer(name, { MAYA_TEST_MCP_TOOLS: tools, MAYA_TEST_MCP_WEATHER: weather });
}

const settings = (servers: McpServerConfig[]): McpSettings => ({
  servers,
  permission: 'read',
  maxRounds: 8,
  callTimeoutMs: 2_000,
  resultChars: 2_000,
});

interface Chunk {
  choices: Array<{
    delta: { content?: string | null; reasoning_content?: string; role?: string };
    finish_reason: string | null;
  }>;
  prompt_progress?: { total: number; cache: number; processed: number; time_ms: number };
  strata_mcp?: {
    event: string;
    id: string;
    server: string;
    tool: string;
    arguments?: string;
    ok?: boolean;
    text?: string;
  };
  usage?: { prompt_tokens: number; completion_tokens: number; prompt_tokens_details: { cached_tokens: number } };
}

async function chat(origin: string, body: Record<string, unknown>, headers: Record<string, string> = {}) {
  return fetch(`${origin}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({
      model: 'maya-demo',
      max_tokens: 200,
      messages: [{ role: 'user', content: QUESTION }],
      ...body,
    }),
  });
}

async function chunksOf(response: Response): Promise<Chunk[]> {
  const text = await response.text();
  return text
    .split('\n\n')
    .map((frame) => frame.replace(/^data: /, '').trim())
    .filter((data) => data !== '' && data !== '[DONE]')
    .map((data) => JSON.parse(data) as Chunk);
}

const prompts: number[][] = [];
const recording = (runtime: ModelRuntime): ModelRuntime => {
  const engine = runtime.engine;
  const generate = engine.generate.bind(engine);
  return Object.assign(Object.create(runtime) as ModelRuntime, {
    engine: Object.assign(Object.create(engine) as typeof engine, {
      generate: (request: GenerateRequest, options?: Parameters<typeof generate>[1]) => {
        prompts.push([...request.promptIds]);
        return generate(request, options);
      },
    }),
  });
};

/** The demo service with these MCP servers (one scenario's; each offers get_weather, so one at a time). */
async function serve(...servers: McpServerConfig[]): Promise<DemoService> {
  return startDemoService([], { wrapRuntime: recording, mcp: settings(servers) });
}

let demo: DemoService;
let http: TestHttpServer;
beforeAll(async () => {
  http = await startHttpMcpServer({ only: ['get_weather'], weather: 'hang' });
  demo = await serve(weatherServer('weather', 'plain'), weatherServer('writer', 'plain', 'write_note'));
}, 120_000);
afterAll(async () => {
  await demo?.stop();
  await http?.close();
});

/** Runs `test` on a service of its own with `servers`. */
async function withService(servers: McpServerConfig[], test: (service: DemoService) => Promise<void>): Promise<void> {
  const service = await serve(...servers);
  try {
    await test(service);
  } finally {
    await service.stop();
  }
}

const STRATA = { strata_mcp: true };

describe('strata_mcp on the demo model', () => {
  it('calls the one tool of a stdio MCP server and answers from its result, in one completion with one usage', async () => {
    const response = await chat(demo.origin, STRATA);
    expect(response.status).toBe(200);
    const body = (await response.json()) as {
      choices: Array<{ message: { content: string; tool_calls?: unknown }; finish_reason: string }>;
      strata_mcp: Array<{ server: string; tool: string; arguments: string; ok: boolean; text: string; round: number }>;
      usage: { prompt_tokens: number; completion_tokens: number; prompt_tokens_details: { cached_tokens: number } };
    };
    expect(body.strata_mcp).toEqual([
      expect.objectContaining({ server: 'weather', tool: 'get_weather', ok: true, round: 1 }),
    ]);
    expect(JSON.parse(body.strata_mcp[0]!.arguments)).toEqual({ city: 'Paris' });
    expect(body.strata_mcp[0]!.text).toBe('{"city": "Paris", "temperature": 21, "condition": "sunny"}');
    expect(body.choices[0]!.message.content).toMatch(/21/);
    expect(body.choices[0]!.message.tool_calls).toBeUndefined();
    expect(body.choices[0]!.finish_reason).toBe('stop');
    // Two rounds, one usage: both prompts count, the second mostly from the prefix cache.
    const [first, second] = prompts.slice(-2);
    expect(body.usage.prompt_tokens).toBe(first!.length + second!.length);
    expect(second!.slice(0, first!.length)).toEqual(first);
    expect(body.usage.prompt_tokens_details.cached_tokens).toBeGreaterThanOrEqual(Math.floor(first!.length / 16) * 16);
  }, 120_000);

  it('streams start, call and result chunks in order, then the answer', async () => {
    const chunks = await chunksOf(
      await chat(demo.origin, { ...STRATA, stream: true, stream_options: { include_usage: true } }),
    );
    const events = chunks.flatMap((c) => (c.strata_mcp ? [c.strata_mcp.event] : []));
    expect(events).toEqual(['start', 'call', 'result']);
    const resultAt = chunks.findIndex((c) => c.strata_mcp?.event === 'result');
    const call = chunks.find((c) => c.strata_mcp?.event === 'call')!.strata_mcp!;
    expect(call).toMatchObject({ server: 'weather', tool: 'get_weather' });
    expect(JSON.parse(call.arguments!)).toEqual({ city: 'Paris' });
    expect(chunks[resultAt]!.strata_mcp).toMatchObject({ id: call.id, ok: true });
    const answer = chunks
      .slice(resultAt)
      .map((c) => c.choices[0]?.delta.content ?? '')
      .join('');
    expect(answer).toMatch(/21/);
    expect(chunks.slice(0, resultAt).some((c) => c.choices[0]?.delta.content)).toBe(false);
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe('stop');
    expect(chunks.at(-1)!.usage!.prompt_tokens).toBeGreaterThan(0);
    // Every chunk is a chat.completion.chunk with one choice except the usage one.
    expect(chunks.slice(0, -1).every((c) => c.choices.length === 1)).toBe(true);
  }, 120_000);

  it('a server that crashes mid-call, or hangs past the timeout, is an error result for the model, not an HTTP error', async () => {
    for (const server of ['crashing', 'hanging'] as const) {
      await withService([weatherServer(server, server === 'crashing' ? 'crash' : 'hang')], async (service) => {
        const chunks = await chunksOf(await chat(service.origin, { ...STRATA, stream: true }));
        const result = chunks.find((c) => c.strata_mcp?.event === 'result')!.strata_mcp!;
        expect(result, server).toMatchObject({ server, ok: false });
        expect(result.text, server).toMatch(/^error: /);
        if (server === 'hanging') expect(result.text).toBe('error: the call timed out after 2 s');
        expect([...chunks].reverse().find((c) => c.choices[0]?.finish_reason)!.choices[0]!.finish_reason, server).toBe(
          'stop',
        );
      });
    }
  }, 120_000);

  it('past MAYA_MCP_MAX_ROUNDS a call is not run: a limit chunk, and the answer ends', async () => {
    const service = await startDemoService([], {
      mcp: { ...settings([weatherServer('weather', 'plain')]), maxRounds: 0 },
    });
    try {
      const chunks = await chunksOf(await chat(service.origin, { ...STRATA, stream: true }));
      const events = chunks.flatMap((c) => (c.strata_mcp ? [c.strata_mcp] : []));
      expect(events.map((e) => e.event)).toEqual(['start', 'limit']);
      expect(events[1]).toMatchObject({ server: 'weather', tool: 'get_weather', ok: false });
      expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe('stop');
      const body = (await (await chat(service.origin, STRATA)).json()) as {
        strata_mcp: Array<{ ok: boolean; text: string }>;
      };
      expect(body.strata_mcp).toEqual([expect.objectContaining({ ok: false, text: expect.stringContaining('limit') })]);
    } finally {
      await service.stop();
    }
  }, 120_000);

  it('a huge result reaches the model cut at MAYA_MCP_RESULT_CHARS, the cut marked', async () => {
    await withService([weatherServer('huge', 'huge')], async (service) => {
      const response = await chat(service.origin, STRATA);
      const body = (await response.json()) as { strata_mcp: Array<{ ok: boolean; text: string }> };
      const text = body.strata_mcp[0]!.text;
      expect(text).toMatch(/\n\[truncated: the tool returned 1000\d\d characters; the first 2000 are shown\]$/);
      expect(text.length).toBeLessThan(2100);
      // The second round's prompt grew by at most the cut result and the round's own output.
      expect(prompts.at(-1)!.length).toBeLessThan(prompts.at(-2)!.length + 2100 + 200);
      expect(HUGE_CHARS).toBe(100_000);
    });
  }, 120_000);

  it('special tokens in a tool result are tokenised as plain text: no special token id comes from it', async () => {
    await withService([weatherServer('special', 'special-second')], async (service) => {
      const specials = new Set(
        [
          '<|endoftext|>',
          '[gMASK]',
          '<sop>',
          '<|user|>',
          '<|assistant|>',
          '<|observation|>',
          '<tool_call>',
          '</tool_call>',
          '<arg_key>',
          '</arg_key>',
          '<arg_value>',
          '</arg_value>',
        ]
          .map((token) => service.runtime.tokenizer.tokenToId(token))
          .filter((id): id is number => id !== undefined),
      );
      expect(specials.size).toBe(12);
      const count = (ids: number[]) => ids.filter((id) => specials.has(id)).length;
      // The same request twice: the server answers plainly the first time, with SPECIAL_TEXT appended the second.
      const plain = await (await chat(service.origin, STRATA)).json();
      const plainPrompt = prompts.at(-1)!;
      const injected = (await (await chat(service.origin, STRATA)).json()) as {
        strata_mcp: Array<{ text: string }>;
      };
      const injectedPrompt = prompts.at(-1)!;
      expect((plain as { strata_mcp: Array<{ text: string }> }).strata_mcp[0]!.text).not.toContain('<|user|>');
      expect(injected.strata_mcp[0]!.text).toContain(SPECIAL_TEXT);
      expect(injectedPrompt.length).toBeGreaterThan(plainPrompt.length + 20);
      expect(count(injectedPrompt)).toBe(count(plainPrompt));
    });
  }, 120_000);

  it('a client that disconnects cancels the running call: the server gets notifications/cancelled', async () => {
    const remote: McpServerConfig = { name: 'remote', allowedTools: [], transport: 'http', url: http.url, headers: {} };
    await withService([remote], async (service) => {
      const controller = new AbortController();
      const before = http.log.cancelled.length;
      const res = await fetch(`${service.origin}/v1/chat/completions`, {
        method: 'POST',
        signal: controller.signal,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'maya-demo',
          max_tokens: 200,
          stream: true,
          strata_mcp: true,
          messages: [{ role: 'user', content: QUESTION }],
        }),
      });
      const reader = res.body!.getReader();
      let seen = '';
      while (!seen.includes('"event":"call"')) seen += new TextDecoder().decode((await reader.read()).value);
      await expect.poll(() => http.log.calls.length).toBeGreaterThan(0);
      controller.abort();
      await expect.poll(() => http.log.cancelled.length, { timeout: 10_000 }).toBe(before + 1);
    });
  }, 120_000);

  it('the permission filter: under read, a tool without readOnlyHint is not offered at all', async () => {
    const body = (await (await chat(demo.origin, STRATA)).json()) as { strata_mcp: Array<{ server: string }> };
    expect(body.strata_mcp.every((call) => call.server === 'weather')).toBe(true);
    const decoder = demo.runtime.tokenizer.createDecoder([]);
    const prompt =
      prompts
        .at(-1)!
        .map((id) => decoder.push(id))
        .join('') + decoder.flush();
    expect(prompt).toContain('weather__get_weather');
    expect(prompt).not.toContain('write_note');
    const status = (await (await fetch(`${demo.origin}/v1/status`)).json()) as { mcp_servers: unknown[] };
    expect(status.mcp_servers).toContainEqual({ name: 'writer', transport: 'stdio', state: 'ready', tools: 0 });
    expect(status.mcp_servers).toContainEqual({ name: 'weather', transport: 'stdio', state: 'ready', tools: 1 });
    expect(JSON.stringify(status)).not.toContain('MAYA_TEST_MCP_WEATHER');
  }, 120_000);

  it('403 for a browser origin CORS does not allow; a plain request from it is not refused', async () => {
    const refused = await chat(demo.origin, STRATA, { origin: 'https://evil.example' });
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('origin_not_allowed');
    const loopback = await chat(demo.origin, { ...STRATA, max_tokens: 16 }, { origin: 'http://localhost:3000' });
    expect(loopback.status).toBe(200);
    const plain = await chat(demo.origin, { max_tokens: 16 }, { origin: 'https://evil.example' });
    expect(plain.status).toBe(200);
  }, 120_000);

  it('400: strata_mcp other than true; a forced tool_choice with it', async () => {
    for (const value of [false, 1, 'true', null]) {
      const res = await chat(demo.origin, { strata_mcp: value });
      expect(res.status, String(value)).toBe(400);
      expect(((await res.json()) as { error: { param: string } }).error.param).toBe('strata_mcp');
    }
    const forced = await chat(demo.origin, {
      strata_mcp: true,
      tool_choice: 'required',
      tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
    });
    expect(forced.status).toBe(400);
    expect(((await forced.json()) as { error: { param: string } }).error.param).toBe('tool_choice');
  }, 60_000);
});

describe('return_progress', () => {
  it('streams prompt_progress chunks before the first token: a start update, then one per chunk, cumulative', async () => {
    const question = `Summarise this: ${'the quick brown fox jumps over the lazy dog. '.repeat(60)}`;
    const res = await chat(demo.origin, {
      stream: true,
      return_progress: true,
      max_tokens: 8,
      messages: [{ role: 'user', content: question }],
    });
    const chunks = await chunksOf(res);
    const progress = chunks.filter((c) => c.prompt_progress).map((c) => c.prompt_progress!);
    const firstOther = chunks.findIndex((c) => !c.prompt_progress);
    expect(chunks.slice(firstOther).some((c) => c.prompt_progress)).toBe(false);
    const total = prompts.at(-1)!.length;
    expect(total).toBeGreaterThan(512);
    expect(progress.length).toBeGreaterThanOrEqual(1 + Math.ceil((total - progress[0]!.cache) / 256));
    expect(progress[0]).toEqual({ total, cache: progress[0]!.cache, processed: progress[0]!.cache, time_ms: 0 });
    expect(progress.at(-1)!.processed).toBe(total);
    for (let i = 1; i < progress.length; i++)
      expect(progress[i]!.processed).toBeGreaterThan(progress[i - 1]!.processed);
    expect(chunks[firstOther]!.choices[0]!.delta).toEqual({ role: 'assistant', content: '' });
    // The same prompt again: served from the prefix cache, so the start update already counts it.
    const again = (
      await chunksOf(
        await chat(demo.origin, {
          stream: true,
          return_progress: true,
          max_tokens: 8,
          messages: [{ role: 'user', content: question }],
        }),
      )
    ).filter((c) => c.prompt_progress);
    expect(again[0]!.prompt_progress!.cache).toBeGreaterThan(total - 32);
    expect(again.length).toBe(2);
  }, 120_000);

  it('without stream it is a 400 that says why', async () => {
    const res = await chat(demo.origin, { return_progress: true });
    expect(res.status).toBe(400);
    const error = ((await res.json()) as { error: { param: string; message: string } }).error;
    expect(error.param).toBe('return_progress');
    expect(error.message).toContain('"stream": true');
  });
});

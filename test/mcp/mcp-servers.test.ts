/**
 * McpServers (mcp/mcp-servers.ts) against real MCP servers written with the SDK: a stdio child
 * process (test/mcp/stdio-server.ts) and a Streamable HTTP server on loopback
 * (test/mcp/http-server.ts). Listing with the permission filter, calls, the tool's own error, a
 * crash mid-call and the restart on next use, a hanging call's timeout and cancellation, a huge
 * result's truncation marker, and a status that never shows env or headers.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { McpServerConfig, McpSettings } from '../../config/settings.ts';
import { McpServers } from '../../mcp/mcp-servers.ts';
import { startHttpMcpServer, type TestHttpServer } from './http-server.ts';
import { HUGE_CHARS } from './test-tools.ts';
import { stdioServer } from './stdio-config.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'maya-mcp-'));
const logFile = path.join(dir, 'calls.log');

export function stdioConfig(name: string, logPath = logFile): McpServerConfig {
  return stdioServer(name, { MAYA_TEST_MCP_LOG: logPath, SECRET_TOKEN: 'env-secret-value' });
}

const settings = (servers: McpServerConfig[], extra: Partial<McpSettings> = {}): McpSettings => ({
  servers,
  permission: 'full',
  maxRounds: 8,
  callTimeoutMs: 60_000,
  resultChars: 20_000,
  ...extra,
});

const warnings: Array<{ message: string; fields?: Record<string, unknown> }> = [];
const logger = {
  info: () => {},
  warn: (message: string, fields?: Record<string, unknown>) => void warnings.push({ message, fields }),
};

let http: TestHttpServer;
beforeAll(async () => {
  http = await startHttpMcpServer();
});
afterAll(async () => {
  await http.close();
  rmSync(dir, { recursive: true, force: true });
});

const never = new AbortController().signal;

describe('McpServers over stdio and Streamable HTTP', () => {
  it('lists and calls tools on both transports; HTTP gets the configured headers', async () => {
    const servers = new McpServers(
      settings([
        stdioConfig('local'),
        {
          name: 'remote',
          allowedTools: [],
          transport: 'http',
          url: http.url,
          headers: { 'x-test-key': 'header-secret' },
        },
      ]),
      logger,
    );
    try {
      const tools = await servers.tools();
      expect(tools.filter((t) => t.server === 'local').map((t) => t.name)).toContain('get_weather');
      expect(tools.filter((t) => t.server === 'remote').map((t) => t.name)).toContain('get_weather');
      const local = await servers.call('local', 'get_weather', { city: 'Paris' }, never);
      expect(local).toMatchObject({
        ok: true,
        truncated: false,
        text: '{"city": "Paris", "temperature": 21, "condition": "sunny"}',
      });
      const remote = await servers.call('remote', 'get_weather', { city: 'Oslo' }, never);
      expect(remote.text).toContain('"Oslo"');
      expect(http.headers.some((h) => h['x-test-key'] === 'header-secret')).toBe(true);
      const status = servers.status();
      expect(status).toEqual([
        { name: 'local', transport: 'stdio', state: 'ready', tools: tools.filter((t) => t.server === 'local').length },
        { name: 'remote', transport: 'http', state: 'ready', tools: tools.filter((t) => t.server === 'remote').length },
      ]);
      const shown = JSON.stringify(status);
      expect(shown).not.toContain('env-secret-value');
      expect(shown).not.toContain('header-secret');
    } finally {
      await servers.close();
    }
  }, 60_000);

  it('the permission filter: read offers readOnlyHint tools and allowedTools only', async () => {
    const read = new McpServers(settings([{ ...stdioConfig('local') }], { permission: 'read' }), logger);
    const allowed = new McpServers(
      settings([{ ...stdioConfig('local'), allowedTools: ['write_note'] }], { permission: 'read' }),
      logger,
    );
    try {
      const readNames = (await read.tools()).map((t) => t.name);
      expect(readNames).toContain('get_weather');
      expect(readNames).not.toContain('write_note');
      expect((await allowed.tools()).map((t) => t.name)).toContain('write_note');
      expect(read.status()[0]!.tools).toBe(readNames.length);
    } finally {
      await Promise.all([read.close(), allowed.close()]);
    }
  }, 60_000);

  it("a tool's own error is ok:false; a server that crashes mid-call is an error result, then restarts on next use", async () => {
    const servers = new McpServers(settings([stdioConfig('local')]), logger);
    try {
      expect(await servers.call('local', 'fails', {}, never)).toMatchObject({ ok: false, text: 'error: no such city' });
      warnings.length = 0;
      const crashed = await servers.call('local', 'crash', { secret_argument: 'arg-secret-value' }, never);
      expect(crashed.ok).toBe(false);
      expect(crashed.text).toMatch(/^error: /);
      expect(warnings.map((w) => w.message)).toContain('MCP tool call failed');
      expect(JSON.stringify(warnings)).not.toContain('arg-secret-value');
      expect(servers.status()[0]!.state).not.toBe('ready');
      const again = await servers.call('local', 'get_weather', { city: 'Rome' }, never);
      expect(again).toMatchObject({ ok: true });
      expect(servers.status()[0]!.state).toBe('ready');
      const pids = new Set(
        readFileSync(logFile, 'utf8')
          .trim()
          .split('\n')
          .filter((line) => /^(crash|get_weather) /.test(line))
          .slice(-2)
          .map((line) => line.split(' ')[1]),
      );
      expect(pids.size).toBe(2); // the call after the crash ran in a new process
    } finally {
      await servers.close();
    }
  }, 60_000);

  it('a hanging call times out as an error result and the server is told to cancel it', async () => {
    const servers = new McpServers(
      settings([{ name: 'remote', allowedTools: [], transport: 'http', url: http.url, headers: {} }], {
        callTimeoutMs: 500,
      }),
      logger,
    );
    try {
      const before = http.log.cancelled.length;
      const result = await servers.call('remote', 'hang', {}, never);
      expect(result).toMatchObject({ ok: false, text: 'error: the call timed out after 0.5 s' });
      await expect.poll(() => http.log.cancelled.length).toBe(before + 1);
    } finally {
      await servers.close();
    }
  }, 30_000);

  it('aborting the signal cancels the call (notifications/cancelled) and throws', async () => {
    const servers = new McpServers(
      settings([{ name: 'remote', allowedTools: [], transport: 'http', url: http.url, headers: {} }]),
      logger,
    );
    try {
      const before = http.log.cancelled.length;
      const hangs = http.log.calls.filter((c) => c === 'hang').length;
      const controller = new AbortController();
      const call = servers.call('remote', 'hang', {}, controller.signal);
      await expect.poll(() => http.log.calls.filter((c) => c === 'hang').length).toBe(hangs + 1);
      controller.abort(new Error('client went away'));
      await expect(call).rejects.toThrow('client went away');
      await expect.poll(() => http.log.cancelled.length).toBe(before + 1);
    } finally {
      await servers.close();
    }
  }, 30_000);

  it('a server that cannot start is failed, offers no tools, and is not started again on every use', async () => {
    const broken = { ...stdioConfig('broken'), command: path.join(dir, 'no-such-program') } as McpServerConfig;
    const servers = new McpServers(settings([broken, stdioConfig('local')]), logger);
    try {
      const tools = await servers.tools();
      expect(tools.some((tool) => tool.server === 'broken')).toBe(false);
      expect(tools.some((tool) => tool.server === 'local')).toBe(true);
      expect(servers.status()[0]).toEqual({ name: 'broken', transport: 'stdio', state: 'failed', tools: 0 });
      const result = await servers.call('broken', 'get_weather', {}, never);
      expect(result).toMatchObject({
        ok: false,
        text: 'error: the server could not be started; it is tried again shortly',
      });
    } finally {
      await servers.close();
    }
  }, 60_000);

  it('a huge result is cut at MAYA_MCP_RESULT_CHARS with a marker', async () => {
    const servers = new McpServers(settings([stdioConfig('local')], { resultChars: 1000 }), logger);
    try {
      const result = await servers.call('local', 'huge', {}, never);
      expect(result).toMatchObject({ ok: true, chars: HUGE_CHARS, truncated: true });
      expect(
        result.text.startsWith(
          'x'.repeat(1000) + '\n[truncated: the tool returned 100000 characters; the first 1000 are shown]',
        ),
      ).toBe(true);
      expect(result.text.length).toBeLessThan(1100);
    } finally {
      await servers.close();
    }
  }, 60_000);
});

/**
 * The operator's MCP servers (MAYA_MCP_CONFIG), reached with the official SDK's client: a stdio
 * server is a child process Maya starts, a Streamable HTTP server an address. Each is connected in
 * the background at start-up and again on its next use after it stopped (a crash, a lost session),
 * so one bad server never stops the others or the service.
 *
 * - tools(): the tools MAYA_MCP_PERMISSION lets the model see (`read`: readOnlyHint or the
 *   config's allowedTools; `full`: all), listed once per connection.
 * - call(): one tools/call, bounded by MAYA_MCP_CALL_TIMEOUT_S; the caller's signal cancels it (the
 *   SDK sends notifications/cancelled). Every failure (the tool's own error, a crash, a timeout)
 *   is a result with ok:false for the model, never an exception; only a cancelled call throws.
 * - status(): each server's name, transport, state and tool count (never its env or headers).
 * Logs name the server and tool only, never arguments or results.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { McpServerConfig, McpSettings } from '../config/settings.ts';
import { resultText, truncateResult } from './tool-result.ts';

/** The logging this module needs (the service's logger fits). */
export interface McpLogger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
}

export interface McpTool {
  server: string;
  name: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  annotations?: Record<string, unknown>;
}

export interface McpCallResult {
  ok: boolean;
  /** What the model reads: the result's text, cut at MAYA_MCP_RESULT_CHARS with a marker. */
  text: string;
  /** Characters of the whole result before the cut. */
  chars: number;
  truncated: boolean;
  ms: number;
}

export type McpServerState = 'starting' | 'ready' | 'stopped' | 'failed';

export interface McpServerStatus {
  name: string;
  transport: 'stdio' | 'http';
  state: McpServerState;
  tools: number;
}

/** Tool names the model can be offered: a function name's characters, `<server>__<tool>` at most 64. */
const TOOL_NAME = /^[A-Za-z0-9_-]+$/;
const CLIENT_INFO = { name: 'maya', version: '0.1.0' };
/** The most tools/list pages read from one server (a server that pages forever is cut off). */
const MAX_PAGES = 100;
/** A server that failed to start is tried again at most this often (a broken command does not run on every request). */
const RETRY_MS = 10_000;

class Server {
  state: McpServerState = 'stopped';
  tools: McpTool[] = [];
  private client: Client | undefined;
  private connecting: Promise<Client> | undefined;
  private failedAt = -Infinity;

  constructor(
    readonly config: McpServerConfig,
    private readonly logger: McpLogger,
  ) {}

  /** The live client, connecting (again) first when there is none. */
  connection(): Promise<Client> {
    if (this.client && this.state === 'ready') return Promise.resolve(this.client);
    if (this.state === 'failed' && !this.connecting && performance.now() - this.failedAt < RETRY_MS)
      return Promise.reject(new Error('the server could not be started; it is tried again shortly'));
    this.connecting ??= this.connect().finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  private async connect(): Promise<Client> {
    this.state = 'starting';
    const client = new Client(CLIENT_INFO);
    client.onclose = () => {
      if (this.client !== client) return;
      this.client = undefined;
      if (this.state === 'ready') this.logger.warn('MCP server stopped', { server: this.config.name });
      this.state = 'stopped';
    };
    try {
      await client.connect(this.transport());
      const tools: McpTool[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < MAX_PAGES; page++) {
        const listed = await client.listTools(cursor ? { cursor } : undefined);
        for (const tool of listed.tools) tools.push(this.toolOf(tool));
        cursor = listed.nextCursor;
        if (!cursor) break;
      }
      this.tools = tools.filter((tool) => this.isNameUsable(tool.name));
      this.client = client;
      this.state = 'ready';
      this.logger.info('MCP server ready', { server: this.config.name, tools: this.tools.length });
      return client;
    } catch (error) {
      this.state = 'failed';
      this.failedAt = performance.now();
      await client.close().catch(() => undefined);
      this.logger.warn('MCP server could not start', { server: this.config.name, error: errorText(error) });
      throw error;
    }
  }

  private transport() {
    const config = this.config;
    if (config.transport === 'http')
      return new StreamableHTTPClientTransport(new URL(config.url), {
        requestInit: { headers: { ...config.headers } },
      });
    return new StdioClientTransport({
      command: config.command,
      args: [...config.args],
      env: { ...config.env } as Record<string, string>,
      ...(config.cwd ? { cwd: config.cwd } : {}),
      stderr: 'ignore',
    });
  }

  private toolOf(tool: {
    name: string;
    description?: string;
    inputSchema: Record<string, unknown>;
    annotations?: object;
  }): McpTool {
    return {
      server: this.config.name,
      name: tool.name,
      ...(tool.description ? { description: tool.description } : {}),
      inputSchema: tool.inputSchema,
      ...(tool.annotations ? { annotations: { ...tool.annotations } } : {}),
    };
  }

  private isNameUsable(name: string): boolean {
    const isUsable = TOOL_NAME.test(name) && `${this.config.name}__${name}`.length <= 64;
    if (!isUsable) this.logger.warn('MCP tool left out: its name cannot be offered', { server: this.config.name });
    return isUsable;
  }

  async close(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.state = 'stopped';
    await client?.close().catch(() => undefined);
  }
}

function errorText(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).slice(0, 300);
}

export class McpServers {
  private readonly servers = new Map<string, Server>();

  constructor(
    readonly settings: McpSettings,
    private readonly logger: McpLogger,
  ) {
    for (const config of settings.servers) this.servers.set(config.name, new Server(config, logger));
  }

  /** Connects every server in the background (failures are logged; the next use tries again). */
  start(): void {
    for (const server of this.servers.values()) server.connection().catch(() => undefined);
  }

  names(): string[] {
    return [...this.servers.keys()];
  }

  config(name: string): McpServerConfig | undefined {
    return this.servers.get(name)?.config;
  }

  /** Whether MAYA_MCP_PERMISSION lets the model see this tool. */
  isPermitted(tool: McpTool): boolean {
    if (this.settings.permission === 'full') return true;
    if (tool.annotations?.readOnlyHint === true) return true;
    return this.servers.get(tool.server)?.config.allowedTools.includes(tool.name) === true;
  }

  /** The permitted tools of `names` (default all servers); a server that cannot start has none. */
  async tools(names: readonly string[] = this.names()): Promise<McpTool[]> {
    const lists = await Promise.all(
      names.map(async (name) => {
        const server = this.servers.get(name);
        if (!server) return [];
        await server.connection().catch(() => undefined);
        return server.tools.filter((tool) => this.isPermitted(tool));
      }),
    );
    return lists.flat();
  }

  /**
   * Runs `tool` on `server`. Failures come back as ok:false with the reason as text; the call is
   * cancelled (notifications/cancelled) when `signal` aborts, and then this throws the abort reason.
   */
  async call(server: string, tool: string, args: Record<string, unknown>, signal: AbortSignal): Promise<McpCallResult> {
    const started = performance.now();
    const done = (ok: boolean, text: string): McpCallResult => ({
      ok,
      ...truncateResult(text, this.settings.resultChars),
      ms: Math.round(performance.now() - started),
    });
    const entry = this.servers.get(server);
    if (!entry) return done(false, `error: there is no MCP server named '${server}'`);
    try {
      const client = await entry.connection();
      const result = await client.callTool({ name: tool, arguments: args }, undefined, {
        signal,
        timeout: this.settings.callTimeoutMs,
      });
      const text = resultText(result as { content?: unknown; structuredContent?: unknown });
      return result.isError === true ? done(false, `error: ${text || 'the tool reported an error'}`) : done(true, text);
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      const code = (error as { code?: unknown }).code;
      const reason =
        code === -32001 ? `the call timed out after ${this.settings.callTimeoutMs / 1000} s` : errorText(error);
      this.logger.warn('MCP tool call failed', { server, tool, state: entry.state });
      return done(false, `error: ${reason}`);
    }
  }

  status(): McpServerStatus[] {
    return [...this.servers.values()].map((server) => ({
      name: server.config.name,
      transport: server.config.transport,
      state: server.state,
      tools: server.tools.filter((tool) => this.isPermitted(tool)).length,
    }));
  }

  async close(): Promise<void> {
    await Promise.all([...this.servers.values()].map((server) => server.close()));
  }
}

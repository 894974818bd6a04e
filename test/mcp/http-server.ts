/**
 * A Streamable HTTP MCP server for the tests on 127.0.0.1 (a free port), in this process, with
 * the test tools of test-tools.ts: stateful sessions (one McpServer per session), so a
 * notifications/cancelled reaches the server running the call, which records it in `log`.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { testServer, type TestServerOptions, type ToolLog } from './test-tools.ts';

export interface TestHttpServer {
  url: string;
  log: ToolLog;
  /** Request headers seen, in order (the tests check the configured ones are sent). */
  headers: IncomingMessage['headers'][];
  close(): Promise<void>;
}

export async function startHttpMcpServer(options: TestServerOptions = {}): Promise<TestHttpServer> {
  const log: ToolLog = { calls: [], cancelled: [] };
  const headers: IncomingMessage['headers'][] = [];
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const http: Server = createServer(async (req, res) => {
    headers.push(req.headers);
    const id = req.headers['mcp-session-id'];
    let transport = typeof id === 'string' ? sessions.get(id) : undefined;
    if (!transport) {
      const created = new StreamableHTTPServerTransport({
        sessionIdGenerator: randomUUID,
        onsessioninitialized: (sessionId) => void sessions.set(sessionId, created),
      });
      transport = created;
      await testServer(log, { onCrash: () => undefined, ...options }).connect(created);
    }
    await transport.handleRequest(req, res);
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    log,
    headers,
    close: async () => {
      await Promise.all([...sessions.values()].map((transport) => transport.close()));
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

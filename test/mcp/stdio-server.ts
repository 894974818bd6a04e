/**
 * A stdio MCP server for the tests (the test tools of test-tools.ts), started by Maya as a child
 * process: `node --import tsx test/mcp/stdio-server.ts`. With MAYA_TEST_MCP_LOG=FILE it appends
 * each call's tool name to FILE (the test reads which calls reached the process); with
 * MAYA_TEST_MCP_TOOLS=a,b it offers only those tools; MAYA_TEST_MCP_WEATHER picks how get_weather
 * answers (test-tools.ts WeatherMode).
 */
import { appendFileSync } from 'node:fs';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { testServer, type ToolLog, type WeatherMode } from './test-tools.ts';

const file = process.env.MAYA_TEST_MCP_LOG;
/** Each call's tool name and this process's id, appended to the log file as it happens. */
const calls = {
  push(name: string): number {
    if (file) appendFileSync(file, `${name} ${process.pid}\n`);
    return 0;
  },
} as unknown as string[];
const log: ToolLog = { calls, cancelled: [] };
const only = process.env.MAYA_TEST_MCP_TOOLS?.split(',');
const weather = (process.env.MAYA_TEST_MCP_WEATHER ?? 'plain') as WeatherMode;
await testServer(log, { ...(only ? { only } : {}), weather }).connect(new StdioServerTransport());

/** The settings entry of a test stdio MCP server: stdio-server.ts run under tsx, from the repository root. */
import path from 'node:path';
import type { McpServerConfig } from '../../config/settings.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** stdio-server.ts as the server `name`, with `env` (MAYA_TEST_MCP_* and the like). */
export function stdioServer(name: string, env: Record<string, string>): McpServerConfig {
  return {
    name,
    allowedTools: [],
    transport: 'stdio',
    command: process.execPath,
    args: ['--import', 'tsx', path.join(ROOT, 'test/mcp/stdio-server.ts')],
    env,
    cwd: ROOT,
  };
}

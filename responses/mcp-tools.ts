/**
 * The operator's MCP servers (mcp/mcp-servers.ts) as hosted tools of the tool loop (tool-loop.ts):
 * each permitted tool is offered as the function `<server>__<tool>` with its input schema, and a
 * call runs on its server with the arguments the model wrote. Used by Chat Completions'
 * `strata_mcp` and the Responses `mcp` tool alike.
 */
import type { McpServers, McpTool } from '../mcp/mcp-servers.ts';
import type { HostedRoute, HostedTools } from './tool-loop.ts';

export interface McpToolChoice {
  /** Servers whose tools are offered; default all. */
  servers?: readonly string[];
  /** A further filter (the Responses tool's allowed_tools). */
  keep?: (tool: McpTool) => boolean;
  /** Names the request declares itself: an MCP tool of the same name is left out (the request's own wins). */
  taken?: ReadonlySet<string>;
  /** Calls that must wait for the client's approval. */
  needsApproval?: (route: HostedRoute) => boolean;
}

export const offeredName = (server: string, tool: string): string => `${server}__${tool}`;

/** The hosted tools of `mcp` (the permitted tools of the chosen servers), and the tools offered, by server. */
export async function mcpHostedTools(
  mcp: McpServers,
  choice: McpToolChoice = {},
): Promise<{ hosted: HostedTools; offered: McpTool[] }> {
  const offered = (await mcp.tools(choice.servers)).filter(
    (tool) => (choice.keep?.(tool) ?? true) && !choice.taken?.has(offeredName(tool.server, tool.name)),
  );
  const routes = new Map(
    offered.map((tool) => [offeredName(tool.server, tool.name), { server: tool.server, tool: tool.name }]),
  );
  const hosted: HostedTools = {
    tools: offered.map((tool) => ({
      type: 'function' as const,
      name: offeredName(tool.server, tool.name),
      ...(tool.description ? { description: tool.description } : {}),
      parameters: tool.inputSchema,
    })),
    route: (name) => routes.get(name),
    maxRounds: mcp.settings.maxRounds,
    ...(choice.needsApproval ? { needsApproval: choice.needsApproval } : {}),
    call: async (route, args, signal) => {
      let parsed: unknown;
      try {
        parsed = args.trim() === '' ? {} : JSON.parse(args);
      } catch {
        parsed = undefined;
      }
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
        return { ok: false, text: 'error: the arguments are not a JSON object' };
      const result = await mcp.call(route.server, route.tool, parsed as Record<string, unknown>, signal);
      return { ok: result.ok, text: result.text };
    },
  };
  return { hosted, offered };
}

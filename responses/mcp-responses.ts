/**
 * OpenAI's hosted `mcp` tool on /v1/responses (MAYA_GLM_RESPONSES_MCP=on), over the operator's MCP
 * servers: `server_label` names a server of MAYA_MCP_CONFIG, and a `server_url` must equal that
 * server's configured URL (400 otherwise), so no request makes the server connect anywhere new.
 *
 * - Before the first round: an `mcp_list_tools` item for each server the conversation has not
 *   listed yet, and the calls of approved `mcp_approval_request`s (the request's
 *   `mcp_approval_response` items) run, as `mcp_call` items with their `approval_request_id`.
 * - The model reads mcp items as calls and results (modelHistory): an mcp_call as the call of
 *   `<server>__<tool>` and its output; a declined approval request as a call answered "not
 *   approved"; tool lists and pending requests not at all.
 * - `require_approval` ("always" by default, as OpenAI's) and `allowed_tools` (names, or
 *   `{tool_names, read_only}`) apply within what MAYA_MCP_PERMISSION permits.
 */
import { badRequest } from '../contract/errors.ts';
import type { UnnumberedEvent } from '../contract/stream-events.ts';
import type {
  McpApprovalRequestItem,
  McpCallItem,
  McpListToolsItem,
  McpTool as McpToolParam,
} from '../contract/types.ts';
import type { McpServers, McpTool } from '../mcp/mcp-servers.ts';
import { newId } from './ids.ts';
import type { HistoryItem } from './input-history.ts';
import { mcpHostedTools, offeredName } from './mcp-tools.ts';
import type { HostedRoute, HostedTools, Prelude } from './tool-loop.ts';

type Filter = { tool_names?: string[]; read_only?: boolean };

/** What the request's mcp tools add to its run. */
export interface McpRun {
  hosted: HostedTools;
  prelude: Prelude;
  /** The conversation as the model reads it (mcp items rendered as calls and results). */
  history: HistoryItem[];
}

const isMcpTool = (tool: { type: string }): tool is McpToolParam => tool.type === 'mcp';

function matches(filter: Filter | undefined, tool: McpTool): boolean {
  if (!filter) return false;
  if (filter.tool_names && !filter.tool_names.includes(tool.name)) return false;
  if (filter.read_only !== undefined && (tool.annotations?.readOnlyHint === true) !== filter.read_only) return false;
  return true;
}

/** The checked mcp tools of a request by server label: 400 for what it cannot be given. */
function checkTools(mcp: McpServers, tools: ReadonlyArray<{ type: string }>): Map<string, McpToolParam> {
  const byLabel = new Map<string, McpToolParam>();
  tools.forEach((tool, index) => {
    if (!isMcpTool(tool)) return;
    const param = `tools[${index}]`;
    const config = mcp.config(tool.server_label);
    if (!config)
      throw badRequest(
        `${param}.server_label`,
        `No MCP server '${tool.server_label}' is configured on this server; server_label names a server of MAYA_MCP_CONFIG (${mcp.names().join(', ')}).`,
      );
    if (byLabel.has(tool.server_label))
      throw badRequest(`${param}.server_label`, `MCP server '${tool.server_label}' is named twice in tools.`);
    if (tool.server_url !== undefined && (config.transport !== 'http' || !sameUrl(config.url, tool.server_url)))
      throw badRequest(
        `${param}.server_url`,
        `server_url must be the URL configured for '${tool.server_label}' (or left out): this server connects only to the MCP servers its operator configured.`,
      );
    for (const field of ['connector_id', 'tunnel_id', 'authorization'] as const)
      if (tool[field] !== undefined)
        throw badRequest(
          `${param}.${field}`,
          `${field} is not supported: MCP servers and their credentials are configured by the operator.`,
          'unsupported_parameter',
        );
    if (tool.headers && Object.keys(tool.headers).length > 0)
      throw badRequest(
        `${param}.headers`,
        'headers are not supported: MCP servers and their credentials are configured by the operator.',
        'unsupported_parameter',
      );
    byLabel.set(tool.server_label, tool);
  });
  return byLabel;
}

function sameUrl(configured: string, given: string): boolean {
  try {
    return new URL(configured).href === new URL(given).href;
  } catch {
    return false;
  }
}

function isAllowed(param: McpToolParam, tool: McpTool): boolean {
  const allowed = param.allowed_tools;
  if (allowed === undefined || allowed === null) return true;
  return Array.isArray(allowed) ? allowed.includes(tool.name) : matches(allowed, tool);
}

function needsApproval(param: McpToolParam, tool: McpTool | undefined): boolean {
  const rule = param.require_approval;
  if (rule === 'never') return false;
  if (rule === undefined || rule === null || rule === 'always' || !tool) return true;
  if (matches(rule.never, tool)) return false;
  if (rule.always) return matches(rule.always, tool);
  return !rule.never;
}

/**
 * The request's mcp tools resolved (undefined when it has none and its conversation holds no mcp
 * items): hosted tools, the prelude's items and events, the model's view of the conversation.
 * `newItems` are this request's input items (where approval responses count); approved calls run
 * here, before the response starts, with `signal`.
 */
export async function prepareMcpRun(
  mcp: McpServers | undefined,
  tools: ReadonlyArray<{ type: string; name?: string }>,
  history: HistoryItem[],
  newItems: HistoryItem[],
  signal: AbortSignal,
): Promise<McpRun | undefined> {
  const hasItems = history.some((item) => item.type.startsWith('mcp_'));
  if (!tools.some(isMcpTool) && !hasItems) return undefined;
  if (!mcp) throw badRequest('tools', 'This server has no MCP servers configured (MAYA_MCP_CONFIG).');
  const params = checkTools(mcp, tools);
  const taken = new Set(tools.flatMap((tool) => (tool.type === 'function' && tool.name ? [tool.name] : [])));
  const { hosted, offered } = await mcpHostedTools(mcp, {
    servers: [...params.keys()],
    keep: (tool) => isAllowed(params.get(tool.server)!, tool),
    taken,
    needsApproval: (route: HostedRoute) =>
      needsApproval(
        params.get(route.server)!,
        offered.find((t) => t.server === route.server && t.name === route.tool),
      ),
  });
  const prelude: Prelude = { items: [], events: [] };
  for (const label of params.keys())
    if (!history.some((item) => item.type === 'mcp_list_tools' && item.server_label === label))
      listTools(
        prelude,
        label,
        offered.filter((tool) => tool.server === label),
      );
  const ran = await runApproved(history, newItems, hosted, prelude, signal);
  return { hosted, prelude, history: modelHistory([...history, ...ran]) };
}

function listTools(prelude: Prelude, label: string, tools: McpTool[]): void {
  const item: McpListToolsItem = {
    type: 'mcp_list_tools',
    id: newId('mcpl'),
    server_label: label,
    tools: tools.map((tool) => ({
      name: tool.name,
      description: tool.description ?? null,
      input_schema: tool.inputSchema,
      annotations: tool.annotations ?? null,
    })),
  };
  const index = prelude.items.length;
  prelude.items.push(item);
  prelude.events.push(
    { type: 'response.output_item.added', output_index: index, item: { ...item, tools: [] } },
    { type: 'response.mcp_list_tools.in_progress', item_id: item.id, output_index: index },
    { type: 'response.mcp_list_tools.completed', item_id: item.id, output_index: index },
    { type: 'response.output_item.done', output_index: index, item: structuredClone(item) },
  );
}

/** Runs the calls this request approves (once each); returns their mcp_call items for the model's history. */
async function runApproved(
  history: HistoryItem[],
  newItems: HistoryItem[],
  hosted: HostedTools,
  prelude: Prelude,
  signal: AbortSignal,
): Promise<HistoryItem[]> {
  const ran: HistoryItem[] = [];
  for (const response of newItems) {
    if (response.type !== 'mcp_approval_response') continue;
    const index = newItems.indexOf(response);
    const request = history.find(
      (item) => item.type === 'mcp_approval_request' && item.id === response.approval_request_id,
    ) as (HistoryItem & McpApprovalRequestItem) | undefined;
    if (!request)
      throw badRequest(
        `input[${index}].approval_request_id`,
        `No mcp_approval_request '${String(response.approval_request_id)}' is in the conversation.`,
      );
    const done = history.some((item) => item.type === 'mcp_call' && item.approval_request_id === request.id);
    if (response.approve !== true || done) continue;
    const item: McpCallItem = {
      type: 'mcp_call',
      id: newId('mcp'),
      server_label: request.server_label,
      name: request.name,
      arguments: request.arguments,
      approval_request_id: request.id,
      status: 'in_progress',
    };
    const route = { server: request.server_label, tool: request.name };
    const result = await hosted.call(route, request.arguments, signal);
    item.status = result.ok ? 'completed' : 'failed';
    if (result.ok) item.output = result.text;
    else item.error = result.text;
    const at = prelude.items.length;
    prelude.items.push(item);
    const events: UnnumberedEvent[] = [
      {
        type: 'response.output_item.added',
        output_index: at,
        item: { ...item, status: 'in_progress', output: null, error: null },
      },
      { type: 'response.mcp_call.in_progress', item_id: item.id, output_index: at },
      {
        type: result.ok ? 'response.mcp_call.completed' : 'response.mcp_call.failed',
        item_id: item.id,
        output_index: at,
      },
      { type: 'response.output_item.done', output_index: at, item: { ...item } },
    ];
    prelude.events.push(...events);
    ran.push(item as HistoryItem);
  }
  return ran;
}

/** The conversation as the model reads it: mcp items as function calls and results (see the module comment). */
export function modelHistory(items: HistoryItem[]): HistoryItem[] {
  const answered = new Set(
    items.flatMap((item) =>
      item.type === 'mcp_call' && item.approval_request_id ? [String(item.approval_request_id)] : [],
    ),
  );
  const declined = new Map(
    items.flatMap((item) =>
      item.type === 'mcp_approval_response' && item.approve !== true ? [[String(item.approval_request_id), item]] : [],
    ),
  );
  return items.flatMap((item): HistoryItem[] => {
    const call = (text: string): HistoryItem[] => [
      {
        type: 'function_call',
        id: `${item.id}_call`,
        call_id: item.id,
        name: offeredName(String(item.server_label), String(item.name)),
        arguments: String(item.arguments ?? ''),
        status: 'completed',
      },
      { type: 'function_call_output', id: `${item.id}_output`, call_id: item.id, output: text, status: 'completed' },
    ];
    if (item.type === 'mcp_call') {
      const text =
        typeof item.output === 'string' ? item.output : typeof item.error === 'string' ? item.error : undefined;
      return text === undefined ? [] : call(text);
    }
    if (item.type === 'mcp_approval_request') {
      const no = declined.get(item.id);
      if (answered.has(item.id) || !no) return [];
      return call(
        `error: the user did not approve this call${typeof no.reason === 'string' && no.reason ? ` (${no.reason})` : ''}`,
      );
    }
    if (item.type === 'mcp_list_tools' || item.type === 'mcp_approval_response') return [];
    return [item];
  });
}

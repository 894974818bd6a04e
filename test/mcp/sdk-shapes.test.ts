/**
 * The contract's mcp items and events are the openai SDK's (openai-node 6.x, the shapes OpenAI's
 * hosted mcp tool has): each of Maya's types is assignable to the SDK's, checked by the compiler
 * (npm run typecheck) and named here one by one.
 */
import type OpenAI from 'openai';
import { describe, expectTypeOf, it } from 'vitest';
import type {
  McpApprovalRequestItem,
  McpApprovalResponseItem,
  McpCallItem,
  McpListToolsItem,
  McpTool,
  StreamEventOf,
} from '../../contract/types.ts';

type R = OpenAI.Responses.ResponseStreamEvent;

describe("Maya's mcp shapes are the openai SDK's", () => {
  it('output items', () => {
    expectTypeOf<McpCallItem>().toExtend<OpenAI.Responses.ResponseOutputItem.McpCall>();
    expectTypeOf<McpListToolsItem>().toExtend<OpenAI.Responses.ResponseOutputItem.McpListTools>();
    expectTypeOf<McpApprovalRequestItem>().toExtend<OpenAI.Responses.ResponseOutputItem.McpApprovalRequest>();
  });

  it('input items and the tool', () => {
    expectTypeOf<McpApprovalResponseItem>().toExtend<OpenAI.Responses.ResponseInputItem.McpApprovalResponse>();
    expectTypeOf<OpenAI.Responses.ResponseInputItem.McpApprovalResponse>().toExtend<McpApprovalResponseItem>();
    expectTypeOf<Omit<OpenAI.Responses.Tool.Mcp, 'connector_id'>>().toExtend<Omit<McpTool, 'connector_id'>>();
  });

  it('stream events', () => {
    expectTypeOf<
      StreamEventOf<'response.mcp_list_tools.in_progress'>
    >().toExtend<OpenAI.Responses.ResponseMcpListToolsInProgressEvent>();
    expectTypeOf<
      StreamEventOf<'response.mcp_list_tools.completed'>
    >().toExtend<OpenAI.Responses.ResponseMcpListToolsCompletedEvent>();
    expectTypeOf<
      StreamEventOf<'response.mcp_list_tools.failed'>
    >().toExtend<OpenAI.Responses.ResponseMcpListToolsFailedEvent>();
    expectTypeOf<
      StreamEventOf<'response.mcp_call.in_progress'>
    >().toExtend<OpenAI.Responses.ResponseMcpCallInProgressEvent>();
    expectTypeOf<
      StreamEventOf<'response.mcp_call.completed'>
    >().toExtend<OpenAI.Responses.ResponseMcpCallCompletedEvent>();
    expectTypeOf<StreamEventOf<'response.mcp_call.failed'>>().toExtend<OpenAI.Responses.ResponseMcpCallFailedEvent>();
    expectTypeOf<
      StreamEventOf<'response.mcp_call_arguments.delta'>
    >().toExtend<OpenAI.Responses.ResponseMcpCallArgumentsDeltaEvent>();
    expectTypeOf<
      StreamEventOf<'response.mcp_call_arguments.done'>
    >().toExtend<OpenAI.Responses.ResponseMcpCallArgumentsDoneEvent>();
    expectTypeOf<StreamEventOf<'response.mcp_call.completed'>>().toExtend<R>();
  });
});

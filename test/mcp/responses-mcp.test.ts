/**
 * OpenAI's hosted `mcp` tool on /v1/responses (MAYA_GLM_RESPONSES_MCP=on) through the real server
 * on the demo model, driven by the official openai SDK, whose types are the contract: the stream's
 * mcp_list_tools / mcp_call events and items in order and in the SDK's shapes, require_approval
 * "always" stopping with an mcp_approval_request that the next request approves (stored with
 * previous_response_id, or replayed), the server_url and server_label refusals, and the setting
 * off.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDemoService, type DemoService } from '../e2e/start-demo-service.ts';
import { startHttpMcpServer, type TestHttpServer } from './http-server.ts';
import { stdioServer } from './stdio-config.ts';

type Item = OpenAI.Responses.ResponseOutputItem;
type Event = OpenAI.Responses.ResponseStreamEvent;
type McpCall = OpenAI.Responses.ResponseOutputItem.McpCall;
type McpListTools = OpenAI.Responses.ResponseOutputItem.McpListTools;
type McpApprovalRequest = OpenAI.Responses.ResponseOutputItem.McpApprovalRequest;

const QUESTION = "What's the weather in Paris?";

let demo: DemoService;
let off: DemoService;
let http: TestHttpServer;
let calls: () => number;

beforeAll(async () => {
  http = await startHttpMcpServer({ only: ['get_weather'] });
  calls = () => http.log.calls.length;
  const stdio = stdioServer('local', { MAYA_TEST_MCP_TOOLS: 'get_weather' });
  const mcp = {
    servers: [{ name: 'weather', allowedTools: [], transport: 'http' as const, url: http.url, headers: {} }, stdio],
    permission: 'read' as const,
    maxRounds: 8,
    callTimeoutMs: 10_000,
    resultChars: 20_000,
  };
  demo = await startDemoService([], { mcp, optIns: { itemReferences: false, encryptedReasoning: false, mcp: true } });
  off = await startDemoService([], { mcp });
}, 120_000);
afterAll(async () => {
  await demo?.stop();
  await off?.stop();
  await http?.close();
});

const weather = (extra: Partial<OpenAI.Responses.Tool.Mcp> = {}): OpenAI.Responses.Tool.Mcp => ({
  type: 'mcp',
  server_label: 'weather',
  ...extra,
});

describe('the mcp tool on /v1/responses', () => {
  it('streams the list, the call and the answer in the SDK shapes and in order (require_approval never)', async () => {
    const before = calls();
    const stream = await demo.client.responses.create({
      model: 'maya-demo',
      input: QUESTION,
      max_output_tokens: 300,
      stream: true,
      tools: [weather({ require_approval: 'never', server_url: http.url })],
    });
    const events: Event[] = [];
    for await (const event of stream) events.push(event);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    const types = events.map((e) => e.type).filter((t) => !t.endsWith('.delta') || t.startsWith('response.mcp'));
    const compact = types.filter((t, i) => t !== types[i - 1]);
    expect(compact.slice(0, 6)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.mcp_list_tools.in_progress',
      'response.mcp_list_tools.completed',
      'response.output_item.done',
    ]);
    const callAt = compact.indexOf('response.mcp_call_arguments.delta');
    expect(compact.slice(callAt, callAt + 5)).toEqual([
      'response.mcp_call_arguments.delta',
      'response.mcp_call_arguments.done',
      'response.mcp_call.in_progress',
      'response.mcp_call.completed',
      'response.output_item.done',
    ]);
    expect(compact.at(-1)).toBe('response.completed');
    const listed = events.find(
      (e): e is OpenAI.Responses.ResponseOutputItemDoneEvent =>
        e.type === 'response.output_item.done' && e.item.type === 'mcp_list_tools',
    )!.item as McpListTools;
    expect(listed.server_label).toBe('weather');
    expect(listed.tools.map((t) => t.name)).toEqual(['get_weather']);
    expect(listed.tools[0]!.input_schema).toMatchObject({ type: 'object', properties: { city: { type: 'string' } } });
    const argsDone = events.find(
      (e): e is OpenAI.Responses.ResponseMcpCallArgumentsDoneEvent => e.type === 'response.mcp_call_arguments.done',
    )!;
    expect(JSON.parse(argsDone.arguments)).toEqual({ city: 'Paris' });
    const completed = events.find((e) => e.type === 'response.completed') as OpenAI.Responses.ResponseCompletedEvent;
    const output: Item[] = completed.response.output;
    expect(output.map((item) => item.type)).toEqual(expect.arrayContaining(['mcp_list_tools', 'mcp_call', 'message']));
    const call = output.find((item): item is McpCall => item.type === 'mcp_call')!;
    expect(call).toMatchObject({ server_label: 'weather', name: 'get_weather', status: 'completed' });
    expect(call.id).toBe(argsDone.item_id);
    expect(call.output).toBe('{"city": "Paris", "temperature": 21, "condition": "sunny"}');
    const text = output.flatMap((item) =>
      item.type === 'message' ? item.content.map((part) => (part.type === 'output_text' ? part.text : '')) : [],
    );
    expect(text.join('')).toMatch(/21/);
    expect(completed.response.tools).toEqual([expect.objectContaining({ type: 'mcp', server_label: 'weather' })]);
    expect(calls()).toBe(before + 1);
  }, 120_000);

  it('require_approval "always" (the default) stops with an approval request; the next request approves it (stored)', async () => {
    const before = calls();
    const first = await demo.client.responses.create({
      model: 'maya-demo',
      input: QUESTION,
      max_output_tokens: 300,
      store: true,
      tools: [weather()],
    });
    expect(first.status).toBe('completed');
    const request = first.output.find((item): item is McpApprovalRequest => item.type === 'mcp_approval_request')!;
    expect(request).toMatchObject({ server_label: 'weather', name: 'get_weather' });
    expect(JSON.parse(request.arguments)).toEqual({ city: 'Paris' });
    expect(first.output.some((item) => item.type === 'mcp_call')).toBe(false);
    expect(calls()).toBe(before);
    const second = await demo.client.responses.create({
      model: 'maya-demo',
      previous_response_id: first.id,
      input: [{ type: 'mcp_approval_response', approval_request_id: request.id, approve: true }],
      max_output_tokens: 300,
      store: true,
      tools: [weather()],
    });
    expect(second.status).toBe('completed');
    expect(calls()).toBe(before + 1);
    expect(second.output[0]).toMatchObject({
      type: 'mcp_call',
      approval_request_id: request.id,
      status: 'completed',
      output: '{"city": "Paris", "temperature": 21, "condition": "sunny"}',
    });
    expect(second.output.some((item) => item.type === 'mcp_list_tools')).toBe(false); // listed earlier in the conversation
    expect(second.output_text).toMatch(/21/);
  }, 120_000);

  it('the approval replayed instead of stored (store:false), and a declined call is not run', async () => {
    const first = await demo.client.responses.create({
      model: 'maya-demo',
      input: QUESTION,
      max_output_tokens: 300,
      tools: [{ type: 'mcp', server_label: 'local', require_approval: 'always' }],
    });
    const request = first.output.find((item): item is McpApprovalRequest => item.type === 'mcp_approval_request')!;
    expect(request.server_label).toBe('local');
    const history = [
      { role: 'user' as const, content: QUESTION },
      ...(first.output as OpenAI.Responses.ResponseInputItem[]),
    ];
    const declined = await demo.client.responses.create({
      model: 'maya-demo',
      input: [...history, { type: 'mcp_approval_response', approval_request_id: request.id, approve: false }],
      max_output_tokens: 300,
      tools: [{ type: 'mcp', server_label: 'local' }],
    });
    expect(declined.status).toBe('completed');
    expect(declined.output.some((item) => item.type === 'mcp_call')).toBe(false);
    const approved = await demo.client.responses.create({
      model: 'maya-demo',
      input: [...history, { type: 'mcp_approval_response', approval_request_id: request.id, approve: true }],
      max_output_tokens: 300,
      tools: [{ type: 'mcp', server_label: 'local', require_approval: 'never' }],
    });
    expect(approved.output[0]).toMatchObject({ type: 'mcp_call', server_label: 'local', status: 'completed' });
    expect(approved.output_text).toMatch(/21/);
  }, 120_000);

  it('400: a server_url other than the configured one, an unknown label, operator-only fields, an unknown approval', async () => {
    const refuse = async (tool: OpenAI.Responses.Tool.Mcp, param: string) => {
      const error = await demo.client.responses.create({ model: 'maya-demo', input: QUESTION, tools: [tool] }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error, param).toBeInstanceOf(OpenAI.BadRequestError);
      expect((error as InstanceType<typeof OpenAI.BadRequestError>).param).toBe(param);
    };
    const before = http.headers.length;
    await refuse(weather({ server_url: 'http://127.0.0.1:1/mcp' }), 'tools[0].server_url');
    await refuse({ type: 'mcp', server_label: 'local', server_url: http.url }, 'tools[0].server_url');
    await refuse(
      { type: 'mcp', server_label: 'elsewhere', server_url: 'https://mcp.example/mcp' },
      'tools[0].server_label',
    );
    await refuse(weather({ headers: { authorization: 'Bearer x' } }), 'tools[0].headers');
    await refuse(weather({ authorization: 'token' }), 'tools[0].authorization');
    expect(http.headers.length).toBe(before);
    const error = await demo.client.responses
      .create({
        model: 'maya-demo',
        input: [
          { role: 'user', content: QUESTION },
          { type: 'mcp_approval_response', approval_request_id: 'mcpr_unknown', approve: true },
        ],
        tools: [weather()],
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('input[1].approval_request_id');
  }, 60_000);

  it('off (the default): the mcp tool is refused with the setting named', async () => {
    const error = (await off.client.responses.create({ model: 'maya-demo', input: QUESTION, tools: [weather()] }).then(
      () => undefined,
      (e: unknown) => e,
    )) as InstanceType<typeof OpenAI.BadRequestError>;
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error.param).toBe('tools[0].type');
    expect(error.message).toContain('MAYA_GLM_RESPONSES_MCP=on');
  }, 30_000);
});

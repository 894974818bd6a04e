/**
 * Short names for the generated contract types. Production code reaches generated/ only through
 * contract/ (this file for the types, operations.ts for the runtime tables; the layer rules of
 * .dependency-cruiser.cjs refuse any other import of generated/), so a schema rename breaks the
 * build here, in one place. Wire objects keep their snake_case fields: no camelCase mapping layer.
 */
import type { components, operations as operationTypes } from '../generated/openapi.d.ts';

type Schemas = components['schemas'];

export type { OperationId, Operation } from '../generated/operations.ts';

// ---- errors
export type ErrorObject = Schemas['Error'];
export type ErrorResponse = Schemas['ErrorResponse'];

// ---- Responses: request
export type CreateResponseBody = Schemas['CreateResponse'];
export type InputParam = Schemas['InputParam'];
export type InputItem = Schemas['InputItem'];
export type EasyInputMessage = Schemas['EasyInputMessage'];
export type FunctionCallOutputItemParam = Schemas['FunctionCallOutputItemParam'];
export type ItemReferenceParam = Schemas['ItemReferenceParam'];
export type InputContent = Schemas['InputContent'];
export type InputTextContent = Schemas['InputTextContent'];
export type InputImageContent = Schemas['InputImageContent'];
export type OutputTextContentParam = Schemas['OutputTextContentParam'];
export type FunctionCallOutputContent = Schemas['FunctionCallOutputContent'];
export type ImageDetail = Schemas['ImageDetail'];
export type FunctionTool = Schemas['FunctionTool'];
export type ToolChoiceParam = Schemas['ToolChoiceParam'];
export type ToolChoiceOptions = Schemas['ToolChoiceOptions'];
export type ToolChoiceFunction = Schemas['ToolChoiceFunction'];
export type ResponseTextParam = Schemas['ResponseTextParam'];
export type TextResponseFormatConfiguration = Schemas['TextResponseFormatConfiguration'];
export type TextResponseFormatJsonSchema = Schemas['TextResponseFormatJsonSchema'];
export type ResponseFormatText = Schemas['ResponseFormatText'];
export type ResponseFormatJsonObject = Schemas['ResponseFormatJsonObject'];
export type Reasoning = Schemas['Reasoning'];
export type ReasoningEffort = Schemas['ReasoningEffort'];
export type Metadata = Schemas['Metadata'];
export type ClientMetadata = Schemas['ClientMetadata'];
export type IncludeEnum = Schemas['IncludeEnum'];

// ---- Responses: response object and items
export type Response = Schemas['Response'];
export type ResponseStatus = Schemas['ResponseStatus'];
export type ResponseUsage = Schemas['ResponseUsage'];
export type ResponseError = Schemas['ResponseError'];
export type ResponseErrorCode = Schemas['ResponseErrorCode'];
export type ResponseTextConfig = Schemas['ResponseTextConfig'];
export type OutputItem = Schemas['OutputItem'];
export type OutputMessage = Schemas['OutputMessage'];
export type OutputMessageContent = Schemas['OutputMessageContent'];
export type OutputContent = Schemas['OutputContent'];
export type OutputTextContent = Schemas['OutputTextContent'];
export type RefusalContent = Schemas['RefusalContent'];
export type FunctionToolCall = Schemas['FunctionToolCall'];
export type ReasoningItem = Schemas['ReasoningItem'];
export type ReasoningTextContent = Schemas['ReasoningTextContent'];
export type ItemStatus = Schemas['ItemStatus'];
export type LogProb = Schemas['LogProb'];
export type ResponseLogProb = Schemas['ResponseLogProb'];
export type ItemResource = Schemas['ItemResource'];
export type InputMessageResource = Schemas['InputMessageResource'];
export type FunctionToolCallResource = Schemas['FunctionToolCallResource'];
export type FunctionToolCallOutputResource = Schemas['FunctionToolCallOutputResource'];
export type ResponseItemList = Schemas['ResponseItemList'];
export type DeleteResponseResult = Schemas['DeleteResponseResult'];

// ---- Responses: what this server produces. Narrower than the contract (ids always present, one
// content shape per item); the pins below make any drift from the contract a compile error.
export type ServerItemStatus = 'in_progress' | 'completed' | 'incomplete';
export type OutputTextPart = { type: 'output_text'; text: string; annotations: never[]; logprobs: never[] };
export type ReasoningTextPart = { type: 'reasoning_text'; text: string };
export type MessageItem = {
  type: 'message';
  id: string;
  status: ServerItemStatus;
  role: 'assistant';
  content: OutputTextPart[];
};
export type ReasoningOutputItem = {
  type: 'reasoning';
  id: string;
  status: ServerItemStatus;
  summary: never[];
  content: ReasoningTextPart[];
  /** With include reasoning.encrypted_content (opt-in): the content, sealed; set when the item is done. */
  encrypted_content?: string;
};
export type FunctionCallItem = {
  type: 'function_call';
  id: string;
  call_id: string;
  name: string;
  arguments: string;
  status: ServerItemStatus;
};
/** The hosted MCP tool's items (MAYA_GLM_RESPONSES_MCP), in OpenAI's shapes. */
export type McpListToolsItem = Schemas['McpListToolsItem'];
export type McpCallItem = Schemas['McpCallItem'] & { status: NonNullable<Schemas['McpCallItem']['status']> };
export type McpApprovalRequestItem = Schemas['McpApprovalRequestItem'];
export type McpApprovalResponseItem = Schemas['McpApprovalResponseItem'];
export type McpTool = Schemas['McpTool'];
export type ServerOutputItem =
  MessageItem | ReasoningOutputItem | FunctionCallItem | McpListToolsItem | McpCallItem | McpApprovalRequestItem;
/** The Response object as Maya builds, stores and publishes it. */
export type ResponseObject = Omit<Response, 'output'> & { output: ServerOutputItem[] };
/** Why a response failed, before `typedFailure` (contract/errors.ts) adds its `type`. */
export type ResponseFailure = Omit<NonNullable<Response['error']>, 'type'>;

type Pin<Narrow extends Wide, Wide> = [Narrow, Wide];
export type ContractPins = [
  Pin<ServerOutputItem, OutputItem>,
  Pin<ResponseObject, Response>,
  Pin<ServerItemStatus, ItemStatus>,
];

// ---- Responses: stream events
export type ResponseStreamEvent = Schemas['ResponseStreamEvent'];
export type ResponseStreamEventType = ResponseStreamEvent['type'];
/** The event schema for one `type`, e.g. StreamEventOf<'response.output_text.delta'>. */
export type StreamEventOf<T extends ResponseStreamEventType> = Extract<ResponseStreamEvent, { type: T }>;
export type ResponseCreatedEvent = Schemas['ResponseCreatedEvent'];
export type ResponseQueuedEvent = Schemas['ResponseQueuedEvent'];
export type ResponseInProgressEvent = Schemas['ResponseInProgressEvent'];
export type ResponseCompletedEvent = Schemas['ResponseCompletedEvent'];
export type ResponseIncompleteEvent = Schemas['ResponseIncompleteEvent'];
export type ResponseFailedEvent = Schemas['ResponseFailedEvent'];
export type ResponseOutputItemAddedEvent = Schemas['ResponseOutputItemAddedEvent'];
export type ResponseOutputItemDoneEvent = Schemas['ResponseOutputItemDoneEvent'];
export type ResponseContentPartAddedEvent = Schemas['ResponseContentPartAddedEvent'];
export type ResponseContentPartDoneEvent = Schemas['ResponseContentPartDoneEvent'];
export type ResponseTextDeltaEvent = Schemas['ResponseTextDeltaEvent'];
export type ResponseTextDoneEvent = Schemas['ResponseTextDoneEvent'];
export type ResponseReasoningTextDeltaEvent = Schemas['ResponseReasoningTextDeltaEvent'];
export type ResponseReasoningTextDoneEvent = Schemas['ResponseReasoningTextDoneEvent'];
export type ResponseFunctionCallArgumentsDeltaEvent = Schemas['ResponseFunctionCallArgumentsDeltaEvent'];
export type ResponseFunctionCallArgumentsDoneEvent = Schemas['ResponseFunctionCallArgumentsDoneEvent'];
export type ResponseErrorEvent = Schemas['ResponseErrorEvent'];

// ---- Responses: query parameters
export type GetResponseQuery = NonNullable<operationTypes['getResponse']['parameters']['query']>;
export type ListInputItemsQuery = NonNullable<operationTypes['listInputItems']['parameters']['query']>;

// ---- Chat Completions
export type CreateChatCompletionBody = Schemas['CreateChatCompletionRequest'];
export type ChatCompletionRequestMessage = Schemas['ChatCompletionRequestMessage'];
export type ChatCompletionRequestSystemMessage = Schemas['ChatCompletionRequestSystemMessage'];
export type ChatCompletionRequestDeveloperMessage = Schemas['ChatCompletionRequestDeveloperMessage'];
export type ChatCompletionRequestUserMessage = Schemas['ChatCompletionRequestUserMessage'];
export type ChatCompletionRequestAssistantMessage = Schemas['ChatCompletionRequestAssistantMessage'];
export type ChatCompletionRequestToolMessage = Schemas['ChatCompletionRequestToolMessage'];
export type ChatCompletionRequestUserMessageContentPart = Schemas['ChatCompletionRequestUserMessageContentPart'];
export type ChatCompletionTool = Schemas['ChatCompletionTool'];
export type ChatCompletionToolChoiceOption = Schemas['ChatCompletionToolChoiceOption'];
export type ChatCompletionMessageToolCall = Schemas['ChatCompletionMessageToolCall'];
export type ChatCompletionResponseFormat = Schemas['ChatCompletionResponseFormat'];
export type ChatCompletionResponseMessage = Schemas['ChatCompletionResponseMessage'];
export type ChatCompletionFinishReason = Schemas['ChatCompletionFinishReason'];
export type ChatCompletion = Schemas['CreateChatCompletionResponse'];
export type ChatCompletionChunk = Schemas['CreateChatCompletionStreamResponse'];
export type ChatCompletionStreamResponseDelta = Schemas['ChatCompletionStreamResponseDelta'];
export type ChatCompletionMessageToolCallChunk = Schemas['ChatCompletionMessageToolCallChunk'];
export type StrataMcpEvent = Schemas['StrataMcpEvent'];
export type StrataMcpCall = Schemas['StrataMcpCall'];
export type PromptProgress = Schemas['PromptProgress'];
export type CompletionUsage = Schemas['CompletionUsage'];

// ---- Anthropic Messages API (POST /v1/messages, /v1/messages/count_tokens)
export type AnthropicCreateMessageRequest = Schemas['AnthropicCreateMessageRequest'];
export type AnthropicCountTokensRequest = Schemas['AnthropicCountTokensRequest'];
export type AnthropicMessageParam = Schemas['AnthropicMessageParam'];
export type AnthropicUserContentBlock = Schemas['AnthropicUserContentBlock'];
export type AnthropicAssistantContentBlock = Schemas['AnthropicAssistantContentBlock'];
export type AnthropicToolResultContentBlock = Schemas['AnthropicToolResultContentBlock'];
export type AnthropicTextBlockParam = Schemas['AnthropicTextBlockParam'];
export type AnthropicImageBlockParam = Schemas['AnthropicImageBlockParam'];
export type AnthropicTool = Schemas['AnthropicTool'];
export type AnthropicToolChoice = Schemas['AnthropicToolChoice'];
export type AnthropicThinkingConfig = Schemas['AnthropicThinkingConfig'];
export type AnthropicMessage = Schemas['AnthropicMessage'];
export type AnthropicContentBlock = Schemas['AnthropicContentBlock'];
export type AnthropicUsage = Schemas['AnthropicUsage'];
export type AnthropicStopReason = Schemas['AnthropicStopReason'];
export type AnthropicMessageStreamEvent = Schemas['AnthropicMessageStreamEvent'];
export type AnthropicMessageTokensCount = Schemas['AnthropicMessageTokensCount'];
export type AnthropicErrorResponse = Schemas['AnthropicErrorResponse'];

// ---- models and service
export type Model = Schemas['Model'];
export type ListModelsResponse = Schemas['ListModelsResponse'];
export type MayaStatus = Schemas['MayaStatus'];
export type EngineStatus = Schemas['EngineStatus'];
export type ResponsesCacheStatus = Schemas['ResponsesCacheStatus'];
export type ResponsesJobsStatus = Schemas['ResponsesJobsStatus'];
export type StatusDialect = Schemas['StatusDialect'];
export type HealthStatus = Schemas['HealthStatus'];

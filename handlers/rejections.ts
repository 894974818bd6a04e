/**
 * The rejection table: every request that is well-formed but asks for something Maya does not
 * support (the spec's Limits section) answers 400 with the row's code, message and the offending
 * field as `param`, before any generation. It runs on the parsed JSON before schema validation,
 * so each row reads the body defensively (any field may have any JSON type) and an unsupported
 * feature is named as such even where the contract's schema would also refuse it (files, audio,
 * hosted tools). A test per row lives in test/handlers/rejections.test.ts.
 */
import type { ResponsesOptIns } from '../config/settings.ts';
import { badRequest, type ApiError } from '../contract/errors.ts';

type Json = Record<string, unknown>;

export interface Rejection {
  /** Stable row name (tests and docs). */
  readonly id: string;
  /** OpenAI-style error code. */
  readonly code:
    | 'unsupported_parameter'
    | 'unsupported_value'
    | 'string_above_max_length'
    | 'object_above_max_size'
    | 'invalid_type';
  readonly message: string;
  /** The offending field's path when the row applies to `body`, else undefined. */
  find(body: Json): string | undefined;
  /** The opt-in setting that lifts this row (config/settings.ts ResponsesOptIns); none = always applies. */
  readonly liftedBy?: keyof Pick<ResponsesOptIns, 'itemReferences' | 'encryptedReasoning' | 'mcp'>;
}

const isObject = (value: unknown): value is Json =>
  value !== null && typeof value === 'object' && !Array.isArray(value);
const isSet = (value: unknown): boolean => value !== undefined && value !== null;

/** [path, item] for each object in an array-valued `input`. */
function inputItems(body: Json): [string, Json][] {
  return Array.isArray(body.input)
    ? body.input.flatMap((item, i): [string, Json][] => (isObject(item) ? [[`input[${i}]`, item]] : []))
    : [];
}

/** [path, part] for each content part of each input item (message content, function output). */
function contentParts(body: Json): [string, Json][] {
  const parts: [string, Json][] = [];
  for (const [path, item] of inputItems(body)) {
    for (const field of ['content', 'output'] as const) {
      const list = item[field];
      if (Array.isArray(list))
        list.forEach((part, j) => isObject(part) && parts.push([`${path}.${field}[${j}]`, part]));
    }
  }
  return parts;
}

function firstPart(body: Json, types: readonly string[]): string | undefined {
  const hit = contentParts(body).find(([, part]) => typeof part.type === 'string' && types.includes(part.type));
  return hit === undefined ? undefined : `${hit[0]}.type`;
}

const reasoningOf = (body: Json): Json => (isObject(body.reasoning) ? body.reasoning : {});

/**
 * client_metadata is diagnostic and never stored, so it is bounded by its total size only: real
 * clients send single values far over OpenAI's 512-character metadata cap (Codex CLI's
 * `x-codex-turn-metadata` is ~800 characters on every request).
 */
export const CLIENT_METADATA_MAX_BYTES = 16384;

function clientMetadataBytes(value: Json): number {
  let bytes = 0;
  for (const [key, inner] of Object.entries(value))
    bytes += Buffer.byteLength(key) + (typeof inner === 'string' ? Buffer.byteLength(inner) : 0);
  return bytes;
}

const SERVICE_TIER_REJECTION: Rejection = {
  id: 'service_tier',
  code: 'unsupported_value',
  message: "Only service_tier 'auto' or 'default' is supported.",
  find: (body) =>
    isSet(body.service_tier) && body.service_tier !== 'auto' && body.service_tier !== 'default'
      ? 'service_tier'
      : undefined,
};

export const CREATE_RESPONSE_REJECTIONS: readonly Rejection[] = [
  {
    id: 'conversation',
    code: 'unsupported_parameter',
    message:
      'The Conversations API is not supported. Send the history in `input`, or use `store:true` with `previous_response_id`.',
    find: (body) => (isSet(body.conversation) ? 'conversation' : undefined),
  },
  {
    id: 'item_reference',
    code: 'unsupported_value',
    message:
      'Item references are off on this server. Send the item itself in `input` (clients that replay by reference, such as the Vercel AI SDK, send items in full with `store: false`), use `previous_response_id`, or have the server started with MAYA_GLM_RESPONSES_ITEM_REFERENCES=on.',
    liftedBy: 'itemReferences',
    find: (body) => {
      const hit = inputItems(body).find(
        ([, item]) =>
          item.type === 'item_reference' ||
          (!isSet(item.type) &&
            typeof item.id === 'string' &&
            Object.keys(item).every((k) => k === 'id' || k === 'type')),
      );
      return hit === undefined ? undefined : hit[1].type === 'item_reference' ? `${hit[0]}.type` : hit[0];
      // (an item with only `id` is OpenAI's short form of an item reference)
    },
  },
  {
    id: 'mcp_tool',
    code: 'unsupported_value',
    message:
      "MCP tools are off on this server; declare function tools, or have the server started with MAYA_GLM_RESPONSES_MCP=on and MCP servers in MAYA_MCP_CONFIG (Chat Completions' strata_mcp uses them too).",
    liftedBy: 'mcp',
    find: (body) => {
      if (!Array.isArray(body.tools)) return undefined;
      const i = body.tools.findIndex((tool) => isObject(tool) && tool.type === 'mcp');
      return i === -1 ? undefined : `tools[${i}].type`;
    },
  },
  {
    id: 'mcp_item',
    code: 'unsupported_value',
    message:
      'MCP items (mcp_list_tools, mcp_call, mcp_approval_request, mcp_approval_response) need MAYA_GLM_RESPONSES_MCP=on on this server.',
    liftedBy: 'mcp',
    find: (body) => {
      const hit = inputItems(body).find(([, item]) => typeof item.type === 'string' && item.type.startsWith('mcp_'));
      return hit === undefined ? undefined : `${hit[0]}.type`;
    },
  },
  {
    id: 'hosted_tool',
    code: 'unsupported_value',
    message:
      "Only tools of type 'function' (and 'mcp' where it is on) are supported; other hosted, custom and namespace tools are not.",
    find: (body) => {
      if (!Array.isArray(body.tools)) return undefined;
      const i = body.tools.findIndex((tool) => isObject(tool) && tool.type !== 'function' && tool.type !== 'mcp');
      return i === -1 ? undefined : `tools[${i}].type`;
    },
  },
  {
    id: 'hosted_tool_choice',
    code: 'unsupported_value',
    message:
      'tool_choice must be \'auto\', \'none\', \'required\' or {"type":"function","name":...}; other tool choices are not supported.',
    find: (body) =>
      isObject(body.tool_choice) && body.tool_choice.type !== 'function' ? 'tool_choice.type' : undefined,
  },
  {
    id: 'encrypted_reasoning',
    code: 'unsupported_parameter',
    message:
      'Encrypted reasoning is off on this server; replay reasoning items with their `content` instead, or have the server started with MAYA_GLM_RESPONSES_ENCRYPTED_REASONING=on.',
    liftedBy: 'encryptedReasoning',
    find: (body) => {
      const hit = inputItems(body).find(([, item]) => item.type === 'reasoning' && isSet(item.encrypted_content));
      return hit === undefined ? undefined : `${hit[0]}.encrypted_content`;
    },
  },
  {
    id: 'reasoning_summary_input',
    code: 'unsupported_value',
    message:
      'Reasoning summaries are not supported; replay reasoning items with an empty `summary` and their `content`.',
    find: (body) => {
      const hit = inputItems(body).find(
        ([, item]) => item.type === 'reasoning' && Array.isArray(item.summary) && item.summary.length > 0,
      );
      return hit === undefined ? undefined : `${hit[0]}.summary`;
    },
  },
  {
    id: 'reasoning_summary',
    code: 'unsupported_parameter',
    message:
      'Reasoning summaries are not supported; Maya returns the model reasoning itself as `reasoning_text`. (With MAYA_GLM_RESPONSES_ENCRYPTED_REASONING=on the setting is accepted and no summary is made.)',
    liftedBy: 'encryptedReasoning',
    find: (body) => (isSet(reasoningOf(body).summary) ? 'reasoning.summary' : undefined),
  },
  {
    id: 'reasoning_generate_summary',
    code: 'unsupported_parameter',
    message:
      'Reasoning summaries (`generate_summary`) are not supported; Maya returns the model reasoning itself as `reasoning_text`. (With MAYA_GLM_RESPONSES_ENCRYPTED_REASONING=on the setting is accepted and no summary is made.)',
    liftedBy: 'encryptedReasoning',
    find: (body) => (isSet(reasoningOf(body).generate_summary) ? 'reasoning.generate_summary' : undefined),
  },
  {
    id: 'input_file',
    code: 'unsupported_value',
    message: 'File inputs are not supported; send text or images (`input_image` with an `image_url`).',
    find: (body) => firstPart(body, ['input_file']),
  },
  {
    id: 'image_file_id',
    code: 'unsupported_parameter',
    message: 'Images by file ID are not supported; send an `image_url` (data: URLs work).',
    find: (body) => {
      const hit = contentParts(body).find(([, part]) => part.type === 'input_image' && isSet(part.file_id));
      return hit === undefined ? undefined : `${hit[0]}.file_id`;
    },
  },
  {
    id: 'audio',
    code: 'unsupported_value',
    message: 'Audio input is not supported.',
    find: (body) => firstPart(body, ['input_audio', 'audio']),
  },
  {
    id: 'image_detail',
    code: 'unsupported_value',
    message: "Only image detail 'auto' is supported.",
    find: (body) => {
      const hit = contentParts(body).find(
        ([, part]) => part.type === 'input_image' && isSet(part.detail) && part.detail !== 'auto',
      );
      return hit === undefined ? undefined : `${hit[0]}.detail`;
    },
  },
  {
    id: 'truncation',
    code: 'unsupported_value',
    message: "Only truncation 'disabled' is supported: Maya never drops input to fit the context.",
    find: (body) => (isSet(body.truncation) && body.truncation !== 'disabled' ? 'truncation' : undefined),
  },
  SERVICE_TIER_REJECTION,
  {
    id: 'include',
    code: 'unsupported_value',
    message: "Only include 'reasoning.encrypted_content' is supported.",
    find: (body) => {
      if (!Array.isArray(body.include)) return undefined;
      const i = body.include.findIndex((value) => value !== 'reasoning.encrypted_content');
      return i === -1 ? undefined : `include[${i}]`;
    },
  },
  {
    id: 'include_encrypted_reasoning',
    code: 'unsupported_value',
    message:
      "include 'reasoning.encrypted_content' needs explicit reasoning.effort 'none': reasoning encryption is off on this server (MAYA_GLM_RESPONSES_ENCRYPTED_REASONING=on turns it on).",
    liftedBy: 'encryptedReasoning',
    find: (body) => {
      if (!Array.isArray(body.include) || reasoningOf(body).effort === 'none') return undefined;
      const i = body.include.indexOf('reasoning.encrypted_content');
      return i === -1 ? undefined : `include[${i}]`;
    },
  },
  {
    id: 'background_without_store',
    code: 'unsupported_value',
    message: 'background:true requires explicit store:true.',
    find: (body) => (body.background === true && body.store !== true ? 'background' : undefined),
  },
  {
    id: 'prompt_cache_key_length',
    code: 'string_above_max_length',
    message: 'prompt_cache_key is longer than 256 characters.',
    find: (body) =>
      typeof body.prompt_cache_key === 'string' && [...body.prompt_cache_key].length > 256
        ? 'prompt_cache_key'
        : undefined,
  },
  {
    id: 'client_metadata_values',
    code: 'invalid_type',
    message: 'client_metadata values must be strings.',
    find: (body) => {
      if (!isObject(body.client_metadata)) return undefined;
      const key = Object.keys(body.client_metadata).find((k) => typeof (body.client_metadata as Json)[k] !== 'string');
      return key === undefined ? undefined : `client_metadata.${key}`;
    },
  },
  {
    id: 'client_metadata_size',
    code: 'object_above_max_size',
    message: `client_metadata is larger than ${CLIENT_METADATA_MAX_BYTES} bytes (UTF-8 keys and values together).`,
    find: (body) =>
      isObject(body.client_metadata) && clientMetadataBytes(body.client_metadata) > CLIENT_METADATA_MAX_BYTES
        ? 'client_metadata'
        : undefined,
  },
  {
    id: 'prompt_template',
    code: 'unsupported_parameter',
    message: 'Reusable prompts (`prompt`) are not supported; send `instructions` and `input` instead.',
    find: (body) => (isSet(body.prompt) ? 'prompt' : undefined),
  },
];

/** [path, part] for each content part of each chat message. */
function chatParts(body: Json): [string, Json][] {
  const parts: [string, Json][] = [];
  if (!Array.isArray(body.messages)) return parts;
  body.messages.forEach((message, i) => {
    const content = isObject(message) ? message.content : undefined;
    if (Array.isArray(content))
      content.forEach((part, j) => isObject(part) && parts.push([`messages[${i}].content[${j}]`, part]));
  });
  return parts;
}

/** A sampling penalty Maya's sampler cannot apply: refused rather than silently ignored. */
function penaltyRejection(field: 'presence_penalty' | 'frequency_penalty'): Rejection {
  return {
    id: `chat_${field}`,
    code: 'unsupported_value',
    message: `${field} is not supported: Maya's sampler applies no penalties, so only 0 (or null) is accepted.`,
    find: (body) => (typeof body[field] === 'number' && body[field] !== 0 ? field : undefined),
  };
}

export const CREATE_CHAT_COMPLETION_REJECTIONS: readonly Rejection[] = [
  penaltyRejection('presence_penalty'),
  penaltyRejection('frequency_penalty'),
  { ...SERVICE_TIER_REJECTION, id: 'chat_service_tier' },
  {
    id: 'chat_image_detail',
    code: 'unsupported_value',
    message: "Only image detail 'auto' is supported.",
    find: (body) => {
      const hit = chatParts(body).find(
        ([, part]) =>
          part.type === 'image_url' &&
          isObject(part.image_url) &&
          isSet(part.image_url.detail) &&
          part.image_url.detail !== 'auto',
      );
      return hit === undefined ? undefined : `${hit[0]}.image_url.detail`;
    },
  },
  {
    id: 'chat_file',
    code: 'unsupported_value',
    message: 'File inputs are not supported; send text or images (`image_url`).',
    find: (body) => {
      const hit = chatParts(body).find(([, part]) => part.type === 'file');
      return hit === undefined ? undefined : `${hit[0]}.type`;
    },
  },
  {
    id: 'chat_audio',
    code: 'unsupported_value',
    message: 'Audio input is not supported.',
    find: (body) => {
      const hit = chatParts(body).find(([, part]) => part.type === 'input_audio');
      return hit === undefined ? undefined : `${hit[0]}.type`;
    },
  },
];

/** [path, block] for each content block of each Anthropic message, tool results' inner blocks included. */
function messageBlocks(body: Json): [string, Json][] {
  const blocks: [string, Json][] = [];
  if (!Array.isArray(body.messages)) return blocks;
  body.messages.forEach((message, i) => {
    const content = isObject(message) ? message.content : undefined;
    if (!Array.isArray(content)) return;
    content.forEach((block, j) => {
      if (!isObject(block)) return;
      blocks.push([`messages[${i}].content[${j}]`, block]);
      if (Array.isArray(block.content))
        block.content.forEach(
          (inner, k) => isObject(inner) && blocks.push([`messages[${i}].content[${j}].content[${k}]`, inner]),
        );
    });
  });
  return blocks;
}

function firstBlock(body: Json, test: (block: Json) => boolean, field = 'type'): string | undefined {
  const hit = messageBlocks(body).find(([, block]) => test(block));
  return hit === undefined ? undefined : `${hit[0]}.${field}`;
}

const blockOfType =
  (...types: string[]) =>
  (block: Json): boolean =>
    typeof block.type === 'string' && types.includes(block.type);

/** Anthropic's server-side tool blocks, which only its servers make or read. */
const SERVER_TOOL_BLOCKS = [
  'server_tool_use',
  'web_search_tool_result',
  'web_fetch_tool_result',
  'code_execution_tool_result',
  'bash_code_execution_tool_result',
  'text_editor_code_execution_tool_result',
  'tool_search_tool_result',
  'mcp_tool_use',
  'mcp_tool_result',
  'container_upload',
];

/**
 * Anthropic Messages API (POST /v1/messages and /v1/messages/count_tokens): the features Maya does
 * not have, refused naming the field. `cache_control` markers are not here: they are accepted and
 * ignored (the prefix cache needs none).
 */
export const MESSAGES_REJECTIONS: readonly Rejection[] = [
  {
    id: 'anthropic_server_tool',
    code: 'unsupported_value',
    message:
      "Server tools (web search, web fetch, code execution, bash, text editor, computer use, memory, tool search, ...) are not supported; declare client tools (`name`, `input_schema`, `type` absent or 'custom') and run them yourself.",
    find: (body) => {
      if (!Array.isArray(body.tools)) return undefined;
      const i = body.tools.findIndex((tool) => isObject(tool) && isSet(tool.type) && tool.type !== 'custom');
      return i === -1 ? undefined : `tools[${i}].type`;
    },
  },
  {
    id: 'anthropic_allowed_callers',
    code: 'unsupported_value',
    message: "Programmatic tool calling is not supported: `allowed_callers` may only list 'direct'.",
    find: (body) => {
      if (!Array.isArray(body.tools)) return undefined;
      const i = body.tools.findIndex(
        (tool) =>
          isObject(tool) && Array.isArray(tool.allowed_callers) && tool.allowed_callers.some((c) => c !== 'direct'),
      );
      return i === -1 ? undefined : `tools[${i}].allowed_callers`;
    },
  },
  {
    id: 'anthropic_mcp_servers',
    code: 'unsupported_parameter',
    message:
      'The MCP connector (`mcp_servers`) is not supported; connect MCP servers in the client and declare their tools.',
    find: (body) => (isSet(body.mcp_servers) ? 'mcp_servers' : undefined),
  },
  {
    id: 'anthropic_container',
    code: 'unsupported_parameter',
    message: 'Containers (code execution, skills) are not supported.',
    find: (body) => (isSet(body.container) ? 'container' : undefined),
  },
  {
    id: 'anthropic_context_management',
    code: 'unsupported_value',
    message: "Only 'clear_thinking_20251015' context edits are supported; tool-result clearing and compaction are not.",
    find: (body) => {
      const edits = isObject(body.context_management) ? body.context_management.edits : undefined;
      if (!Array.isArray(edits)) return undefined;
      const i = edits.findIndex((edit) => isObject(edit) && edit.type !== 'clear_thinking_20251015');
      return i === -1 ? undefined : `context_management.edits[${i}].type`;
    },
  },
  {
    id: 'anthropic_document',
    code: 'unsupported_value',
    message:
      'Document blocks (PDF, plain-text and file documents, and their citations) are not supported; send text blocks.',
    find: (body) => firstBlock(body, blockOfType('document')),
  },
  {
    id: 'anthropic_search_result',
    code: 'unsupported_value',
    message: 'Search result blocks (and their citations) are not supported; send text blocks.',
    find: (body) => firstBlock(body, blockOfType('search_result')),
  },
  {
    id: 'anthropic_server_tool_block',
    code: 'unsupported_value',
    message: "Server tool blocks (server_tool_use and the server tools' results) are not supported.",
    find: (body) => firstBlock(body, blockOfType(...SERVER_TOOL_BLOCKS)),
  },
  {
    id: 'anthropic_redacted_thinking',
    code: 'unsupported_value',
    message:
      "redacted_thinking blocks are not supported: Maya makes none and cannot read another server's; drop them from the history.",
    find: (body) => firstBlock(body, blockOfType('redacted_thinking')),
  },
  {
    id: 'anthropic_file_source',
    code: 'unsupported_value',
    message: "Files are not supported; send images as 'base64' or 'url' sources.",
    find: (body) => firstBlock(body, (block) => isObject(block.source) && block.source.type === 'file', 'source.type'),
  },
  {
    id: 'anthropic_citations',
    code: 'unsupported_value',
    message: 'Citations are not supported; send text blocks without `citations` (or with an empty list).',
    find: (body) =>
      firstBlock(body, (block) => Array.isArray(block.citations) && block.citations.length > 0, 'citations'),
  },
];

/** Rejection rows by operationId; operations without rows have nothing schema-valid to refuse. */
export const REJECTIONS: Readonly<Record<string, readonly Rejection[]>> = {
  createResponse: CREATE_RESPONSE_REJECTIONS,
  createChatCompletion: CREATE_CHAT_COMPLETION_REJECTIONS,
  createMessage: MESSAGES_REJECTIONS,
  countMessageTokens: MESSAGES_REJECTIONS,
};

/** The rows of `operationId` that apply with these opt-ins (a row an opt-in lifts is dropped). */
export function rejectionsFor(operationId: string, optIns?: ResponsesOptIns): readonly Rejection[] {
  return (REJECTIONS[operationId] ?? []).filter((row) => row.liftedBy === undefined || optIns?.[row.liftedBy] !== true);
}

/** The 400 for the first row that applies to `body`, or undefined. */
export function findRejection(rows: readonly Rejection[], body: Json): ApiError | undefined {
  for (const row of rows) {
    const param = row.find(body);
    if (param !== undefined) return badRequest(param, row.message, row.code);
  }
  return undefined;
}

/**
 * Request input → conversation history. Two views of the same items:
 * - `normaliseInput`: wire items with stable ids (the stored/listed `input_items` form);
 * - `toTurns`: model-neutral chat turns for the dialect (reasoning and tool calls folded into
 *   assistant turns, function results as tool turns in their calls' order).
 * Every rule that makes a history unusable is a 400 here, before any generation.
 */
import type { ChatTurn, TurnPart } from '../dialects/dialect.ts';
import type { ImageSource } from './images.ts';
import { badRequest } from '../contract/errors.ts';
import { newId } from './ids.ts';

/** `param` of `field` (a Responses item field, or none for the item) of history item `index`. */
export type ItemParam = (index: number, field?: string) => string;

/** Responses naming: `input[i]`; items before `input` (from previous_response_id) are `input[0]`. */
function inputParam(offset: number): ItemParam {
  return (index, field) => `input[${Math.max(0, index + offset)}]${field === undefined ? '' : `.${field}`}`;
}

/** A stored/listed input item (ItemResource wire form). */
export type HistoryItem = { type: string; id: string } & Record<string, unknown>;

/** A turn as toTurns builds it: with the sources of its image parts (taken off before rendering). */
export type ChatTurnInput = ChatTurn & { images?: ImageSource[] };

export interface TurnOptions {
  /** The model has a vision path: images in user messages and function outputs become image parts. */
  images?: boolean;
}

type Part = { type: string; text?: string } & Record<string, unknown>;
type RawItem = Record<string, unknown> & { type?: string; role?: string };

function textParts(content: unknown, role: string): Part[] {
  if (typeof content === 'string') {
    return [
      role === 'assistant'
        ? { type: 'output_text', text: content, annotations: [], logprobs: [] }
        : { type: 'input_text', text: content },
    ];
  }
  return (content as Part[]).map((part) =>
    part.type === 'output_text' ? { annotations: [], logprobs: [], ...part } : { ...part },
  );
}

/** Gives every input item its wire form and an id (kept when the client sent one). */
export function normaliseInput(input: string | RawItem[]): HistoryItem[] {
  if (typeof input === 'string') {
    return [
      {
        type: 'message',
        id: newId('msg'),
        role: 'user',
        status: 'completed',
        content: [{ type: 'input_text', text: input }],
      },
    ];
  }
  return input.map((raw) => {
    const type = raw.type ?? 'message';
    if (type === 'message') {
      const role = String(raw.role);
      return {
        ...raw,
        type,
        id: typeof raw.id === 'string' ? raw.id : newId('msg'),
        role,
        status: raw.status ?? 'completed',
        content: textParts(raw.content, role),
      };
    }
    if (type === 'function_call')
      return {
        ...raw,
        type,
        id: typeof raw.id === 'string' ? raw.id : newId('fc'),
        status: raw.status ?? 'completed',
      } as HistoryItem;
    if (type === 'function_call_output')
      return {
        ...raw,
        type,
        id: typeof raw.id === 'string' ? raw.id : newId('fco'),
        status: raw.status ?? 'completed',
      } as HistoryItem;
    if (type === 'reasoning')
      return { summary: [], ...raw, type, id: typeof raw.id === 'string' ? raw.id : newId('rs') } as HistoryItem;
    return { ...raw, type, id: typeof raw.id === 'string' ? raw.id : newId('msg') } as HistoryItem;
  });
}

function partsText(parts: unknown, param: string, images: ImageUse = 'no_vision'): string {
  return turnContent(parts, param, images).content;
}

/**
 * Where an input_image may go: `allowed` (user messages and function outputs of a vision model),
 * `not_here` (a vision model, but another role), `no_vision` (a text-only model).
 */
type ImageUse = 'allowed' | 'not_here' | 'no_vision';

/** Text of one content part; throws for parts without text (allowed images are handled by the caller). */
function partText(part: Part, param: string, images: ImageUse): string {
  if (part.type === 'input_text' || part.type === 'output_text' || part.type === 'reasoning_text')
    return part.text ?? '';
  if (part.type === 'refusal') return typeof part.refusal === 'string' ? part.refusal : '';
  throw badRequest(
    param,
    part.type === 'input_image' && images === 'not_here'
      ? 'Images are supported in user messages and function_call_output items only.'
      : `Content of type '${part.type}' needs a vision encoder, and this model has none.`,
    'unsupported_content',
  );
}

/** A turn's text, and with allowed images its text and image parts in order plus each image's source. */
function turnContent(
  content: unknown,
  param: string,
  images: ImageUse,
): { content: string; parts?: TurnPart[]; images?: ImageSource[] } {
  if (typeof content === 'string') return { content };
  const parts: TurnPart[] = [];
  const sources: ImageSource[] = [];
  let text = '';
  (content as Part[]).forEach((part, index) => {
    if (images === 'allowed' && part.type === 'input_image') {
      sources.push({ url: String(part.image_url ?? ''), param: `${param}[${index}].image_url` });
      parts.push({ type: 'image' });
      return;
    }
    const piece = partText(part, `${param}[${index}]`, images);
    text += piece;
    if (piece !== '') parts.push({ type: 'text', text: piece });
  });
  return sources.length > 0 ? { content: text, parts, images: sources } : { content: text };
}

/**
 * Folds history items into chat turns. `offset` is the index of items[0] within the request's
 * `input` (negative for items that came from previous_response_id), used for `param` paths.
 */
export function toTurns(
  items: HistoryItem[],
  offset = 0,
  itemParam: ItemParam = inputParam(offset),
  options: TurnOptions = {},
): ChatTurnInput[] {
  checkCallPairs(items, itemParam);
  const turns: ChatTurnInput[] = [];
  let assistant: ChatTurnInput | undefined;
  const openAssistant = (): ChatTurnInput => {
    if (!assistant) {
      assistant = { role: 'assistant', content: '' };
      turns.push(assistant);
    }
    return assistant;
  };
  items.forEach((item, index) => {
    if (item.type === 'message') {
      const role = item.role as ChatTurnInput['role'];
      const content = turnContent(
        item.content,
        itemParam(index, 'content'),
        options.images !== true ? 'no_vision' : role === 'user' ? 'allowed' : 'not_here',
      );
      if (role === 'assistant') {
        const turn = openAssistant();
        turn.content += content.content;
      } else {
        assistant = undefined;
        turns.push({ role, ...content });
      }
    } else if (item.type === 'reasoning') {
      const text = partsText(
        item.content ?? [],
        itemParam(index, 'content'),
        options.images ? 'not_here' : 'no_vision',
      );
      if (assistant && (assistant.content !== '' || assistant.toolCalls)) assistant = undefined;
      const turn = openAssistant();
      turn.reasoning = (turn.reasoning ?? '') + text;
    } else if (item.type === 'function_call') {
      const turn = openAssistant();
      (turn.toolCalls ??= []).push({
        id: String(item.call_id),
        name: String(item.name),
        arguments: String(item.arguments ?? ''),
      });
    } else if (item.type === 'function_call_output') {
      assistant = undefined;
      turns.push({
        role: 'tool',
        ...turnContent(item.output, itemParam(index, 'output'), options.images === true ? 'allowed' : 'no_vision'),
        toolCallId: String(item.call_id),
      });
    }
  });
  return orderToolResults(turns);
}

/** Every call needs a result after it; every result needs an earlier call with its call_id. */
function checkCallPairs(items: HistoryItem[], itemParam: ItemParam): void {
  const pending = new Map<string, number>();
  const seen = new Set<string>();
  items.forEach((item, index) => {
    if (item.type === 'function_call') {
      pending.set(String(item.call_id), index);
      seen.add(String(item.call_id));
    } else if (item.type === 'function_call_output') {
      const callId = String(item.call_id);
      if (!seen.has(callId))
        throw badRequest(
          itemParam(index, 'call_id'),
          `No function_call with call_id '${callId}' precedes this function_call_output.`,
          'unknown_call_id',
        );
      pending.delete(callId);
    } else if (item.type === 'message' && pending.size > 0 && item.role !== 'assistant') {
      throw missingOutput(pending, itemParam);
    }
  });
  if (pending.size > 0) throw missingOutput(pending, itemParam);
}

function missingOutput(pending: Map<string, number>, itemParam: ItemParam) {
  const [callId, index] = pending.entries().next().value as [string, number];
  return badRequest(
    itemParam(index),
    `function_call '${callId}' has no function_call_output in the input; every call needs its result before generation can continue.`,
    'missing_function_call_output',
  );
}

/** A group of tool results may arrive in any order: render them in their calls' order. */
function orderToolResults(turns: ChatTurnInput[]): ChatTurnInput[] {
  for (let i = 0; i < turns.length; i++) {
    const calls = turns[i]!.toolCalls;
    if (turns[i]!.role !== 'assistant' || !calls) continue;
    let end = i + 1;
    while (end < turns.length && turns[end]!.role === 'tool') end++;
    const order = new Map(calls.map((call, position) => [call.id, position]));
    const group = turns
      .slice(i + 1, end)
      .sort((a, b) => (order.get(a.toolCallId!) ?? 0) - (order.get(b.toolCallId!) ?? 0));
    turns.splice(i + 1, group.length, ...group);
  }
  return turns;
}

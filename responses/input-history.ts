/**
 * Request input → conversation history. Two views of the same items:
 * - `normaliseInput`: wire items with stable ids (the stored/listed `input_items` form);
 * - `toTurns`: model-neutral chat turns for the dialect (reasoning and tool calls folded into
 *   assistant turns, function results as tool turns in their calls' order).
 * Every rule that makes a history unusable is a 400 here, before any generation.
 */
import type { ChatTurn } from '../dialects/dialect.ts';
import { badRequest } from '../contract/errors.ts';
import { newId } from './ids.ts';

/** A stored/listed input item (ItemResource wire form). */
export type HistoryItem = { type: string; id: string } & Record<string, unknown>;

type ChatTurnInput = ChatTurn;

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

function partsText(parts: unknown, param: string): string {
  if (typeof parts === 'string') return parts;
  return (parts as Part[])
    .map((part, index) => {
      if (part.type === 'input_text' || part.type === 'output_text' || part.type === 'reasoning_text')
        return part.text ?? '';
      throw badRequest(
        `${param}[${index}]`,
        `Content of type '${part.type}' needs a vision encoder, and this model has none.`,
        'unsupported_content',
      );
    })
    .join('');
}

/**
 * Folds history items into chat turns. `offset` is the index of items[0] within the request's
 * `input` (negative for items that came from previous_response_id), used for `param` paths.
 */
export function toTurns(items: HistoryItem[], offset = 0): ChatTurnInput[] {
  checkCallPairs(items, offset);
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
    const param = `input[${Math.max(0, index + offset)}]`;
    if (item.type === 'message') {
      const role = item.role as ChatTurnInput['role'];
      const content = partsText(item.content, `${param}.content`);
      if (role === 'assistant') {
        const turn = openAssistant();
        turn.content += content;
      } else {
        assistant = undefined;
        turns.push({ role, content });
      }
    } else if (item.type === 'reasoning') {
      const text = partsText(item.content ?? [], `${param}.content`);
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
        content: partsText(item.output, `${param}.output`),
        toolCallId: String(item.call_id),
      });
    }
  });
  return orderToolResults(turns);
}

/** Every call needs a result after it; every result needs an earlier call with its call_id. */
function checkCallPairs(items: HistoryItem[], offset: number): void {
  const pending = new Map<string, number>();
  const seen = new Set<string>();
  items.forEach((item, index) => {
    const param = `input[${Math.max(0, index + offset)}]`;
    if (item.type === 'function_call') {
      pending.set(String(item.call_id), index);
      seen.add(String(item.call_id));
    } else if (item.type === 'function_call_output') {
      const callId = String(item.call_id);
      if (!seen.has(callId))
        throw badRequest(
          `${param}.call_id`,
          `No function_call with call_id '${callId}' precedes this function_call_output.`,
          'unknown_call_id',
        );
      pending.delete(callId);
    } else if (item.type === 'message' && pending.size > 0 && item.role !== 'assistant') {
      throw missingOutput(pending, offset);
    }
  });
  if (pending.size > 0) throw missingOutput(pending, offset);
}

function missingOutput(pending: Map<string, number>, offset: number) {
  const [callId, index] = pending.entries().next().value as [string, number];
  return badRequest(
    `input[${Math.max(0, index + offset)}]`,
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

/**
 * Wire-form items, responses and conversation chains for the store tests and the store
 * benchmark.
 */
import type { ResponseStore, StoredItem, StoredResponse } from '../../../store/responses/response-store.ts';

export function userMessage(id: string, text: string): StoredItem {
  return { id, type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_text', text }] };
}

export function assistantMessage(id: string, text: string): StoredItem {
  return {
    id,
    type: 'message',
    role: 'assistant',
    status: 'completed',
    content: [{ type: 'output_text', text, annotations: [], logprobs: [] }],
  };
}

export function responseObject(id: string, output: StoredItem[], extra: Record<string, unknown> = {}): StoredResponse {
  return {
    id,
    object: 'response',
    created_at: 1764460800,
    status: 'completed',
    error: null,
    incomplete_details: null,
    instructions: null,
    model: 'tiny-model',
    output,
    parallel_tool_calls: true,
    metadata: {},
    tool_choice: 'auto',
    tools: [],
    temperature: 1,
    top_p: 1,
    usage: {
      input_tokens: 10,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: 5,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 15,
    },
    ...extra,
  };
}

export interface Turn {
  readonly id: string;
  readonly input: StoredItem[];
  readonly output: StoredItem[];
  readonly response: StoredResponse;
}

/** The n-th turn of a conversation: one user message in, one assistant message out. */
export function makeTurn(prefix: string, n: number, text = `turn ${n} of ${prefix}`): Turn {
  const output = [assistantMessage(`msg_${prefix}_out_${n}`, `answer to ${text}`)];
  const id = `resp_${prefix}_${n}`;
  return { id, input: [userMessage(`msg_${prefix}_in_${n}`, text)], output, response: responseObject(id, output) };
}

/** Stores `turn` as a continuation of `previousId` (when given) the way the generation path does. */
export async function storeTurn(store: ResponseStore, scope: string, turn: Turn, previousId?: string): Promise<void> {
  const previous = previousId === undefined ? undefined : await store.history(scope, previousId);
  if (previousId !== undefined && !previous) throw new Error(`no stored response ${previousId}`);
  try {
    await store.put(scope, { response: turn.response, inputItems: turn.input, previous });
  } finally {
    previous?.release();
  }
}

/** Stores a chain of `count` turns; returns them in order. */
export async function storeChain(store: ResponseStore, scope: string, prefix: string, count: number): Promise<Turn[]> {
  const turns: Turn[] = [];
  for (let n = 0; n < count; n++) {
    const turn = makeTurn(prefix, n);
    await storeTurn(store, scope, turn, turns[n - 1]?.id);
    turns.push(turn);
  }
  return turns;
}

/** Serialised UTF-8 bytes of a JSON value. */
export function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value), 'utf8');
}

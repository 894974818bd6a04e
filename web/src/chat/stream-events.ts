/**
 * Folds the Responses stream events into the assistant message being shown: reasoning and text
 * deltas, function calls with their arguments, the final status and usage, and errors exactly
 * as the API reported them (a failed response's `error`, or an `error` event).
 */
import type { StreamEvent } from '../api.ts';
import type { AssistantMessage } from './conversations.ts';

interface Item {
  type?: string;
  call_id?: string;
  name?: string;
  arguments?: string;
}

/** output_index → call id of the function calls seen so far (one per stream). */
export type CallIndex = Map<number, string>;

export function applyEvent(message: AssistantMessage, event: StreamEvent, calls: CallIndex): void {
  switch (event.type) {
    case 'response.created':
      message.responseId = (event.response as { id: string }).id;
      return;
    case 'response.reasoning_text.delta':
      message.reasoning += String(event.delta ?? '');
      return;
    case 'response.output_text.delta':
      message.text += String(event.delta ?? '');
      return;
    case 'response.output_item.added':
    case 'response.output_item.done':
      return applyItem(message, event.item as Item, Number(event.output_index), calls);
    case 'response.function_call_arguments.delta': {
      const call = message.calls.find((c) => c.callId === calls.get(Number(event.output_index)));
      if (call) call.arguments += String(event.delta ?? '');
      return;
    }
    case 'response.completed':
    case 'response.incomplete':
    case 'response.failed':
      return finish(message, event);
    case 'error': {
      const error = (event.error ?? event) as { message?: string; code?: string; type?: string; param?: string };
      message.status = 'error';
      message.error = {
        message: String(error.message ?? 'The stream failed.'),
        code: error.code ?? null,
        type: error.type ?? null,
        param: error.param ?? null,
      };
      return;
    }
  }
}

function applyItem(message: AssistantMessage, item: Item, index: number, calls: CallIndex): void {
  if (item.type !== 'function_call' || item.call_id === undefined) return;
  let call = message.calls.find((c) => c.callId === item.call_id);
  if (!call) {
    call = { callId: item.call_id, name: item.name ?? '', arguments: '' };
    message.calls.push(call);
    calls.set(index, item.call_id);
  }
  if (typeof item.arguments === 'string' && item.arguments !== '') call.arguments = item.arguments;
}

function finish(message: AssistantMessage, event: StreamEvent): void {
  const response = event.response as {
    status: string;
    error?: { code?: string; message?: string; type?: string } | null;
    usage?: { output_tokens?: number };
  };
  message.status =
    response.status === 'completed' ? 'completed' : response.status === 'incomplete' ? 'incomplete' : 'failed';
  message.outputTokens = response.usage?.output_tokens;
  if (response.error) {
    message.error = {
      message: response.error.message ?? 'The response failed.',
      code: response.error.code ?? null,
      type: response.error.type ?? null,
    };
  }
}

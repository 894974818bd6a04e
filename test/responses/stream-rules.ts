/**
 * The pairing and ordering rules of a Responses event stream (what the openai SDK's stream
 * helper and vLLM's validate_streaming_event_stack require). Returns the list of violations.
 */
type Event = { type: string; sequence_number: number } & Record<string, unknown>;
type Item = { id: string; type: string; content?: Array<{ text?: string }>; arguments?: string; call_id?: string };

const TERMINAL = new Set(['response.completed', 'response.incomplete', 'response.failed']);

export function streamViolations(events: Event[]): string[] {
  const problems: string[] = [];
  const fail = (index: number, message: string) => problems.push(`#${index} ${events[index]?.type}: ${message}`);
  events.forEach((event, index) => {
    if (event.sequence_number !== index) fail(index, `sequence_number ${event.sequence_number} != ${index}`);
  });
  if (events[0]?.type !== 'response.created') fail(0, 'first event must be response.created');
  const last = events.at(-1);
  const terminalCount = events.filter((event) => TERMINAL.has(event.type) || event.type === 'error').length;
  if (!last || !(TERMINAL.has(last.type) || last.type === 'error'))
    fail(events.length - 1, 'last event must be terminal');
  if (terminalCount !== 1) fail(events.length - 1, `${terminalCount} terminal events`);
  const responseId = (events[0]?.response as { id?: string } | undefined)?.id;

  const items: Item[] = [];
  const open = new Set<number>();
  const openParts = new Map<number, number>();
  const text = new Map<string, string>();
  events.forEach((event, index) => {
    if (event.type.startsWith('response.') && event.response) {
      if ((event.response as { id: string }).id !== responseId) fail(index, 'lifecycle response id changed');
    }
    const outputIndex = event.output_index as number | undefined;
    const item = outputIndex === undefined ? undefined : items[outputIndex];
    switch (event.type) {
      case 'response.output_item.added': {
        const added = event.item as Item;
        if (outputIndex !== items.length) fail(index, `output_index ${outputIndex} != ${items.length}`);
        if (!added.id || items.some((other) => other.id === added.id)) fail(index, 'item id missing or repeated');
        if (open.size > 0) fail(index, 'an item is still open');
        items.push(added);
        open.add(items.length - 1);
        break;
      }
      case 'response.output_item.done': {
        const done = event.item as Item;
        if (!item || !open.has(outputIndex!)) fail(index, 'done for an item that is not open');
        else if (done.id !== item.id || done.type !== item.type || done.call_id !== item.call_id)
          fail(index, 'done item changed identity');
        if (openParts.has(outputIndex!)) fail(index, 'content part still open');
        open.delete(outputIndex!);
        items[outputIndex!] = done;
        break;
      }
      case 'response.content_part.added':
        if (!item || event.item_id !== item.id) fail(index, 'item_id does not match');
        if (event.content_index !== 0 || openParts.has(outputIndex!)) fail(index, 'content_index not append-only');
        openParts.set(outputIndex!, 0);
        text.set(`${outputIndex}`, '');
        break;
      case 'response.content_part.done':
        if (!openParts.has(outputIndex!)) fail(index, 'part not open');
        openParts.delete(outputIndex!);
        break;
      case 'response.output_text.delta':
      case 'response.reasoning_text.delta':
      case 'response.function_call_arguments.delta': {
        const wanted = event.type.includes('output_text')
          ? 'message'
          : event.type.includes('reasoning')
            ? 'reasoning'
            : 'function_call';
        if (!item || !open.has(outputIndex!) || event.item_id !== item.id || item.type !== wanted)
          fail(index, `delta for a closed or wrong item (want ${wanted})`);
        if (wanted !== 'function_call' && !openParts.has(outputIndex!)) fail(index, 'delta before content_part.added');
        text.set(`${outputIndex}`, (text.get(`${outputIndex}`) ?? '') + String(event.delta));
        break;
      }
      case 'response.output_text.done':
      case 'response.reasoning_text.done':
        if (event.text !== (text.get(`${outputIndex}`) ?? '')) fail(index, 'done text differs from the deltas');
        break;
      case 'response.function_call_arguments.done':
        if (event.arguments !== (text.get(`${outputIndex}`) ?? ''))
          fail(index, 'done arguments differ from the deltas');
        break;
      default:
        break;
    }
  });
  if (open.size > 0) fail(events.length - 1, 'items left open');
  const finalOutput = (last?.response as { output?: Item[] } | undefined)?.output;
  if (last && TERMINAL.has(last.type) && last.type !== 'response.failed') {
    if (JSON.stringify(finalOutput) !== JSON.stringify(items))
      fail(events.length - 1, 'final output differs from the streamed items');
  }
  return problems;
}

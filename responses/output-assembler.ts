/**
 * Turns the dialect parser's content events (reasoning, text, tool calls) into Responses output
 * items and the item-scoped stream events of OpenAI's lifecycle:
 *   output_item.added → content_part.added → *.delta… → *.done → content_part.done → output_item.done
 * for `reasoning` (reasoning_text) and `message` (output_text) items, and
 *   output_item.added → function_call_arguments.delta… → .done → output_item.done
 * for `function_call` items. Items are append-only; at most one is open at a time. Events leave
 * without `sequence_number`: the EventSequencer numbers whatever is finally published.
 */
import type { UnnumberedEvent } from '../contract/stream-events.ts';
import type {
  FunctionCallItem,
  MessageItem,
  OutputTextPart,
  ReasoningOutputItem,
  ReasoningTextPart,
} from '../contract/types.ts';
import type { ParserEvent } from '../dialects/dialect.ts';
import { newId } from './ids.ts';

/** The parser's content events (everything but the reasoning end marker and errors), in model order. */
export type ContentEvent = Exclude<ParserEvent, { type: 'reasoning_done' } | { type: 'error' }>;

export type {
  FunctionCallItem,
  MessageItem,
  ReasoningOutputItem,
  ServerOutputItem as OutputItem,
} from '../contract/types.ts';

const clone = <T>(value: T): T => structuredClone(value);

/** The items the model's output becomes (hosted tool items are added by the tool loop). */
type OutputItem = MessageItem | ReasoningOutputItem | FunctionCallItem;

export class OutputAssembler {
  readonly output: OutputItem[] = [];
  private open: OutputItem | undefined;
  private readonly callItems = new Map<number, FunctionCallItem>();

  /** `sealReasoning`: when set, a finished reasoning item carries `encrypted_content` (its content, sealed). */
  constructor(
    private readonly emit: (event: UnnumberedEvent) => void,
    private readonly sealReasoning?: (content: ReasoningTextPart[]) => string,
  ) {}

  push(event: ContentEvent): void {
    switch (event.type) {
      case 'reasoning_delta':
        return this.appendText('reasoning', event.text);
      case 'text_delta':
        return this.appendText('message', event.text);
      case 'tool_call_start':
        return this.startCall(event.index, event.name);
      case 'tool_args_delta':
        return this.callDelta(event.index, event.delta);
      case 'tool_call_done':
        return this.endCall(event.index, 'completed', event.arguments);
      case 'tool_call_incomplete':
        return this.endCall(event.index, 'incomplete');
    }
  }

  /** Closes the open item: 'completed' on a normal end, 'incomplete' when the output limit cut it. */
  finish(status: 'completed' | 'incomplete'): void {
    const item = this.open;
    if (!item) return;
    if (item.type === 'function_call') this.endCall(this.indexOf(item), 'incomplete');
    else this.closeTextItem(item, status);
  }

  get functionCalls(): FunctionCallItem[] {
    return this.output.filter((item): item is FunctionCallItem => item.type === 'function_call');
  }

  private appendText(kind: 'reasoning' | 'message', text: string): void {
    if (text === '') return;
    let item = this.open;
    if (!item || item.type !== kind) {
      this.finish('completed');
      item = kind === 'message' ? this.openMessage() : this.openReasoning();
    }
    const outputIndex = this.output.length - 1;
    if (item.type === 'message') {
      item.content[0]!.text += text;
      this.emit({
        type: 'response.output_text.delta',
        item_id: item.id,
        output_index: outputIndex,
        content_index: 0,
        delta: text,
        logprobs: [],
      });
    } else if (item.type === 'reasoning') {
      item.content[0]!.text += text;
      this.emit({
        type: 'response.reasoning_text.delta',
        item_id: item.id,
        output_index: outputIndex,
        content_index: 0,
        delta: text,
      });
    }
  }

  private openMessage(): MessageItem {
    const item: MessageItem = {
      type: 'message',
      id: newId('msg'),
      status: 'in_progress',
      role: 'assistant',
      content: [],
    };
    this.addItem(item);
    const part: OutputTextPart = { type: 'output_text', text: '', annotations: [], logprobs: [] };
    item.content.push(part);
    this.emit({
      type: 'response.content_part.added',
      item_id: item.id,
      output_index: this.output.length - 1,
      content_index: 0,
      part: clone(part),
    });
    return item;
  }

  private openReasoning(): ReasoningOutputItem {
    const item: ReasoningOutputItem = {
      type: 'reasoning',
      id: newId('rs'),
      status: 'in_progress',
      summary: [],
      content: [],
    };
    this.addItem(item);
    const part: ReasoningTextPart = { type: 'reasoning_text', text: '' };
    item.content.push(part);
    this.emit({
      type: 'response.content_part.added',
      item_id: item.id,
      output_index: this.output.length - 1,
      content_index: 0,
      part: clone(part),
    });
    return item;
  }

  private addItem(item: OutputItem): void {
    const added = clone(item);
    if (added.type !== 'function_call') added.content = [];
    this.output.push(item);
    this.open = item;
    this.emit({ type: 'response.output_item.added', output_index: this.output.length - 1, item: added });
  }

  private closeTextItem(item: MessageItem | ReasoningOutputItem, status: 'completed' | 'incomplete'): void {
    const outputIndex = this.output.indexOf(item);
    const part = item.content[0]!;
    if (item.type === 'message') {
      this.emit({
        type: 'response.output_text.done',
        item_id: item.id,
        output_index: outputIndex,
        content_index: 0,
        text: part.text,
        logprobs: [],
      });
    } else {
      this.emit({
        type: 'response.reasoning_text.done',
        item_id: item.id,
        output_index: outputIndex,
        content_index: 0,
        text: part.text,
      });
    }
    this.emit({
      type: 'response.content_part.done',
      item_id: item.id,
      output_index: outputIndex,
      content_index: 0,
      part: clone(part),
    });
    item.status = status;
    if (item.type === 'reasoning' && this.sealReasoning) item.encrypted_content = this.sealReasoning(item.content);
    this.emit({ type: 'response.output_item.done', output_index: outputIndex, item: clone(item) });
    this.open = undefined;
  }

  private startCall(index: number, name: string): void {
    this.finish('completed');
    const item: FunctionCallItem = {
      type: 'function_call',
      id: newId('fc'),
      call_id: newId('call'),
      name,
      arguments: '',
      status: 'in_progress',
    };
    this.callItems.set(index, item);
    this.addItem(item);
  }

  private callDelta(index: number, delta: string): void {
    const item = this.callItems.get(index);
    if (!item || delta === '') return;
    item.arguments += delta;
    this.emit({
      type: 'response.function_call_arguments.delta',
      item_id: item.id,
      output_index: this.output.indexOf(item),
      delta,
    });
  }

  private endCall(index: number, status: 'completed' | 'incomplete', args?: string): void {
    const item = this.callItems.get(index);
    if (!item || item.status !== 'in_progress') return;
    const outputIndex = this.output.indexOf(item);
    item.status = status;
    if (status === 'completed') {
      item.arguments = args ?? item.arguments;
      this.emit({
        type: 'response.function_call_arguments.done',
        item_id: item.id,
        output_index: outputIndex,
        name: item.name,
        arguments: item.arguments,
      });
    }
    this.emit({ type: 'response.output_item.done', output_index: outputIndex, item: clone(item) });
    if (this.open === item) this.open = undefined;
  }

  private indexOf(item: FunctionCallItem): number {
    for (const [index, candidate] of this.callItems) if (candidate === item) return index;
    return -1;
  }
}

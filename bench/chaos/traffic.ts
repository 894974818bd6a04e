/**
 * The chaos run's mixed traffic through the load balancer, greedy (temperature 0) so every
 * completed answer can be rerun and compared: JSON and streamed `store:true` requests, stored
 * conversations continued with previous_response_id (JSON or streamed), retrievals of stored
 * responses (which must answer the acknowledged output, byte for byte), background tasks read with
 * `starting_after` and sometimes cancelled, and encrypted reasoning replayed to whichever replica
 * answers next (the shared reasoning key). Checks made on the spot: stream sequence numbers run
 * 0, 1, 2, … (or from starting_after + 1) without gaps, streamed deltas add up to the final output,
 * a stored response is never 404 and never answers other output.
 */
import {
  type ChaosClient,
  type Kind,
  type Ledger,
  type OutputItem,
  type ResponseBody,
  type StreamResult,
  type Task,
  now,
  outputText,
} from './chaos-client.ts';

export const PROMPTS = [
  'Hello',
  'Remember the value 73',
  'What is 2+2?',
  'Tell me about the weather in Paris.',
  'Write a short poem about the sea.',
  'Who are you?',
  'Name three colours.',
  'Tell me a fact about Rome.',
];
export const FOLLOW_UPS = ['And then?', 'What value did I give you?', 'Say it again, shorter.', 'Why?'];
export const TASK_INPUT = 'Tell me everything you know about the history of Rome.';
export const MAX_OUTPUT_TOKENS = 48;
export const TASK_MAX_OUTPUT_TOKENS = 256;
const TERMINAL = new Set(['completed', 'incomplete', 'failed', 'cancelled']);

const WEIGHTS: [Kind, number][] = [
  ['json', 22],
  ['stream', 22],
  ['continue', 22],
  ['read', 12],
  ['background', 14],
  ['replay', 8],
];

export class Traffic {
  constructor(
    private readonly client: ChaosClient,
    private readonly ledger: Ledger,
    private readonly rng: () => number,
    private readonly hasReplay: boolean,
  ) {}

  /** One closed-loop worker: a request, then the next, until `isDone()`. */
  async worker(isDone: () => boolean): Promise<void> {
    while (!isDone()) await this.one();
  }

  async one(): Promise<void> {
    const kind = this.pickKind();
    if (kind === 'json') return this.create(this.pick(PROMPTS), undefined, false);
    if (kind === 'stream') return this.create(this.pick(PROMPTS), undefined, true);
    if (kind === 'continue') {
      const previous = this.pickStored();
      if (previous) return this.create(this.pick(FOLLOW_UPS), previous.id, this.rng() < 0.5);
      return this.create(this.pick(PROMPTS), undefined, false);
    }
    if (kind === 'read') return this.read();
    if (kind === 'replay') return this.replay();
    await this.background();
  }

  /** A stored request (JSON or streamed), acknowledged when it answers a completed/incomplete response. */
  async create(input: string, previousId: string | undefined, isStream: boolean): Promise<void> {
    const kind: Kind = previousId ? 'continue' : isStream ? 'stream' : 'json';
    const body = {
      model: 'maya-demo',
      input,
      store: true,
      temperature: 0,
      max_output_tokens: MAX_OUTPUT_TOKENS,
      ...(previousId ? { previous_response_id: previousId } : {}),
      ...(isStream ? { stream: true } : {}),
    };
    const start = now();
    let response: ResponseBody | undefined;
    if (isStream) {
      const result = await this.client.stream('POST', '/responses', body);
      this.ledger.record(kind, start, result.answer, result.code);
      response = this.checkStream(result, -1, `${kind} ${input}`);
    } else {
      const result = await this.client.json('POST', '/responses', body);
      const code = (result.body?.error as { code?: string } | undefined)?.code;
      this.ledger.record(kind, start, result.answer, code);
      if (result.answer === 200) response = result.body as unknown as ResponseBody;
      if (result.answer === 404 && previousId && this.ledger.stored.has(previousId))
        this.ledger.violate('lost', `continue: previous_response_id ${previousId} (acknowledged stored) answered 404`);
    }
    if (response && (response.status === 'completed' || response.status === 'incomplete'))
      this.ledger.ack({
        id: response.id,
        status: response.status,
        output: response.output,
        input,
        previousId,
        via: kind,
      });
  }

  /** A stored response through the load balancer: the acknowledged output, or a fault's 503/connection error. */
  async read(): Promise<void> {
    const stored = this.pickStored();
    if (!stored) return this.create(this.pick(PROMPTS), undefined, false);
    const start = now();
    const result = await this.client.json('GET', `/responses/${stored.id}`);
    const code = (result.body?.error as { code?: string } | undefined)?.code;
    this.ledger.record('read', start, result.answer, code);
    if (result.answer === 404) this.ledger.violate('lost', `read: ${stored.id} (acknowledged stored) answered 404`);
    if (result.answer === 200) {
      const output = (result.body as unknown as ResponseBody).output;
      if (JSON.stringify(output) !== JSON.stringify(stored.output))
        this.ledger.violate('wrong_data', `read: ${stored.id} answered other output than was acknowledged`);
    }
  }

  /** A background task: created through the balancer, then read with starting_after, sometimes cancelled. */
  async background(origin?: string, owner?: string): Promise<Task | undefined> {
    const start = now();
    const result = await this.client.json(
      'POST',
      '/responses',
      {
        model: 'maya-demo',
        input: TASK_INPUT,
        store: true,
        background: true,
        temperature: 0,
        max_output_tokens: TASK_MAX_OUTPUT_TOKENS,
      },
      origin,
    );
    this.ledger.record('background', start, result.answer, (result.body?.error as { code?: string })?.code);
    if (result.answer !== 200) return undefined;
    const id = String(result.body!.id);
    const task: Task = { id, owner: owner ?? result.replica ?? '?', createdAt: start, input: TASK_INPUT };
    this.ledger.tasks.set(id, task);
    if (origin) return task;
    if (this.rng() < 0.3) {
      task.isCancelRequested = true;
      const cancelStart = now();
      const cancelled = await this.client.json('POST', `/responses/${id}/cancel`);
      this.ledger.record('cancel', cancelStart, cancelled.answer, (cancelled.body?.error as { code?: string })?.code);
    }
    const after = this.rng() < 0.5 ? 1 : undefined;
    const streamStart = now();
    const events = await this.client.stream(
      'GET',
      `/responses/${id}?stream=true${after === undefined ? '' : `&starting_after=${after}`}`,
    );
    this.ledger.record('task_stream', streamStart, events.answer, events.code);
    this.checkStream(events, after ?? -1, `task ${id}`);
    return task;
  }

  /** Encrypted reasoning made on one replica and replayed through the balancer (another replica). */
  async replay(): Promise<void> {
    if (!this.hasReplay) return this.create(this.pick(PROMPTS), undefined, false);
    const input = this.pick(PROMPTS);
    const start = now();
    const first = await this.client.json('POST', '/responses', {
      model: 'maya-demo',
      input,
      store: false,
      temperature: 0,
      max_output_tokens: MAX_OUTPUT_TOKENS,
      include: ['reasoning.encrypted_content'],
    });
    this.ledger.record('replay', start, first.answer, (first.body?.error as { code?: string } | undefined)?.code);
    if (first.answer !== 200) return;
    const output = (first.body as unknown as ResponseBody).output;
    const replayed = output.map((item: OutputItem) =>
      item.type === 'reasoning'
        ? { type: 'reasoning', id: item.id, summary: [], encrypted_content: item.encrypted_content }
        : item,
    );
    const secondStart = now();
    const second = await this.client.json('POST', '/responses', {
      model: 'maya-demo',
      input: [{ role: 'user', content: input }, ...replayed, { role: 'user', content: this.pick(FOLLOW_UPS) }],
      store: false,
      temperature: 0,
      max_output_tokens: MAX_OUTPUT_TOKENS,
    });
    const code = (second.body?.error as { code?: string } | undefined)?.code;
    this.ledger.record('replay', secondStart, second.answer, code);
    if (second.answer === 400)
      this.ledger.violate(
        'wrong_data',
        `replay: encrypted reasoning from ${first.replica} refused by ${second.replica} (${code})`,
      );
  }

  /**
   * Polls every task not yet seen terminal (through the balancer) until `isDone()` and none is
   * left, or `drainMs` after `isDone()` first held (a task still open then is the caller's finding).
   */
  async pollTasks(isDone: () => boolean, drainMs = 60_000, intervalMs = 250): Promise<void> {
    let doneAt: number | undefined;
    for (;;) {
      const open = [...this.ledger.tasks.values()].filter((task) => task.terminalAt === undefined);
      if (isDone()) doneAt ??= Date.now();
      if (doneAt !== undefined && (open.length === 0 || Date.now() - doneAt > drainMs)) return;
      for (const task of open) {
        const result = await this.client.json('GET', `/responses/${task.id}`);
        const body = result.body as unknown as ResponseBody | undefined;
        task.lastSeen = `${result.answer} ${body?.status ?? (body?.error as { code?: string } | undefined)?.code ?? ''}`;
        if (result.answer !== 200 || !body || !TERMINAL.has(body.status)) continue;
        task.terminalAt = now();
        task.status = body.status;
        if (body.error) task.error = body.error.message;
        if (body.status === 'completed' || body.status === 'incomplete')
          this.ledger.ack({
            id: task.id,
            status: body.status,
            output: body.output,
            input: task.input,
            via: 'background',
          });
      }
      await new Promise((resolve) => setTimeout(resolve, intervalMs));
    }
  }

  /**
   * Sequence numbers after `after` with no gap; deltas add up to each finished item's text. The
   * final response when the stream ended in response.completed/incomplete.
   */
  private checkStream(result: StreamResult, after: number, what: string): ResponseBody | undefined {
    if (result.answer !== 200 || result.events.length === 0) return undefined;
    const numbers = result.events.map((event) => Number(event.sequence_number));
    const isOrdered = numbers.every((n, i) => n === after + 1 + i);
    if (!isOrdered)
      this.ledger.violate('wrong_data', `${what}: sequence numbers ${numbers.slice(0, 12).join(',')}… after ${after}`);
    const last = result.events.at(-1)!;
    if (!/^response\.(completed|incomplete)$/.test(String(last.type))) return undefined;
    const response = last.response as ResponseBody;
    if (after === -1 && isOrdered) {
      const deltas = new Map<string, string>();
      for (const event of result.events) {
        if (!String(event.type).endsWith('_text.delta')) continue;
        const key = String(event.item_id);
        deltas.set(key, (deltas.get(key) ?? '') + String(event.delta));
      }
      for (const item of response.output) {
        const text = outputText([item]);
        if (deltas.has(String(item.id)) && deltas.get(String(item.id)) !== text)
          this.ledger.violate('wrong_data', `${what}: streamed deltas differ from the final output of ${item.id}`);
      }
    }
    return response;
  }

  private pickKind(): Kind {
    const total = WEIGHTS.reduce((sum, [, w]) => sum + w, 0);
    let roll = this.rng() * total;
    for (const [kind, weight] of WEIGHTS) {
      roll -= weight;
      if (roll < 0) return kind;
    }
    return 'json';
  }

  private pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.rng() * items.length)]!;
  }

  /** A recent acknowledged stored response (the last 64), or undefined before the first. */
  private pickStored() {
    const acks = [...this.ledger.stored.values()];
    if (acks.length === 0) return undefined;
    return acks[Math.max(0, acks.length - 1 - Math.floor(this.rng() * Math.min(64, acks.length)))];
  }
}

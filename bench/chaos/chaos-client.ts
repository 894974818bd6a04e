/**
 * The chaos run's HTTP client and its ledger. Every request is one Sample (its kind, phase, start
 * and end, and its answer: an HTTP status or `conn_error` for a connection that failed or a stream
 * cut before its terminal event); what the run must be able to check later is kept beside:
 * responses acknowledged as stored (with the output they were acknowledged with), completed
 * responses (for the greedy rerun), background tasks (owner replica, when they were seen
 * terminal) and violations (each with the evidence).
 */
import { performance } from 'node:perf_hooks';

export type Kind = 'json' | 'stream' | 'continue' | 'read' | 'background' | 'task_stream' | 'cancel' | 'replay';
export type Phase = 'baseline' | 'chaos' | 'verify';
export type Answer = number | 'conn_error';

export interface Sample {
  kind: Kind;
  phase: Phase;
  start: number;
  end: number;
  answer: Answer;
  /** The error code of a non-2xx answer or of a stream's `error` event. */
  code?: string;
}

export interface OutputItem {
  type: string;
  content?: { type: string; text?: string }[];
  [key: string]: unknown;
}

export interface ResponseBody {
  id: string;
  status: string;
  output: OutputItem[];
  usage?: { output_tokens: number } | null;
  incomplete_details?: { reason: string } | null;
  error?: { code: string; message: string } | null;
  previous_response_id?: string | null;
}

/** A response acknowledged as stored: the output every replica must still answer at the end. */
export interface StoredAck {
  id: string;
  status: string;
  output: OutputItem[];
  /** The request that made it, for the greedy rerun. */
  input: string;
  previousId?: string;
  via: Kind;
}

export interface Task {
  id: string;
  /** The replica that accepted it (haproxy's x-maya-replica), which runs it. */
  owner: string;
  createdAt: number;
  input: string;
  terminalAt?: number;
  status?: string;
  isCancelRequested?: boolean;
  /** The last answer a poll got (status and response status), for the report. */
  lastSeen?: string;
  /** A failed task's error message. */
  error?: string;
}

export type ViolationKind = 'lost' | 'truncated' | 'wrong_data' | 'http_500' | 'task_not_terminal' | 'task_lease';

export interface Violation {
  kind: ViolationKind;
  detail: string;
}

export interface StreamResult {
  answer: Answer;
  code?: string;
  events: Record<string, unknown>[];
  /** A terminal event (response.completed/incomplete/failed or error) arrived. */
  isTerminal: boolean;
  replica?: string;
}

export const now = () => performance.now();

export class Ledger {
  readonly samples: Sample[] = [];
  readonly stored = new Map<string, StoredAck>();
  readonly tasks = new Map<string, Task>();
  readonly violations: Violation[] = [];
  phase: Phase = 'baseline';

  record(kind: Kind, start: number, answer: Answer, code?: string): void {
    this.samples.push({ kind, phase: this.phase, start, end: now(), answer, ...(code ? { code } : {}) });
    if (answer === 500) this.violate('http_500', `${kind}: 500 ${code ?? ''}`);
  }

  violate(kind: ViolationKind, detail: string): void {
    this.violations.push({ kind, detail });
  }

  ack(ack: StoredAck): void {
    this.stored.set(ack.id, ack);
  }
}

/** The text of every output item (reasoning and message parts), in order: what the model generated. */
export function outputText(output: OutputItem[]): string {
  return output.map((item) => (item.content ?? []).map((part) => part.text ?? '').join('')).join('\u241e');
}

export class ChaosClient {
  constructor(
    readonly origin: string,
    private readonly apiKey: string,
  ) {}

  /** A JSON request; `conn_error` when the connection failed or the body was cut. */
  async json(
    method: string,
    path: string,
    body?: object,
    origin = this.origin,
  ): Promise<{ answer: Answer; body?: Record<string, unknown>; replica?: string; retryAfter?: string | null }> {
    try {
      const response = await fetch(`${origin}/v1${path}`, {
        method,
        headers: this.headers(body),
        ...(body ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(60_000),
      });
      const text = await response.text();
      let parsed: Record<string, unknown> | undefined;
      try {
        parsed = JSON.parse(text) as Record<string, unknown>;
      } catch {
        // Not Maya's answer (Maya's bodies are JSON): haproxy's own error page.
        parsed = response.ok ? undefined : { error: { code: 'not_from_maya' } };
      }
      return {
        answer: response.status,
        ...(parsed ? { body: parsed } : {}),
        replica: response.headers.get('x-maya-replica') ?? undefined,
        retryAfter: response.headers.get('retry-after'),
      };
    } catch {
      return { answer: 'conn_error' };
    }
  }

  /** An SSE request read to its end; a cut before a terminal event is `conn_error`. */
  async stream(method: string, path: string, body?: object, origin = this.origin): Promise<StreamResult> {
    let response: Response;
    try {
      response = await fetch(`${origin}/v1${path}`, {
        method,
        headers: this.headers(body),
        ...(body ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(90_000),
      });
    } catch {
      return { answer: 'conn_error', events: [], isTerminal: false };
    }
    const replica = response.headers.get('x-maya-replica') ?? undefined;
    if (!response.headers.get('content-type')?.includes('text/event-stream')) {
      const parsed = (await response.json().catch(() => ({ error: { code: 'not_from_maya' } }))) as
        { error?: { code?: string } } | undefined;
      return { answer: response.status, code: parsed?.error?.code, events: [], isTerminal: false, replica };
    }
    const events: Record<string, unknown>[] = [];
    let isTerminal = false;
    try {
      const decoder = new TextDecoder();
      let text = '';
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        text += decoder.decode(chunk, { stream: true });
        for (let end = text.indexOf('\n\n'); end >= 0; end = text.indexOf('\n\n')) {
          const data = text
            .slice(0, end)
            .split('\n')
            .filter((line) => line.startsWith('data:'))
            .map((line) => line.slice(5).trimStart())
            .join('\n');
          text = text.slice(end + 2);
          if (data === '' || data === '[DONE]') continue;
          const event = JSON.parse(data) as Record<string, unknown>;
          events.push(event);
          if (/^response\.(completed|incomplete|failed)$|^error$/.test(String(event.type))) isTerminal = true;
        }
      }
    } catch {
      // cut mid-stream: reported below
    }
    const error = events.find((event) => event.type === 'error') as { code?: string } | undefined;
    if (!isTerminal) return { answer: 'conn_error', events, isTerminal, replica };
    return { answer: response.status, ...(error?.code ? { code: error.code } : {}), events, isTerminal, replica };
  }

  private headers(body?: object): Record<string, string> {
    return { authorization: `Bearer ${this.apiKey}`, ...(body ? { 'content-type': 'application/json' } : {}) };
  }
}

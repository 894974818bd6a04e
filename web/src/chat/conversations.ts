/**
 * Conversations as the page keeps them in the browser's local storage (never on the server: the
 * server keeps only the stored responses that `previous_response_id` continues from). Each
 * assistant message remembers the request it answered, so it can be regenerated.
 */
import type { ApiErrorInfo } from '../api.ts';

export interface ImageAttachment {
  name: string;
  /** data: URL; dropped (undefined) when storage is full. */
  dataUrl?: string;
}

export interface UserMessage {
  kind: 'user';
  id: string;
  text: string;
  images: ImageAttachment[];
}

export interface ToolCall {
  callId: string;
  name: string;
  arguments: string;
  /** What the user answered, sent back as function_call_output. */
  output?: string;
}

export type AnswerStatus = 'streaming' | 'completed' | 'incomplete' | 'failed' | 'cancelled' | 'error';

/** A request as the page sent it: its input items and the response it continued. */
export interface SentRequest {
  input: object[];
  previousResponseId?: string;
}

export interface AssistantMessage {
  kind: 'assistant';
  id: string;
  responseId?: string;
  reasoning: string;
  text: string;
  calls: ToolCall[];
  status: AnswerStatus;
  error?: ApiErrorInfo;
  request: SentRequest;
  outputTokens?: number;
  /** `json`: the request asked for a json_schema format (the answer is shown as JSON). */
  format?: 'json';
}

export type Message = UserMessage | AssistantMessage;

export interface Conversation {
  id: string;
  title: string;
  updatedAt: number;
  messages: Message[];
}

const STORAGE_KEY = 'maya.conversations.v1';

export function newId(prefix: string): string {
  return `${prefix}_${crypto.randomUUID().replaceAll('-', '').slice(0, 16)}`;
}

export function newConversation(): Conversation {
  return { id: newId('conv'), title: 'New chat', updatedAt: Date.now(), messages: [] };
}

export function loadConversations(): Conversation[] {
  try {
    const value: unknown = JSON.parse(localStorage.getItem(STORAGE_KEY) ?? '[]');
    return Array.isArray(value) ? (value as Conversation[]) : [];
  } catch {
    return [];
  }
}

/** Saves the list; when the storage is full, again without image data. */
export function saveConversations(conversations: Conversation[]): void {
  const finished = conversations.map((c) => ({
    ...c,
    messages: c.messages.map((m) =>
      m.kind === 'assistant' && m.status === 'streaming' ? { ...m, status: 'cancelled' } : m,
    ),
  }));
  try {
    localStorage.setItem(STORAGE_KEY, JSON.stringify(finished));
  } catch {
    const light = finished.map((c) => ({
      ...c,
      messages: c.messages.map((m) =>
        m.kind === 'user' ? { ...m, images: m.images.map((i) => ({ name: i.name })) } : m,
      ),
    }));
    try {
      localStorage.setItem(STORAGE_KEY, JSON.stringify(light));
    } catch {
      // Still too large: the conversations live on in this tab only.
    }
  }
}

/** The response a new request continues: the latest answer the server stored. */
export function lastStoredResponseId(messages: Message[]): string | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.kind === 'assistant' && m.responseId && (m.status === 'completed' || m.status === 'incomplete'))
      return m.responseId;
  }
  return undefined;
}

export function titleOf(text: string): string {
  const line = text.trim().split('\n')[0] ?? '';
  return line.length > 48 ? `${line.slice(0, 47)}…` : line || 'New chat';
}

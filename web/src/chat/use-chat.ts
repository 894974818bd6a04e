/**
 * The chat's state and actions: the conversation list (local storage), the one request in flight
 * (its AbortController is the Stop button), sending a message, answering tool calls with
 * function_call_output, regenerating the last answer and editing the last message. Every request
 * is `store: true` and continues the latest stored answer with `previous_response_id`.
 */
import { useRef, useState } from 'preact/hooks';
import { ApiError, streamResponse } from '../api.ts';
import {
  lastStoredResponseId,
  loadConversations,
  newConversation,
  newId,
  saveConversations,
  titleOf,
  type AssistantMessage,
  type Conversation,
  type ImageAttachment,
  type SentRequest,
} from './conversations.ts';
import { requestBody, type ChatOptions } from './options.ts';
import { applyEvent, type CallIndex } from './stream-events.ts';

const CURRENT_KEY = 'maya.currentConversation.v1';

export interface Chat {
  conversations: Conversation[];
  current: Conversation | undefined;
  isBusy: boolean;
  /** A problem found before sending (an editor's invalid JSON). */
  notice: string | undefined;
  select(id: string): void;
  newChat(): void;
  rename(id: string, title: string): void;
  remove(id: string): void;
  send(text: string, images: ImageAttachment[]): void;
  answerCall(message: AssistantMessage, callId: string, output: string): void;
  regenerate(): void;
  editLast(text: string): void;
  stop(): void;
}

function userInput(text: string, attachments: ImageAttachment[]): object {
  const images = attachments.filter((image) => image.dataUrl !== undefined);
  if (images.length === 0) return { role: 'user', content: text };
  const parts = images.map((image) => ({ type: 'input_image', image_url: image.dataUrl }));
  return { role: 'user', content: [...parts, { type: 'input_text', text }] };
}

export function useChat(model: string, options: ChatOptions): Chat {
  const [conversations, setConversations] = useState<Conversation[]>(loadConversations);
  const [currentId, setCurrentId] = useState<string | undefined>(
    () => localStorage.getItem(CURRENT_KEY) ?? conversations[0]?.id,
  );
  const [isBusy, setBusy] = useState(false);
  const [notice, setNotice] = useState<string | undefined>();
  const [, setVersion] = useState(0);
  const controller = useRef<AbortController | undefined>(undefined);
  const frame = useRef(0);
  const list = useRef(conversations);
  list.current = conversations;

  const rerender = () => setVersion((v) => v + 1);
  const scheduleRender = () => {
    if (frame.current === 0)
      frame.current = requestAnimationFrame(() => {
        frame.current = 0;
        rerender();
      });
  };
  const commit = (next: Conversation[] = list.current) => {
    list.current = next;
    setConversations(next);
    saveConversations(next);
    rerender();
  };
  const choose = (id: string | undefined) => {
    setCurrentId(id);
    if (id === undefined) localStorage.removeItem(CURRENT_KEY);
    else localStorage.setItem(CURRENT_KEY, id);
  };
  const current = conversations.find((c) => c.id === currentId);

  const run = async (conversation: Conversation, sent: SentRequest) => {
    const built = requestBody(model, sent, options);
    if ('problem' in built) {
      setNotice(built.problem);
      return;
    }
    setNotice(undefined);
    const message: AssistantMessage = {
      kind: 'assistant',
      id: newId('msg'),
      reasoning: '',
      text: '',
      calls: [],
      status: 'streaming',
      request: sent,
      ...(options.schemaOn ? { format: 'json' as const } : {}),
    };
    conversation.messages.push(message);
    conversation.updatedAt = Date.now();
    commit([...list.current]);
    const control = new AbortController();
    controller.current = control;
    setBusy(true);
    const calls: CallIndex = new Map();
    try {
      for await (const event of streamResponse(built.body, control.signal)) {
        applyEvent(message, event, calls);
        scheduleRender();
      }
      if (message.status === 'streaming') {
        message.status = 'error';
        message.error = { message: 'The stream ended before the response finished.' };
      }
    } catch (error) {
      if (control.signal.aborted) message.status = 'cancelled';
      else {
        message.status = 'error';
        message.error = error instanceof ApiError ? error.info : { message: (error as Error).message };
      }
    } finally {
      controller.current = undefined;
      setBusy(false);
      commit([...list.current]);
    }
  };

  const ensureConversation = (): Conversation => {
    if (current) return current;
    const conversation = newConversation();
    list.current = [conversation, ...list.current];
    choose(conversation.id);
    return conversation;
  };

  return {
    conversations,
    current,
    isBusy,
    notice,
    select: (id) => choose(id),
    newChat: () => {
      const empty = list.current.find((c) => c.messages.length === 0);
      const conversation = empty ?? newConversation();
      if (!empty) commit([conversation, ...list.current]);
      choose(conversation.id);
    },
    rename: (id, title) => {
      const conversation = list.current.find((c) => c.id === id);
      if (!conversation || title.trim() === '') return;
      conversation.title = title.trim();
      commit([...list.current]);
    },
    remove: (id) => {
      const next = list.current.filter((c) => c.id !== id);
      commit(next);
      if (id === currentId) choose(next[0]?.id);
    },
    send: (text, images) => {
      if (isBusy) return;
      const conversation = ensureConversation();
      const previousResponseId = lastStoredResponseId(conversation.messages);
      if (conversation.messages.length === 0) conversation.title = titleOf(text);
      conversation.messages.push({ kind: 'user', id: newId('msg'), text, images });
      void run(conversation, {
        input: [userInput(text, images)],
        ...(previousResponseId ? { previousResponseId } : {}),
      });
    },
    answerCall: (message, callId, output) => {
      const call = message.calls.find((c) => c.callId === callId);
      if (!call || !current || isBusy) return;
      call.output = output;
      if (message.calls.some((c) => c.output === undefined)) return commit([...list.current]);
      const input = message.calls.map((c) => ({ type: 'function_call_output', call_id: c.callId, output: c.output }));
      void run(current, { input, ...(message.responseId ? { previousResponseId: message.responseId } : {}) });
    },
    regenerate: () => {
      const last = current?.messages.at(-1);
      if (!current || isBusy || last?.kind !== 'assistant') return;
      current.messages.pop();
      void run(current, last.request);
    },
    editLast: (text) => {
      if (!current || isBusy) return;
      const at = current.messages.findLastIndex((m) => m.kind === 'user');
      const user = current.messages[at];
      const answer = current.messages[at + 1];
      if (user?.kind !== 'user') return;
      const previousResponseId = answer?.kind === 'assistant' ? answer.request.previousResponseId : undefined;
      current.messages.splice(at + 1);
      user.text = text;
      void run(current, {
        input: [userInput(text, user.images)],
        ...(previousResponseId ? { previousResponseId } : {}),
      });
    },
    stop: () => controller.current?.abort(),
  };
}

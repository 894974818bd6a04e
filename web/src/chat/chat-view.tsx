/** The Chat tab: conversation list, the thread with its composer, and the request options. */
import type { JSX } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import type { MayaStatus } from '../status.ts';
import { extraSections } from '../status.ts';
import { ConversationList } from './conversation-list.tsx';
import { Composer } from './composer.tsx';
import { AssistantMessageView, UserMessageView } from './message-view.tsx';
import { loadOptions, saveOptions, type ChatOptions } from './options.ts';
import { OptionsPanel } from './options-panel.tsx';
import { useChat } from './use-chat.ts';

export function ChatView({ status }: { status: MayaStatus }): JSX.Element {
  const [options, setOptionsState] = useState<ChatOptions>(loadOptions);
  const setOptions = (next: ChatOptions) => {
    setOptionsState(next);
    saveOptions(next);
  };
  const chat = useChat(status.model, options);
  const messages = chat.current?.messages ?? [];
  const thread = useRef<HTMLDivElement>(null);
  const last = messages.at(-1);
  const lastUserIndex = messages.findLastIndex((m) => m.kind === 'user');
  useEffect(() => {
    const el = thread.current;
    if (el) el.scrollTop = el.scrollHeight;
  }, [messages.length, last?.kind === 'assistant' ? last.text.length + last.reasoning.length : 0]);
  return (
    <div class="chat">
      <ConversationList chat={chat} />
      <section class="thread-column" aria-label="Conversation">
        <div class="thread" ref={thread}>
          {messages.length === 0 ? (
            <div class="empty">
              <h2>Chat with {status.model}</h2>
              <p class="muted">
                Answers stream as they are generated; reasoning shows in its own block. Conversations stay in this
                browser; the server keeps the stored responses they continue from.
              </p>
            </div>
          ) : (
            messages.map((message, i) =>
              message.kind === 'user' ? (
                <UserMessageView
                  key={message.id}
                  message={message}
                  chat={chat}
                  canEdit={i === lastUserIndex && !chat.isBusy}
                />
              ) : (
                <AssistantMessageView
                  key={message.id}
                  message={message}
                  chat={chat}
                  isLast={i === messages.length - 1}
                />
              ),
            )
          )}
        </div>
        {chat.notice ? (
          <p class="notice" role="alert">
            {chat.notice}
          </p>
        ) : null}
        <Composer chat={chat} hasVision={status.engine.vision} />
      </section>
      <OptionsPanel
        options={options}
        setOptions={setOptions}
        extra={extraSections(status).filter(([name]) => name.includes('mcp'))}
      />
    </div>
  );
}

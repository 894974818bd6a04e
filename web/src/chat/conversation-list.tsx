/** The conversation list: start a new one, open, rename (inline) and delete. */
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import type { Chat } from './use-chat.ts';
import type { Conversation } from './conversations.ts';

export function ConversationList({ chat }: { chat: Chat }): JSX.Element {
  const sorted = [...chat.conversations].sort((a, b) => b.updatedAt - a.updatedAt);
  return (
    <nav class="conversations" aria-label="Conversations">
      <button type="button" class="button primary wide" onClick={() => chat.newChat()} disabled={chat.isBusy}>
        New chat
      </button>
      {sorted.length === 0 ? <p class="muted small-text">No conversations yet.</p> : null}
      <ul>
        {sorted.map((conversation) => (
          <ConversationItem
            key={conversation.id}
            conversation={conversation}
            chat={chat}
            isCurrent={conversation.id === chat.current?.id}
          />
        ))}
      </ul>
    </nav>
  );
}

function ConversationItem(props: { conversation: Conversation; chat: Chat; isCurrent: boolean }): JSX.Element {
  const { conversation, chat, isCurrent } = props;
  const [draft, setDraft] = useState<string | undefined>();
  if (draft !== undefined) {
    const save = () => {
      chat.rename(conversation.id, draft);
      setDraft(undefined);
    };
    return (
      <li class="conversation editing">
        <form
          onSubmit={(event) => {
            event.preventDefault();
            save();
          }}
        >
          <input
            class="input"
            aria-label="Conversation name"
            value={draft}
            ref={(el) => el?.focus()}
            onInput={(event) => setDraft(event.currentTarget.value)}
            onKeyDown={(event) => event.key === 'Escape' && setDraft(undefined)}
          />
          <button type="submit" class="button small">
            Save
          </button>
        </form>
      </li>
    );
  }
  return (
    <li class={`conversation${isCurrent ? ' current' : ''}`}>
      <button
        type="button"
        class="conversation-open"
        aria-current={isCurrent ? 'true' : undefined}
        onClick={() => chat.select(conversation.id)}
        disabled={chat.isBusy && !isCurrent}
      >
        {conversation.title}
      </button>
      <button
        type="button"
        class="icon-button"
        aria-label={`Rename ${conversation.title}`}
        title="Rename"
        onClick={() => setDraft(conversation.title)}
      >
        <svg viewBox="0 0 16 16" aria-hidden="true">
          <path d="M11.5 2.5l2 2L6 12l-2.5.5L4 10z" />
        </svg>
      </button>
      <button
        type="button"
        class="icon-button"
        aria-label={`Delete ${conversation.title}`}
        title="Delete"
        onClick={() => chat.remove(conversation.id)}
        disabled={chat.isBusy && isCurrent}
      >
        <svg viewBox="0 0 16 16" aria-hidden="true">
          <path d="M3 4.5h10M6.5 4.5V3h3v1.5M4.5 4.5l.7 8.5h5.6l.7-8.5" />
        </svg>
      </button>
    </li>
  );
}

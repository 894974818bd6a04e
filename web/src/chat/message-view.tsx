/**
 * One message of the thread. The user's: text, pictures, and Edit on the last one. The
 * assistant's: the reasoning in a collapsible block (open while it streams), the answer as
 * markdown, each function call with its arguments and a field for its result, the status, any
 * API error as the API gave it, and Regenerate on the last answer.
 */
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { CodeBlock, Markdown } from '../markdown.tsx';
import { ErrorBox } from '../error-box.tsx';
import type { AssistantMessage, ToolCall, UserMessage } from './conversations.ts';
import type { Chat } from './use-chat.ts';

export function UserMessageView(props: { message: UserMessage; chat: Chat; canEdit: boolean }): JSX.Element {
  const { message, chat, canEdit } = props;
  const [draft, setDraft] = useState<string | undefined>();
  return (
    <article class="message user" aria-label="You">
      {message.images.length > 0 ? (
        <div class="attachments">
          {message.images.map((image, i) =>
            image.dataUrl ? (
              <img key={i} src={image.dataUrl} alt={image.name} class="thumbnail" />
            ) : (
              <span key={i} class="thumbnail missing">
                {image.name}
              </span>
            ),
          )}
        </div>
      ) : null}
      {draft === undefined ? (
        <div class="bubble">{message.text}</div>
      ) : (
        <form
          class="edit-form"
          onSubmit={(event) => {
            event.preventDefault();
            if (draft.trim() === '') return;
            chat.editLast(draft);
            setDraft(undefined);
          }}
        >
          <textarea
            class="input"
            aria-label="Edit message"
            value={draft}
            rows={3}
            onInput={(event) => setDraft(event.currentTarget.value)}
          />
          <div class="row end">
            <button type="button" class="button ghost" onClick={() => setDraft(undefined)}>
              Cancel
            </button>
            <button type="submit" class="button primary">
              Send edited message
            </button>
          </div>
        </form>
      )}
      {canEdit && draft === undefined ? (
        <div class="message-actions">
          <button type="button" class="button small ghost" onClick={() => setDraft(message.text)}>
            Edit
          </button>
        </div>
      ) : null}
    </article>
  );
}

export function AssistantMessageView(props: { message: AssistantMessage; chat: Chat; isLast: boolean }): JSX.Element {
  const { message, chat, isLast } = props;
  const isStreaming = message.status === 'streaming';
  const [reasoningOpen, setReasoningOpen] = useState<boolean | undefined>();
  const open = reasoningOpen ?? (isStreaming && message.text === '' && message.calls.length === 0);
  return (
    <article
      class="message assistant"
      aria-label="Maya"
      aria-busy={isStreaming ? 'true' : undefined}
      data-response-id={message.responseId}
    >
      {message.reasoning !== '' ? (
        <details class="reasoning" open={open}>
          <summary
            onClick={(event) => {
              event.preventDefault(); // the open state is this component's: it follows the stream until clicked
              setReasoningOpen(!open);
            }}
          >
            {isStreaming && message.text === '' ? 'Reasoning…' : 'Reasoning'}
          </summary>
          <div class="reasoning-text">{message.reasoning}</div>
        </details>
      ) : null}
      {message.text === '' ? null : message.format === 'json' ? (
        <CodeBlock code={prettyJson(message.text)} lang="json" />
      ) : (
        <Markdown text={message.text} />
      )}
      {message.calls.map((call) => (
        <ToolCallView key={call.callId} call={call} message={message} chat={chat} canAnswer={isLast && !chat.isBusy} />
      ))}
      {isStreaming && message.text === '' && message.reasoning === '' && message.calls.length === 0 ? (
        <p class="muted typing">Waiting for the model…</p>
      ) : null}
      {message.error ? <ErrorBox error={message.error} /> : null}
      <div class="message-footer">
        <StatusLabel message={message} />
        {isLast && !chat.isBusy ? (
          <button type="button" class="button small ghost" onClick={() => chat.regenerate()}>
            Regenerate
          </button>
        ) : null}
      </div>
    </article>
  );
}

function StatusLabel({ message }: { message: AssistantMessage }): JSX.Element | null {
  const text = {
    streaming: 'Streaming…',
    completed: message.outputTokens !== undefined ? `${message.outputTokens} tokens` : 'Done',
    incomplete: 'Stopped at the output limit',
    failed: 'Failed',
    cancelled: 'Stopped',
    error: 'Error',
  }[message.status];
  return <span class={`status status-${message.status}`}>{text}</span>;
}

function prettyJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

function ToolCallView(props: {
  call: ToolCall;
  message: AssistantMessage;
  chat: Chat;
  canAnswer: boolean;
}): JSX.Element {
  const { call, message, chat, canAnswer } = props;
  const [draft, setDraft] = useState('');
  const fieldId = `result-${call.callId}`;
  return (
    <section class="tool-call" aria-label={`Tool call ${call.name}`}>
      <header>
        <span class="tag">Tool call</span> <code>{call.name}</code>
      </header>
      <pre class="arguments" aria-label={`Arguments of ${call.name}`}>
        {prettyJson(call.arguments)}
      </pre>
      {call.output !== undefined ? (
        <div class="tool-result">
          <span class="tag">Result</span>
          <pre>{call.output}</pre>
        </div>
      ) : canAnswer && message.status === 'completed' ? (
        <form
          class="tool-result-form"
          onSubmit={(event) => {
            event.preventDefault();
            chat.answerCall(message, call.callId, draft);
          }}
        >
          <label for={fieldId}>Result of {call.name}</label>
          <textarea
            id={fieldId}
            class="input mono"
            rows={3}
            value={draft}
            placeholder='{"temperature": 21, "condition": "sunny"}'
            onInput={(event) => setDraft(event.currentTarget.value)}
          />
          <div class="row end">
            <button type="submit" class="button primary">
              Send result
            </button>
          </div>
        </form>
      ) : null}
    </section>
  );
}

/**
 * The message box: Enter sends (Shift+Enter is a new line), Stop aborts the stream in flight,
 * and, when the model has vision, a button attaches pictures (sent as input_image data URLs).
 */
import type { JSX } from 'preact';
import { useRef, useState } from 'preact/hooks';
import type { ImageAttachment } from './conversations.ts';
import type { Chat } from './use-chat.ts';

const IMAGE_TYPES = 'image/png,image/jpeg,image/webp,image/gif';

function readDataUrl(file: File): Promise<string> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result));
    reader.onerror = () => reject(reader.error ?? new Error('cannot read the file'));
    reader.readAsDataURL(file);
  });
}

export function Composer({ chat, hasVision }: { chat: Chat; hasVision: boolean }): JSX.Element {
  const [text, setText] = useState('');
  const [images, setImages] = useState<ImageAttachment[]>([]);
  const fileInput = useRef<HTMLInputElement>(null);
  const send = () => {
    if (chat.isBusy || text.trim() === '') return;
    chat.send(text.trim(), images);
    setText('');
    setImages([]);
  };
  const attach = async (files: FileList | null) => {
    const added = await Promise.all(
      [...(files ?? [])].map(async (file) => ({ name: file.name, dataUrl: await readDataUrl(file) })),
    );
    setImages((current) => [...current, ...added]);
    if (fileInput.current) fileInput.current.value = '';
  };
  return (
    <form
      class="composer"
      onSubmit={(event) => {
        event.preventDefault();
        send();
      }}
    >
      {images.length > 0 ? (
        <ul class="attachments" aria-label="Attached pictures">
          {images.map((image, i) => (
            <li key={i}>
              <img src={image.dataUrl} alt={image.name} class="thumbnail" />
              <button
                type="button"
                class="icon-button remove"
                aria-label={`Remove ${image.name}`}
                onClick={() => setImages(images.filter((_, j) => j !== i))}
              >
                ×
              </button>
            </li>
          ))}
        </ul>
      ) : null}
      <label for="message" class="visually-hidden">
        Message
      </label>
      <textarea
        id="message"
        class="input message-input"
        rows={3}
        placeholder="Message Maya — Enter to send, Shift+Enter for a new line"
        value={text}
        onInput={(event) => setText(event.currentTarget.value)}
        onKeyDown={(event) => {
          if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
            event.preventDefault();
            send();
          }
        }}
      />
      <div class="composer-actions">
        {hasVision ? (
          <>
            <input
              ref={fileInput}
              id="attach-image"
              type="file"
              accept={IMAGE_TYPES}
              multiple
              class="visually-hidden"
              tabIndex={-1}
              aria-hidden="true"
              onChange={(event) => void attach(event.currentTarget.files)}
            />
            <button type="button" class="button ghost" onClick={() => fileInput.current?.click()}>
              Attach picture
            </button>
          </>
        ) : null}
        <span class="spacer" />
        {chat.isBusy ? (
          <button type="button" class="button danger" onClick={() => chat.stop()}>
            Stop
          </button>
        ) : (
          <button type="submit" class="button primary" disabled={text.trim() === ''}>
            Send
          </button>
        )}
      </div>
    </form>
  );
}

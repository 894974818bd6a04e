/**
 * The key form, shown when the API answers 401: the key is kept in this tab's session storage
 * only and sent with every call; a wrong key brings the form back with the API's own 401.
 */
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import type { ApiErrorInfo } from './api.ts';
import { ErrorBox } from './error-box.tsx';

export function KeyForm({ error, onKey }: { error?: ApiErrorInfo; onKey: (key: string) => void }): JSX.Element {
  const [key, setKey] = useState('');
  return (
    <form
      class="card key-form"
      onSubmit={(event) => {
        event.preventDefault();
        if (key.trim() !== '') onKey(key.trim());
      }}
    >
      <h1>This server needs an API key</h1>
      <p class="muted">
        The key stays in this browser tab (session storage) and is sent with every request to this server only.
      </p>
      <label for="api-key">API key</label>
      <input
        id="api-key"
        class="input"
        type="password"
        autocomplete="off"
        value={key}
        onInput={(event) => setKey(event.currentTarget.value)}
      />
      {error ? <ErrorBox error={error} /> : null}
      <button type="submit" class="button primary" disabled={key.trim() === ''}>
        Continue
      </button>
    </form>
  );
}

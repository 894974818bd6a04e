/** An API error as the API gave it: its message, and its status, type, code and param. */
import type { JSX } from 'preact';
import type { ApiErrorInfo } from './api.ts';

export function ErrorBox({ error }: { error: ApiErrorInfo }): JSX.Element {
  const facts = [
    error.status !== undefined ? `HTTP ${error.status}` : undefined,
    error.type ?? undefined,
    error.code ? `code ${error.code}` : undefined,
    error.param ? `param ${error.param}` : undefined,
  ].filter((fact) => fact !== undefined);
  return (
    <div class="error-box" role="alert">
      <p class="error-message">{error.message}</p>
      {facts.length > 0 ? <p class="error-facts">{facts.join(' · ')}</p> : null}
    </div>
  );
}

/**
 * The API key the user typed, kept in this tab's session storage only (never local storage, never
 * in the page's files): it goes with every API call and is gone when the tab closes.
 */
const KEY = 'maya.apiKey';

export function apiKey(): string | undefined {
  return sessionStorage.getItem(KEY) ?? undefined;
}

export function setApiKey(key: string | undefined): void {
  if (key === undefined || key === '') sessionStorage.removeItem(KEY);
  else sessionStorage.setItem(KEY, key);
}

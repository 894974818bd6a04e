/**
 * An in-process app with the store handlers bound and two API keys, plus the scopes those keys
 * map to, for the getResponse / deleteResponse / listInputItems tests.
 */
import { scopeOf } from '../../handlers/auth.ts';
import { deleteResponse } from '../../handlers/delete-response.ts';
import { getResponse } from '../../handlers/get-response.ts';
import { listInputItems } from '../../handlers/list-input-items.ts';
import { DEFAULT_RESPONSES_SETTINGS, type ResponsesSettings } from '../../config/settings.ts';
import { MemoryResponseStore } from '../../store/responses/memory-response-store.ts';
import { createTestApp, listenTestApp, type TestAppOptions } from '../helpers/test-app.ts';

export const KEY_A = 'sk-test-key-a';
export const KEY_B = 'sk-test-key-b';
export const SCOPE_A = scopeOf(KEY_A);
export const SCOPE_B = scopeOf(KEY_B);
export const storeHandlers = { getResponse, deleteResponse, listInputItems };

export interface StoreAppOptions {
  settings?: Partial<ResponsesSettings>;
  now?: () => number;
}

function appOptions(options: StoreAppOptions): TestAppOptions & { store: MemoryResponseStore } {
  const settings = { ...DEFAULT_RESPONSES_SETTINGS, ...options.settings };
  const store = new MemoryResponseStore({ settings, now: options.now });
  return { server: { apiKeys: [KEY_A, KEY_B] }, settings, handlers: storeHandlers, deps: { store }, store };
}

export function createStoreApp(options: StoreAppOptions = {}) {
  const prepared = appOptions(options);
  return { ...createTestApp(prepared), store: prepared.store };
}

export async function listenStoreApp(options: StoreAppOptions = {}) {
  const prepared = appOptions(options);
  return { ...(await listenTestApp(prepared)), store: prepared.store };
}

export const bearer = (key: string) => ({ Authorization: `Bearer ${key}` });

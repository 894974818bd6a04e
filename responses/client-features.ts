/**
 * The opt-in client features around the Responses service (ServerSettings.optIns): item
 * references resolved before planning and indexed when a response is saved (item-references.ts),
 * encrypted reasoning opened on input and sealed on output (encrypted-reasoning.ts), also as the
 * `signature` of Anthropic thinking blocks. With the settings off every function here leaves the
 * request as it is.
 */
import type { ResponsesOptIns } from '../config/settings.ts';
import type { ResponseStore } from '../store/responses/response-store.ts';
import { ReasoningCipher, type ReasoningContent } from './encrypted-reasoning.ts';
import { ItemIndex, resolveItemReferences } from './item-references.ts';

/** What these features read of the service's dependencies. */
export interface ClientFeatureDeps {
  readonly store: ResponseStore;
  readonly server?: { readonly optIns?: ResponsesOptIns };
}

/** The item index of a store (item references), one per store instance. */
const itemIndexes = new WeakMap<ResponseStore, ItemIndex>();
function itemIndexOf(store: ResponseStore): ItemIndex {
  let index = itemIndexes.get(store);
  if (!index) itemIndexes.set(store, (index = new ItemIndex()));
  return index;
}

/** The reasoning cipher, one per configured key (the process key when none is set). */
const ciphers = new WeakMap<ResponsesOptIns, ReasoningCipher>();
function cipherOf(optIns: ResponsesOptIns): ReasoningCipher {
  let cipher = ciphers.get(optIns);
  if (!cipher) ciphers.set(optIns, (cipher = new ReasoningCipher(optIns.reasoningKey)));
  return cipher;
}

/**
 * The request's input with the opt-in features applied: encrypted reasoning decrypted into
 * `content` (400 invalid_encrypted_content when it does not open for this scope), then item
 * references replaced by the stored items they name (404 for an id the caller has no item for).
 */
export async function resolveInput(
  deps: ClientFeatureDeps,
  scope: string,
  input: string | Record<string, unknown>[],
): Promise<string | Record<string, unknown>[]> {
  const optIns = deps.server?.optIns;
  if (typeof input === 'string' || optIns === undefined) return input;
  let items = input;
  if (optIns.encryptedReasoning) {
    const cipher = cipherOf(optIns);
    items = items.map((item, i) =>
      item.type === 'reasoning' && typeof item.encrypted_content === 'string'
        ? { ...item, content: cipher.open(scope, item.encrypted_content, `input[${i}].encrypted_content`) }
        : item,
    );
  }
  if (optIns.itemReferences) items = await resolveItemReferences(deps.store, itemIndexOf(deps.store), scope, items);
  return items;
}

/** Seals output reasoning when the request asked for `reasoning.encrypted_content` and it is on. */
export function reasoningSealer(
  deps: ClientFeatureDeps,
  scope: string,
  request: { include?: readonly string[] | null },
): ((content: ReasoningContent) => string) | undefined {
  const optIns = deps.server?.optIns;
  if (optIns?.encryptedReasoning !== true || request.include?.includes('reasoning.encrypted_content') !== true)
    return undefined;
  const cipher = cipherOf(optIns);
  return (content) => cipher.seal(scope, content);
}

/** Seals reasoning for a credential scope, and opens what was sealed for it (400 at `param` otherwise). */
export interface ReasoningSeal {
  seal(content: ReasoningContent): string;
  open(token: string, param: string): ReasoningContent;
}

/**
 * The `signature` of Anthropic thinking blocks: with encrypted reasoning on, the block's reasoning
 * sealed for `scope` exactly as `encrypted_content` is (so a stateless client's replayed thinking
 * is authenticated and, with `display: omitted`, carried); undefined when it is off (signatures
 * are then empty and not checked).
 */
export function thinkingSignatures(
  deps: { readonly server?: { readonly optIns?: ResponsesOptIns } },
  scope: string,
): ReasoningSeal | undefined {
  const optIns = deps.server?.optIns;
  if (optIns?.encryptedReasoning !== true) return undefined;
  const cipher = cipherOf(optIns);
  return { seal: (content) => cipher.seal(scope, content), open: (token, param) => cipher.open(scope, token, param) };
}

/** With item references on, records that the stored response `responseId` holds `items`. */
export function indexStoredItems(
  deps: ClientFeatureDeps,
  scope: string,
  responseId: string,
  items: readonly { id?: unknown }[],
): void {
  if (deps.server?.optIns?.itemReferences === true) itemIndexOf(deps.store).add(scope, responseId, items);
}

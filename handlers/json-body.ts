/**
 * Parsing a request body's bytes: UTF-8 (a leading byte-order mark allowed), JSON, then the
 * nesting bound, checked iteratively before anything else walks the value (schemas, templates,
 * validators and structured cloning all recurse). The same function runs inline and on the JSON
 * worker (json-worker.ts), so both paths answer alike.
 */

/**
 * Deepest nesting of objects/arrays a body may have. The deepest legitimate bodies are schemas
 * (the spec allows 24 schema levels, each a `properties.<name>` pair) inside `text.format` or
 * `tools[i].parameters`: well under 64.
 */
export const MAX_BODY_DEPTH = 64;

export type ParsedBody =
  | { kind: 'empty' }
  | { kind: 'invalid' }
  /** Nested deeper than MAX_BODY_DEPTH at `path` ('' = the body itself). */
  | { kind: 'too_deep'; path: string }
  | { kind: 'value'; value: unknown };

export function parseBody(bytes: Uint8Array): ParsedBody {
  const text = new TextDecoder('utf-8').decode(bytes);
  if (text.trim() === '') return { kind: 'empty' };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { kind: 'invalid' };
  }
  const path = tooDeepAt(value);
  return path === undefined ? { kind: 'value', value } : { kind: 'too_deep', path };
}

/** The path where `value` passes MAX_BODY_DEPTH, or undefined. */
function tooDeepAt(value: unknown): string | undefined {
  const stack: Array<[unknown, number, string]> = [[value, 0, '']];
  while (stack.length > 0) {
    const [node, depth, path] = stack.pop()!;
    if (typeof node !== 'object' || node === null) continue;
    if (depth >= MAX_BODY_DEPTH) return path;
    if (Array.isArray(node)) node.forEach((child, i) => stack.push([child, depth + 1, `${path}[${i}]`]));
    else for (const [key, child] of Object.entries(node)) stack.push([child, depth + 1, path ? `${path}.${key}` : key]);
  }
  return undefined;
}

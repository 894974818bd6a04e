/**
 * Typing of tool-call argument values written as bare text (GLM `<arg_value>`): a tool's JSON
 * schema decides whether the text is a string or JSON. The rule follows vLLM's glm45 parser and
 * the zai reference parser (string-typed parameters keep the raw text; everything else is
 * JSON-parsed, with Python literals and the raw string as fallbacks): vLLM
 * vllm/tool_parsers/glm4_moe_tool_parser.py, zai-org/GLM-4.5 resources/glm_4.6_tir_guide.md.
 */
import type { ToolSpec } from './dialect.ts';

const PYTHON_LITERALS: Record<string, unknown> = { True: true, False: false, None: null };

/** JSON types a parameter may take per the schema, or null when the schema does not say. */
export function parameterTypes(tool: ToolSpec | undefined, key: string): Set<string> | null {
  const props = tool?.parameters.properties;
  if (!props || typeof props !== 'object') return null;
  return schemaTypes((props as Record<string, unknown>)[key]);
}

function schemaTypes(schema: unknown): Set<string> | null {
  if (!schema || typeof schema !== 'object') return null;
  const s = schema as Record<string, unknown>;
  if (typeof s.type === 'string') return new Set([s.type]);
  if (Array.isArray(s.type)) return new Set(s.type.filter((t): t is string => typeof t === 'string'));
  const branches = (Array.isArray(s.anyOf) ? s.anyOf : Array.isArray(s.oneOf) ? s.oneOf : null) as unknown[] | null;
  if (branches) {
    const all = new Set<string>();
    for (const b of branches) {
      const t = schemaTypes(b);
      if (!t) return null;
      for (const x of t) all.add(x);
    }
    return all;
  }
  const values = Array.isArray(s.enum) ? s.enum : 'const' in s ? [s.const] : null;
  if (values) return new Set(values.map(jsonType));
  return null;
}

function jsonType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

/** True when the value is always a string: stream it as a JSON string while it arrives. */
export function isStringOnly(types: Set<string> | null): boolean {
  return types !== null && types.size === 1 && types.has('string');
}

function matches(v: unknown, types: Set<string>): boolean {
  const t = jsonType(v);
  return types.has(t) || (t === 'integer' && types.has('number'));
}

/** Types a raw (trimmed) value through the schema types; see the module comment. */
export function typeArgValue(raw: string, types: Set<string> | null): unknown {
  if (isStringOnly(types)) return raw;
  let parsed: { ok: boolean; value?: unknown } = { ok: false };
  try {
    parsed = { ok: true, value: JSON.parse(raw) as unknown };
  } catch {
    if (raw in PYTHON_LITERALS) parsed = { ok: true, value: PYTHON_LITERALS[raw] };
  }
  if (!parsed.ok) return raw;
  if (types && !matches(parsed.value, types) && types.has('string')) return raw;
  return parsed.value;
}

/**
 * The arguments of a past call as an object, for encoders that iterate its members (GLM
 * templates, DSML). Accepts a JSON object text, a double-encoded one (DeepSeek V4.1's encoder
 * tolerates both), and wraps anything else as `{arguments: raw}` so no history is lost.
 */
export function argumentsObject(raw: string): Record<string, unknown> {
  let value: unknown = raw;
  for (let i = 0; i < 2 && typeof value === 'string'; i++) {
    try {
      value = JSON.parse(value);
    } catch {
      break;
    }
  }
  if (value && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
  return { arguments: raw };
}

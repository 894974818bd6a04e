/**
 * Python `json.dumps(value, ensure_ascii=False)` formatting (separators `", "` and `": "`), the
 * JSON form prompts embed (DeepSeek encoders, the `tojson` of HF templates). Strings escape like
 * JSON.stringify, which matches Python for every well-formed string (`\"`, `\\`, `\n`, `\u001f`;
 * non-ASCII kept). Numbers lose Python's int/float distinction (`2.0` prints as `2`).
 */
export function pythonJson(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number')
    return Number.isFinite(value) ? JSON.stringify(value) : value > 0 ? 'Infinity' : value < 0 ? '-Infinity' : 'NaN';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (Array.isArray(value)) return `[${value.map(pythonJson).join(', ')}]`;
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}: ${pythonJson(v)}`).join(', ')}}`;
  }
  return JSON.stringify(String(value));
}

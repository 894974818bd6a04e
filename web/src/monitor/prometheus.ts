/**
 * The Prometheus text format, as far as the Monitor reads it: sample lines `name{labels} value`,
 * summed over label sets by name (so a histogram's `_sum` and `_count` read as one number each).
 */
export function parsePrometheus(text: string): Map<string, number> {
  const values = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (!match) continue;
    const [, name, labels, raw] = match;
    const value = Number(raw);
    if (!Number.isFinite(value) || labels?.includes('le=')) continue;
    values.set(name!, (values.get(name!) ?? 0) + value);
  }
  return values;
}

/**
 * A /v1/status section this page has no place for (speculative decoding, MCP servers, and what
 * later servers add), shown under its name as a list of its values, so it appears as soon as the
 * server reports it.
 */
import type { JSX } from 'preact';

const ACRONYMS = new Set(['mcp', 'kv', 'id', 'url', 'api']);

function label(name: string): string {
  const text = name
    .split('_')
    .map((word) => (ACRONYMS.has(word) ? word.toUpperCase() : word))
    .join(' ');
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function shown(value: unknown): string {
  if (typeof value === 'number') return Number.isInteger(value) ? String(value) : value.toFixed(3);
  if (typeof value === 'string' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value))
    return value
      .map((item) => (item && typeof item === 'object' && 'name' in item ? String(item.name) : shown(item)))
      .join(', ');
  return JSON.stringify(value);
}

export function StatusSection({ name, section }: { name: string; section: Record<string, unknown> }): JSX.Element {
  return (
    <section class="status-section" aria-label={label(name)}>
      <h3>{label(name)}</h3>
      <dl class="facts">
        {Object.entries(section).map(([key, value]) => (
          <div key={key}>
            <dt>{label(key)}</dt>
            <dd>{shown(value)}</dd>
          </div>
        ))}
      </dl>
    </section>
  );
}

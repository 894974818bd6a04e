/**
 * An MCP tool result as the text the model reads: text blocks as they are, a resource's text,
 * other blocks named in brackets (an image is never shown to the model), structuredContent as JSON
 * when there is no content; and the cap on its length, with the cut marked so the model knows.
 */
type Block = { type?: unknown } & Record<string, unknown>;

export function resultText(result: { content?: unknown; structuredContent?: unknown }): string {
  const parts: string[] = [];
  for (const block of Array.isArray(result.content) ? (result.content as Block[]) : []) {
    if (block.type === 'text') parts.push(String(block.text ?? ''));
    else if (block.type === 'resource') {
      const resource = (block.resource ?? {}) as Record<string, unknown>;
      parts.push(
        typeof resource.text === 'string' ? resource.text : `[resource ${String(resource.uri ?? '')}: not shown]`,
      );
    } else if (block.type === 'resource_link') parts.push(`[resource link: ${String(block.uri ?? '')}]`);
    else if (block.type === 'image' || block.type === 'audio')
      parts.push(`[${block.type} (${String(block.mimeType ?? '?')}): not shown to the model]`);
    else parts.push(JSON.stringify(block));
  }
  if (parts.length === 0 && result.structuredContent !== undefined)
    parts.push(JSON.stringify(result.structuredContent));
  return parts.join('\n');
}

/** `text` cut to `limit` characters (0 = no limit), the cut marked at the end. */
export function truncateResult(text: string, limit: number): { text: string; chars: number; truncated: boolean } {
  const chars = text.length;
  if (limit <= 0 || chars <= limit) return { text, chars, truncated: false };
  return {
    text: `${text.slice(0, limit)}\n[truncated: the tool returned ${chars} characters; the first ${limit} are shown]`,
    chars,
    truncated: true,
  };
}

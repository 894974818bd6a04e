/**
 * Stop sequences (Anthropic's `stop_sequences`): texts that end the answer where one first
 * appears in its text, the sequence itself left out. The matcher sits between the dialect parser
 * and the output: text that might be the start of a sequence is held back until the next text
 * decides, so no published delta ever holds a part of a sequence that then completes. Only the
 * answer's text is matched (not reasoning, not tool-call arguments), as the text is what a stop
 * sequence delimits.
 */
export class StopSequenceMatcher {
  private held = '';
  /** The sequence that ended the text, once one has. */
  matched: string | undefined;

  constructor(private readonly sequences: readonly string[]) {}

  /**
   * The text safe to publish after `text`: everything before a match (and nothing after one,
   * ever), else everything but the longest tail that begins some sequence.
   */
  push(text: string): string {
    if (this.matched !== undefined) return '';
    const buffer = this.held + text;
    let at = -1;
    for (const sequence of this.sequences) {
      const index = buffer.indexOf(sequence);
      if (index >= 0 && (at < 0 || index < at)) {
        at = index;
        this.matched = sequence;
      }
    }
    if (at >= 0) {
      this.held = '';
      return buffer.slice(0, at);
    }
    const keep = this.heldLength(buffer);
    this.held = buffer.slice(buffer.length - keep);
    return buffer.slice(0, buffer.length - keep);
  }

  /** The held-back text, released: the text ended (or other output follows) without a match. */
  flush(): string {
    const out = this.held;
    this.held = '';
    return out;
  }

  /** Length of the longest tail of `buffer` that is a proper prefix of a sequence. */
  private heldLength(buffer: string): number {
    let keep = 0;
    for (const sequence of this.sequences) {
      for (let n = Math.min(sequence.length - 1, buffer.length); n > keep; n--) {
        if (buffer.endsWith(sequence.slice(0, n))) {
          keep = n;
          break;
        }
      }
    }
    return keep;
  }
}

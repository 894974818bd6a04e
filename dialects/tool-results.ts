/**
 * Ordering of tool results in history. Clients may send a group of `function_call_output`
 * items in another order than the calls; the prompt formats either match results to calls by
 * position (GLM, DeepSeek V3.1, V3.2) or sort them by call order themselves (DeepSeek V4
 * `sort_tool_results_by_call_order`), so every dialect renders each run of tool turns in the
 * order of the preceding assistant turn's calls. Results with unknown ids keep their place
 * after the known ones (stable).
 */
import type { ChatTurn } from './dialect.ts';

export function orderToolResults(turns: readonly ChatTurn[]): ChatTurn[] {
  const out: ChatTurn[] = [];
  let order = new Map<string, number>();
  for (let i = 0; i < turns.length;) {
    const turn = turns[i]!;
    if (turn.role !== 'tool') {
      if (turn.role === 'assistant' && turn.toolCalls?.length) order = new Map(turn.toolCalls.map((c, k) => [c.id, k]));
      out.push(turn);
      i++;
      continue;
    }
    let j = i;
    while (j < turns.length && turns[j]!.role === 'tool') j++;
    const run = turns
      .slice(i, j)
      .map((t, k) => ({ t, k, rank: order.get(t.toolCallId ?? '') ?? Number.MAX_SAFE_INTEGER }));
    run.sort((a, b) => a.rank - b.rank || a.k - b.k);
    out.push(...run.map((r) => r.t));
    i = j;
  }
  return out;
}

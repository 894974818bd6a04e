/**
 * The chaos run's checks once the faults have stopped and the bed is whole:
 *   - every task ends terminal (polled through the balancer, at most a minute after the traffic);
 *   - every task of a killed or stopped replica that was not yet terminal at the signal was seen
 *     terminal within LEASE_MS + HEARTBEAT_MS + LEASE_SLACK_MS of it;
 *   - every response acknowledged as stored answers, on EVERY replica (asked directly), the output
 *     it was acknowledged with (else `lost` or `wrong_data`);
 *   - every `completed` answer is the greedy rerun's answer: the same request (same input, same
 *     previous_response_id, temperature 0, same max_output_tokens) with store:false, on one
 *     replica, must give the same output text; a completed answer that is a strict prefix of its
 *     rerun is `truncated`, any other difference `wrong_data`.
 */
import type { ReplicaBed } from '../../test/helpers/replica-bed.ts';
import { HEARTBEAT_MS, LEASE_MS } from '../../store/jobs/redis-job-mirror.ts';
import { type ChaosClient, type Ledger, type ResponseBody, outputText } from './chaos-client.ts';
import type { FaultWindow } from './faults.ts';
import { MAX_OUTPUT_TOKENS, TASK_MAX_OUTPUT_TOKENS, type Traffic } from './traffic.ts';

/** Polling (250 ms) and the first sweep that notices: what a task's terminal state may lag by on top of the lease. */
export const LEASE_SLACK_MS = 1_500;
export const LEASE_BOUND_MS = LEASE_MS + HEARTBEAT_MS + LEASE_SLACK_MS;

export interface VerifyFigures {
  storedChecked: number;
  /** Acknowledged stored responses that some replica no longer answered with their output. */
  storedLost: number;
  replicasAsked: number;
  rerunsCompared: number;
  tasks: number;
  tasksByStatus: Record<string, number>;
  /** Tasks of killed/stopped replicas, not terminal at the signal, and the slowest one's time to terminal. */
  orphanedTasks: number;
  slowestOrphanMs: number;
  /** Failed tasks by error message. */
  failures: Record<string, number>;
  /** Tasks failed for an expired lease whose replica was never killed or stopped (a false alarm). */
  falseOrphans: number;
}

export async function verify(
  bed: ReplicaBed,
  client: ChaosClient,
  traffic: Traffic,
  ledger: Ledger,
  windows: FaultWindow[],
): Promise<VerifyFigures> {
  await traffic.pollTasks(() => true);
  const tasks = [...ledger.tasks.values()];
  for (const task of tasks.filter((each) => each.terminalAt === undefined))
    ledger.violate(
      'task_not_terminal',
      `task ${task.id} (owner ${task.owner}) never ended; last seen ${task.lastSeen}`,
    );

  let orphanedTasks = 0;
  let slowestOrphanMs = 0;
  for (const window of windows) {
    if (window.signalledAt === undefined) continue;
    const at = window.signalledAt;
    for (const task of tasks) {
      if (task.owner !== window.victim || task.createdAt > at || (task.terminalAt ?? Infinity) <= at) continue;
      orphanedTasks++;
      const took = (task.terminalAt ?? Infinity) - at;
      slowestOrphanMs = Math.max(slowestOrphanMs, took);
      if (took > LEASE_BOUND_MS)
        ledger.violate(
          'task_lease',
          `task ${task.id} of ${window.name} ${window.victim}: terminal (${task.status}) ${Math.round(took)} ms after the signal`,
        );
    }
  }

  const lostIds = new Set<string>();
  for (const ack of ledger.stored.values()) {
    for (const replica of bed.replicas) {
      const result = await client.json('GET', `/responses/${ack.id}`, undefined, replica.origin);
      if (
        result.answer === 200 &&
        JSON.stringify((result.body as unknown as ResponseBody).output) === JSON.stringify(ack.output)
      )
        continue;
      lostIds.add(ack.id);
      ledger.violate(
        result.answer === 404 ? 'lost' : 'wrong_data',
        `stored ${ack.id} (${ack.via}) on ${replica.name}: ${result.answer}${result.answer === 200 ? ' with other output' : ''}`,
      );
    }
  }

  let rerunsCompared = 0;
  const reruns = new Map<string, string>();
  for (const ack of ledger.stored.values()) {
    if (ack.status !== 'completed') continue;
    const key = `${ack.previousId ?? ''}\u0000${ack.input}\u0000${ack.via === 'background'}`;
    let expected = reruns.get(key);
    if (expected === undefined) {
      const result = await client.json(
        'POST',
        '/responses',
        {
          model: 'maya-demo',
          input: ack.input,
          store: false,
          temperature: 0,
          max_output_tokens: ack.via === 'background' ? TASK_MAX_OUTPUT_TOKENS : MAX_OUTPUT_TOKENS,
          ...(ack.previousId ? { previous_response_id: ack.previousId } : {}),
        },
        bed.replicas[0]!.origin,
      );
      if (result.answer !== 200) {
        ledger.violate('wrong_data', `rerun of ${ack.id} answered ${result.answer}`);
        continue;
      }
      expected = outputText((result.body as unknown as ResponseBody).output);
      reruns.set(key, expected);
    }
    rerunsCompared++;
    const got = outputText(ack.output);
    if (got === expected) continue;
    const isPrefix = expected.startsWith(got);
    ledger.violate(
      isPrefix ? 'truncated' : 'wrong_data',
      `completed ${ack.id} (${ack.via}): ${got.length} chars, its greedy rerun ${expected.length}`,
    );
  }

  const failures: Record<string, number> = {};
  let falseOrphans = 0;
  for (const task of tasks.filter((each) => each.status === 'failed')) {
    failures[task.error ?? '?'] = (failures[task.error ?? '?'] ?? 0) + 1;
    const wasSignalled = windows.some((w) => w.victim === task.owner && (w.signalledAt ?? Infinity) >= task.createdAt);
    if (/lease expired/.test(task.error ?? '') && !wasSignalled) falseOrphans++;
  }
  const tasksByStatus: Record<string, number> = {};
  for (const task of tasks) tasksByStatus[task.status ?? 'none'] = (tasksByStatus[task.status ?? 'none'] ?? 0) + 1;
  return {
    storedChecked: ledger.stored.size,
    storedLost: lostIds.size,
    replicasAsked: bed.replicas.length,
    rerunsCompared,
    tasks: tasks.length,
    tasksByStatus,
    orphanedTasks,
    slowestOrphanMs: Math.round(slowestOrphanMs),
    failures,
    falseOrphans,
  };
}

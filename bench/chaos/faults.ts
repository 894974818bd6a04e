/**
 * The chaos run's faults, one at a time with a quiet gap between them, in a cycle until the time
 * is up (and always one whole cycle):
 *   kill9     SIGKILL a random replica (after a burst of background tasks sent to it directly),
 *             restart it at once;
 *   failover  SENTINEL FAILOVER while the primary is healthy;
 *   sigterm   SIGTERM another replica (after a burst of tasks), which must exit 0; restart it;
 *   pause     SIGSTOP the Redis primary for PAUSE_MS, then SIGCONT.
 * Each fault is a window from its start until the bed is whole again (the replica restarted and
 * routed to by haproxy; the old primary a replica in sync) plus SETTLE_MS: latency inside a window
 * is a fault's cost, outside it is compared with the run without faults.
 */
import type { ReplicaBed } from '../../test/helpers/replica-bed.ts';
import { now } from './chaos-client.ts';
import type { Traffic } from './traffic.ts';

export const PAUSE_MS = 1_500;
const GAP_MS = 3_000;
const SETTLE_MS = 1_000;
const BURST_TASKS = 4;

export type FaultName = 'kill9' | 'failover' | 'sigterm' | 'pause';
const CYCLE: FaultName[] = ['kill9', 'failover', 'sigterm', 'pause'];

export interface FaultWindow {
  name: FaultName;
  start: number;
  /** The bed was whole again (before SETTLE_MS). */
  recovered: number;
  end: number;
  /** The replica killed or stopped; its tasks must end within the lease. */
  victim?: string;
  /** When the signal was sent (kill9/sigterm). */
  signalledAt?: number;
  /** sigterm: the replica's exit code (must be 0). */
  exitCode?: number | null;
  detail: string;
}

export async function runFaults(
  bed: ReplicaBed,
  traffic: Traffic,
  rng: () => number,
  isTimeUp: () => boolean,
  log: (line: string) => void,
): Promise<FaultWindow[]> {
  const windows: FaultWindow[] = [];
  let lastVictim = -1;
  for (let n = 0; n < CYCLE.length || !isTimeUp(); n++) {
    const name = CYCLE[n % CYCLE.length]!;
    await new Promise((resolve) => setTimeout(resolve, GAP_MS));
    const start = now();
    let window: Omit<FaultWindow, 'end' | 'recovered' | 'start'>;
    if (name === 'kill9' || name === 'sigterm') {
      const choices = bed.replicas.map((_, i) => i).filter((i) => name === 'kill9' || i !== lastVictim);
      const index = choices[Math.floor(rng() * choices.length)]!;
      lastVictim = index;
      window = await signalReplica(bed, traffic, index, name === 'kill9' ? 'SIGKILL' : 'SIGTERM');
    } else if (name === 'failover') {
      const before = await bed.primary();
      const after = await bed.failover();
      window = { name, detail: `primary ${before.port} → ${after.port}` };
    } else {
      const primary = await bed.primary();
      primary.child.kill('SIGSTOP');
      await new Promise((resolve) => setTimeout(resolve, PAUSE_MS));
      primary.child.kill('SIGCONT');
      window = { name, detail: `primary ${primary.port} stopped ${PAUSE_MS} ms` };
    }
    const recovered = now();
    windows.push({ ...window, start, recovered, end: recovered + SETTLE_MS });
    log(`fault ${name}: ${window.detail}; whole again after ${((recovered - start) / 1000).toFixed(1)} s`);
  }
  return windows;
}

async function signalReplica(
  bed: ReplicaBed,
  traffic: Traffic,
  index: number,
  signal: 'SIGKILL' | 'SIGTERM',
): Promise<Omit<FaultWindow, 'end' | 'recovered' | 'start'>> {
  const replica = bed.replicas[index]!;
  // Tasks certain to be queued or running on the victim when the signal lands.
  await Promise.all(Array.from({ length: BURST_TASKS }, () => traffic.background(replica.origin, replica.name)));
  const signalledAt = now();
  const { code } = await bed.signalReplica(index, signal);
  await bed.startReplica(index);
  await bed.settled();
  return {
    name: signal === 'SIGKILL' ? 'kill9' : 'sigterm',
    victim: replica.name,
    signalledAt,
    ...(signal === 'SIGTERM' ? { exitCode: code } : {}),
    detail: `${signal} ${replica.name}${signal === 'SIGTERM' ? ` (exit ${code})` : ''}, restarted`,
  };
}

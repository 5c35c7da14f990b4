/**
 * The crash that asynchronous replication loses writes to, on a Sentinel topology with two
 * replicas, driven the same way for the integration test (with `durability`) and for the
 * comparison script (with and without it):
 *
 * 1. writers SET keys of their own through the pool;
 * 2. the replica that is not to be promoted is paused (SIGSTOP) for the rest of the run, so it
 *    confirms nothing and cannot be elected;
 * 3. the replica that will be promoted is paused too and its replication link cut on the master
 *    (CLIENT KILL TYPE replica): from now on it receives nothing, so it lags;
 * 4. after `lagMs` the master is SIGKILLed and the lagging replica resumed: the sentinels
 *    promote it, lacking every write of the lag window;
 * 5. once the pool follows, the other replica is resumed (the sentinels attach it to the new
 *    master) and the writers go on until `afterAcks` more writes are acknowledged.
 *
 * Every acknowledged write is then looked up on the final master.
 */
import type { SentinelPool } from '../../src/index.js';
import type { NodeAddress } from '../../src/types.js';
import { missingOn, startWrites, type Ack, type Failure } from './sentinel-helpers.js';
import type { SentinelTopology } from './topology-types.js';
import { waitFor } from './wait.js';

export interface CrashRun {
  from: NodeAddress;
  to: NodeAddress;
  acks: Ack[];
  failures: Failure[];
  /** Acknowledged writes the final master lacks. */
  lost: Ack[];
  /** Writes that failed during the lag window (step 3 to 4), by error name. */
  failuresByType: Record<string, number>;
  /** Keys written while the promoted replica lagged (failures among them). */
  lagFailures: Failure[];
  /** When the lag began and the master was killed (epoch ms). */
  lagAt: number;
  killedAt: number;
  /** The pool's `failover` event came this many ms after the kill. */
  failoverMs: number;
}

export async function crashWithLaggingReplica(
  topo: SentinelTopology,
  pool: SentinelPool,
  o: { writers: number; prefix: string; lagMs: number; afterAcks: number; timeoutMs?: number },
): Promise<CrashRun> {
  const from = await topo.currentMaster();
  const master = topo.handleFor(from)!;
  const [promoted, other] = topo.dataNodes.filter((r) => r.port !== from.port);
  if (!promoted || !other) throw new Error('crashWithLaggingReplica needs a master with two replicas');
  let failoverAt = 0;
  pool.once('failover', () => {
    failoverAt = Date.now();
  });
  const load = startWrites((k, v) => pool.set(k, v), o.writers, o.prefix);
  try {
    await load.waitForAcks(200, 'writes before the fault');
    other.pause();
    promoted.pause();
    await master.cli('CLIENT', 'KILL', 'TYPE', 'replica');
    const lagAt = Date.now();
    await waitFor(() => Date.now() - lagAt >= o.lagMs, `the lag window (${o.lagMs} ms)`, o.lagMs + 5000);
    await master.kill('SIGKILL');
    const killedAt = Date.now();
    promoted.resume();
    const to = await topo.waitForNewMaster(from, o.timeoutMs ?? 30_000);
    await waitFor(() => failoverAt > 0, 'the pool to follow the failover', o.timeoutMs ?? 30_000);
    other.resume();
    await load.waitForAcks(o.afterAcks, 'writes after the failover', o.timeoutMs ?? 30_000);
    await load.stop();
    const lost = await missingOn(to, load.acks);
    const lagFailures = load.failures.filter((f) => f.at >= lagAt && f.at <= killedAt);
    const failuresByType: Record<string, number> = {};
    for (const f of lagFailures) {
      const name = (f.error as Error)?.name ?? typeof f.error;
      failuresByType[name] = (failuresByType[name] ?? 0) + 1;
    }
    return { from, to, acks: load.acks, failures: load.failures, lost, failuresByType, lagFailures, lagAt, killedAt, failoverMs: failoverAt - killedAt };
  } finally {
    await load.stop();
    for (const r of [promoted, other]) if (r.isPaused()) r.resume();
  }
}

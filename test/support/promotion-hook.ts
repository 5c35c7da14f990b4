/**
 * Acts the moment Sentinel promotes a replica, before the failover leader can see it happen.
 *
 * The leader promotes with `MULTI; REPLICAOF NO ONE; CONFIG REWRITE; CLIENT KILL TYPE normal;
 * EXEC`, then learns of the promotion from the replica's INFO, about a second later (its
 * refresh period during a failover), and only then broadcasts the new configuration. An idle
 * normal connection to each replica is killed by that MULTI: acting on its close (pausing or
 * killing the leader) reproduces a leader that goes silent between `SLAVEOF NO ONE` and the
 * broadcast, the window in which Sentinel rolls a promotion back.
 */
import net from 'node:net';
import type { NodeAddress } from './topology.js';

export interface PromotionHook {
  /** Resolves with the replica whose connection was killed first, and when. */
  readonly fired: Promise<{ replica: NodeAddress; at: number }>;
  /** Closes the remaining connections (the hook fires at most once). */
  stop(): void;
}

/** Opens one idle connection to each of `replicas` (PING answered first) and calls `act` once, on the first that is closed by the server. */
export async function onPromotion(replicas: readonly NodeAddress[], act: (replica: NodeAddress) => void): Promise<PromotionHook> {
  const sockets: net.Socket[] = [];
  let done = false;
  let resolveFired!: (v: { replica: NodeAddress; at: number }) => void;
  const fired = new Promise<{ replica: NodeAddress; at: number }>((r) => (resolveFired = r));
  const stop = () => {
    done = true;
    for (const s of sockets) s.destroy();
  };
  try {
    await Promise.all(replicas.map((replica) => new Promise<void>((ready, fail) => {
      const s = net.connect(replica.port, replica.host);
      sockets.push(s);
      s.setNoDelay(true);
      s.once('error', fail);
      // Armed only once the server answered: a connection refused at start must not fire it.
      s.once('data', () => {
        s.removeListener('error', fail);
        s.on('error', () => {});
        s.once('close', () => {
          if (done) return;
          done = true;
          act(replica);
          resolveFired({ replica: { ...replica }, at: Date.now() });
          stop();
        });
        ready();
      });
      s.write('PING\r\n');
    })));
  } catch (err) {
    stop();
    throw err;
  }
  return { fired, stop };
}

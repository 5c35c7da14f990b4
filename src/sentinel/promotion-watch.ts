import { Connection } from '../connection/connection.js';
import type { ResolvedConnectionOptions } from '../connection/options.js';
import { backoffDelay, sleep, type BackoffOptions } from '../pool/backoff.js';
import { formatAddress, type NodeAddress } from '../types.js';

/** What a {@link PromotionWatch} tells its pool. */
export interface PromotionWatchHooks {
  /**
   * The watch connection to `replica` was closed by the server or the network at `at` (epoch
   * ms). Sentinel promotes a replica with a MULTI that ends in `CLIENT KILL TYPE normal`, so
   * this is the first sign of a promotion, whoever leads the failover; it may also be a
   * restart or a network fault, which only ROLE can tell apart.
   */
  onLost(replica: NodeAddress, at: number): void;
}

/**
 * One idle "normal" connection to each replica of the master, kept open only to be killed.
 *
 * Sentinel's failover leader promotes the chosen replica with `MULTI; REPLICAOF NO ONE; CONFIG
 * REWRITE; CLIENT KILL TYPE normal; EXEC`: the moment the replica becomes a master, every normal
 * client connection to it is closed. A pool that holds such a connection therefore hears the
 * promotion within a round trip, even when it lost the leader sentinel's pub/sub (restarted,
 * partitioned, in reconnect backoff) and long before the other sentinels publish
 * `+switch-master`. The connection sends nothing after its handshake; a heartbeat (the pool's
 * `pingInterval`) finds one that vanished silently.
 */
export class PromotionWatch {
  private readonly watched = new Map<string, { address: NodeAddress; stop: AbortController }>();
  private readonly conns = new Set<Connection>();
  private stopped = false;

  constructor(
    private readonly opts: ResolvedConnectionOptions,
    private readonly backoff: BackoffOptions,
    private readonly hooks: PromotionWatchHooks,
  ) {}

  /** Replicas watched now. */
  get addresses(): NodeAddress[] {
    return [...this.watched.values()].map((w) => ({ ...w.address }));
  }

  /** Watches exactly `replicas` from now on: new ones are connected, gone ones closed. */
  set(replicas: readonly NodeAddress[]): void {
    if (this.stopped) return;
    const want = new Map(replicas.map((a) => [formatAddress(a), a]));
    for (const [k, w] of this.watched) {
      if (!want.has(k)) {
        w.stop.abort();
        this.watched.delete(k);
      }
    }
    for (const [k, a] of want) {
      if (this.watched.has(k)) continue;
      const w = { address: { ...a }, stop: new AbortController() };
      this.watched.set(k, w);
      void this.run(w.address, w.stop.signal);
    }
  }

  /** Connect, wait for the close, report it, reconnect (with backoff while it keeps failing). */
  private async run(address: NodeAddress, stop: AbortSignal): Promise<void> {
    for (let failures = 0; !stop.aborted && !this.stopped; ) {
      let conn: Connection;
      try {
        conn = await Connection.connect(address, this.opts, [], false, stop);
      } catch {
        // Down or restarting: not a promotion (a promoted replica keeps serving). Try again later.
        await sleep(backoffDelay(failures++, this.backoff), stop, { unref: true });
        continue;
      }
      failures = 0;
      if (stop.aborted || this.stopped) {
        conn.destroy();
        return;
      }
      this.conns.add(conn);
      const onAbort = () => conn.destroy();
      stop.addEventListener('abort', onAbort, { once: true });
      await new Promise<void>((resolve) => (conn.isOpen ? conn.once('close', () => resolve()) : resolve()));
      const at = Date.now();
      stop.removeEventListener('abort', onAbort);
      this.conns.delete(conn);
      if (stop.aborted || this.stopped) return;
      this.hooks.onLost(address, at);
      // Reconnect at once: a promoted replica answers straight away, and a restarting one refuses.
    }
  }

  /** Closes every watch connection; nothing is reported after this. */
  stop(): void {
    this.stopped = true;
    for (const w of this.watched.values()) w.stop.abort();
    this.watched.clear();
    for (const c of this.conns) c.destroy();
    this.conns.clear();
  }
}

import { Connection } from '../connection/connection.js';
import { ConnectionError, PoolClosedError, RedisError } from '../errors.js';
import { NodePool } from '../pool/node-pool.js';
import { formatAddress, type NodeAddress, type Reply } from '../types.js';
import type { ResolvedClusterOptions } from './options.js';
import { slotMapFromShards, slotMapFromSlots, SlotMap, type ClusterNode } from './slot-map.js';
import { SLOT_COUNT } from './slot.js';

/** What a refresh changed. */
export interface TopologyChange {
  /** Node addresses (`host:port`) that appeared. */
  added: string[];
  /** Node addresses that disappeared (their pools are closed). */
  removed: string[];
  /** Slots whose master changed. */
  movedSlots: number;
}

/** Callbacks from the topology to the facade (events). */
export interface TopologyHooks {
  onChange(change: TopologyChange): void;
  onNodeError(address: NodeAddress, error: Error): void;
  onPoolCreated(pool: NodePool): void;
}

/**
 * The current slot map and one {@link NodePool} per node, kept fresh by `CLUSTER SHARDS`
 * (falling back to `CLUSTER SLOTS` on servers before 7.0).
 *
 * Refreshes coalesce: one runs at a time, a trigger during it runs one more afterwards, and
 * no refresh starts less than `refresh.minInterval` after the previous one started, so a
 * storm of MOVED replies during a resharding costs a bounded number of refreshes.
 */
export class Topology {
  private current: SlotMap;
  private readonly pools = new Map<string, NodePool>();
  private running: Promise<void> | undefined;
  private again = false;
  private lastStart = 0;
  private delayed: NodeJS.Timeout | undefined;
  private periodic: NodeJS.Timeout | undefined;
  private waiters: Array<() => void> = [];
  private shardsUnsupported = false;
  private closed = false;
  /** Refreshes run so far (initial load included). */
  refreshes = 0;

  constructor(
    private readonly o: ResolvedClusterOptions,
    private readonly hooks: TopologyHooks,
  ) {
    this.current = SlotMap.empty({ natMap: o.natMap });
  }

  /** The current slot map snapshot. */
  get map(): SlotMap {
    return this.current;
  }

  /** Loads the first map from the seeds; rejects with every seed's error as causes when none answers. */
  async start(): Promise<void> {
    this.lastStart = Date.now();
    this.refreshes++;
    const errors: Error[] = [];
    const map = await this.fetchBest(this.o.seeds, errors);
    if (!map) {
      const agg = new AggregateError(errors, 'every seed failed');
      throw new ConnectionError(
        `Could not load the cluster slot map from any seed (${this.o.seeds.map(formatAddress).join(', ')}): ` + errors.map((e) => e.message).join('; '),
        { cause: agg },
      );
    }
    this.install(map, false);
    if (this.o.refreshInterval > 0) {
      this.periodic = setInterval(() => this.requestRefresh(), this.o.refreshInterval);
      this.periodic.unref();
    }
  }

  /** The pool of a node, created on first use. */
  pool(address: NodeAddress): NodePool {
    if (this.closed) throw new PoolClosedError();
    const key = formatAddress(address);
    let p = this.pools.get(key);
    if (p && !p.isClosed) return p;
    p = new NodePool({ host: address.host, port: address.port }, this.o.data, this.o.pool, {
      // Reads from replicas need READONLY; it is harmless on a master, so every connection gets
      // it and a promoted replica or demoted master keeps working without a new pool.
      handshake: this.o.readFrom === 'master' ? [] : [['READONLY']],
      onConnectionLost: (error) => {
        this.hooks.onNodeError({ host: address.host, port: address.port }, error);
        this.requestRefresh();
      },
    });
    this.pools.set(key, p);
    this.hooks.onPoolCreated(p);
    return p;
  }

  /** Every pool, for stats and close. */
  allPools(): NodePool[] {
    return [...this.pools.values()];
  }

  /** Applies a MOVED at once: the slot now lives on `to`. Returns the previous master of the slot. */
  moved(slot: number, to: NodeAddress): ClusterNode | undefined {
    const before = this.current.shardForSlot(slot)?.master;
    this.current = this.current.withMovedSlot(slot, to);
    this.requestRefresh();
    return before;
  }

  /**
   * Asks for a refresh. Coalesced and rate limited; never rejects (failures are reported
   * through `onNodeError`).
   */
  requestRefresh(): void {
    if (this.closed) return;
    if (this.running) {
      this.again = true;
      return;
    }
    const wait = this.lastStart + this.o.minRefreshInterval - Date.now();
    if (wait > 0) {
      if (!this.delayed) {
        this.delayed = setTimeout(() => {
          this.delayed = undefined;
          this.requestRefresh();
        }, wait);
        this.delayed.unref();
      }
      return;
    }
    this.lastStart = Date.now();
    this.refreshes++;
    const waiters = this.waiters;
    this.waiters = [];
    this.running = this.refreshOnce()
      .catch(() => {})
      .finally(() => {
        this.running = undefined;
        for (const w of waiters) w();
        if (this.again) {
          this.again = false;
          this.requestRefresh();
        }
      });
  }

  /** Resolves after a refresh that starts after this call has completed (successfully or not). */
  refreshed(): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise<void>((resolve) => {
      this.waiters.push(resolve);
      if (this.running) this.again = true;
      else this.requestRefresh();
    });
  }

  private async refreshOnce(): Promise<void> {
    // Known masters first (they are authoritative for their slots), then replicas, then the
    // seeds (a cluster that replaced every node is still found through a stable seed name).
    const nodes = this.current.nodes().filter((n) => n.health !== 'failed');
    const masters = nodes.filter((n) => n.role === 'master');
    const rotate = <T>(a: T[]) => (a.length ? [...a.slice(this.refreshes % a.length), ...a.slice(0, this.refreshes % a.length)] : a);
    const seen = new Set<string>();
    const candidates: NodeAddress[] = [];
    for (const n of [...rotate(masters), ...nodes.filter((n) => n.role === 'replica'), ...this.o.seeds]) {
      const k = formatAddress(n);
      if (seen.has(k)) continue;
      seen.add(k);
      candidates.push({ host: n.host, port: n.port });
    }
    const errors: Error[] = [];
    const map = await this.fetchBest(candidates, errors);
    if (this.closed) return;
    if (!map) {
      const e = new ConnectionError(`Cluster topology refresh failed on every node: ${errors.map((x) => x.message).join('; ')}`, { cause: new AggregateError(errors) });
      this.hooks.onNodeError(candidates[0] ?? this.o.seeds[0]!, e);
      return;
    }
    this.install(map, true);
  }

  /** Asks nodes in order; the first fully covered view wins, else the best partial one from up to three answers. */
  private async fetchBest(candidates: NodeAddress[], errors: Error[]): Promise<SlotMap | undefined> {
    let best: SlotMap | undefined;
    let answers = 0;
    for (const address of candidates) {
      if (this.closed) return undefined;
      try {
        const map = await this.fetch(address);
        answers++;
        if (map.coveredSlots === SLOT_COUNT) return map;
        if (!best || map.coveredSlots > best.coveredSlots) best = map;
        if (answers >= 3) break;
      } catch (err) {
        errors.push(err as Error);
        if (errors.length === 1 || !(err instanceof RedisError)) this.hooks.onNodeError(address, err as Error);
      }
    }
    return best;
  }

  private async fetch(address: NodeAddress): Promise<SlotMap> {
    const conn = await Connection.connect(address, this.o.probe);
    try {
      if (!this.shardsUnsupported) {
        try {
          const reply = await conn.send(['CLUSTER', 'SHARDS']);
          return slotMapFromShards(reply, address, { natMap: this.o.natMap, preferTlsPort: this.o.data.tls !== undefined });
        } catch (err) {
          if (!(err instanceof RedisError) || !/unknown subcommand|unknown command/i.test(err.message)) throw err;
          this.shardsUnsupported = true;
        }
      }
      const reply: Reply = await conn.send(['CLUSTER', 'SLOTS']);
      return slotMapFromSlots(reply, address, { natMap: this.o.natMap });
    } finally {
      conn.destroy();
    }
  }

  private install(map: SlotMap, report: boolean): void {
    const change = this.current.diff(map);
    this.current = map;
    for (const n of map.nodes()) this.pool(n);
    const live = new Set(map.nodes().map((n) => n.key));
    for (const [key, pool] of this.pools) {
      if (!live.has(key)) {
        this.pools.delete(key);
        void pool.close(this.o.closeTimeout);
      }
    }
    if (report && (change.added.length || change.removed.length || change.movedSlots)) this.hooks.onChange(change);
  }

  /** Stops timers and closes every pool. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.periodic) clearInterval(this.periodic);
    if (this.delayed) clearTimeout(this.delayed);
    for (const w of this.waiters.splice(0)) w();
    await Promise.all([...this.pools.values()].map((p) => p.close(this.o.closeTimeout)));
    await this.running;
  }
}

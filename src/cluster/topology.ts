import { setMaxListeners } from 'node:events';
import { Connection } from '../connection/connection.js';
import { AuthenticationError, ConnectionError, PoolClosedError, RedisError } from '../errors.js';
import { NodePool } from '../pool/node-pool.js';
import { formatAddress, type Arg, type NodeAddress, type Reply } from '../types.js';
import type { ResolvedClusterOptions } from './options.js';
import { refreshOrder } from './refresh-order.js';
import { seedFailureMessage } from './seed-errors.js';
import { applyMoved, slotMapFromShards, slotMapFromSlots, SlotMap, type ClusterNode } from './slot-map.js';
import { SLOT_COUNT } from './slot.js';
import { trackingCommand } from '../cache/options.js';
import { MaintCounters, SeenSequences, type MaintNotice } from '../connection/maintenance.js';

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
  /** Every new connection of a node pool, before use (the client-side cache listens to it). */
  onConnection?(conn: Connection): void;
}

/** Floor of the trouble polling period, for `refresh.minInterval: 0`. */
const MIN_POLL_PERIOD = 50;

/**
 * The current slot map and one {@link NodePool} per node, kept fresh by `CLUSTER SHARDS`
 * (falling back to `CLUSTER SLOTS` on servers before 7.0).
 *
 * Refreshes coalesce: one runs at a time, a trigger during it runs one more afterwards, and
 * no refresh starts less than `refresh.minInterval` after the previous one started, so a
 * storm of MOVED replies during a resharding costs a bounded number of refreshes.
 *
 * Trouble polling: while some command is retrying after a node failure (see {@link failing}),
 * a refresh is requested every `refresh.minInterval`, so a replica promoted by the cluster is
 * seen within about one interval rather than at the next retry. A slot-serving master that
 * could not be reached (see {@link nodeDown}) is also watched with no command failing, at a
 * period that doubles from `refresh.minInterval` and for at most `refresh.interval` (30 s when
 * the periodic refresh is off). Polling stops as soon as neither holds.
 *
 * Every change of the map (a refresh that moved slots, added or removed nodes or changed a
 * node's role or health; a MOVED that patched a slot) aborts {@link changed} and replaces it,
 * which wakes commands waiting to retry.
 */
export class Topology {
  private current: SlotMap;
  /** The map as of the last full refresh: `topology` events compare against it, not against MOVED patches. */
  private lastRefreshed: SlotMap;
  private readonly pools = new Map<string, NodePool>();
  private running: Promise<void> | undefined;
  private again = false;
  private lastStart = 0;
  private delayed: NodeJS.Timeout | undefined;
  private periodic: NodeJS.Timeout | undefined;
  private waiters: Array<() => void> = [];
  /** Nodes the next refresh asks first (see {@link refreshOrder}), by key: a MOVED storm names the same few. */
  private preferred = new Map<string, NodeAddress>();
  private shardsUnsupported = false;
  private closed = false;
  private changeCtl = unlimited(new AbortController());
  /** Commands retrying after a node-level failure. */
  private failingCommands = 0;
  /** Nodes a connection could not be made to, or that failed a command with a connection error, by key: since when. */
  private readonly down = new Map<string, number>();
  private poll: NodeJS.Timeout | undefined;
  private pollPeriod = 0;
  /** The last failed connection attempt per node key, until a connection succeeds. */
  private readonly connectErrors = new Map<string, Error>();
  /** Refreshes run so far (initial load included). */
  refreshes = 0;
  /** Bumped by every change of the map (with {@link changed}): lets a wait tell whether it missed one. */
  version = 0;
  /** Maintenance notification counts over every node pool (and SMIGRATED slot map updates). */
  readonly maintenance = new MaintCounters();
  /** SMIGRATED sequence numbers applied: every connection of the source node gets a copy. */
  private readonly migrated = new SeenSequences();

  constructor(
    private readonly o: ResolvedClusterOptions,
    private readonly hooks: TopologyHooks,
  ) {
    this.current = SlotMap.empty({ natMap: o.natMap });
    this.lastRefreshed = this.current;
  }

  /** The current slot map snapshot. */
  get map(): SlotMap {
    return this.current;
  }

  /**
   * Aborted when the slot map changes, and replaced by a fresh signal at the same moment:
   * read it anew before each wait. Also aborted by `close()`.
   */
  get changed(): AbortSignal {
    return this.changeCtl.signal;
  }

  /** Whether trouble polling is running (for tests and stats). */
  get polling(): boolean {
    return this.poll !== undefined;
  }

  private notifyChange(): void {
    this.version++;
    const ctl = this.changeCtl;
    this.changeCtl = unlimited(new AbortController());
    ctl.abort();
  }

  /**
   * A command is retrying after a node-level failure (connection error, CLUSTERDOWN, READONLY,
   * MASTERDOWN): poll the slot map until every such command has called the returned function
   * (idempotent) because it finished, one way or the other.
   */
  failing(): () => void {
    this.failingCommands++;
    this.startPolling();
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.failingCommands--;
    };
  }

  /** A connection to `address` failed or could not be made: watch the map while it serves slots. */
  nodeDown(address: NodeAddress): void {
    if (this.closed) return;
    const key = formatAddress(address);
    if (!this.down.has(key)) this.down.set(key, Date.now());
    this.startPolling();
  }

  /** A connection to `address` succeeded. */
  nodeUp(address: NodeAddress): void {
    this.down.delete(formatAddress(address));
  }

  /** Drops watched nodes that serve no slot any more (or were watched long enough); true when some remain. */
  private watchingDownNodes(): boolean {
    if (this.down.size === 0) return false;
    const window = this.o.refreshInterval > 0 ? this.o.refreshInterval : 30_000;
    const serving = new Set(this.current.masters({ withSlots: true }).map((m) => m.key));
    const now = Date.now();
    for (const [key, since] of this.down) if (!serving.has(key) || now - since > window) this.down.delete(key);
    return this.down.size > 0;
  }

  /**
   * (Re)arms the poll timer: every `refresh.minInterval` while commands fail; doubling up to
   * the watch window while only a down node is watched.
   */
  private startPolling(): void {
    if (this.closed) return;
    const base = Math.max(this.o.minRefreshInterval, MIN_POLL_PERIOD);
    if (this.poll) {
      // A command started failing while a slow "down node" poll was pending: speed up.
      if (this.failingCommands === 0 || this.pollPeriod <= base) return;
      clearTimeout(this.poll);
      this.poll = undefined;
    }
    this.pollPeriod = this.failingCommands > 0 ? base : this.pollPeriod > 0 ? this.pollPeriod : base;
    this.poll = setTimeout(() => this.onPoll(), this.pollPeriod);
    this.poll.unref();
  }

  private onPoll(): void {
    this.poll = undefined;
    if (this.closed) return;
    const failing = this.failingCommands > 0;
    const watching = this.watchingDownNodes();
    if (!failing && !watching) {
      this.pollPeriod = 0;
      return;
    }
    this.requestRefresh();
    const base = Math.max(this.o.minRefreshInterval, MIN_POLL_PERIOD);
    const cap = Math.max(base, this.o.refreshInterval > 0 ? this.o.refreshInterval : 30_000);
    this.pollPeriod = failing ? base : Math.min(cap, this.pollPeriod * 2);
    this.poll = setTimeout(() => this.onPoll(), this.pollPeriod);
    this.poll.unref();
  }

  /** Loads the first map from the seeds; rejects with every seed's error as causes when none answers. */
  async start(): Promise<void> {
    this.lastStart = Date.now();
    this.refreshes++;
    const errors: Error[] = [];
    const map = await this.fetchBest(this.o.seeds, errors);
    if (!map) {
      const agg = new AggregateError(errors, 'every seed failed');
      // Wrong credentials are the user's to fix: say so with the class every mode uses.
      const auth = errors.find((e) => e instanceof AuthenticationError);
      const Err = auth ? AuthenticationError : ConnectionError;
      throw new Err(seedFailureMessage(this.o.seeds, errors), { cause: agg });
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
      handshake: nodeHandshake(this.o),
      mode: 'cluster',
      maintenanceTotals: this.maintenance,
      onConnection: this.hooks.onConnection ? (c) => this.hooks.onConnection!(c) : undefined,
      onConnectionLost: (error) => {
        this.hooks.onNodeError({ host: address.host, port: address.port }, error);
        this.requestRefresh();
      },
    });
    // A failed connect marks the node down (watched while it serves slots); a connect clears it.
    p.on('error', (error) => {
      this.connectErrors.set(key, error);
      this.nodeDown(address);
    });
    p.on('connect', () => {
      this.connectErrors.delete(key);
      this.nodeUp(address);
    });
    // Before the facade re-emits it (it listens later): the event reports a map already updated.
    p.on('maintenance', (_event, notice) => {
      if (notice.kind === 'SMIGRATED') this.slotsMigrated(notice);
    });
    this.pools.set(key, p);
    this.hooks.onPoolCreated(p);
    return p;
  }

  /** The error of the last failed connection attempt to a node, if none succeeded since. */
  connectError(address: NodeAddress): Error | undefined {
    return this.connectErrors.get(formatAddress(address));
  }

  /** Every pool, for stats and close. */
  allPools(): NodePool[] {
    return [...this.pools.values()];
  }

  /**
   * Applies a MOVED at once (see {@link applyMoved}: a MOVED to a replica of the slot's shard
   * moves the whole shard) and asks for a refresh that starts with `to`, which already knows
   * of the change. Returns the previous master of the slot.
   */
  moved(slot: number, to: NodeAddress): ClusterNode | undefined {
    const before = this.current.shardForSlot(slot)?.master;
    const next = applyMoved(this.current, slot, to);
    if (next !== this.current) {
      this.current = next;
      this.notifyChange();
    }
    this.requestRefresh([to]);
    return before;
  }

  /**
   * SMIGRATED: the slots it lists are served by their targets from now on, in the map at once
   * (no command has to earn a MOVED first), once per sequence number. No refresh is asked: a
   * node that has not applied the move yet could still describe the old map.
   */
  private slotsMigrated(notice: Extract<MaintNotice, { kind: 'SMIGRATED' }>): void {
    if (this.closed || !this.migrated.first(notice.seq)) return;
    const moves: Array<[number, NodeAddress]> = [];
    for (const m of notice.moves) for (const [a, b] of m.slots) for (let slot = a; slot <= b; slot++) moves.push([slot, m.target]);
    this.maintenance.add('slotMapUpdates');
    const next = this.current.withMovedSlots(moves);
    if (next !== this.current) {
      this.current = next;
      this.notifyChange();
    }
  }

  /**
   * Asks for a refresh, which asks the nodes in `prefer` first. Coalesced and rate limited;
   * never rejects (failures are reported through `onNodeError`).
   */
  requestRefresh(prefer: readonly NodeAddress[] = []): void {
    if (this.closed) return;
    for (const a of prefer) this.preferred.set(formatAddress(a), { host: a.host, port: a.port });
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
    const preferred = [...this.preferred.values()];
    this.preferred.clear();
    this.running = this.refreshOnce(preferred)
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

  private async refreshOnce(prefer: readonly NodeAddress[]): Promise<void> {
    const candidates = refreshOrder(this.current, { prefer, down: new Set(this.down.keys()), seeds: this.o.seeds, turn: this.refreshes });
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
          const reply = await conn.ask(['CLUSTER', 'SHARDS']);
          return slotMapFromShards(reply, address, { natMap: this.o.natMap, preferTlsPort: this.o.data.tls !== undefined });
        } catch (err) {
          // Before Redis 7 it is unknown; an ACL user may be denied it (-cluster|shards): CLUSTER SLOTS serves both.
          if (!(err instanceof RedisError) || !(err.code === 'NOPERM' || /unknown subcommand|unknown command/i.test(err.message))) throw err;
          this.shardsUnsupported = true;
        }
      }
      const reply: Reply = await conn.ask(['CLUSTER', 'SLOTS']);
      return slotMapFromSlots(reply, address, { natMap: this.o.natMap });
    } finally {
      conn.destroy();
    }
  }

  private install(map: SlotMap, report: boolean): void {
    const change = this.current.diff(map);
    const changed = change.added.length > 0 || change.removed.length > 0 || change.movedSlots > 0 || healthOf(this.current) !== healthOf(map);
    // A node first seen through MOVED is already in the patched map; the event reports it anyway.
    const reported = this.lastRefreshed === this.current ? change : this.lastRefreshed.diff(map);
    this.current = map;
    this.lastRefreshed = map;
    // Pools are made on first use (see pool()): a node no command goes to (a replica, with
    // readFrom 'master') costs no NodePool. Pools of nodes that left the map are closed.
    const live = new Set(map.nodes().map((n) => n.key));
    for (const [key, pool] of this.pools) {
      if (!live.has(key)) {
        this.pools.delete(key);
        this.connectErrors.delete(key);
        void pool.close(this.o.closeTimeout);
      }
    }
    if (report && (reported.added.length || reported.removed.length || reported.movedSlots)) this.hooks.onChange(reported);
    if (changed) this.notifyChange();
  }

  /** Stops timers and closes every pool. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.periodic) clearInterval(this.periodic);
    if (this.delayed) clearTimeout(this.delayed);
    if (this.poll) clearTimeout(this.poll);
    this.periodic = this.delayed = this.poll = undefined;
    this.down.clear();
    this.preferred.clear();
    // Commands waiting to retry wake up and see the pool closed.
    this.changeCtl.abort();
    for (const w of this.waiters.splice(0)) w();
    await Promise.all([...this.pools.values()].map((p) => p.close(this.o.closeTimeout)));
    await this.running;
  }
}

/**
 * What every data connection sends after HELLO/AUTH. Reads from replicas need READONLY; it is
 * harmless on a master, so every connection gets it and a promoted replica or demoted master
 * keeps working without a new pool.
 */
export function nodeHandshake(o: ResolvedClusterOptions): Arg[][] {
  const steps: Arg[][] = o.readFrom === 'master' ? [] : [['READONLY']];
  if (o.cache) steps.push(trackingCommand(o.cache));
  return steps;
}

/** Role and health of every node, for noticing changes that move no slot. */
function healthOf(map: SlotMap): string {
  return map.nodes().map((n) => `${n.key}/${n.role}/${n.health}`).join(',');
}

/** Every command waiting to retry listens on the change signal: hundreds is normal, not a leak. */
function unlimited(ctl: AbortController): AbortController {
  setMaxListeners(0, ctl.signal);
  return ctl;
}

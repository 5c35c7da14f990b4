import { setMaxListeners } from 'node:events';
import { Connection } from '../connection/connection.js';
import { AuthenticationError, ConnectionError, PoolClosedError, RedisError } from '../errors.js';
import { NodePool } from '../pool/node-pool.js';
import { formatAddress, type Arg, type NodeAddress, type Reply } from '../types.js';
import type { ResolvedClusterOptions } from './options.js';
import { refreshOrder } from './refresh-order.js';
import { RefreshScheduler } from './refresh-scheduler.js';
import { joinRefreshGroup, type RefreshGroup } from './shared-refresh.js';
import { seedFailureMessage } from './seed-errors.js';
import { applyMoved, slotMapFromShards, slotMapFromSlots, SlotMap, withHealthOf, type ClusterNode } from './slot-map.js';
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

/**
 * The current slot map and one {@link NodePool} per node, kept fresh by `CLUSTER SHARDS`
 * (falling back to `CLUSTER SLOTS` on servers before 7.0).
 *
 * When to refresh (coalesced, rate limited by `refresh.minInterval`, trouble polling while
 * commands fail or a serving node is down, the periodic refresh) is the
 * {@link RefreshScheduler}'s business; this class fetches and installs the map.
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
  private shardsUnsupported = false;
  private closed = false;
  private changeCtl = unlimited(new AbortController());
  /** The last failed connection attempt per node key, until a connection succeeds. */
  private readonly connectErrors = new Map<string, Error>();
  /** Bumped by every change of the map (with {@link changed}): lets a wait tell whether it missed one. */
  version = 0;
  /** Maintenance notification counts over every node pool (and SMIGRATED slot map updates). */
  readonly maintenance = new MaintCounters();
  /** SMIGRATED sequence numbers applied: every connection of the source node gets a copy. */
  private readonly migrated = new SeenSequences();

  /** When to refresh: triggers in, "fetch now" out (refresh-scheduler.ts). */
  private readonly scheduler: RefreshScheduler;
  /** The pools of this process that share this one's slot-map fetches (shared-refresh.ts). */
  private readonly share: { group: RefreshGroup; leave: () => void } | undefined;
  /**
   * Where this process starts in the refresh order's spread list: random, so that the
   * processes of a fleet ask different nodes (see refreshOrder).
   */
  private readonly spreadOffset = Math.floor(Math.random() * 65536);

  constructor(
    private readonly o: ResolvedClusterOptions,
    private readonly hooks: TopologyHooks,
  ) {
    this.current = SlotMap.empty({ natMap: o.natMap });
    this.lastRefreshed = this.current;
    this.share = o.refreshShareKey === undefined ? undefined : joinRefreshGroup(o.refreshShareKey);
    this.scheduler = new RefreshScheduler({ minInterval: o.minRefreshInterval, interval: o.refreshInterval, jitter: o.refreshJitter, watchInterval: o.refreshWatchInterval }, {
      refresh: (prefer, since) => this.refreshOnce(prefer, since),
      serving: () => new Set(this.current.masters({ withSlots: true }).map((m) => m.key)),
    });
  }

  /** Refreshes started so far (the initial load included). */
  get refreshes(): number {
    return this.scheduler.refreshes;
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
    return this.scheduler.polling;
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
    return this.scheduler.failing();
  }

  /** A connection to `address` failed or could not be made: watch the map while it serves slots. */
  nodeDown(address: NodeAddress): void {
    if (!this.closed) this.scheduler.nodeDown(address);
  }

  /** A connection to `address` succeeded. */
  nodeUp(address: NodeAddress): void {
    this.scheduler.nodeUp(address);
  }

  /** Loads the first map from the seeds; rejects with every seed's error as causes when none answers. */
  async start(): Promise<void> {
    this.scheduler.started();
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
    this.scheduler.startPeriodic();
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
      // The cluster just named `to` as the slot's owner: connect now (see install()).
      if (!this.current.masters({ withSlots: true }).some((m) => m.port === to.port && m.host === to.host)) this.pools.get(formatAddress(to))?.clearBackoff();
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
    if (!this.closed) this.scheduler.request(prefer);
  }

  /** Resolves after a refresh that starts after this call has completed (successfully or not). */
  refreshed(): Promise<void> {
    return this.closed ? Promise.resolve() : this.scheduler.refreshed();
  }

  private async refreshOnce(prefer: readonly NodeAddress[], since: number): Promise<void> {
    const candidates = refreshOrder(this.current, { prefer, down: this.scheduler.downKeys(), seeds: this.o.seeds, turn: this.spreadOffset + this.refreshes });
    const errors: Error[] = [];
    const fetch = () => this.fetchBest(candidates, errors);
    const { map } = this.share ? await this.share.group.fetch(since, fetch) : { map: await fetch() };
    if (this.closed) return;
    if (!map) {
      // Failed in another pool's fetch: that pool reported each node's error.
      if (errors.length === 0) errors.push(new ConnectionError('Cluster topology refresh (shared with another pool of this process) found no node that answered.'));
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

  /**
   * One node's view. On the node's ready data connection when it has one (a fleet that
   * refreshes on every failure would otherwise open one connection per refresh on the nodes it
   * asks), with the `refreshTimeout` deadline; else on a probe connection of its own.
   */
  private async fetch(address: NodeAddress): Promise<SlotMap> {
    const lane = this.pools.get(formatAddress(address))?.laneSync();
    if (lane) {
      const deadline = Date.now() + this.o.refreshTimeout;
      return this.fetchOn(address, (args) => lane.send(args, { deadline }));
    }
    const conn = await Connection.connect(address, this.o.probe);
    try {
      return await this.fetchOn(address, (args) => conn.ask(args));
    } finally {
      conn.destroy();
    }
  }

  private async fetchOn(address: NodeAddress, ask: (args: Arg[]) => Promise<Reply>): Promise<SlotMap> {
    if (!this.shardsUnsupported) {
      try {
        const reply = await ask(['CLUSTER', 'SHARDS']);
        const map = slotMapFromShards(reply, address, { natMap: this.o.natMap, preferTlsPort: this.o.data.tls !== undefined });
        if (map.coveredSlots === SLOT_COUNT) return map;
        // Slots missing: the cluster may really not serve them, or (Redis 7.2 to 8.0-M01,
        // Valkey 8.0) CLUSTER SHARDS lists a promoted replica's shard without its slots.
        // CLUSTER SLOTS of the same node tells; keep the health CLUSTER SHARDS reported.
        const slots = await ask(['CLUSTER', 'SLOTS']).catch((err: unknown) => {
          // Denied by ACL (only SHARDS allowed): what SHARDS said is all there is.
          if (err instanceof RedisError) return undefined;
          throw err;
        });
        const bySlots = slots === undefined ? undefined : slotMapFromSlots(slots, address, { natMap: this.o.natMap });
        return bySlots && bySlots.coveredSlots > map.coveredSlots ? withHealthOf(bySlots, map) : map;
      } catch (err) {
        // Before Redis 7 it is unknown; an ACL user may be denied it (-cluster|shards): CLUSTER SLOTS serves both.
        if (!(err instanceof RedisError) || !(err.code === 'NOPERM' || /unknown subcommand|unknown command/i.test(err.message))) throw err;
        this.shardsUnsupported = true;
      }
    }
    const reply: Reply = await ask(['CLUSTER', 'SLOTS']);
    return slotMapFromSlots(reply, address, { natMap: this.o.natMap });
  }

  private install(map: SlotMap, report: boolean): void {
    const change = this.current.diff(map);
    const changed = change.added.length > 0 || change.removed.length > 0 || change.movedSlots > 0 || healthOf(this.current) !== healthOf(map);
    // A node first seen through MOVED is already in the patched map; the event reports it anyway.
    const reported = this.lastRefreshed === this.current ? change : this.lastRefreshed.diff(map);
    // A node that serves slots now and did not before (a promoted replica, a restarted node)
    // is connected at once: attempts made while it was down would otherwise delay the first
    // command by their backoff (up to `pool.reconnect.maxDelay`, measured in bench:fleet).
    const servedBefore = new Set(this.current.masters({ withSlots: true }).map((m) => m.key));
    for (const m of map.masters({ withSlots: true })) if (!servedBefore.has(m.key)) this.pools.get(m.key)?.clearBackoff();
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
    // Commands waiting to retry wake up and see the pool closed.
    this.changeCtl.abort();
    const scheduling = this.scheduler.close();
    this.share?.leave();
    await Promise.all([...this.pools.values()].map((p) => p.close(this.o.closeTimeout)));
    await scheduling;
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

import { BUILTIN_TABLE_VERSION, CommandRegistry } from '../commands/command-table.js';
import { Connection } from '../connection/connection.js';
import { publishRedirect, publishTopology } from '../diagnostics.js';
import { AuthenticationError, ConnectionError, RedisError } from '../errors.js';
import { KeyPrefixer } from '../commands/key-prefix.js';
import type { NodePool, NodePoolStats } from '../pool/node-pool.js';
import { settleAll } from '../pool/settle.js';
import type { DurabilityStats } from '../pool/durability.js';
import { BasePool, resolveCall, type Dispatcher, type PoolEvents } from '../pool/surface.js';
import { laneWithin } from '../pool/lane-dispatcher.js';
import type { Address, NodeAddress } from '../types.js';
import { ClusterDispatcher, type ClusterHost } from './cluster-dispatcher.js';
import { resolveClusterOptions, type ClusterOptions, type ResolvedClusterOptions } from './options.js';
import { nodeHandshake, Topology, type TopologyChange } from './topology.js';
import { PubSubHub, type PubSubStats } from '../pubsub/hub.js';
import { installPubSub, spublish, type PubSubMethods, type ShardedPubSubMethods } from '../pubsub/methods.js';
import type { Arg } from '../types.js';
import { clusterPlacement } from './cluster-pubsub.js';
import { ClientCache, type CacheStats } from '../cache/client-cache.js';
import { keySlot, SLOT_COUNT } from './slot.js';
import type { MaintenanceStats } from '../connection/maintenance.js';
import { ZoneTracker, type ZoneReadStats } from '../pool/zones.js';
import { isAzReadFrom } from '../pool/read-from.js';

/** Events of a {@link ClusterPool}. */
export interface ClusterEvents extends PoolEvents {
  /** A refresh changed the cluster: nodes added or removed (`host:port`), slots moved. */
  topology: [change: TopologyChange];
  /** A command got MOVED: `slot` now lives on `to` (the map was patched at once). */
  moved: [
    info: {
      /** The hash slot. */
      slot: number;
      /** The node that answered MOVED. */
      from: NodeAddress;
      /** The node it named, now the slot's owner in the map. */
      to: NodeAddress;
    },
  ];
  /** A command got ASK: it was sent again to `to` with ASKING (the map is unchanged). */
  ask: [
    info: {
      /** The hash slot being migrated. */
      slot: number;
      /** The node that answered ASK (the slot's owner). */
      from: NodeAddress;
      /** The node importing the slot. */
      to: NodeAddress;
    },
  ];
  /** A node failed: a connection was lost or could not be made, or a refresh failed there. */
  'node-error': [
    info: {
      /** The node. */
      address: NodeAddress;
      /** What failed. */
      error: Error;
    },
  ];
}

/** One node as `nodes()` and `stats()` report it. */
export interface ClusterNodeInfo extends NodeAddress {
  /** The node's role in the slot map. */
  role: 'master' | 'replica';
  /** As `CLUSTER SHARDS` reports it (`'unknown'` when the map came from `CLUSTER SLOTS`); reads avoid `loading` and `failed` nodes. */
  health: 'online' | 'loading' | 'failed' | 'unknown';
  /** The node's cluster id, when the map reported one. */
  id?: string;
}

/** What `stats()` reports. */
export interface ClusterStats {
  /** Nodes in the slot map. */
  nodes: number;
  /** Masters serving at least one slot. */
  masters: number;
  /** Slots some shard serves (16384 when the cluster is fully covered). */
  coveredSlots: number;
  /** One entry per node a command has gone to (a node gets its pool on first use): lanes and exclusive pool sizes. */
  pools: NodePoolStats[];
  /** Redirections and retries followed so far. */
  redirects: {
    /** MOVED replies followed. */
    moved: number;
    /** ASK replies followed. */
    ask: number;
    /** TRYAGAIN replies retried. */
    tryagain: number;
    /** CLUSTERDOWN replies retried. */
    clusterdown: number;
    /** Retries after a connection error. */
    connection: number;
  };
  /** Slot map refreshes run so far (the initial load included). */
  refreshes: number;
  /** Whether the server's COMMAND table was loaded (else the built-in one is used). */
  liveCommandTable: boolean;
  /** Durable acknowledgements over every master (all zero while `durability` is off). */
  durability: DurabilityStats;
  /** Whether `close()` was called. */
  closed: boolean;
  /** Subscriptions, subscriber connections and messages of `subscribe()`/`psubscribe()`/`ssubscribe()`. */
  pubsub: PubSubStats;
  /** The client-side cache's counters, when `cache` is on. */
  cache?: CacheStats;
  /** Maintenance notifications over every node (Redis Software / Redis Cloud), SMIGRATED slot map updates included. */
  maintenance: MaintenanceStats;
  /** Reads per zone and each node's zone, with a zone-aware `readFrom`. */
  reads?: ZoneReadStats;
}

/**
 * A pool for a Redis Cluster. Same API as `StandalonePool` and `SentinelPool`: commands are
 * routed by hash slot, MOVED/ASK/TRYAGAIN/CLUSTERDOWN are followed as the cluster
 * specification says, pipelines may span nodes, and MGET/MSET/DEL/UNLINK/EXISTS/TOUCH may
 * span slots (split and merged).
 *
 * ```ts
 * const pool = await ClusterPool.create(['127.0.0.1:7000', '127.0.0.1:7001']);
 * await pool.mset({ a: '1', b: '2' }); // two slots, two nodes: split and merged
 * await pool.close();
 * ```
 *
 * Routing: a command's keys come from the COMMAND table (loaded once from the server,
 * built-in table when COMMAND is denied). Keyless commands go to any master (round robin);
 * commands whose `request_policy` tip is `all_shards` / `all_nodes` (DBSIZE, KEYS, FLUSHALL,
 * SCRIPT LOAD, PING, INFO, …) are sent to every master (and replica for `all_nodes`) and
 * merged as their `response_policy` says (DBSIZE sums; INFO returns one reply per node).
 * Any other command with keys in several slots (MSETNX, RENAME, SMOVE, LMOVE, SUNIONSTORE,
 * EVAL, and blocking ones such as BLPOP, BLMOVE, XREAD) is refused with `CrossSlotError`
 * before anything is sent.
 *
 * Failover: a command that fails on an unreachable node (or gets CLUSTERDOWN) is retried
 * within its deadline (see `idempotent` for writes that may have run); while it waits, the
 * slot map is refreshed every `refresh.minInterval`, and it is retried at once when the map
 * names a new owner for its slot. A command that runs out of time rejects with a
 * `TimeoutError` whose `cause` is the last attempt's error and `address` the node it was
 * trying.
 */
export class ClusterPool extends BasePool<ClusterEvents> {
  protected readonly dispatcher: ClusterDispatcher;
  private readonly o: ResolvedClusterOptions;
  private readonly topology: Topology;
  private readonly registry = new CommandRegistry();
  private readonly redirects = { moved: 0, ask: 0, tryagain: 0, clusterdown: 0, connection: 0 };
  private closing: Promise<void> | undefined;
  private hub: PubSubHub | undefined;
  private readonly cache: ClientCache | undefined;
  /** Nodes' zones and reads per zone, with a zone-aware `readFrom`. */
  private readonly zones: ZoneTracker | undefined;

  private constructor(o: ResolvedClusterOptions) {
    super();
    this.o = o;
    const cache = o.cache ? new ClientCache(o.cache, keySlot) : undefined;
    this.cache = cache;
    const zones = isAzReadFrom(o.readFrom) ? new ZoneTracker(o.readFrom, o.clientAz, o.data.connectTimeout || 5000) : undefined;
    this.zones = zones;
    this.topology = new Topology(o, {
      // Each connection asks its node's zone once, before anything else goes out on it.
      ...(cache || zones ? { onConnection: (c: Connection) => { cache?.attach(c); zones?.observe(c); } } : {}),
      onChange: (change) => {
        publishTopology(change);
        this.emit('topology', change);
      },
      onNodeError: (address, error) => {
        if (!this.closed) this.emit('node-error', { address: { host: address.host, port: address.port }, error });
      },
      onPoolCreated: (pool) => this.watchPool(pool),
    });
    const host: ClusterHost = {
      topology: this.topology,
      o,
      registry: this.registry,
      ...(zones ? { zones } : {}),
      isClosed: () => this.closed,
      onMoved: (slot, from, to) => {
        this.redirects.moved++;
        publishRedirect('moved', slot, from, to);
        this.emit('moved', { slot, from: { host: from.host, port: from.port }, to: { host: to.host, port: to.port } });
      },
      onAsk: (slot, from, to) => {
        this.redirects.ask++;
        publishRedirect('ask', slot, from, to);
        this.emit('ask', { slot, from: { host: from.host, port: from.port }, to: { host: to.host, port: to.port } });
      },
      onRetry: (kind) => {
        this.redirects[kind]++;
      },
    };
    this.dispatcher = new ClusterDispatcher(host);
    // The router's own registry: a live COMMAND table loaded later serves both.
    if (o.keyPrefix) this.keyPrefix = new KeyPrefixer(o.keyPrefix, this.registry);
    if (cache) {
      (this.dispatcher as Dispatcher).cache = cache;
      this.watchSlotsForCache(cache);
    }
  }

  /**
   * Zone-aware reads need every node's zone before reads reach it: connect to each node whose
   * zone is unknown (at start, waited for; after each map change, in the background).
   */
  private learnZones(zones: ZoneTracker): Promise<void> {
    const pools = this.topology.map.nodes().filter((n) => !zones.knows(n)).map((n) => this.topology.pool(n));
    return zones.learn(pools);
  }

  private watchZones(zones: ZoneTracker): void {
    this.topology.changed.addEventListener('abort', () => {
      if (this.closed) return;
      void this.learnZones(zones);
      this.watchZones(zones);
    }, { once: true });
  }

  /**
   * A slot that moved away from a node is no longer tracked by the node that will be asked
   * about it: its entries go, at every map change (MOVED patch, refresh, failover).
   */
  private watchSlotsForCache(cache: ClientCache): void {
    let before = this.topology.map;
    const watch = (): void => {
      this.topology.changed.addEventListener('abort', () => {
        if (this.closed) return;
        const after = this.topology.map;
        if (cache.size > 0) {
          const moved = new Set<number>();
          for (let slot = 0; slot < SLOT_COUNT; slot++) {
            if (before.shardForSlot(slot)?.master.key !== after.shardForSlot(slot)?.master.key) moved.add(slot);
          }
          cache.flushGroups(moved, 'slot-moved');
        }
        before = after;
        watch();
      }, { once: true });
    };
    watch();
  }

  private watchPool(pool: NodePool): void {
    pool.on('connect', (i) => this.emit('connect', { address: i.address, connectionId: i.connectionId }));
    pool.on('close', (i) => this.emit('close', { address: i.address, connectionId: i.connectionId, error: i.error }));
    pool.on('error', (error) => {
      if (!this.closed) this.emit('node-error', { address: { ...pool.target }, error });
    });
    pool.on('maintenance', (event) => this.emit('maintenance', event));
  }

  /**
   * Connects to a cluster through `seeds` (`'host:port'`, `redis://` URLs or `{ host, port }`;
   * one reachable seed is enough). Resolves once the slot map is loaded (CLUSTER SHARDS, or
   * CLUSTER SLOTS before Redis 7) and the COMMAND table read. Rejects with a TypeError naming
   * a bad argument or option, or a ConnectionError whose cause holds every seed's error.
   */
  static async create(seeds: Address[], options: ClusterOptions = {}): Promise<ClusterPool> {
    const o = resolveClusterOptions(seeds, options);
    const pool = new ClusterPool(o);
    try {
      await pool.topology.start();
      if (pool.zones) {
        await pool.learnZones(pool.zones);
        pool.watchZones(pool.zones);
      }
      await pool.checkHandshake();
      if (o.loadCommandTable) await pool.loadCommands();
    } catch (err) {
      await pool.close();
      throw err;
    }
    return pool;
  }

  /**
   * Opens a data connection to one master: the slot map came over probe connections, which
   * skip CLIENT SETNAME and READONLY, so a user denied those (NOPERM) or refused credentials
   * must fail create() now rather than every command later. A node that is merely unreachable
   * does not: the pool routes around it as usual.
   */
  private async checkHandshake(): Promise<void> {
    const master = this.topology.map.masters({ withSlots: true })[0];
    if (!master) return;
    // A connection of its own: a node pool that failed to connect would back off its next attempts.
    try {
      const conn = await Connection.connect(master, this.o.data, nodeHandshake(this.o), true);
      conn.destroy();
    } catch (err) {
      if (err instanceof AuthenticationError || (err instanceof ConnectionError && err.cause instanceof RedisError)) throw err;
    }
  }

  /** Reads COMMAND from one master; keeps the built-in table when it is denied or fails. */
  private async loadCommands(): Promise<void> {
    const master = this.topology.map.masters({ withSlots: true })[0];
    if (!master) return;
    try {
      // The pool's own request: sent on the lane directly, so it is not traced as the
      // application's. The reply is large (~200 KB): the command deadline, not the refresh one.
      const call = resolveCall(this.dispatcher, { timeout: Math.max(this.o.refreshTimeout, this.o.data.commandTimeout) }, undefined);
      const lane = await laneWithin(this.topology.pool(master), call, ['COMMAND'], false);
      const reply = await lane.send(['COMMAND'], { deadline: call.deadline });
      this.registry.load(reply);
    } catch (err) {
      const e = new Error(`COMMAND failed on ${master.key}; using the built-in command table (redis ${BUILTIN_TABLE_VERSION}): ${(err as Error).message}`, { cause: err });
      // After create() resolved, so a listener attached to the new pool hears it.
      setImmediate(() => this.emit('error', e));
    }
  }

  /** The nodes of the current slot map, masters first. */
  nodes(): ClusterNodeInfo[] {
    return this.topology.map.nodes().map((n) => {
      const out: ClusterNodeInfo = { host: n.host, port: n.port, role: n.role, health: n.health };
      if (n.id !== undefined) out.id = n.id;
      return out;
    });
  }

  /**
   * A pipeline across the cluster: entries are grouped by node, each group goes out in one
   * write, and `exec()` gives each entry's value or error in the order queued. Entries
   * redirected (MOVED, ASK, TRYAGAIN) or not sent because a node failed are retried on their
   * own; order of execution is guaranteed per node only.
   *
   * Keys spanning slots: an MGET, MSET, DEL, UNLINK, EXISTS or TOUCH entry is split per slot
   * exactly like `pool.mget` / `pool.del` (unless `splitMultiKey` is false: then the server
   * answers CROSSSLOT); its parts travel with the other entries for their node, and the entry
   * gets the merged reply, or the first error of a part (other parts may have run, as with
   * `pool.del`). Any other entry whose keys span slots gets a `CrossSlotError` and is not sent;
   * the other entries run normally.
   */
  override pipeline(): ReturnType<BasePool<ClusterEvents>['pipeline']> {
    return super.pipeline();
  }

  /** Asks for a slot map refresh now (rate limited by `refresh.minInterval`) and waits for it. */
  refresh(): Promise<void> {
    this.ensureOpen();
    return this.topology.refreshed();
  }

  /** Nodes, masters, per-node pools, redirect and refresh counts. */
  stats(): ClusterStats {
    const map = this.topology.map;
    const pools = this.topology.allPools().map((p) => p.stats());
    return {
      nodes: map.nodes().length,
      masters: map.masters({ withSlots: true }).length,
      coveredSlots: map.coveredSlots,
      pools,
      redirects: { ...this.redirects },
      refreshes: this.topology.refreshes,
      liveCommandTable: this.registry.hasLiveTable,
      durability: this.o.durabilityCounters.snapshot(),
      closed: this.closed,
      pubsub: this.hub?.stats() ?? PubSubHub.emptyStats(),
      ...(this.cache ? { cache: this.cache.stats() } : {}),
      maintenance: this.topology.maintenance.snapshot(pools.reduce((n, p) => n + p.maintenance.relaxedNow, 0)),
      ...(this.zones ? { reads: this.zones.stats() } : {}),
    };
  }

  /** Publishes to a sharded channel (`SPUBLISH`), on the master owning the channel's slot. */
  spublish(channel: string, message: Arg): Promise<number> {
    return spublish(this, channel, message);
  }

  /** @internal Subscriptions placed by slot (see cluster-pubsub.ts), re-placed on every map change. */
  pubsubHub(): PubSubHub {
    this.ensureOpen();
    if (this.hub) return this.hub;
    const hub = new PubSubHub(clusterPlacement(this.topology, this.o.pool.reconnect), { reconnect: this.o.pool.reconnect, timeout: this.o.data.commandTimeout });
    this.hub = hub;
    const watch = (): void => {
      this.topology.changed.addEventListener('abort', () => {
        if (this.closed) return;
        hub.replace('topology');
        watch();
      }, { once: true });
    };
    watch();
    return hub;
  }

  async reauthenticate(): Promise<void> {
    // async: after close() this rejects (a caller's .catch() sees it) instead of throwing.
    this.ensureOpen();
    return settleAll(this.topology.allPools().map((p) => p.reauthenticate()));
  }

  /** Stops refreshes, lets in-flight commands finish (bounded by `closeTimeout`), closes every node pool. */
  close(): Promise<void> {
    if (this.closing) return this.closing;
    this.closed = true;
    this.hub?.close();
    this.zones?.close();
    this.closing = this.topology.close();
    return this.closing;
  }
}
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
export interface ClusterPool extends PubSubMethods, ShardedPubSubMethods {}
installPubSub(ClusterPool.prototype, true);

import type { ResolvedConnectionOptions } from './connection/options.js';
import type { ResolvedCommonOptions } from './pool/common-options.js';
import { resolveStandaloneOptions, type StandaloneOptions } from './standalone-options.js';
import { LaneDispatcher } from './pool/lane-dispatcher.js';
import { NodePool, type NodePoolStats } from './pool/node-pool.js';
import type { DurabilityCounters, DurabilityStats } from './pool/durability.js';
import { BasePool, type Dispatcher, type PoolEvents } from './pool/surface.js';
import { CommandRegistry } from './commands/command-table.js';
import { KeyPrefixer } from './commands/key-prefix.js';
import type { Address, NodeAddress } from './types.js';
import { PubSubHub, type PubSubStats } from './pubsub/hub.js';
import { ClientCache, type CacheStats } from './cache/client-cache.js';
import { trackingCommand, type ResolvedCacheOptions } from './cache/options.js';
import { installPubSub, type PubSubMethods, type ShardedPubSubMethods } from './pubsub/methods.js';

export type { StandaloneOptions } from './standalone-options.js';

export type { CommonOptions } from './pool/common-options.js';

/** What `stats()` reports for a standalone pool. */
export interface StandaloneStats extends NodePoolStats {
  /** Durable acknowledgements (all zero while `durability` is off). */
  durability: DurabilityStats;
  /** Whether `close()` was called. */
  closed: boolean;
  /** Subscriptions, subscriber connections and messages of `subscribe()`/`psubscribe()`. */
  pubsub: PubSubStats;
  /** The client-side cache's counters, when `cache` is on. */
  cache?: CacheStats;
}

/**
 * A pool for one Redis server. Same API as `SentinelPool` and `ClusterPool`, so code written
 * against it runs unchanged on the others.
 *
 * ```ts
 * const pool = await StandalonePool.create('redis://localhost:6379');
 * await pool.set('greeting', 'hello');
 * await pool.close();
 * ```
 */
export class StandalonePool extends BasePool<PoolEvents> {
  protected readonly dispatcher: LaneDispatcher;
  private readonly node: NodePool;
  private readonly closeTimeout: number;
  private readonly durability: DurabilityCounters;
  private closing: Promise<void> | undefined;
  private hub: PubSubHub | undefined;
  private readonly conn: ResolvedConnectionOptions;
  private readonly common: ResolvedCommonOptions;

  private readonly cache: ClientCache | undefined;

  private constructor(address: NodeAddress, conn: ResolvedConnectionOptions, common: ResolvedCommonOptions, cache: ResolvedCacheOptions | undefined) {
    super();
    this.closeTimeout = common.closeTimeout;
    this.conn = conn;
    this.common = common;
    const c = cache ? new ClientCache(cache) : undefined;
    this.cache = c;
    this.node = new NodePool(address, conn, common.pool, c && cache ? { handshake: [trackingCommand(cache)], onConnection: (x) => c.attach(x) } : {});
    this.node.on('connect', (i) => this.emit('connect', { address: i.address, connectionId: i.connectionId }));
    this.node.on('close', (i) => this.emit('close', { address: i.address, connectionId: i.connectionId, error: i.error }));
    this.node.on('error', (e) => this.emit('error', e));
    this.node.on('maintenance', (e) => this.emit('maintenance', e));
    this.dispatcher = new LaneDispatcher(this.node, conn.commandTimeout, conn.connectTimeout, () => this.closed, !common.offlineQueue, common.durability, common.durabilityCounters);
    this.durability = common.durabilityCounters;
    if (c) (this.dispatcher as Dispatcher).cache = c;
    if (common.keyPrefix) this.keyPrefix = new KeyPrefixer(common.keyPrefix, new CommandRegistry());
  }

  /**
   * Connects to one server. `address` is `'host:port'`, a `redis://` / `rediss://` URL or
   * `{ host, port }`. Resolves once a first connection has passed the handshake; rejects
   * with that connection's error (e.g. `AuthenticationError`) otherwise.
   */
  static async create(address: Address, options: StandaloneOptions = {}): Promise<StandalonePool> {
    const o = resolveStandaloneOptions(address, options);
    const pool = new StandalonePool(o.address, o.conn, o.common, o.cache);
    try {
      await pool.node.lane();
    } catch (err) {
      await pool.close();
      throw err;
    }
    return pool;
  }

  /** The server this pool talks to. */
  get address(): NodeAddress {
    return { ...this.node.target };
  }

  /** Generation, lane state and exclusive pool sizes. */
  stats(): StandaloneStats {
    return { ...this.node.stats(), durability: this.durability.snapshot(), closed: this.closed, pubsub: this.hub?.stats() ?? PubSubHub.emptyStats(), ...(this.cache ? { cache: this.cache.stats() } : {}) };
  }

  /** @internal The subscriptions of this pool, all on the one server. */
  pubsubHub(): PubSubHub {
    this.ensureOpen();
    return this.hub ??= new PubSubHub({ place: () => [{ pool: this.node }] }, { reconnect: this.common.pool.reconnect, timeout: this.conn.commandTimeout });
  }

  async reauthenticate(): Promise<void> {
    // async: after close() this rejects (a caller's .catch() sees it) instead of throwing.
    this.ensureOpen();
    return this.node.reauthenticate();
  }

  close(): Promise<void> {
    if (this.closing) return this.closing;
    this.closed = true;
    this.hub?.close();
    this.closing = this.node.close(this.closeTimeout);
    return this.closing;
  }
}
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
export interface StandalonePool extends PubSubMethods, ShardedPubSubMethods {}
installPubSub(StandalonePool.prototype);

import { parseAddress } from '../address.js';
import { CONNECTION_OPTIONS, connectionFrom, type ConnectionOptions, type ResolvedConnectionOptions } from '../connection/options.js';
import { backoffSpec, checkObject, checkOptions, defineOptions, MAX_TIMER, withDefaults } from '../options.js';
import type { BackoffOptions } from '../pool/backoff.js';
import { NAT_MAP_SPEC, resolveNatMap, type NatMap } from '../nat-map.js';
import { COMMON_OPTIONS, commonFrom, type CommonOptions, type ResolvedCommonOptions } from '../pool/common-options.js';
import type { Address, NodeAddress } from '../types.js';
import { cacheFrom, type ResolvedCacheOptions } from '../cache/options.js';
import { AZ_READ_FROM, checkAzOptions, type AzReadFrom } from '../pool/read-from.js';
import { refreshShareKey } from './shared-refresh.js';

/** Where read-only commands go (the `az-` values prefer nodes in `clientAz`). */
export type ReadFrom = 'master' | 'replica' | 'prefer-replica' | AzReadFrom;

/** Options of {@link ClusterPool.create}. Time values are in milliseconds. */
export interface ClusterOptions extends Omit<ConnectionOptions, 'db'>, CommonOptions {
  /**
   * Redirections and retries (MOVED, ASK, TRYAGAIN, CLUSTERDOWN, connection errors) one
   * command may take before it fails with `MaxRedirectionsError`. Default 16.
   */
  maxRedirections?: number;
  /**
   * Slot map refreshes. `minInterval`: at most one refresh starts per interval, however many
   * MOVED replies or connection errors ask for one (default 200). While any command is retrying
   * after a node failure (connection error, CLUSTERDOWN, READONLY), or a master could not be
   * reached or left a command unanswered past its deadline, the map is also refreshed at a
   * period that doubles from `minInterval` up to `watchInterval` (plus a random 0..`jitter`),
   * so a replica the cluster promotes is used within about `watchInterval`; a down master is
   * watched for at most `interval`. `interval`: periodic refresh, which catches a master that
   * died without answering anything; 0 disables (default 30000). See docs/scale.md for what a
   * fleet of processes does with these.
   */
  refresh?: {
    /** At most one refresh per this many ms (default 200, at least 1). */
    minInterval?: number;
    /** Periodic refresh period in ms; 0 disables (default 30000). */
    interval?: number;
    /**
     * Each trouble poll waits `minInterval` plus a random 0..`jitter` ms, so the processes of a
     * fleet that saw one failure at the same moment do not keep asking in step (default 100).
     */
    jitter?: number;
    /**
     * While a node that serves slots is unreachable (a connection failed, or a command sent to
     * it got no reply within its deadline), the map is refreshed at a period that doubles from
     * `minInterval` up to this, for at most `interval`: the promotion of its replica is found
     * within about this long (default 1000).
     */
    watchInterval?: number;
    /**
     * Pools of this process with the same seeds, credentials, TLS options and natMap share
     * their slot-map fetches: one CLUSTER SHARDS per event for all of them (default true).
     */
    share?: boolean;
  };
  /**
   * Where read-only commands go: `'master'` (default); `'replica'` (a healthy replica of the
   * slot's shard, the master only when the shard has none); `'prefer-replica'` (a replica,
   * falling back to the master when the replica fails). Connections are opened with READONLY
   * when this is not `'master'`.
   *
   * Zone-aware (`clientAz` required), as valkey-glide does: `'az-affinity'` reads from a healthy
   * replica of the slot's shard in `clientAz`, else any healthy replica of the shard, else its
   * master; `'az-affinity-replicas-and-primary'` from a healthy replica in `clientAz`, else the
   * master if it is in `clientAz`, else any healthy replica, else the master. The pool connects
   * to every node at start (and to nodes that join) to ask its zone, once per connection
   * (`HELLO`, else `INFO server` field `availability_zone`: Valkey 8+ with `availability-zone`
   * set); a node that reports none counts as another zone. Reads per zone: `stats().reads`.
   */
  readFrom?: ReadFrom;
  /** The availability zone this client runs in (e.g. `'use1-az1'`); required by, and only allowed with, a zone-aware `readFrom`. */
  clientAz?: string;
  /** Announced address -> reachable address: `{ '10.0.0.5:6379': 'localhost:16379' }` or a function. */
  natMap?: NatMap;
  /**
   * Split MGET, MSET, DEL, UNLINK, EXISTS and TOUCH whose keys span slots into one command per
   * slot, run in parallel, merged in key order (in pipelines too). Default true. With false,
   * such calls go to the first key's node and the server answers CROSSSLOT. Any other command
   * whose keys span slots (MSETNX, RENAME, SMOVE, LMOVE, SINTERSTORE, EVAL, BLPOP, …) is refused
   * with `CrossSlotError` before it is sent, whatever this option says.
   */
  splitMultiKey?: boolean;
  /** First delay before a command that got TRYAGAIN is sent again (doubling on each further TRYAGAIN). Default 100. */
  retryDelayOnTryAgain?: number;
  /** Backoff after CLUSTERDOWN or a connection error; its maxDelay also caps the doubling TRYAGAIN delay. Default `{ initialDelay: 100, maxDelay: 2000 }`. */
  retryBackoff?: Partial<BackoffOptions>;
  /** Timeout of each CLUSTER SHARDS / CLUSTER SLOTS request during a refresh (connect included). Default 2000. */
  refreshTimeout?: number;
  /** Load the server's COMMAND table at start (the built-in one is used when COMMAND is denied). Default true. */
  loadCommandTable?: boolean;
}

/** @internal */
export interface ResolvedClusterOptions extends ResolvedCommonOptions {
  seeds: NodeAddress[];
  data: ResolvedConnectionOptions;
  probe: ResolvedConnectionOptions;
  /** Client-side cache settings; undefined when off. */
  cache: ResolvedCacheOptions | undefined;
  maxRedirections: number;
  minRefreshInterval: number;
  refreshInterval: number;
  readFrom: ReadFrom;
  clientAz: string;
  natMap: (a: NodeAddress) => NodeAddress;
  splitMultiKey: boolean;
  retryDelayOnTryAgain: number;
  retryBackoff: BackoffOptions;
  refreshTimeout: number;
  loadCommandTable: boolean;
  /** Random 0..this ms added to each trouble poll. */
  refreshJitter: number;
  /** Longest period of the down-node watch. */
  refreshWatchInterval: number;
  /** The refresh group of pools sharing slot-map fetches (shared-refresh.ts); undefined with `refresh.share: false`. */
  refreshShareKey: string | undefined;
}

/**
 * `pingInterval` of a Cluster pool unless given: a node black-holed by the network (no RST)
 * keeps its idle connections open, and without a heartbeat the first command sent there after
 * the fault waits its whole deadline before the pool suspects the node. 5 s finds such a
 * connection within 10 s at one PING per idle connection per 5 s (docs/scale.md).
 */
export const CLUSTER_PING_INTERVAL = 5000;

/** The options only a Cluster pool has. */
export type ClusterOwnOptions = Omit<ClusterOptions, keyof ConnectionOptions | keyof CommonOptions>;

/** One entry per Cluster option: its check, default and line of the reference page. */
export const CLUSTER_OWN_OPTIONS = defineOptions<ClusterOwnOptions>()({
  maxRedirections: { kind: 'integer', max: 1000, default: 16, doc: 'Redirections and retries (MOVED, ASK, TRYAGAIN, CLUSTERDOWN, connection errors) one command may take before it fails with `MaxRedirectionsError`.' },
  refresh: {
    kind: 'group',
    doc: 'Slot-map refreshes. While any command is retrying after a node failure, or a master is down or silent, the map is also refreshed at a period doubling from `minInterval` up to `watchInterval` (plus a random 0..`jitter`), so a replica the cluster promotes is used within about `watchInterval`. Each refresh starts at a random healthy node, so a fleet\'s refreshes spread over the cluster (docs/scale.md).',
    fields: {
      minInterval: { kind: 'integer', unit: 'ms', min: 1, max: MAX_TIMER, default: 200, doc: 'At most one refresh starts per this interval, however many MOVED replies or connection errors ask for one.' },
      interval: { kind: 'integer', unit: 'ms', max: MAX_TIMER, default: 30000, doc: 'Periodic refresh, which catches a master that died without answering anything; 0 disables. The first one comes after a random half to whole interval, so a fleet deployed at once does not refresh in step.' },
      jitter: { kind: 'integer', unit: 'ms', max: MAX_TIMER, default: 100, doc: 'Each trouble poll waits `minInterval` plus a random 0..`jitter` ms, so the processes of a fleet that saw one failure at the same moment do not keep asking in step. 0 disables. See docs/scale.md.' },
      watchInterval: { kind: 'integer', unit: 'ms', min: 1, max: MAX_TIMER, default: 1000, doc: 'While a node that serves slots is unreachable (a connection failed, or a command sent to it got no reply within its deadline), the map is refreshed at a period doubling from `minInterval` up to this, for at most `interval`: the promotion of its replica is found within about this long. See docs/scale.md.' },
      share: { kind: 'boolean', default: true, doc: 'Pools of this process with the same seeds, credentials, TLS options and natMap share their slot-map fetches (one `CLUSTER SHARDS` per event for all of them; connections are never shared).' },
    },
  },
  refreshTimeout: { kind: 'integer', unit: 'ms', min: 1, max: MAX_TIMER, default: 2000, doc: 'Timeout of each `CLUSTER SHARDS` / `CLUSTER SLOTS` request of a refresh (connect included).' },
  readFrom: { kind: 'oneOf', values: ['master', 'replica', 'prefer-replica', ...AZ_READ_FROM], default: 'master', doc: 'Where read-only commands go: `replica` (a healthy replica of the slot\'s shard, the master only when it has none), `prefer-replica` (a replica, the master when the replica fails), or zone-aware with `clientAz`: `az-affinity`, `az-affinity-replicas-and-primary`. Connections send `READONLY`. Replicas apply writes asynchronously, so there is no read-your-writes, not even inside one pipeline: reads that must see a write belong in a `multi()` or a lease (`use(fn, { key })`).' },
  clientAz: {
    kind: 'custom', type: 'string', doc: 'The availability zone this client runs in (e.g. `use1-az1`); required by, and only allowed with, a zone-aware `readFrom`.',
    // The zone's own rule; the combinations with readFrom are checked after the table.
    validate: (v) => checkAzOptions(AZ_READ_FROM[0], v, 'ClusterPool'),
  },
  natMap: NAT_MAP_SPEC,
  splitMultiKey: { kind: 'boolean', default: true, doc: 'Split `MGET`, `MSET`, `DEL`, `UNLINK`, `EXISTS` and `TOUCH` whose keys span slots into one command per slot, merged in key order. Any other command whose keys span slots is refused with `CrossSlotError` before it is sent, whatever this says.' },
  retryDelayOnTryAgain: { kind: 'integer', unit: 'ms', max: MAX_TIMER, default: 100, doc: 'First delay before a command that got `TRYAGAIN` is sent again (doubling on each further `TRYAGAIN`, capped by `retryBackoff.maxDelay`).' },
  retryBackoff: backoffSpec('Backoff after `CLUSTERDOWN` or a connection error.', 100, 2000),
  loadCommandTable: { kind: 'boolean', default: true, doc: 'Load the server\'s `COMMAND` table at start (the built-in one is used when COMMAND is denied).' },
});

/** Every option of a Cluster pool (`db` is not one: a cluster has only database 0). */
export const CLUSTER_OPTIONS = defineOptions<ClusterOptions>()({ ...omitDb(CONNECTION_OPTIONS), ...COMMON_OPTIONS, ...CLUSTER_OWN_OPTIONS });

function omitDb<T extends { db: unknown }>(t: T): Omit<T, 'db'> {
  const { db: _db, ...rest } = t;
  return rest;
}

/** Validates seeds and options (TypeError naming the argument or option) and applies defaults. */
export function resolveClusterOptions(seeds: unknown, options: ClusterOptions): ResolvedClusterOptions {
  if (!Array.isArray(seeds) || seeds.length === 0) throw new TypeError("seeds must be a non-empty array of 'host:port' strings, redis:// URLs or { host, port } objects.");
  const parsed = seeds.map((s, i) => parseAddress(s as Address, `seeds[${i}]`));
  checkObject('options', options);
  // `db: 0` is tolerated (options shared with a standalone pool); any other database is not.
  const { db, ...o } = (options ?? {}) as ClusterOptions & { db?: unknown };
  if ((db !== undefined && db !== 0) || parsed.some((p) => p.db !== undefined && p.db !== 0)) throw new TypeError('Option db must be 0: Redis Cluster has only database 0.');
  checkOptions(CLUSTER_OPTIONS, o);
  checkAzOptions(o.readFrom, o.clientAz, 'ClusterPool');
  // Credentials and TLS may come from the first seed URL.
  const fromUrl = parsed.find((p) => p.username !== undefined || p.password !== undefined || p.tls !== undefined) ?? {};
  // The heartbeat is on by default in a cluster (see CLUSTER_PING_INTERVAL).
  const data = connectionFrom({ ...o, pingInterval: o.pingInterval ?? CLUSTER_PING_INTERVAL }, { ...fromUrl, db: undefined }, 'node');
  const common = commonFrom(o);
  const own = withDefaults(CLUSTER_OWN_OPTIONS, o);
  const refreshTimeout = own.refreshTimeout;
  return {
    ...common,
    seeds: parsed.map((p) => ({ host: p.host, port: p.port })),
    data,
    // Probes ask for the map and close: no maintenance notifications for them.
    probe: { ...data, connectTimeout: Math.min(data.connectTimeout || refreshTimeout, refreshTimeout), commandTimeout: refreshTimeout, clientName: undefined, maint: undefined },
    cache: cacheFrom(o.cache, data.protocol),
    maxRedirections: own.maxRedirections,
    minRefreshInterval: own.refresh.minInterval,
    refreshInterval: own.refresh.interval,
    readFrom: own.readFrom,
    clientAz: own.clientAz ?? '',
    natMap: resolveNatMap(o.natMap),
    splitMultiKey: own.splitMultiKey,
    retryDelayOnTryAgain: own.retryDelayOnTryAgain,
    retryBackoff: own.retryBackoff,
    refreshTimeout,
    loadCommandTable: own.loadCommandTable,
    refreshJitter: own.refresh.jitter,
    refreshWatchInterval: own.refresh.watchInterval,
    refreshShareKey: own.refresh.share
      ? refreshShareKey({ seeds: parsed, username: o.username, password: o.password, credentials: o.credentials, tls: o.tls, natMap: o.natMap, protocol: o.protocol, fromUrl })
      : undefined,
  };
}

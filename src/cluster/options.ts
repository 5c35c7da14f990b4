import { parseAddress } from '../address.js';
import { CONNECTION_OPTION_NAMES, MAX_TIMER, resolveConnectionOptions, type ConnectionOptions, type ResolvedConnectionOptions } from '../connection/options.js';
import { checkBoolean, checkKnown, checkNumber, checkObject, checkOneOf } from '../options.js';
import type { BackoffOptions } from '../pool/backoff.js';
import { resolveNatMap, type NatMap } from '../nat-map.js';
import { COMMON_OPTION_NAMES, resolveCommon, type CommonOptions, type ResolvedCommonOptions } from '../pool/common-options.js';
import type { Address, NodeAddress } from '../types.js';
import { resolveCacheOptions, type ResolvedCacheOptions } from '../cache/options.js';
import { AZ_READ_FROM, checkAzOptions, type AzReadFrom } from '../pool/read-from.js';

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
   * after a node failure (connection error, CLUSTERDOWN, READONLY), the map is also refreshed
   * every `minInterval` until none is, so a replica the cluster promotes is used within about
   * one interval; a master that could not be reached is watched the same way, at a period that
   * doubles, for at most `interval`. `interval`: periodic refresh, which catches a master that
   * died without answering anything; 0 disables (default 30000).
   */
  refresh?: {
    /** At most one refresh per this many ms (default 200, at least 1). */
    minInterval?: number;
    /** Periodic refresh period in ms; 0 disables (default 30000). */
    interval?: number;
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
}

const KNOWN = [
  ...CONNECTION_OPTION_NAMES, ...COMMON_OPTION_NAMES, 'maxRedirections', 'refresh', 'readFrom', 'clientAz', 'natMap', 'splitMultiKey',
  'retryDelayOnTryAgain', 'retryBackoff', 'refreshTimeout', 'loadCommandTable',
];

/** Validates seeds and options (TypeError naming the argument or option) and applies defaults. */
export function resolveClusterOptions(seeds: unknown, o: ClusterOptions): ResolvedClusterOptions {
  if (!Array.isArray(seeds) || seeds.length === 0) throw new TypeError("seeds must be a non-empty array of 'host:port' strings, redis:// URLs or { host, port } objects.");
  const parsed = seeds.map((s, i) => parseAddress(s as Address, `seeds[${i}]`));
  checkObject('options', o);
  checkKnown('', o, KNOWN);
  checkNumber('maxRedirections', o.maxRedirections, { min: 0, max: 1000 });
  checkObject('refresh', o.refresh);
  checkKnown('refresh', o.refresh, ['minInterval', 'interval']);
  checkNumber('refresh.minInterval', o.refresh?.minInterval, { min: 1, max: MAX_TIMER });
  checkNumber('refresh.interval', o.refresh?.interval, { max: MAX_TIMER });
  checkOneOf('readFrom', o.readFrom, ['master', 'replica', 'prefer-replica', ...AZ_READ_FROM]);
  checkAzOptions(o.readFrom, o.clientAz, 'ClusterPool');
  if (o.natMap !== undefined && typeof o.natMap !== 'function') checkObject('natMap', o.natMap);
  checkBoolean('splitMultiKey', o.splitMultiKey);
  checkNumber('retryDelayOnTryAgain', o.retryDelayOnTryAgain, { max: MAX_TIMER });
  checkObject('retryBackoff', o.retryBackoff);
  checkKnown('retryBackoff', o.retryBackoff, ['initialDelay', 'maxDelay']);
  checkNumber('retryBackoff.initialDelay', o.retryBackoff?.initialDelay, { min: 1, max: MAX_TIMER });
  checkNumber('retryBackoff.maxDelay', o.retryBackoff?.maxDelay, { min: 1, max: MAX_TIMER });
  checkNumber('refreshTimeout', o.refreshTimeout, { min: 1, max: MAX_TIMER });
  checkBoolean('loadCommandTable', o.loadCommandTable);
  // Credentials and TLS may come from the first seed URL; a cluster has only database 0.
  const fromUrl = parsed.find((p) => p.username !== undefined || p.password !== undefined || p.tls !== undefined) ?? {};
  const data = resolveConnectionOptions(o, { ...fromUrl, db: undefined }, '', 'node');
  if (data.db !== 0 || parsed.some((p) => p.db !== undefined && p.db !== 0)) throw new TypeError('Option db must be 0: Redis Cluster has only database 0.');
  const common = resolveCommon(o);
  const refreshTimeout = o.refreshTimeout ?? 2000;
  return {
    seeds: parsed.map((p) => ({ host: p.host, port: p.port })),
    data,
    // Probes ask for the map and close: no maintenance notifications for them.
    probe: { ...data, connectTimeout: Math.min(data.connectTimeout || refreshTimeout, refreshTimeout), commandTimeout: refreshTimeout, clientName: undefined, maint: undefined },
    pool: common.pool,
    closeTimeout: common.closeTimeout,
    offlineQueue: common.offlineQueue,
    keyPrefix: common.keyPrefix,
    cache: resolveCacheOptions(o.cache, data.protocol),
    durability: common.durability,
    durabilityCounters: common.durabilityCounters,
    maxRedirections: o.maxRedirections ?? 16,
    minRefreshInterval: o.refresh?.minInterval ?? 200,
    refreshInterval: o.refresh?.interval ?? 30000,
    readFrom: o.readFrom ?? 'master',
    clientAz: o.clientAz ?? '',
    natMap: resolveNatMap(o.natMap),
    splitMultiKey: o.splitMultiKey ?? true,
    retryDelayOnTryAgain: o.retryDelayOnTryAgain ?? 100,
    retryBackoff: { initialDelay: o.retryBackoff?.initialDelay ?? 100, maxDelay: o.retryBackoff?.maxDelay ?? 2000 },
    refreshTimeout,
    loadCommandTable: o.loadCommandTable ?? true,
  };
}

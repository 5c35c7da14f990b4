import { checkFields, defineOptions, MAX_TIMER, optionNames, withDefaults } from '../options.js';
import { POOL_GROUP, type PoolOptions, type ResolvedPoolOptions } from './options.js';
import { CACHE_GROUP, type CacheOptions } from '../cache/options.js';
import { DURABILITY_GROUP, DurabilityCounters, type Durability, type DurabilityOptions } from './durability.js';

/** Options of every mode besides the connection options. */
export interface CommonOptions {
  /** Exclusive pool and lanes. */
  pool?: PoolOptions;
  /** How long `close()` waits for in-flight commands and leases before destroying connections. Default 5000 ms. */
  closeTimeout?: number;
  /**
   * `true` (default): while a node cannot be reached, calls wait for it to come back within
   * their deadline. `false`: while a node is known to be unreachable (its last connection
   * attempt failed), calls for it reject at once with `NodeUnreachableError` (not sent), and the
   * pool keeps reconnecting in the background: fail fast, for callers with a fallback.
   */
  offlineQueue?: boolean;
  /**
   * Prepended to every key argument (as ioredis's `keyPrefix`), found at the key positions of
   * the command table, the same ones the cluster router reads: a prefixed key routes to the
   * slot of its prefixed name. `scanIterator` scans only the prefix's keys and yields them
   * without it. Not applied to channels, to patterns of KEYS/SCAN, to commands the table does
   * not know (modules), or to replies (BLPOP answers the prefixed key name). Default: none.
   */
  keyPrefix?: string;
  /**
   * Client-side cache of cacheable reads, invalidated by the server (`CLIENT TRACKING`, RESP3
   * only: `protocol: 3`). Off by default; see the README's "Client-side cache".
   */
  cache?: CacheOptions;
  /**
   * Durable acknowledgements (off by default): a write resolves only once `replicas` replicas
   * confirmed it, which the pool asks with one `WAIT replicas timeout` after each flush of writes
   * on a connection (one replication round trip per batch, not per command). Fewer replicas
   * within `timeout` ms rejects each write of that batch with `DurabilityError` (applied on the
   * master, not confirmed, never re-sent). Per call: `pool.with({ durability })`, `false` for off.
   */
  durability?: DurabilityOptions;
}

/** @internal */
export interface ResolvedCommonOptions {
  pool: ResolvedPoolOptions;
  closeTimeout: number;
  offlineQueue: boolean;
  /** '' when there is none. */
  keyPrefix: string;
  /** undefined when off; counts into `durabilityCounters` either way. */
  durability: Durability | undefined;
  durabilityCounters: DurabilityCounters;
}

/** One entry per option every mode shares besides the connection's. */
export const COMMON_OPTIONS = defineOptions<CommonOptions>()({
  closeTimeout: { kind: 'integer', unit: 'ms', max: MAX_TIMER, default: 5000, doc: 'How long `close()` lets in-flight commands and leases finish before destroying connections.' },
  offlineQueue: { kind: 'boolean', default: true, doc: '`false`: while a node is known to be unreachable (its last connection attempt failed), calls for it reject at once with `NodeUnreachableError` instead of waiting within their deadline; reconnecting goes on in the background.' },
  keyPrefix: { kind: 'string', allowEmpty: true, default: '', defaultDoc: 'none', doc: 'Prepended to every key argument, at the key positions of the command table (a prefixed key routes to the slot of its prefixed name); `scanIterator` scans only the prefix\'s keys and yields them without it. Not applied to channels, KEYS/SCAN patterns, unknown (module) commands or replies.' },
  durability: DURABILITY_GROUP,
  pool: POOL_GROUP,
  cache: CACHE_GROUP,
});

/** @internal Option names of {@link CommonOptions}. */
export const COMMON_OPTION_NAMES = optionNames(COMMON_OPTIONS);

/** @internal Validates and splits the options shared by all modes. */
export function resolveCommon(o: CommonOptions): ResolvedCommonOptions {
  checkFields(COMMON_OPTIONS, o);
  return commonFrom(o);
}

/** @internal The shared options from checked ones (the cache is the mode's: it needs the protocol). */
export function commonFrom(o: CommonOptions): ResolvedCommonOptions {
  const d = withDefaults(COMMON_OPTIONS, o);
  const durabilityCounters = new DurabilityCounters();
  return {
    pool: d.pool,
    closeTimeout: d.closeTimeout,
    offlineQueue: d.offlineQueue,
    durability: d.durability && { ...d.durability, stats: durabilityCounters },
    durabilityCounters,
    keyPrefix: d.keyPrefix,
  };
}

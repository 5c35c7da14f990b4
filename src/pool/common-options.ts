import { MAX_TIMER } from '../connection/options.js';
import { checkBoolean, checkNumber } from '../options.js';
import { resolvePoolOptions, type PoolOptions, type ResolvedPoolOptions } from './options.js';

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
}

/** @internal */
export interface ResolvedCommonOptions {
  pool: ResolvedPoolOptions;
  closeTimeout: number;
  offlineQueue: boolean;
  /** '' when there is none. */
  keyPrefix: string;
}

/** @internal Option names of {@link CommonOptions}. */
export const COMMON_OPTION_NAMES = ['pool', 'closeTimeout', 'offlineQueue', 'keyPrefix'] as const;

/** @internal Validates and splits the options shared by all modes. */
export function resolveCommon(o: CommonOptions): ResolvedCommonOptions {
  checkNumber('closeTimeout', o.closeTimeout, { max: MAX_TIMER });
  checkBoolean('offlineQueue', o.offlineQueue);
  if (o.keyPrefix !== undefined && typeof o.keyPrefix !== 'string') throw new TypeError(`Option keyPrefix must be a string (got ${o.keyPrefix === null ? 'null' : typeof o.keyPrefix}).`);
  return { pool: resolvePoolOptions(o.pool), closeTimeout: o.closeTimeout ?? 5000, offlineQueue: o.offlineQueue ?? true, keyPrefix: o.keyPrefix ?? '' };
}

import { MAX_TIMER } from '../connection/options.js';
import { checkBoolean, checkNumber } from '../options.js';
import { resolvePoolOptions, type PoolOptions, type ResolvedPoolOptions } from './options.js';
import type { CacheOptions } from '../cache/options.js';

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
   * Client-side cache of cacheable reads, invalidated by the server (`CLIENT TRACKING`, RESP3
   * only: `protocol: 3`). Off by default; see the README's "Client-side cache".
   */
  cache?: CacheOptions;
}

/** @internal */
export interface ResolvedCommonOptions {
  pool: ResolvedPoolOptions;
  closeTimeout: number;
  offlineQueue: boolean;
}

/** @internal Option names of {@link CommonOptions}. */
export const COMMON_OPTION_NAMES = ['pool', 'closeTimeout', 'offlineQueue', 'cache'] as const;

/** @internal Validates and splits the options shared by all modes. */
export function resolveCommon(o: CommonOptions): ResolvedCommonOptions {
  checkNumber('closeTimeout', o.closeTimeout, { max: MAX_TIMER });
  checkBoolean('offlineQueue', o.offlineQueue);
  return { pool: resolvePoolOptions(o.pool), closeTimeout: o.closeTimeout ?? 5000, offlineQueue: o.offlineQueue ?? true };
}

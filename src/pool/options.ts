import { MAX_TIMER } from '../connection/options.js';
import { checkBoolean, checkKnown, checkNumber, checkObject } from '../options.js';
import type { BackoffOptions } from './backoff.js';

/** Pool sizing and behaviour. Time values are in milliseconds. */
export interface PoolOptions {
  /** Connections kept open in the exclusive pool (for `use()` and `multi()`). Default 0. */
  min?: number;
  /** Most connections in the exclusive pool. Default 10. */
  max?: number;
  /** How long `use()` / `multi()` wait for a free connection before failing. Default 5000. */
  acquireTimeoutMillis?: number;
  /** An idle exclusive connection older than this is closed by the evictor. Default 30000. */
  idleTimeoutMillis?: number;
  /** How often the evictor runs; 0 disables it. Default 10000. */
  evictionRunIntervalMillis?: number;
  /** PING a connection before lending it (state checks always run). Default false. */
  testOnBorrow?: boolean;
  /** Multiplexed connections behind `call()` (automatic pipelining). Default 1. */
  lanes?: number;
  /** Backoff between failed connection attempts to a node. Default `{ initialDelay: 50, maxDelay: 2000 }`. */
  reconnect?: Partial<BackoffOptions>;
}

export interface ResolvedPoolOptions {
  min: number;
  max: number;
  acquireTimeoutMillis: number;
  idleTimeoutMillis: number;
  evictionRunIntervalMillis: number;
  testOnBorrow: boolean;
  lanes: number;
  reconnect: BackoffOptions;
}

export const POOL_DEFAULTS: ResolvedPoolOptions = {
  min: 0,
  max: 10,
  acquireTimeoutMillis: 5000,
  idleTimeoutMillis: 30000,
  evictionRunIntervalMillis: 10000,
  testOnBorrow: false,
  lanes: 1,
  reconnect: { initialDelay: 50, maxDelay: 2000 },
};

const KNOWN = ['min', 'max', 'acquireTimeoutMillis', 'idleTimeoutMillis', 'evictionRunIntervalMillis', 'testOnBorrow', 'lanes', 'reconnect'];

/** Validates `pool` options (TypeError naming the option) and applies defaults. */
export function resolvePoolOptions(o: PoolOptions | undefined): ResolvedPoolOptions {
  checkObject('pool', o);
  checkKnown('pool', o, KNOWN);
  o ??= {};
  checkNumber('pool.min', o.min);
  checkNumber('pool.max', o.max, { min: 1 });
  checkNumber('pool.acquireTimeoutMillis', o.acquireTimeoutMillis, { min: 1, max: MAX_TIMER });
  checkNumber('pool.idleTimeoutMillis', o.idleTimeoutMillis, { max: MAX_TIMER });
  checkNumber('pool.evictionRunIntervalMillis', o.evictionRunIntervalMillis, { max: MAX_TIMER });
  checkBoolean('pool.testOnBorrow', o.testOnBorrow);
  checkNumber('pool.lanes', o.lanes, { min: 1, max: 64 });
  checkObject('pool.reconnect', o.reconnect);
  checkKnown('pool.reconnect', o.reconnect, ['initialDelay', 'maxDelay']);
  checkNumber('pool.reconnect.initialDelay', o.reconnect?.initialDelay, { min: 1, max: MAX_TIMER });
  checkNumber('pool.reconnect.maxDelay', o.reconnect?.maxDelay, { min: 1, max: MAX_TIMER });
  const r: ResolvedPoolOptions = {
    min: o.min ?? POOL_DEFAULTS.min,
    max: o.max ?? POOL_DEFAULTS.max,
    acquireTimeoutMillis: o.acquireTimeoutMillis ?? POOL_DEFAULTS.acquireTimeoutMillis,
    idleTimeoutMillis: o.idleTimeoutMillis ?? POOL_DEFAULTS.idleTimeoutMillis,
    evictionRunIntervalMillis: o.evictionRunIntervalMillis ?? POOL_DEFAULTS.evictionRunIntervalMillis,
    testOnBorrow: o.testOnBorrow ?? POOL_DEFAULTS.testOnBorrow,
    lanes: o.lanes ?? POOL_DEFAULTS.lanes,
    reconnect: { ...POOL_DEFAULTS.reconnect, ...o.reconnect },
  };
  if (r.min > r.max) throw new TypeError(`Option pool.min (${r.min}) must not exceed pool.max (${r.max}).`);
  if (r.reconnect.initialDelay > r.reconnect.maxDelay) {
    throw new TypeError(`Option pool.reconnect.initialDelay (${r.reconnect.initialDelay}) must not exceed pool.reconnect.maxDelay (${r.reconnect.maxDelay}).`);
  }
  return r;
}

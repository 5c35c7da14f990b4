import { backoffSpec, checkOption, defineOptions, MAX_TIMER, withDefaults, type GroupSpec, type Resolved } from '../options.js';
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

/** One entry per pool option: its check, default and line of the reference page. */
export const POOL_OPTIONS = defineOptions<PoolOptions>()({
  lanes: { kind: 'integer', min: 1, max: 64, default: 1, doc: 'Multiplexed connections behind `call()` (automatic pipelining).' },
  min: { kind: 'integer', default: 0, doc: 'Exclusive connections kept open (for `use()`, `multi()`, blocking commands); at most `max`.' },
  max: { kind: 'integer', min: 1, default: 10, doc: 'Most exclusive connections.' },
  acquireTimeoutMillis: { kind: 'integer', unit: 'ms', min: 1, max: MAX_TIMER, default: 5000, doc: 'How long `use()` / `multi()` wait for a free exclusive connection before failing.' },
  idleTimeoutMillis: { kind: 'integer', unit: 'ms', max: MAX_TIMER, default: 30000, doc: 'An idle exclusive connection older than this is closed by the evictor.' },
  evictionRunIntervalMillis: { kind: 'integer', unit: 'ms', max: MAX_TIMER, default: 10000, doc: 'How often the evictor runs; 0 disables it.' },
  testOnBorrow: { kind: 'boolean', default: false, doc: 'PING a connection before lending it (state and generation checks always run).' },
  reconnect: backoffSpec('Backoff (full jitter) between failed connection attempts to a node.', 50, 2000),
});

/** `pool: { … }` as one option of a mode, with the rule across its fields. */
export const POOL_GROUP = {
  kind: 'group',
  doc: 'The exclusive pool (leases, `multi()`, blocking commands) and the lanes behind `call()`.',
  fields: POOL_OPTIONS,
  check(p: { min: number; max: number }, name: string) {
    if (p.min > p.max) throw new TypeError(`Option ${name}.min (${p.min}) must not exceed ${name}.max (${p.max}).`);
  },
} as const satisfies GroupSpec<PoolOptions>;

/** Pool options with every default applied. */
export type ResolvedPoolOptions = Resolved<PoolOptions, typeof POOL_OPTIONS>;

/** Validates `pool` options (TypeError naming the option) and applies defaults. */
export function resolvePoolOptions(o: PoolOptions | undefined): ResolvedPoolOptions {
  checkOption(POOL_GROUP, o, 'pool');
  return withDefaults(POOL_OPTIONS, o);
}

import { checkKnown, checkNumber, checkObject, checkOneOf } from '../options.js';

/** Client-side cache options (`cache: { … }`); RESP3 only. */
export interface CacheOptions {
  /** Most entries kept; the least recently used goes first. Default 10000. */
  maxEntries?: number;
  /** Most bytes kept (an estimate of the decoded replies and their keys); LRU beyond. Default 64 MiB. */
  maxBytes?: number;
  /**
   * An entry is dropped this many ms after it was filled, even if no invalidation came: a bound
   * on staleness should one ever be missed. 0 keeps entries until invalidated or evicted. Default 60000.
   */
  ttl?: number;
  /**
   * `'default'`: the server remembers which keys this client read and invalidates those
   * (`CLIENT TRACKING ON`). `'broadcast'`: the server invalidates every key under `prefixes`
   * (`BCAST PREFIX …`), read or not; cheaper for the server with many clients. Default `'default'`.
   */
  mode?: 'default' | 'broadcast';
  /** Only keys starting with one of these are cached (and, in broadcast mode, tracked). Default: every key. */
  prefixes?: string[];
  /**
   * At most this many hits are served in one event-loop turn; the next waits for the next turn
   * (setImmediate), so socket data, invalidations included, is read in between even in a loop
   * that only ever hits. Default 1000.
   */
  hitsPerTurn?: number;
}

/** @internal */
export interface ResolvedCacheOptions {
  maxEntries: number;
  maxBytes: number;
  ttl: number;
  mode: 'default' | 'broadcast';
  prefixes: string[] | undefined;
  hitsPerTurn: number;
}

/** @internal Validates `cache` (TypeError naming the option); undefined when the cache is off. */
export function resolveCacheOptions(o: unknown, protocol: 2 | 3): ResolvedCacheOptions | undefined {
  if (o === undefined || o === false) return undefined;
  checkObject('cache', o);
  const c = o as CacheOptions;
  checkKnown('cache', c, ['maxEntries', 'maxBytes', 'ttl', 'mode', 'prefixes', 'hitsPerTurn']);
  if (protocol !== 3) throw new TypeError('Option cache needs protocol: 3 (RESP3): the server sends invalidations as RESP3 pushes on the connection that read the key.');
  checkNumber('cache.maxEntries', c.maxEntries, { min: 1 });
  checkNumber('cache.maxBytes', c.maxBytes, { min: 1024 });
  checkNumber('cache.ttl', c.ttl, { max: 2 ** 31 - 1 });
  checkNumber('cache.hitsPerTurn', c.hitsPerTurn, { min: 1 });
  checkOneOf('cache.mode', c.mode, ['default', 'broadcast']);
  if (c.prefixes !== undefined) {
    if (!Array.isArray(c.prefixes) || c.prefixes.some((p) => typeof p !== 'string' || p === '')) throw new TypeError('Option cache.prefixes must be an array of non-empty strings.');
  }
  return {
    maxEntries: c.maxEntries ?? 10_000,
    maxBytes: c.maxBytes ?? 64 * 1024 * 1024,
    ttl: c.ttl ?? 60_000,
    mode: c.mode ?? 'default',
    prefixes: c.prefixes && c.prefixes.length > 0 ? [...c.prefixes] : undefined,
    hitsPerTurn: c.hitsPerTurn ?? 1000,
  };
}

/** @internal The handshake command that turns tracking on for a connection. */
export function trackingCommand(o: ResolvedCacheOptions): string[] {
  if (o.mode === 'default') return ['CLIENT', 'TRACKING', 'ON'];
  const cmd = ['CLIENT', 'TRACKING', 'ON', 'BCAST'];
  for (const p of o.prefixes ?? []) cmd.push('PREFIX', p);
  return cmd;
}

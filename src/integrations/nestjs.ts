/**
 * `redis-ha-pool/nestjs`: a `@nestjs/throttler` 6 storage on a pool.
 *
 * ```ts
 * ThrottlerModule.forRoot({
 *   throttlers: [{ limit: 10, ttl: 60_000 }],
 *   storage: new ThrottlerStorageRedis(pool),
 * })
 * ```
 * @packageDocumentation
 */
import type { Arg, Reply, Script, ScriptOptions } from '../index.js';

/** What `@nestjs/throttler` expects back from `increment` (its `ThrottlerStorageRecord`). */
export interface ThrottlerStorageRecord {
  /** Hits counted in the current window (the one refused included, while not blocked). */
  totalHits: number;
  /** Seconds until the current window ends. */
  timeToExpire: number;
  /** Whether the request is refused. */
  isBlocked: boolean;
  /** Seconds until the block ends (the guard's `Retry-After`); 0 when not blocked. */
  timeToBlockExpire: number;
}

/** Options of {@link ThrottlerStorageRedis}. */
export interface ThrottlerStorageRedisOptions {
  /** Prepended to every key the storage writes (after the pool's own `keyPrefix`). Default `'throttler:'`. */
  prefix?: string;
}

/** What the storage needs from a pool: `StandalonePool`, `SentinelPool` and `ClusterPool` all have it. */
export interface ThrottlerPool {
  /** Scripts run as EVALSHA with the EVAL fallback after NOSCRIPT. */
  script(source: string, options: ScriptOptions): Script;
}

// One hash per (tracker key, throttler): hits, window end and block end, as server times in ms.
// One key per call, so a cluster routes the whole script to one slot, and the server's clock
// (TIME) decides windows: app servers with skewed clocks still agree. It follows the in-memory
// ThrottlerStorageService: a window of `ttl` ms starts at the first hit; with a blockDuration,
// the hit that exceeds `limit` blocks for `blockDuration` ms (hits are not counted while
// blocked, and the count starts over when the block ends); without one, a hit over the limit is
// refused, not counted, and may retry when the window ends.
const INCREMENT = `
local ttl = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local block = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local v = redis.call('HMGET', KEYS[1], 'hits', 'windowEnd', 'blockEnd')
local hits = tonumber(v[1]) or 0
local windowEnd = tonumber(v[2]) or 0
local blockEnd = tonumber(v[3]) or 0
if windowEnd <= now then
  hits = 0
  windowEnd = now + ttl
end
if blockEnd > 0 and blockEnd <= now then
  hits = 0
  windowEnd = now + ttl
  blockEnd = 0
end
local blocked = 0
if blockEnd > now then
  blocked = 1
elseif block > 0 then
  hits = hits + 1
  if hits > limit then
    blocked = 1
    blockEnd = now + block
  end
elseif hits >= limit then
  blocked = 1
else
  hits = hits + 1
end
redis.call('HSET', KEYS[1], 'hits', hits, 'windowEnd', windowEnd, 'blockEnd', blockEnd)
local keep = windowEnd
if blockEnd > keep then keep = blockEnd end
redis.call('PEXPIRE', KEYS[1], keep - now)
local total = hits
local blockLeft = 0
if blocked == 1 then
  if block > 0 then
    blockLeft = blockEnd - now
  else
    total = hits + 1
    blockLeft = windowEnd - now
  end
end
return { total, windowEnd - now, blocked, blockLeft }
`;

const OPTION_NAMES = ['prefix'];

/**
 * A `ThrottlerStorage` for `@nestjs/throttler` 6 on a `StandalonePool`, `SentinelPool` or
 * `ClusterPool`: every `increment` is one Lua script (atomic, one key, so it runs on one node
 * of a cluster), timed by the server's clock. Results follow the library's units: `ttl` and
 * `blockDuration` in milliseconds in, `timeToExpire` and `timeToBlockExpire` in seconds
 * (rounded up) out. The pool is not closed by the storage; close it when the app shuts down.
 */
export class ThrottlerStorageRedis {
  readonly #script: Script;
  readonly #prefix: string;

  constructor(pool: ThrottlerPool, options?: ThrottlerStorageRedisOptions) {
    if (typeof pool !== 'object' || pool === null || typeof (pool as { script?: unknown }).script !== 'function') {
      throw new TypeError('ThrottlerStorageRedis(pool, options) needs a redis-ha-pool pool (StandalonePool, SentinelPool or ClusterPool).');
    }
    if (options !== undefined) {
      if (typeof options !== 'object' || options === null) throw new TypeError('ThrottlerStorageRedis: options must be an object.');
      for (const k of Object.keys(options)) {
        if (!OPTION_NAMES.includes(k)) throw new TypeError(`ThrottlerStorageRedis: unknown option ${k}; known options are: ${OPTION_NAMES.join(', ')}.`);
      }
      if (options.prefix !== undefined && typeof options.prefix !== 'string') throw new TypeError(`ThrottlerStorageRedis: option prefix must be a string (got ${typeof options.prefix}).`);
    }
    this.#prefix = options?.prefix ?? 'throttler:';
    this.#script = pool.script(INCREMENT, { keys: 1 });
  }

  /**
   * Counts one hit of `key` for `throttlerName`: `ttl` ms window, `limit` hits, then blocked for
   * `blockDuration` ms (0: refused until the window ends, not blocked beyond it).
   */
  async increment(key: string, ttl: number, limit: number, blockDuration: number, throttlerName: string): Promise<ThrottlerStorageRecord> {
    check('key', key, 'string');
    check('throttlerName', throttlerName, 'string');
    for (const [n, v] of [['ttl', ttl], ['limit', limit], ['blockDuration', blockDuration]] as const) {
      if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) throw new TypeError(`ThrottlerStorageRedis.increment: ${n} must be a finite number >= 0 (got ${typeof v === 'number' ? v : typeof v}).`);
    }
    if (ttl < 1) throw new TypeError(`ThrottlerStorageRedis.increment: ttl must be at least 1 ms (got ${ttl}).`);
    const args: Arg[] = [`${this.#prefix}${key}:${throttlerName}`, Math.ceil(ttl), Math.floor(limit), Math.ceil(blockDuration)];
    const [hits, expireMs, blocked, blockMs] = (await this.#script(...args)) as Reply[] as number[];
    return {
      totalHits: Number(hits),
      timeToExpire: Math.ceil(Number(expireMs) / 1000),
      isBlocked: Number(blocked) === 1,
      timeToBlockExpire: Math.ceil(Number(blockMs) / 1000),
    };
  }
}

function check(name: string, v: unknown, type: 'string'): void {
  if (typeof v !== type) throw new TypeError(`ThrottlerStorageRedis.increment: ${name} must be a ${type} (got ${typeof v}).`);
}

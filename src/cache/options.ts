import { checkFields, checkKnown, checkObject, defineOptions, MAX_TIMER, optionNames, withDefaults, type GroupSpec, type Resolved } from '../options.js';

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

/** One entry per cache option: its check, default and line of the reference page. */
export const CACHE_OPTIONS = defineOptions<CacheOptions>()({
  maxEntries: { kind: 'integer', min: 1, default: 10_000, doc: 'Most entries kept; beyond it the least recently used go (second-chance eviction, close to LRU).' },
  maxBytes: { kind: 'integer', unit: 'bytes', min: 1024, default: 64 * 1024 * 1024, doc: 'Most bytes kept (an estimate of the decoded replies and their keys); LRU beyond.' },
  ttl: { kind: 'integer', unit: 'ms', max: MAX_TIMER, default: 60_000, doc: 'An entry is dropped this long after it was filled even if no invalidation came (a bound on staleness should one be missed); 0 keeps entries until invalidated or evicted.' },
  mode: { kind: 'oneOf', values: ['default', 'broadcast'], default: 'default', doc: '`default`: the server invalidates the keys this client read (`CLIENT TRACKING ON`); `broadcast`: every key under `prefixes`, read or not (`BCAST`), cheaper for a server with many clients.' },
  prefixes: {
    kind: 'custom', type: 'string[]', defaultDoc: 'every key', doc: 'Only keys starting with one of these are cached (and, in broadcast mode, tracked).',
    validate(v, name) {
      if (!Array.isArray(v) || v.some((p) => typeof p !== 'string' || p === '')) throw new TypeError(`Option ${name} must be an array of non-empty strings.`);
    },
  },
  hitsPerTurn: { kind: 'integer', min: 1, default: 1000, doc: 'At most this many hits are served in one event-loop turn; the next waits for the next turn, so socket data (invalidations included) is read in between even in a loop that only hits.' },
});

/** @internal Cache options with every default applied (`prefixes` undefined for every key). */
export type ResolvedCacheOptions = Resolved<CacheOptions, typeof CACHE_OPTIONS>;

/** `cache: { … }` as one option of a mode: off unless given. */
export const CACHE_GROUP = {
  kind: 'group',
  doc: 'Client-side cache of cacheable reads, invalidated by the server (`CLIENT TRACKING`); needs `protocol: 3`. Per call: `with({ cache: false })` bypasses it.',
  defaultDoc: 'off',
  fields: CACHE_OPTIONS,
  optional: true,
  orFalse: true,
} as const satisfies GroupSpec<CacheOptions>;

/** @internal Validates `cache` (TypeError naming the option); undefined when the cache is off. */
export function resolveCacheOptions(o: unknown, protocol: 2 | 3): ResolvedCacheOptions | undefined {
  if (o === undefined || o === false) return undefined;
  checkObject('cache', o);
  checkKnown('cache', o as object, optionNames(CACHE_OPTIONS));
  cacheNeedsResp3(protocol);
  checkFields(CACHE_OPTIONS, o, 'cache');
  return cacheFrom(o as CacheOptions, protocol);
}

/** @internal The cache settings from a checked `cache` option; undefined when off. */
export function cacheFrom(o: CacheOptions | false | undefined, protocol: 2 | 3): ResolvedCacheOptions | undefined {
  if (o === undefined || o === false) return undefined;
  cacheNeedsResp3(protocol);
  const c = withDefaults(CACHE_OPTIONS, o);
  return { ...c, prefixes: c.prefixes && c.prefixes.length > 0 ? [...c.prefixes] : undefined };
}

function cacheNeedsResp3(protocol: 2 | 3): void {
  if (protocol !== 3) throw new TypeError('Option cache needs protocol: 3 (RESP3): the server sends invalidations as RESP3 pushes on the connection that read the key.');
}

/** @internal The handshake command that turns tracking on for a connection. */
export function trackingCommand(o: ResolvedCacheOptions): string[] {
  if (o.mode === 'default') return ['CLIENT', 'TRACKING', 'ON'];
  const cmd = ['CLIENT', 'TRACKING', 'ON', 'BCAST'];
  for (const p of o.prefixes ?? []) cmd.push('PREFIX', p);
  return cmd;
}

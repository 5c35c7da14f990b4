import { keysOf, traitsOf, type CommandTraits } from '../commands/traits.js';
import type { Arg } from '../types.js';

/** What a command means to the cache. */
export type CachePlan =
  /** A cacheable read of one key: `entry` identifies command and arguments. */
  | { kind: 'read'; key: string; entry: string }
  /** MGET: served from (and filling) the GET entries of its keys. */
  | { kind: 'mget'; keys: string[] }
  /** A command that may change these keys: their entries go at once (read-your-writes even before the server's invalidation arrives). */
  | { kind: 'write'; keys: Arg[] }
  /** Nothing to do with the cache. */
  | { kind: 'none' };

const NONE: CachePlan = { kind: 'none' };
const lowerCache = new Map<string, string>();

/** A command name in lower case (memoized: the same few names come by again and again). */
export function lower(name: string): string {
  let l = lowerCache.get(name);
  if (l === undefined) {
    l = name.toLowerCase();
    if (lowerCache.size < 1024) lowerCache.set(name, l);
  }
  return l;
}

/** The entry id of `GET k`: one string per command and argument list (lengths keep `a b` and `a\0b` apart). */
export function entryId(name: string, args: readonly Arg[]): string {
  if (args.length === 2) return `${name} ${String(args[1])}`;
  let id = name;
  for (let i = 1; i < args.length; i++) {
    const s = String(args[i]);
    id += ` ${s.length}:${s}`;
  }
  return id;
}

/**
 * Says what the cache does with a command, by its traits' `cache` role (worked out where the
 * call entered; by the built-in table when not given). Reads are cached only when every
 * argument is a string or a number (a Buffer key is left to the server), and, with `prefixes`,
 * only for keys under one of them.
 */
export function cachePlan(args: readonly Arg[], prefixes: readonly string[] | undefined, t: CommandTraits = traitsOf(args)): CachePlan {
  if (typeof args[0] !== 'string') return NONE;
  switch (t.cache) {
    case undefined:
      return NONE;
    case 'read': {
      if (args.length < 2) return NONE;
      for (let i = 1; i < args.length; i++) {
        const a = typeof args[i];
        if (a !== 'string' && a !== 'number') return NONE;
      }
      const key = String(args[1]);
      if (prefixes !== undefined && !prefixes.some((p) => key.startsWith(p))) return NONE;
      // EXISTS of several keys counts them: not one key's value.
      if (t.lower === 'exists' && args.length > 2) return NONE;
      return { kind: 'read', key, entry: entryId(t.lower, args) };
    }
    case 'mget': {
      const keys: string[] = [];
      for (let i = 1; i < args.length; i++) {
        const k = args[i];
        if (typeof k !== 'string') return NONE;
        if (prefixes !== undefined && !prefixes.some((p) => k.startsWith(p))) return NONE;
        keys.push(k);
      }
      return keys.length > 0 ? { kind: 'mget', keys } : NONE;
    }
    case 'write': {
      const keys = keysOf(t, args);
      return keys.length > 0 ? { kind: 'write', keys } : NONE;
    }
  }
}

/** Rough heap bytes of a decoded reply, for `maxBytes` (strings count 2 bytes per character). */
export function replyBytes(v: unknown): number {
  if (typeof v === 'string') return 16 + v.length * 2;
  if (typeof v === 'number' || typeof v === 'boolean' || v === null || v === undefined) return 8;
  if (typeof v === 'bigint') return 16;
  if (Buffer.isBuffer(v)) return 64 + v.length;
  if (Array.isArray(v)) {
    let n = 16 + v.length * 8;
    for (const x of v) n += replyBytes(x);
    return n;
  }
  if (v instanceof Map) {
    let n = 64;
    for (const [k, x] of v) n += 32 + replyBytes(k) + replyBytes(x);
    return n;
  }
  if (v instanceof Set) {
    let n = 64;
    for (const x of v) n += 24 + replyBytes(x);
    return n;
  }
  return 64;
}

/**
 * A caller's own copy of a cached reply: its arrays, Maps and Sets are new, its strings and
 * numbers shared (they are immutable). Callers may sort or push into what they get, as they
 * may without the cache, and the entry stays as the server sent it. Scalars, the common hit,
 * are returned as they are, without allocating.
 */
export function copyReply<T>(v: T): T {
  if (typeof v !== 'object' || v === null || Buffer.isBuffer(v)) return v;
  if (Array.isArray(v)) return v.map(copyReply) as T;
  if (v instanceof Map) {
    const m = new Map();
    for (const [k, x] of v) m.set(copyReply(k), copyReply(x));
    return m as T;
  }
  if (v instanceof Set) {
    const s = new Set();
    for (const x of v) s.add(copyReply(x));
    return s as T;
  }
  return v;
}

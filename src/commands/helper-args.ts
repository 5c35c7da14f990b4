import type { Arg } from '../types.js';

/**
 * Argument checks shared by the typed helpers. A helper that ignored an argument it does not
 * use would send something else than the caller meant (ioredis habits such as
 * `set(k, v, 'EX', 10)` used to set no expiry), so every helper refuses what it cannot place,
 * with a TypeError that names it and shows the form it takes.
 */

/** The forms each helper takes, as its TypeErrors show them. */
export const USAGE = {
  get: 'get(key)',
  set: "set(key, value, { EX, PX, EXAT, PXAT, NX, XX, KEEPTTL, GET }) or set(key, value, 'EX', seconds, 'NX', …)",
  getdel: 'getdel(key)',
  getex: "getex(key, { EX | PX | EXAT | PXAT: n } or { PERSIST: true }) or getex(key, 'EX', seconds)",
  setnx: 'setnx(key, value)',
  del: 'del(...keys) or del([keys])',
  unlink: 'unlink(...keys) or unlink([keys])',
  exists: 'exists(...keys) or exists([keys])',
  touch: 'touch(...keys) or touch([keys])',
  expire: "expire(key, seconds, 'NX' | 'XX' | 'GT' | 'LT'?)",
  expireat: "expireat(key, unixTimeSeconds, 'NX' | 'XX' | 'GT' | 'LT'?)",
  persist: 'persist(key)',
  ttl: 'ttl(key)',
  pttl: 'pttl(key)',
  incr: 'incr(key)',
  incrby: 'incrby(key, increment)',
  incrbyfloat: 'incrbyfloat(key, increment)',
  decr: 'decr(key)',
  decrby: 'decrby(key, decrement)',
  mget: 'mget(...keys) or mget([keys])',
  mset: 'mset(key, value, key, value, …), mset({ key: value }) or mset(new Map([[key, value]]))',
  hget: 'hget(key, field)',
  hset: 'hset(key, field, value, field, value, …), hset(key, { field: value }) or hset(key, new Map([[field, value]]))',
  hmget: 'hmget(key, ...fields) or hmget(key, [fields])',
  hgetall: 'hgetall(key)',
  hdel: 'hdel(key, ...fields) or hdel(key, [fields])',
  hincrby: 'hincrby(key, field, increment)',
  hexists: 'hexists(key, field)',
  lpush: 'lpush(key, ...values) or lpush(key, [values])',
  rpush: 'rpush(key, ...values) or rpush(key, [values])',
  lpop: 'lpop(key, count?)',
  rpop: 'rpop(key, count?)',
  lrange: 'lrange(key, start, stop)',
  lrem: 'lrem(key, count, element)',
  lindex: 'lindex(key, index)',
  llen: 'llen(key)',
  blpop: 'blpop(...keys, timeoutSeconds) or blpop([keys], timeoutSeconds)',
  sadd: 'sadd(key, ...members) or sadd(key, [members])',
  srem: 'srem(key, ...members) or srem(key, [members])',
  smembers: 'smembers(key)',
  scard: 'scard(key)',
  sismember: 'sismember(key, member)',
  zadd: "zadd(key, score, member, score, member, …), zadd(key, { member: score }) or zadd(key, 'NX' | 'XX' | 'GT' | 'LT' | 'CH', …, score, member)",
  zrange: "zrange(key, start, stop, { BYSCORE, BYLEX, REV, LIMIT: { offset, count }, WITHSCORES }) or zrange(key, start, stop, 'WITHSCORES', …)",
  zrangebyscore: "zrangebyscore(key, min, max, { WITHSCORES, LIMIT: { offset, count } }) or zrangebyscore(key, min, max, 'WITHSCORES', 'LIMIT', offset, count)",
  zscore: 'zscore(key, member)',
  zincrby: 'zincrby(key, increment, member)',
  zrem: 'zrem(key, ...members) or zrem(key, [members])',
  zcard: 'zcard(key)',
  xadd: "xadd(key, id, { field: value } | [field, value, …], { NOMKSTREAM, MAXLEN | MINID, approximate, LIMIT }?) or xadd(key, 'MAXLEN', '~', n, '*', field, value, …)",
  xrange: "xrange(key, start = '-', end = '+', { COUNT }?) or xrange(key, start, end, 'COUNT', n)",
  xrevrange: "xrevrange(key, end = '+', start = '-', { COUNT }?) or xrevrange(key, end, start, 'COUNT', n)",
  xlen: 'xlen(key)',
  xread: "xread({ stream: id } | [[stream, id], …], { COUNT, BLOCK }?) or xread('COUNT', n, 'BLOCK', ms, 'STREAMS', ...streams, ...ids)",
  xreadgroup: "xreadgroup(group, consumer, { stream: id } | [[stream, id], …], { COUNT, BLOCK, NOACK }?) or xreadgroup('GROUP', group, consumer, …, 'STREAMS', ...streams, ...ids)",
  xack: 'xack(key, group, ...ids) or xack(key, group, [ids])',
  xgroup: "xgroup('CREATE', key, group, id, { MKSTREAM }?), xgroup('SETID', key, group, id), xgroup('DESTROY', key, group), xgroup('CREATECONSUMER' | 'DELCONSUMER', key, group, consumer)",
  publish: 'publish(channel, message)',
  eval: 'eval(script, numKeys, ...keys, ...args)',
  evalsha: 'evalsha(sha1, numKeys, ...keys, ...args)',
  fcall: 'fcall(function, numKeys, ...keys, ...args)',
  fcall_ro: 'fcall_ro(function, numKeys, ...keys, ...args)',
  scan: 'scan(cursor, { match, count, type }?)',
} as const;

/** A helper's name, for its messages. */
export type HelperId = keyof typeof USAGE;

/** The TypeError of a helper called the wrong way: what was wrong, then the forms it takes. */
export function usageError(name: HelperId, problem: string): TypeError {
  return new TypeError(`${name}: ${problem}. Use ${USAGE[name]}.`);
}

/** Whether `v` can be sent as one argument. */
export function isArg(v: unknown): v is Arg {
  return typeof v === 'string' || Buffer.isBuffer(v) || typeof v === 'bigint' || (typeof v === 'number' && Number.isFinite(v));
}

/** How a value that cannot be an argument reads in a message (never the value itself: it may be a secret). */
export function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'number') return String(v);
  return typeof v === 'object' ? 'an object' : typeof v;
}

/** `v` as the `what` of helper `name`, or a TypeError. */
export function arg(name: HelperId, what: string, v: unknown): Arg {
  if (!isArg(v)) throw usageError(name, `${what} must be a string, Buffer, number or bigint (got ${describe(v)})`);
  return v;
}

/** `v` as an integer (count, index, seconds); integer text is sent as given, never rounded through a number. */
export function int(name: HelperId, what: string, v: unknown): number | bigint | string {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number' && Number.isInteger(v)) return v;
  if (typeof v === 'string' && /^-?\d+$/.test(v)) return v;
  throw usageError(name, `${what} must be an integer (got ${typeof v === 'string' ? JSON.stringify(v) : describe(v)})`);
}

/** Numeric text as Redis reads scores and bounds: '1.5', '-inf', '+inf', '(3' (exclusive). */
const NUMERIC = /^\(?[+-]?(inf|\d+(\.\d*)?|\.\d+)(e[+-]?\d+)?$/i;

/** `v` as a number, or a numeric string such as '-inf' or '(1.5' (score bounds, float increments). */
export function numeric(name: HelperId, what: string, v: unknown): Arg {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number' && !Number.isNaN(v)) return Number.isFinite(v) ? v : v > 0 ? '+inf' : '-inf';
  if (typeof v === 'string' && NUMERIC.test(v)) return v;
  throw usageError(name, `${what} must be a number (got ${typeof v === 'string' ? JSON.stringify(v) : describe(v)})`);
}

/** Refuses arguments past the `max` a helper uses. */
export function atMost(name: HelperId, args: readonly unknown[], max: number): void {
  if (args.length > max) throw usageError(name, `takes at most ${max} argument${max === 1 ? '' : 's'}, got ${args.length}; the extra ones would be ignored`);
}

/** Refuses calls that lack a required argument. */
export function atLeast(name: HelperId, args: readonly unknown[], min: number): void {
  if (args.length < min) throw usageError(name, `needs ${min} argument${min === 1 ? '' : 's'}, got ${args.length}`);
}

/**
 * Variadic arguments, with arrays flattened one level as ioredis does (`del([a, b])`,
 * `sadd(k, ['x', 'y'])`). At least `min` items.
 */
export function list(name: HelperId, what: string, items: readonly unknown[], min = 1): Arg[] {
  const out: Arg[] = [];
  for (const it of items) {
    if (Array.isArray(it)) for (const x of it) out.push(arg(name, what, x));
    else out.push(arg(name, what, it));
  }
  if (out.length < min) throw usageError(name, `needs at least ${min} ${what}`);
  return out;
}

/** A plain object or a Map, as `{ field: value }` forms take it (a Buffer or an array is neither). */
export function isRecord(v: unknown): v is Record<string, unknown> | Map<unknown, unknown> {
  return v instanceof Map || (typeof v === 'object' && v !== null && !Array.isArray(v) && !Buffer.isBuffer(v));
}

/** Flat `[k, v, k, v]` from a record or a Map. */
export function pairsOf(name: HelperId, what: string, r: Record<string, unknown> | Map<unknown, unknown>): Arg[] {
  const out: Arg[] = [];
  const entries = r instanceof Map ? r.entries() : Object.entries(r);
  for (const [k, v] of entries) out.push(arg(name, `every ${what} name`, k), arg(name, `the value of ${what} ${JSON.stringify(String(k))}`, v));
  return out;
}

/** Refuses option names a helper does not know: `{ ex: 10 }` must not set no expiry. */
export function knownKeys(name: HelperId, o: object, known: readonly string[]): void {
  for (const k of Object.keys(o)) {
    if (!known.includes(k)) throw usageError(name, `unknown option ${JSON.stringify(k)} (known: ${known.join(', ')})`);
  }
}

/** Upper-case text of a token argument, or undefined when it is not text. */
export function token(v: unknown): string | undefined {
  return typeof v === 'string' ? v.toUpperCase() : undefined;
}

/**
 * Reads ioredis-style option tokens (`'EX', 10, 'NX'`, `'LIMIT', 0, 10`) into a record of
 * upper-case token to its values. `arity` gives how many values follow each known token (0 for
 * a flag). Anything else is refused: it would otherwise be sent where the server reads
 * something else, or dropped.
 */
export function tokens(name: HelperId, rest: readonly unknown[], arity: Readonly<Record<string, number>>): Record<string, Arg[]> {
  // No prototype: looking up an option that was not given must not find Object's members.
  const out: Record<string, Arg[]> = Object.create(null) as Record<string, Arg[]>;
  for (let i = 0; i < rest.length; i++) {
    const t = token(rest[i]);
    const n = t === undefined || !Object.hasOwn(arity, t) ? undefined : arity[t];
    if (t === undefined || n === undefined) {
      throw usageError(name, `unexpected argument ${typeof rest[i] === 'string' ? JSON.stringify(rest[i]) : describe(rest[i])} (options it knows: ${Object.keys(arity).join(', ')})`);
    }
    if (i + n > rest.length - 1) throw usageError(name, `${t} needs ${n} value${n === 1 ? '' : 's'} after it`);
    const values: Arg[] = [];
    for (let j = 0; j < n; j++) values.push(arg(name, `the value of ${t}`, rest[++i]));
    out[t] = values;
  }
  return out;
}

/** Strips trailing `undefined` arguments: `set(k, v, undefined)` is `set(k, v)`. */
export function trimmed(a: readonly unknown[]): unknown[] {
  let n = a.length;
  while (n > 0 && a[n - 1] === undefined) n--;
  return n === a.length ? (a as unknown[]) : a.slice(0, n);
}

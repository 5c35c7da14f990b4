import type { Arg, Reply } from '../types.js';
import type { StreamMessage, StreamMessages } from './replies.js';

/**
 * Option objects and reply types of the typed helpers.
 *
 * `S` is what a bulk string decodes to: `string` by default, `Buffer` on a view made with
 * `with({ returnBuffers: true })`. Names a caller indexes by (hash field names, stream names,
 * stream IDs, scores in WITHSCORES replies) are always strings. Integer replies are `number`,
 * except those that can exceed ±2^53 (the 64-bit counters INCR, INCRBY, DECR, DECRBY, HINCRBY,
 * and TTL/PTTL of an expiry set absurdly far away), which are `number | bigint`: beyond ±2^53
 * the decoder keeps the exact value as a bigint rather than round it. Counts (DEL, LLEN, …)
 * are bounded by memory and stay `number`.
 */

/** Options of SET. */
export interface SetOptions {
  /** Expire after this many seconds. */
  EX?: number;
  /** Expire after this many milliseconds. */
  PX?: number;
  /** Expire at this Unix time in seconds. */
  EXAT?: number;
  /** Expire at this Unix time in milliseconds. */
  PXAT?: number;
  /** Only set if the key does not exist. */
  NX?: boolean;
  /** Only set if the key exists. */
  XX?: boolean;
  /** Keep the key's time to live. */
  KEEPTTL?: boolean;
  /** Return the old value (SET … GET). */
  GET?: boolean;
}

/** The ioredis-style option tokens SET accepts after the value: `set(k, v, 'EX', 10, 'NX')`. */
export type SetToken = 'EX' | 'PX' | 'EXAT' | 'PXAT' | 'NX' | 'XX' | 'KEEPTTL' | 'GET' | 'ex' | 'px' | 'exat' | 'pxat' | 'nx' | 'xx' | 'keepttl' | 'get' | number;

/** Options of GETEX: one expiry, or PERSIST to remove it. */
export interface GetExOptions {
  /** Expire after this many seconds. */
  EX?: number;
  /** Expire after this many milliseconds. */
  PX?: number;
  /** Expire at this Unix time in seconds. */
  EXAT?: number;
  /** Expire at this Unix time in milliseconds. */
  PXAT?: number;
  /** Remove the expiry. */
  PERSIST?: boolean;
}

/** Options of SCAN, `scanIterator()` and the HSCAN/SSCAN/ZSCAN iterators (those take no `type`). */
export interface ScanOptions {
  /** MATCH: a glob-style pattern (filtered by the server after the step, so a step may return none; with a `keyPrefix`, it applies after the prefix). */
  match?: string;
  /** COUNT: a hint of how many elements one step looks at (the server's default is 10). */
  count?: number;
  /** TYPE: only keys of this type (`string`, `hash`, `list`, `set`, `zset`, `stream`); SCAN only. */
  type?: string;
}

/** Options of ZRANGE (and, without BYSCORE/BYLEX/REV, ZRANGEBYSCORE). */
export interface ZRangeOptions {
  /** `start` and `stop` are scores (`'-inf'`, `'(1.5'` for exclusive). */
  BYSCORE?: boolean;
  /** `start` and `stop` are lexicographic bounds (`'[a'`, `'(b'`, `'-'`, `'+'`). */
  BYLEX?: boolean;
  /** Highest first (with BYSCORE/BYLEX, give the higher bound as `start`). */
  REV?: boolean;
  /** With BYSCORE or BYLEX: skip `offset` elements, return at most `count`. */
  LIMIT?: {
    /** Elements to skip. */
    offset: number;
    /** Most elements to return. */
    count: number;
  };
  /** Include scores: the reply is the flat `[member, score, …]`, scores as text (`'inf'`, `'1.5'`). */
  WITHSCORES?: boolean;
}

/** Options of XADD. */
export interface XAddOptions {
  /** Do not create a missing stream (the reply is then null). */
  NOMKSTREAM?: boolean;
  /** Trim to this many entries. */
  MAXLEN?: number;
  /** Trim entries with IDs lower than this. */
  MINID?: Arg;
  /** Trim with `~` (whole macro nodes, faster) instead of `=`. */
  approximate?: boolean;
  /** With `approximate`: evict at most this many entries. */
  LIMIT?: number;
}

/** Options of XREAD. */
export interface XReadOptions {
  /** At most this many entries per stream. */
  COUNT?: number;
  /** Block up to this many milliseconds (0 = forever) on an exclusive connection; the call's deadline is extended by it. */
  BLOCK?: number;
}

/** Options of XREADGROUP. */
export interface XReadGroupOptions extends XReadOptions {
  /** Do not add the entries to the pending list (no XACK needed). */
  NOACK?: boolean;
}

/** Streams to read: `{ stream: id }`, a Map, or `[[stream, id], …]` (stream keys may be Buffers there). */
export type StreamsToRead = Record<string, Arg> | Map<Arg, Arg> | Array<[stream: Arg, id: Arg]>;

/** What a variadic helper takes: arguments one by one, or arrays of them (flattened one level, as ioredis does). */
export type ArgList = Array<Arg | readonly Arg[]>;

/** Field/value (or key/value) pairs: flat, or as one record or Map. */
export type ArgPairs = [record: Record<string, Arg> | Map<Arg, Arg>] | ArgList;

/** What a helper returns: a promise of its reply, or (on a batch, `B`) the batch itself, for chaining. */
export type HelperReturn<B, T> = [B] extends [never] ? Promise<T> : B;

/**
 * The typed helpers with their reply types, as pools, leases and views expose them (`B`
 * unset), and as batches do (`B` the batch: each helper queues its command and returns it).
 */
export interface Commands<S extends string | Buffer = string, B = never> {
  /** GET: the value, or null. */
  get(key: Arg): HelperReturn<B, S | null>;
  /**
   * SET with `{ EX, PX, EXAT, PXAT, NX, XX, KEEPTTL, GET }` or ioredis tokens (`'EX', 10, 'NX'`):
   * 'OK', null when NX/XX prevented it, or the old value (or null) with GET.
   */
  set(key: Arg, value: Arg, options?: SetOptions): HelperReturn<B, 'OK' | S | null>;
  /** SET with ioredis-style tokens after the value: `set(k, v, 'EX', 10, 'NX')`. */
  set(key: Arg, value: Arg, ...tokens: SetToken[]): HelperReturn<B, 'OK' | S | null>;
  /** GETDEL: the value (the key is deleted), or null. */
  getdel(key: Arg): HelperReturn<B, S | null>;
  /** GETEX: the value, setting or removing its expiry. */
  getex(key: Arg, options?: GetExOptions): HelperReturn<B, S | null>;
  /** GETEX with ioredis-style tokens: `getex(k, 'EX', 10)`, `getex(k, 'PERSIST')`. */
  getex(key: Arg, ...tokens: Array<'EX' | 'PX' | 'EXAT' | 'PXAT' | 'PERSIST' | number>): HelperReturn<B, S | null>;
  /** SETNX: 1 if set, 0 if the key existed. */
  setnx(key: Arg, value: Arg): HelperReturn<B, number>;
  /** DEL (keys or arrays of keys): how many were removed. */
  del(...keys: ArgList): HelperReturn<B, number>;
  /** UNLINK (keys or arrays of keys): how many were removed. */
  unlink(...keys: ArgList): HelperReturn<B, number>;
  /** EXISTS (keys or arrays of keys): how many exist (a key named twice counts twice). */
  exists(...keys: ArgList): HelperReturn<B, number>;
  /** TOUCH (keys or arrays of keys): how many exist. */
  touch(...keys: ArgList): HelperReturn<B, number>;
  /** EXPIRE: 1 if the timeout was set, 0 otherwise. */
  expire(key: Arg, seconds: number, mode?: 'NX' | 'XX' | 'GT' | 'LT'): HelperReturn<B, number>;
  /** EXPIREAT (Unix time in seconds): 1 if the timeout was set, 0 otherwise. */
  expireat(key: Arg, unixTimeSeconds: number, mode?: 'NX' | 'XX' | 'GT' | 'LT'): HelperReturn<B, number>;
  /** PERSIST: 1 if a timeout was removed. */
  persist(key: Arg): HelperReturn<B, number>;
  /** TTL in seconds; -1 no expiry, -2 no key (a bigint only for an expiry set beyond year 285,000,000). */
  ttl(key: Arg): HelperReturn<B, number | bigint>;
  /** PTTL in milliseconds; -1 no expiry, -2 no key (a bigint for an expiry more than 2^53 ms away, ~285,000 years). */
  pttl(key: Arg): HelperReturn<B, number | bigint>;
  /** INCR: the new value (a bigint beyond ±2^53). */
  incr(key: Arg): HelperReturn<B, number | bigint>;
  /** INCRBY: the new value (a bigint beyond ±2^53). */
  incrby(key: Arg, increment: number | bigint): HelperReturn<B, number | bigint>;
  /** INCRBYFLOAT: the new value as a number (Redis computes in long double; the reply is rounded to a double). */
  incrbyfloat(key: Arg, increment: number | string): HelperReturn<B, number>;
  /** DECR: the new value (a bigint beyond ±2^53). */
  decr(key: Arg): HelperReturn<B, number | bigint>;
  /** DECRBY: the new value (a bigint beyond ±2^53). */
  decrby(key: Arg, decrement: number | bigint): HelperReturn<B, number | bigint>;
  /** MGET (keys or arrays of keys): values in key order, null for missing keys. */
  mget(...keys: ArgList): HelperReturn<B, Array<S | null>>;
  /** MSET k v [k v …], MSET({ k: v }) or MSET(Map). */
  mset(...pairs: ArgPairs): HelperReturn<B, 'OK'>;
  /** HGET: the value of the field, or null. */
  hget(key: Arg, field: Arg): HelperReturn<B, S | null>;
  /** HSET key field value [field value …], or HSET key { field: value } / Map: number of new fields. */
  hset(key: Arg, ...pairs: ArgPairs): HelperReturn<B, number>;
  /** HMGET: values in field order, null for missing fields. */
  hmget(key: Arg, ...fields: ArgList): HelperReturn<B, Array<S | null>>;
  /** HGETALL as a plain object. */
  hgetall(key: Arg): HelperReturn<B, Record<string, S>>;
  /** HDEL (fields or arrays of fields): how many were removed. */
  hdel(key: Arg, ...fields: ArgList): HelperReturn<B, number>;
  /** HINCRBY: the new value (a bigint beyond ±2^53). */
  hincrby(key: Arg, field: Arg, increment: number | bigint): HelperReturn<B, number | bigint>;
  /** HEXISTS as a boolean. */
  hexists(key: Arg, field: Arg): HelperReturn<B, boolean>;
  /** LPUSH (values or arrays of values): the new length. */
  lpush(key: Arg, ...values: ArgList): HelperReturn<B, number>;
  /** RPUSH (values or arrays of values): the new length. */
  rpush(key: Arg, ...values: ArgList): HelperReturn<B, number>;
  /** LPOP: a value, or null when empty; with a count, an array (or null). */
  lpop(key: Arg): HelperReturn<B, S | null>;
  /** LPOP key count: up to `count` values, or null when the list is empty. */
  lpop(key: Arg, count: number): HelperReturn<B, S[] | null>;
  /** RPOP: a value, or null when empty; with a count, an array (or null). */
  rpop(key: Arg): HelperReturn<B, S | null>;
  /** RPOP key count: up to `count` values, or null when the list is empty. */
  rpop(key: Arg, count: number): HelperReturn<B, S[] | null>;
  /** LRANGE: the elements from start to stop (inclusive; negative counts from the end). */
  lrange(key: Arg, start: number, stop: number): HelperReturn<B, S[]>;
  /** LREM: how many were removed. */
  lrem(key: Arg, count: number, element: Arg): HelperReturn<B, number>;
  /** LINDEX: the element, or null out of range. */
  lindex(key: Arg, index: number): HelperReturn<B, S | null>;
  /** LLEN: the length (0 for a missing key). */
  llen(key: Arg): HelperReturn<B, number>;
  /** BLPOP ...keys timeoutSeconds: [key, value], or null on timeout. The client deadline is extended by the timeout. */
  blpop(...keysAndTimeout: [...keys: ArgList, timeoutSeconds: number]): HelperReturn<B, [key: S, value: S] | null>;
  /** SADD (members or arrays of members): how many were new. */
  sadd(key: Arg, ...members: ArgList): HelperReturn<B, number>;
  /** SREM (members or arrays of members): how many were removed. */
  srem(key: Arg, ...members: ArgList): HelperReturn<B, number>;
  /** SMEMBERS as an array (RESP3 sets too). */
  smembers(key: Arg): HelperReturn<B, S[]>;
  /** SCARD: the number of members. */
  scard(key: Arg): HelperReturn<B, number>;
  /** SISMEMBER as a boolean. */
  sismember(key: Arg, member: Arg): HelperReturn<B, boolean>;
  /** ZADD key INCR increment member: the member's new score (a number under both protocols). */
  zadd(key: Arg, incr: 'INCR', increment: number | string, member: Arg): HelperReturn<B, number>;
  /** ZADD key NX|XX|GT|LT INCR increment member: the new score, or null when the condition stopped it. */
  zadd(key: Arg, condition: 'NX' | 'XX' | 'GT' | 'LT', incr: 'INCR', increment: number | string, member: Arg): HelperReturn<B, number | null>;
  /**
   * ZADD key [NX|XX|GT|LT|CH …] score member [score member …], or ZADD key { member: score } / Map:
   * how many members were added (changed, with CH). With INCR (any other spelling) the reply is the
   * new score or null, so prefer the two forms above or `zincrby`.
   */
  zadd(key: Arg, ...scoreMembers: [record: Record<string, number | string> | Map<Arg, number | string>] | ArgList): HelperReturn<B, number>;
  /** ZRANGE; WITHSCORES gives the flat [member, score, …] shape (scores as text) under both protocols. */
  zrange(key: Arg, start: Arg, stop: Arg, options: ZRangeOptions & { WITHSCORES: true }): HelperReturn<B, Array<S | string>>;
  /** ZRANGE without WITHSCORES: the members. */
  zrange(key: Arg, start: Arg, stop: Arg, options?: ZRangeOptions & { WITHSCORES?: false }): HelperReturn<B, S[]>;
  /** ZRANGE with ioredis-style tokens: `zrange(k, 0, -1, 'WITHSCORES')` (then the flat [member, score, …]). */
  zrange(key: Arg, start: Arg, stop: Arg, ...tokens: Array<'BYSCORE' | 'BYLEX' | 'REV' | 'LIMIT' | 'WITHSCORES' | number>): HelperReturn<B, Array<S | string>>;
  /** ZRANGEBYSCORE (min/max may be '-inf', '(1.5', …); WITHSCORES as in zrange. */
  zrangebyscore(key: Arg, min: number | string, max: number | string, options: Pick<ZRangeOptions, 'LIMIT'> & { WITHSCORES: true }): HelperReturn<B, Array<S | string>>;
  /** ZRANGEBYSCORE without WITHSCORES: the members. */
  zrangebyscore(key: Arg, min: number | string, max: number | string, options?: Pick<ZRangeOptions, 'LIMIT'> & { WITHSCORES?: false }): HelperReturn<B, S[]>;
  /** ZRANGEBYSCORE with ioredis-style tokens: `zrangebyscore(k, min, max, 'WITHSCORES', 'LIMIT', 0, 10)`. */
  zrangebyscore(key: Arg, min: number | string, max: number | string, ...tokens: Array<'LIMIT' | 'WITHSCORES' | number>): HelperReturn<B, Array<S | string>>;
  /** ZSCORE as a number, or null. */
  zscore(key: Arg, member: Arg): HelperReturn<B, number | null>;
  /** ZINCRBY: the new score as a number. */
  zincrby(key: Arg, increment: number | string, member: Arg): HelperReturn<B, number>;
  /** ZREM (members or arrays of members): how many were removed. */
  zrem(key: Arg, ...members: ArgList): HelperReturn<B, number>;
  /** ZCARD: the number of members. */
  zcard(key: Arg): HelperReturn<B, number>;
  /** XADD key id { field: value } (or flat pairs, or a Map): the entry's ID; null with NOMKSTREAM on a missing stream. */
  xadd(key: Arg, id: Arg, fields: Record<string, Arg> | Map<Arg, Arg> | Arg[], options?: XAddOptions): HelperReturn<B, string | null>;
  /** The ioredis form: xadd(key, ['NOMKSTREAM'], ['MAXLEN', '~', n], id, field, value, …). */
  xadd(key: Arg, ...tokens: Arg[]): HelperReturn<B, string | null>;
  /** XRANGE (default '-' to '+'): entries as { id, message: { field: value } }. */
  xrange(key: Arg, start?: Arg, end?: Arg, options?: { COUNT?: number }): HelperReturn<B, Array<StreamMessage<S>>>;
  /** XRANGE with ioredis-style tokens: `xrange(k, '-', '+', 'COUNT', 10)`. */
  xrange(key: Arg, start: Arg, end: Arg, ...tokens: Array<'COUNT' | number>): HelperReturn<B, Array<StreamMessage<S>>>;
  /** XREVRANGE (default '+' to '-'). */
  xrevrange(key: Arg, end?: Arg, start?: Arg, options?: { COUNT?: number }): HelperReturn<B, Array<StreamMessage<S>>>;
  /** XREVRANGE with ioredis-style tokens: `xrevrange(k, '+', '-', 'COUNT', 10)`. */
  xrevrange(key: Arg, end: Arg, start: Arg, ...tokens: Array<'COUNT' | number>): HelperReturn<B, Array<StreamMessage<S>>>;
  /** XLEN: the number of entries. */
  xlen(key: Arg): HelperReturn<B, number>;
  /** XREAD: one { name, messages } per stream that had entries, or null (nothing arrived within BLOCK). */
  xread(streams: StreamsToRead, options?: XReadOptions): HelperReturn<B, Array<StreamMessages<S>> | null>;
  /** The ioredis form: xread('COUNT', n, 'BLOCK', ms, 'STREAMS', ...keys, ...ids). */
  xread(...tokens: Arg[]): HelperReturn<B, Array<StreamMessages<S>> | null>;
  /** XREADGROUP GROUP group consumer …: as xread; `message` is null for an entry deleted while pending. */
  xreadgroup(group: Arg, consumer: Arg, streams: StreamsToRead, options?: XReadGroupOptions): HelperReturn<B, Array<StreamMessages<S>> | null>;
  /** The ioredis form: xreadgroup('GROUP', group, consumer, …, 'STREAMS', ...keys, ...ids). */
  xreadgroup(...tokens: Arg[]): HelperReturn<B, Array<StreamMessages<S>> | null>;
  /** XACK: how many entries were acknowledged. */
  xack(key: Arg, group: Arg, ...ids: ArgList): HelperReturn<B, number>;
  /** XGROUP CREATE / SETID: 'OK'. */
  xgroup(subcommand: 'CREATE' | 'SETID', key: Arg, group: Arg, id: Arg, options?: { MKSTREAM?: boolean; ENTRIESREAD?: number }): HelperReturn<B, 'OK'>;
  /** XGROUP CREATE / SETID with ioredis-style tokens: `xgroup('CREATE', k, g, '$', 'MKSTREAM')`. */
  xgroup(subcommand: 'CREATE' | 'SETID', key: Arg, group: Arg, id: Arg, ...tokens: Array<'MKSTREAM' | 'ENTRIESREAD' | number>): HelperReturn<B, 'OK'>;
  /** XGROUP DESTROY / CREATECONSUMER / DELCONSUMER: 1/0, or the deleted consumer's pending count. */
  xgroup(subcommand: 'DESTROY', key: Arg, group: Arg): HelperReturn<B, number>;
  /** XGROUP CREATECONSUMER (1 if created) / DELCONSUMER (the pending entries the consumer had). */
  xgroup(subcommand: 'CREATECONSUMER' | 'DELCONSUMER', key: Arg, group: Arg, consumer: Arg): HelperReturn<B, number>;
  /** XGROUP, any subcommand (for a subcommand held in a variable). */
  xgroup(subcommand: 'CREATE' | 'SETID' | 'DESTROY' | 'CREATECONSUMER' | 'DELCONSUMER', key: Arg, group: Arg, ...rest: unknown[]): HelperReturn<B, 'OK' | number>;
  /** PUBLISH: how many subscribers received it. */
  publish(channel: Arg, message: Arg): HelperReturn<B, number>;
  /** EVAL script numKeys ...keys ...args (routed by its keys in a cluster); see also `script()`. */
  eval(script: string, numKeys: number, ...keysAndArgs: ArgList): HelperReturn<B, Reply>;
  /** EVALSHA sha numKeys ...keys ...args; `script()` adds the fallback to EVAL on NOSCRIPT. */
  evalsha(sha: string, numKeys: number, ...keysAndArgs: ArgList): HelperReturn<B, Reply>;
  /** FCALL function numKeys ...keys ...args (routed by its keys in a cluster). */
  fcall(fn: string, numKeys: number, ...keysAndArgs: ArgList): HelperReturn<B, Reply>;
  /** FCALL_RO: a read-only function, which a cluster may send to a replica with `readFrom`. */
  fcall_ro(fn: string, numKeys: number, ...keysAndArgs: ArgList): HelperReturn<B, Reply>;
  /** One SCAN step: [nextCursor, keys]. Sent as given: `keyPrefix` does not apply (use scanIterator). */
  scan(cursor: Arg, options?: ScanOptions): HelperReturn<B, [cursor: string, keys: S[]]>;
}

/** The same helpers on a batch: each queues its command and returns the batch. */
export type BatchCommands<B> = Commands<string, B>;

/** Iterators over a key's elements (HSCAN/SSCAN/ZSCAN), on pools, views and leases. */
export interface ScanIterators<S extends string | Buffer = string> {
  /** Every key (matching `match` / `type`), with SCAN; in a cluster, every master. */
  scanIterator(options?: ScanOptions): AsyncIterableIterator<S>;
  /** Every [field, value] of a hash, with HSCAN. */
  hscanIterator(key: Arg, options?: Omit<ScanOptions, 'type'>): AsyncIterableIterator<[field: string, value: S]>;
  /** Every member of a set, with SSCAN. */
  sscanIterator(key: Arg, options?: Omit<ScanOptions, 'type'>): AsyncIterableIterator<S>;
  /** Every [member, score] of a sorted set, with ZSCAN. */
  zscanIterator(key: Arg, options?: Omit<ScanOptions, 'type'>): AsyncIterableIterator<[member: S, score: number]>;
}

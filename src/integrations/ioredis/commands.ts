/**
 * The commands the ioredis facade defines as methods, how their arguments are read (the way
 * ioredis reads them) and how replies are shaped (the way ioredis returns them).
 */
import type { Arg, Reply } from '../../index.js';

/** A value one argument of an ioredis-style command may be. */
export type IoredisArg = string | Buffer | number | bigint;

/** A node-style callback, as ioredis takes it as the last argument of any command. */
export type IoredisCallback<T = unknown> = (err: Error | null, result?: T) => void;

/** What a command method takes: arguments one by one, arrays of them (flattened one level), or a record/Map (HSET, HMSET, MSET, MSETNX). */
export type IoredisArgument = IoredisArg | readonly IoredisArg[] | Record<string, IoredisArg> | Map<IoredisArg, IoredisArg>;

/** An ioredis-style command method: resolves with the reply and, given a callback last, also calls it on a later tick. */
export interface IoredisCommand<T> {
  /** Sends the command; resolves with its reply. */
  (...args: IoredisArgument[]): Promise<T>;
  /** Sends the command; `callback(err, reply)` is called on a later tick (the promise settles too). */
  (...args: [...IoredisArgument[], IoredisCallback<T>]): Promise<T>;
}

/** How to shape one command's reply, after the RESP3 normalisation. */
type Transform = (reply: Reply) => unknown;

/** HGETALL: ioredis answers a plain object (field names always strings). */
const toObject: Transform = (reply) => {
  const out: Record<string, unknown> = {};
  if (reply instanceof Map) {
    for (const [k, v] of reply) out[String(k)] = v;
    return out;
  }
  const a = reply as Reply[];
  for (let i = 0; i + 1 < a.length; i += 2) out[String(a[i])] = a[i + 1];
  return out;
};

/** Commands whose record/Map argument ioredis turns into flat pairs (`hset(key, { f: v })`, `mset({ k: v })`). */
const PAIRS_AFTER: Readonly<Record<string, number>> = { hset: 1, hmset: 1, mset: 0, msetnx: 0 };

/**
 * Every command method of the facade with its reply as ioredis gives it (under RESP2, the
 * default). The list covers what graphql-redis-subscriptions, @fastify/redis, redlock and
 * rate-limiter-flexible call, plus the everyday data commands; anything else goes through
 * `call(name, ...args)`. Integer replies beyond ±2^53 come back as bigints (ioredis would round
 * them).
 */
export interface IoredisCommands {
  /** GET */ get: IoredisCommand<string | null>;
  /** SET (ioredis tokens: `set(k, v, 'EX', 10, 'NX')`): 'OK', null when NX/XX stopped it, or the old value with GET. */ set: IoredisCommand<string | null>;
  /** SETEX */ setex: IoredisCommand<'OK'>;
  /** PSETEX */ psetex: IoredisCommand<'OK'>;
  /** SETNX */ setnx: IoredisCommand<number>;
  /** GETSET */ getset: IoredisCommand<string | null>;
  /** GETDEL */ getdel: IoredisCommand<string | null>;
  /** GETEX */ getex: IoredisCommand<string | null>;
  /** MGET */ mget: IoredisCommand<Array<string | null>>;
  /** MSET (pairs, or one record/Map) */ mset: IoredisCommand<'OK'>;
  /** MSETNX (pairs, or one record/Map) */ msetnx: IoredisCommand<number>;
  /** APPEND */ append: IoredisCommand<number>;
  /** STRLEN */ strlen: IoredisCommand<number>;
  /** GETRANGE */ getrange: IoredisCommand<string>;
  /** SETRANGE */ setrange: IoredisCommand<number>;
  /** INCR */ incr: IoredisCommand<number>;
  /** INCRBY */ incrby: IoredisCommand<number>;
  /** INCRBYFLOAT: the new value as text */ incrbyfloat: IoredisCommand<string>;
  /** DECR */ decr: IoredisCommand<number>;
  /** DECRBY */ decrby: IoredisCommand<number>;
  /** DEL */ del: IoredisCommand<number>;
  /** UNLINK */ unlink: IoredisCommand<number>;
  /** EXISTS */ exists: IoredisCommand<number>;
  /** EXPIRE */ expire: IoredisCommand<number>;
  /** PEXPIRE */ pexpire: IoredisCommand<number>;
  /** EXPIREAT */ expireat: IoredisCommand<number>;
  /** PEXPIREAT */ pexpireat: IoredisCommand<number>;
  /** TTL */ ttl: IoredisCommand<number>;
  /** PTTL */ pttl: IoredisCommand<number>;
  /** PERSIST */ persist: IoredisCommand<number>;
  /** TYPE */ type: IoredisCommand<string>;
  /** TOUCH */ touch: IoredisCommand<number>;
  /** SCAN: [cursor, keys] from one node (as an ioredis client to one node) */ scan: IoredisCommand<[cursor: string, keys: string[]]>;
  /** HGET */ hget: IoredisCommand<string | null>;
  /** HSET (pairs, or one record/Map) */ hset: IoredisCommand<number>;
  /** HSETNX */ hsetnx: IoredisCommand<number>;
  /** HMSET (pairs, or one record/Map) */ hmset: IoredisCommand<'OK'>;
  /** HMGET */ hmget: IoredisCommand<Array<string | null>>;
  /** HGETALL as a plain object */ hgetall: IoredisCommand<Record<string, string>>;
  /** HDEL */ hdel: IoredisCommand<number>;
  /** HEXISTS: 1 or 0 */ hexists: IoredisCommand<number>;
  /** HINCRBY */ hincrby: IoredisCommand<number>;
  /** HINCRBYFLOAT: the new value as text */ hincrbyfloat: IoredisCommand<string>;
  /** HKEYS */ hkeys: IoredisCommand<string[]>;
  /** HVALS */ hvals: IoredisCommand<string[]>;
  /** HLEN */ hlen: IoredisCommand<number>;
  /** HSCAN: [cursor, flat field/value list] */ hscan: IoredisCommand<[cursor: string, fieldsAndValues: string[]]>;
  /** LPUSH */ lpush: IoredisCommand<number>;
  /** RPUSH */ rpush: IoredisCommand<number>;
  /** LPUSHX */ lpushx: IoredisCommand<number>;
  /** RPUSHX */ rpushx: IoredisCommand<number>;
  /** LPOP (an array with a count) */ lpop: IoredisCommand<string | string[] | null>;
  /** RPOP (an array with a count) */ rpop: IoredisCommand<string | string[] | null>;
  /** LRANGE */ lrange: IoredisCommand<string[]>;
  /** LLEN */ llen: IoredisCommand<number>;
  /** LTRIM */ ltrim: IoredisCommand<'OK'>;
  /** LREM */ lrem: IoredisCommand<number>;
  /** LINDEX */ lindex: IoredisCommand<string | null>;
  /** LSET */ lset: IoredisCommand<'OK'>;
  /** LMOVE */ lmove: IoredisCommand<string | null>;
  /** BLPOP (on an exclusive connection; `disconnect()` aborts it) */ blpop: IoredisCommand<[key: string, value: string] | null>;
  /** BRPOP (on an exclusive connection; `disconnect()` aborts it) */ brpop: IoredisCommand<[key: string, value: string] | null>;
  /** BLMOVE (on an exclusive connection; `disconnect()` aborts it) */ blmove: IoredisCommand<string | null>;
  /** SADD */ sadd: IoredisCommand<number>;
  /** SREM */ srem: IoredisCommand<number>;
  /** SMEMBERS */ smembers: IoredisCommand<string[]>;
  /** SISMEMBER: 1 or 0 */ sismember: IoredisCommand<number>;
  /** SMISMEMBER */ smismember: IoredisCommand<number[]>;
  /** SCARD */ scard: IoredisCommand<number>;
  /** SPOP (an array with a count) */ spop: IoredisCommand<string | string[] | null>;
  /** SRANDMEMBER (an array with a count) */ srandmember: IoredisCommand<string | string[] | null>;
  /** SSCAN */ sscan: IoredisCommand<[cursor: string, members: string[]]>;
  /** ZADD (with INCR: the new score as text) */ zadd: IoredisCommand<number | string | null>;
  /** ZREM */ zrem: IoredisCommand<number>;
  /** ZRANGE */ zrange: IoredisCommand<string[]>;
  /** ZREVRANGE */ zrevrange: IoredisCommand<string[]>;
  /** ZRANGEBYSCORE */ zrangebyscore: IoredisCommand<string[]>;
  /** ZREVRANGEBYSCORE */ zrevrangebyscore: IoredisCommand<string[]>;
  /** ZSCORE as text */ zscore: IoredisCommand<string | null>;
  /** ZINCRBY: the new score as text */ zincrby: IoredisCommand<string>;
  /** ZCARD */ zcard: IoredisCommand<number>;
  /** ZCOUNT */ zcount: IoredisCommand<number>;
  /** ZRANK */ zrank: IoredisCommand<number | null>;
  /** ZREVRANK */ zrevrank: IoredisCommand<number | null>;
  /** ZREMRANGEBYSCORE */ zremrangebyscore: IoredisCommand<number>;
  /** ZREMRANGEBYRANK */ zremrangebyrank: IoredisCommand<number>;
  /** ZPOPMIN: [member, score, …] */ zpopmin: IoredisCommand<string[]>;
  /** ZPOPMAX: [member, score, …] */ zpopmax: IoredisCommand<string[]>;
  /** BZPOPMIN: [key, member, score] (on an exclusive connection) */ bzpopmin: IoredisCommand<[key: string, member: string, score: string] | null>;
  /** BZPOPMAX: [key, member, score] (on an exclusive connection) */ bzpopmax: IoredisCommand<[key: string, member: string, score: string] | null>;
  /** ZSCAN */ zscan: IoredisCommand<[cursor: string, membersAndScores: string[]]>;
  /** XADD (ioredis form) */ xadd: IoredisCommand<string | null>;
  /** XRANGE: [[id, [field, value, …]], …] */ xrange: IoredisCommand<Array<[id: string, fields: string[]]>>;
  /** XREVRANGE */ xrevrange: IoredisCommand<Array<[id: string, fields: string[]]>>;
  /** XLEN */ xlen: IoredisCommand<number>;
  /** XTRIM */ xtrim: IoredisCommand<number>;
  /** XDEL */ xdel: IoredisCommand<number>;
  /** XREAD: [[stream, [[id, fields], …]], …] or null */ xread: IoredisCommand<Array<[key: string, entries: Array<[id: string, fields: string[]]>]> | null>;
  /** XREADGROUP */ xreadgroup: IoredisCommand<Array<[key: string, entries: Array<[id: string, fields: string[] | null]>]> | null>;
  /** XACK */ xack: IoredisCommand<number>;
  /** XGROUP */ xgroup: IoredisCommand<unknown>;
  /** EVAL script numKeys …keys …args */ eval: IoredisCommand<unknown>;
  /** EVALSHA sha numKeys …keys …args (NOSCRIPT is the caller's to handle, as with ioredis; `defineCommand` handles it) */ evalsha: IoredisCommand<unknown>;
  /** EVAL_RO */ eval_ro: IoredisCommand<unknown>;
  /** EVALSHA_RO */ evalsha_ro: IoredisCommand<unknown>;
  /** FCALL */ fcall: IoredisCommand<unknown>;
  /** FCALL_RO */ fcall_ro: IoredisCommand<unknown>;
  /** PUBLISH: how many subscribers received it */ publish: IoredisCommand<number>;
  /** PING */ ping: IoredisCommand<string>;
  /** ECHO */ echo: IoredisCommand<string>;
  /** TIME: [seconds, microseconds] */ time: IoredisCommand<[seconds: string, microseconds: string]>;
}

/** The same reply with bulk strings as Buffers. */
export type BufferReply<T> = T extends string ? Buffer : T extends Array<infer U> ? Array<BufferReply<U>> : T extends Record<string, infer V> ? Record<string, BufferReply<V>> : T;

/** The `…Buffer` variant of every command: bulk strings come back as Buffers (`getBuffer(k)`). */
export type IoredisBufferCommands = {
  [K in keyof IoredisCommands as `${K}Buffer`]: IoredisCommands[K] extends IoredisCommand<infer T> ? IoredisCommand<BufferReply<T>> : never;
};

/** Names of the facade's command methods. */
export type IoredisCommandName = keyof IoredisCommands;

const NAMES: { [K in IoredisCommandName]: Transform | 0 } = {
  get: 0, set: 0, setex: 0, psetex: 0, setnx: 0, getset: 0, getdel: 0, getex: 0, mget: 0, mset: 0, msetnx: 0, append: 0, strlen: 0,
  getrange: 0, setrange: 0, incr: 0, incrby: 0, incrbyfloat: 0, decr: 0, decrby: 0,
  del: 0, unlink: 0, exists: 0, expire: 0, pexpire: 0, expireat: 0, pexpireat: 0, ttl: 0, pttl: 0, persist: 0, type: 0, touch: 0, scan: 0,
  hget: 0, hset: 0, hsetnx: 0, hmset: 0, hmget: 0, hgetall: toObject, hdel: 0, hexists: 0, hincrby: 0, hincrbyfloat: 0, hkeys: 0, hvals: 0,
  hlen: 0, hscan: 0,
  lpush: 0, rpush: 0, lpushx: 0, rpushx: 0, lpop: 0, rpop: 0, lrange: 0, llen: 0, ltrim: 0, lrem: 0, lindex: 0, lset: 0, lmove: 0,
  blpop: 0, brpop: 0, blmove: 0,
  sadd: 0, srem: 0, smembers: 0, sismember: 0, smismember: 0, scard: 0, spop: 0, srandmember: 0, sscan: 0,
  zadd: 0, zrem: 0, zrange: 0, zrevrange: 0, zrangebyscore: 0, zrevrangebyscore: 0, zscore: 0, zincrby: 0, zcard: 0, zcount: 0, zrank: 0,
  zrevrank: 0, zremrangebyscore: 0, zremrangebyrank: 0, zpopmin: 0, zpopmax: 0, bzpopmin: 0, bzpopmax: 0, zscan: 0,
  xadd: 0, xrange: 0, xrevrange: 0, xlen: 0, xtrim: 0, xdel: 0, xread: 0, xreadgroup: 0, xack: 0, xgroup: 0,
  eval: 0, evalsha: 0, eval_ro: 0, evalsha_ro: 0, fcall: 0, fcall_ro: 0, publish: 0, ping: 0, echo: 0, time: 0,
};

/** Every command method name, in the order above. */
export const COMMAND_NAMES = Object.keys(NAMES) as IoredisCommandName[];

/** Reply transforms by (lower-case) command name, also applied to `call('hgetall', …)` as ioredis does. */
const TRANSFORMS = new Map<string, Transform>(Object.entries(NAMES).filter((e): e is [string, Transform] => e[1] !== 0));

/** How a value that cannot be an argument reads in a message (never the value: it may be a secret). */
export function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v === 'object' ? 'an object' : typeof v;
}

function isArg(v: unknown): v is Arg {
  return typeof v === 'string' || typeof v === 'bigint' || (typeof v === 'number' && Number.isFinite(v)) || Buffer.isBuffer(v);
}

function refuse(command: string, position: number, v: unknown): TypeError {
  return new TypeError(
    `asIoredis: ${command}: argument ${position} is ${describe(v)}; the ioredis facade takes strings, Buffers, numbers and bigints ` +
      `(arrays of them are flattened, as ioredis does; null, undefined and booleans are refused rather than sent as '' or 'true').`,
  );
}

function pushPairs(out: Arg[], command: string, position: number, record: object): void {
  const entries = record instanceof Map ? [...record] : Object.entries(record);
  for (const [k, v] of entries) {
    if (!isArg(k)) throw refuse(command, position, k);
    if (!isArg(v)) throw refuse(command, position, v);
    out.push(k, v);
  }
}

/**
 * The arguments as ioredis would send them: arrays flattened one level, and for HSET/HMSET/
 * MSET/MSETNX a record or Map turned into pairs. Anything else that is not a string, Buffer,
 * number or bigint is a TypeError naming the facade.
 */
export function flatten(command: string, args: readonly unknown[]): Arg[] {
  const out: Arg[] = [];
  const pairsAt = PAIRS_AFTER[command];
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (isArg(a)) out.push(a);
    else if (Array.isArray(a)) {
      for (const x of a) {
        if (!isArg(x)) throw refuse(command, i + 1, x);
        out.push(x);
      }
    } else if (pairsAt !== undefined && i === pairsAt && typeof a === 'object' && a !== null) pushPairs(out, command, i + 1, a);
    else throw refuse(command, i + 1, a);
  }
  return out;
}

/** Splits a trailing node-style callback off the arguments. */
export function splitCallback(args: unknown[]): IoredisCallback | undefined {
  const last = args[args.length - 1];
  if (typeof last !== 'function') return undefined;
  args.pop();
  return last as IoredisCallback;
}

/**
 * Calls `callback` with the outcome of `p` on a later tick (setImmediate), never from inside
 * the promise chain: a callback that throws then surfaces as an uncaught exception, as with
 * ioredis, instead of turning into a rejection nobody handles. The promise is returned as is;
 * the handlers attached here mark it handled, so a caller that only uses the callback leaves no
 * unhandled rejection behind.
 */
export function withCallback<T>(p: Promise<T>, callback: IoredisCallback<T> | undefined): Promise<T> {
  if (callback === undefined) return p;
  p.then(
    (v) => void setImmediate(callback, null, v),
    (e: unknown) => void setImmediate(callback, e instanceof Error ? e : new Error(String(e))),
  );
  return p;
}

/**
 * A reply in the shapes ioredis gives under RESP2: with `protocol: 3` the pool decodes maps,
 * sets and booleans, which ioredis would have received as flat arrays and integers. (Doubles
 * stay numbers; ioredis would give their text.)
 */
export function normalize(reply: Reply): Reply {
  if (reply === null || typeof reply !== 'object' || Buffer.isBuffer(reply)) return typeof reply === 'boolean' ? (reply ? 1 : 0) : reply;
  if (Array.isArray(reply)) {
    for (let i = 0; i < reply.length; i++) {
      const x = reply[i]!;
      if (x !== null && (typeof x === 'object' || typeof x === 'boolean') && !Buffer.isBuffer(x)) {
        return reply.map(normalize);
      }
    }
    return reply;
  }
  if (reply instanceof Map) {
    const flat: Reply[] = [];
    for (const [k, v] of reply) flat.push(normalize(k), normalize(v));
    return flat;
  }
  return [...reply].map(normalize);
}

/** The reply of `command` in ioredis's shape. */
export function shape(command: string, reply: Reply): unknown {
  const t = TRANSFORMS.get(command);
  if (t !== undefined) return t(reply);
  return normalize(reply);
}

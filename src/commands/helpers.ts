import type { Commands } from './commands.js';
import { int, numeric, arg, trimmed, type Build, type CommandSpec, type HelperRef } from './helper-args.js';
import {
  blpop, expireLike, getex, hset, keyAnd, keyAndList, keyOnly, keys, keyThen, mset, popLike, publish, scan, scripted, set, xack, xadd, xgroup, xrangeLike, xread,
  xreadgroup, zadd, zrangeLike,
} from './helper-forms.js';
import { toArray, toBool, toNumber, toNumberOrNull, toRecord } from './replies.js';

export type { Commands, BatchCommands, SetOptions, GetExOptions, ScanOptions, ZRangeOptions, XAddOptions, XReadOptions, XReadGroupOptions } from './commands.js';
export type { StreamMessage, StreamMessages } from './replies.js';
export type { CommandSpec } from './helper-args.js';

/**
 * One typed helper: the forms it takes (its TypeErrors show them) and how its arguments become
 * the command to send and the shape of its reply. The method's type is the member of the same
 * name in {@link Commands}; {@link HelperTable} ties the two, so a method without an entry, an
 * entry without a method, or a usage that names another helper does not compile.
 */
export interface HelperEntry<K extends string = string> {
  readonly usage: `${K}(${string}`;
  readonly build: Build;
}

/** An entry for every method of {@link Commands}, and for nothing else. */
export type HelperTable = { readonly [K in keyof Commands]: HelperEntry<K> };

/**
 * The typed helpers, as pure functions from arguments to a {@link CommandSpec}. Pools, leases,
 * views and batches share them, so a helper behaves the same everywhere. Each refuses
 * arguments it would not use (TypeError naming it and its forms); trailing `undefined`
 * arguments count as absent.
 */
const TABLE = {
  get: { usage: 'get(key)', build: keyOnly('GET') },
  set: { usage: "set(key, value, { EX, PX, EXAT, PXAT, NX, XX, KEEPTTL, GET }) or set(key, value, 'EX', seconds, 'NX', …)", build: set },
  getdel: { usage: 'getdel(key)', build: keyOnly('GETDEL') },
  getex: { usage: "getex(key, { EX | PX | EXAT | PXAT: n } or { PERSIST: true }) or getex(key, 'EX', seconds)", build: getex },
  setnx: { usage: 'setnx(key, value)', build: keyAnd('SETNX', ['the value']) },
  del: { usage: 'del(...keys) or del([keys])', build: keys('DEL') },
  unlink: { usage: 'unlink(...keys) or unlink([keys])', build: keys('UNLINK') },
  exists: { usage: 'exists(...keys) or exists([keys])', build: keys('EXISTS') },
  touch: { usage: 'touch(...keys) or touch([keys])', build: keys('TOUCH') },
  expire: { usage: "expire(key, seconds, 'NX' | 'XX' | 'GT' | 'LT'?)", build: expireLike('EXPIRE', 'seconds') },
  expireat: { usage: "expireat(key, unixTimeSeconds, 'NX' | 'XX' | 'GT' | 'LT'?)", build: expireLike('EXPIREAT', 'the Unix time') },
  persist: { usage: 'persist(key)', build: keyOnly('PERSIST') },
  ttl: { usage: 'ttl(key)', build: keyOnly('TTL') },
  pttl: { usage: 'pttl(key)', build: keyOnly('PTTL') },
  incr: { usage: 'incr(key)', build: keyOnly('INCR') },
  incrby: { usage: 'incrby(key, increment)', build: keyThen('INCRBY', [['the increment', int]]) },
  incrbyfloat: { usage: 'incrbyfloat(key, increment)', build: keyThen('INCRBYFLOAT', [['the increment', numeric]], toNumber) },
  decr: { usage: 'decr(key)', build: keyOnly('DECR') },
  decrby: { usage: 'decrby(key, decrement)', build: keyThen('DECRBY', [['the decrement', int]]) },
  mget: { usage: 'mget(...keys) or mget([keys])', build: keys('MGET') },
  mset: { usage: 'mset(key, value, key, value, …), mset({ key: value }) or mset(new Map([[key, value]]))', build: mset },
  hget: { usage: 'hget(key, field)', build: keyAnd('HGET', ['the field']) },
  hset: { usage: 'hset(key, field, value, field, value, …), hset(key, { field: value }) or hset(key, new Map([[field, value]]))', build: hset },
  hmget: { usage: 'hmget(key, ...fields) or hmget(key, [fields])', build: keyAndList('HMGET', 'field') },
  hgetall: { usage: 'hgetall(key)', build: keyOnly('HGETALL', toRecord) },
  hdel: { usage: 'hdel(key, ...fields) or hdel(key, [fields])', build: keyAndList('HDEL', 'field') },
  hincrby: { usage: 'hincrby(key, field, increment)', build: keyThen('HINCRBY', [['the field', arg], ['the increment', int]]) },
  hexists: { usage: 'hexists(key, field)', build: keyAnd('HEXISTS', ['the field'], toBool) },
  lpush: { usage: 'lpush(key, ...values) or lpush(key, [values])', build: keyAndList('LPUSH', 'value') },
  rpush: { usage: 'rpush(key, ...values) or rpush(key, [values])', build: keyAndList('RPUSH', 'value') },
  lpop: { usage: 'lpop(key, count?)', build: popLike('LPOP') },
  rpop: { usage: 'rpop(key, count?)', build: popLike('RPOP') },
  lrange: { usage: 'lrange(key, start, stop)', build: keyThen('LRANGE', [['start', int], ['stop', int]]) },
  lrem: { usage: 'lrem(key, count, element)', build: keyThen('LREM', [['count', int], ['the element', arg]]) },
  lindex: { usage: 'lindex(key, index)', build: keyThen('LINDEX', [['the index', int]]) },
  llen: { usage: 'llen(key)', build: keyOnly('LLEN') },
  blpop: { usage: 'blpop(...keys, timeoutSeconds) or blpop([keys], timeoutSeconds)', build: blpop },
  sadd: { usage: 'sadd(key, ...members) or sadd(key, [members])', build: keyAndList('SADD', 'member') },
  srem: { usage: 'srem(key, ...members) or srem(key, [members])', build: keyAndList('SREM', 'member') },
  smembers: { usage: 'smembers(key)', build: keyOnly('SMEMBERS', toArray) },
  scard: { usage: 'scard(key)', build: keyOnly('SCARD') },
  sismember: { usage: 'sismember(key, member)', build: keyAnd('SISMEMBER', ['the member'], toBool) },
  zadd: {
    usage: "zadd(key, score, member, score, member, …), zadd(key, { member: score }) or zadd(key, 'NX' | 'XX' | 'GT' | 'LT' | 'CH', …, score, member)",
    build: zadd,
  },
  zrange: {
    usage: "zrange(key, start, stop, { BYSCORE, BYLEX, REV, LIMIT: { offset, count }, WITHSCORES }) or zrange(key, start, stop, 'WITHSCORES', …)",
    build: zrangeLike('ZRANGE'),
  },
  zrangebyscore: {
    usage: "zrangebyscore(key, min, max, { WITHSCORES, LIMIT: { offset, count } }) or zrangebyscore(key, min, max, 'WITHSCORES', 'LIMIT', offset, count)",
    build: zrangeLike('ZRANGEBYSCORE'),
  },
  zscore: { usage: 'zscore(key, member)', build: keyAnd('ZSCORE', ['the member'], toNumberOrNull) },
  zincrby: { usage: 'zincrby(key, increment, member)', build: keyThen('ZINCRBY', [['the increment', numeric], ['the member', arg]], toNumber) },
  zrem: { usage: 'zrem(key, ...members) or zrem(key, [members])', build: keyAndList('ZREM', 'member') },
  zcard: { usage: 'zcard(key)', build: keyOnly('ZCARD') },
  xadd: {
    usage: "xadd(key, id, { field: value } | [field, value, …], { NOMKSTREAM, MAXLEN | MINID, approximate, LIMIT }?) or xadd(key, 'MAXLEN', '~', n, '*', field, value, …)",
    build: xadd,
  },
  xrange: { usage: "xrange(key, start = '-', end = '+', { COUNT }?) or xrange(key, start, end, 'COUNT', n)", build: xrangeLike('XRANGE', '-', '+') },
  xrevrange: { usage: "xrevrange(key, end = '+', start = '-', { COUNT }?) or xrevrange(key, end, start, 'COUNT', n)", build: xrangeLike('XREVRANGE', '+', '-') },
  xlen: { usage: 'xlen(key)', build: keyOnly('XLEN') },
  xread: {
    usage: "xread({ stream: id } | [[stream, id], …], { COUNT, BLOCK }?) or xread('COUNT', n, 'BLOCK', ms, 'STREAMS', ...streams, ...ids)",
    build: xread,
  },
  xreadgroup: {
    usage:
      "xreadgroup(group, consumer, { stream: id } | [[stream, id], …], { COUNT, BLOCK, NOACK }?) or xreadgroup('GROUP', group, consumer, …, 'STREAMS', ...streams, ...ids)",
    build: xreadgroup,
  },
  xack: { usage: 'xack(key, group, ...ids) or xack(key, group, [ids])', build: xack },
  xgroup: {
    usage:
      "xgroup('CREATE', key, group, id, { MKSTREAM }?), xgroup('SETID', key, group, id), xgroup('DESTROY', key, group), xgroup('CREATECONSUMER' | 'DELCONSUMER', key, group, consumer)",
    build: xgroup,
  },
  publish: { usage: 'publish(channel, message)', build: publish },
  eval: { usage: 'eval(script, numKeys, ...keys, ...args)', build: scripted('EVAL', 'the script') },
  evalsha: { usage: 'evalsha(sha1, numKeys, ...keys, ...args)', build: scripted('EVALSHA', 'the SHA1') },
  fcall: { usage: 'fcall(function, numKeys, ...keys, ...args)', build: scripted('FCALL', 'the function name') },
  fcall_ro: { usage: 'fcall_ro(function, numKeys, ...keys, ...args)', build: scripted('FCALL_RO', 'the function name') },
  scan: { usage: 'scan(cursor, { match, count, type }?)', build: scan },
} as const satisfies HelperTable;

/** Names of the typed helpers: exactly the methods of {@link Commands}. */
export type HelperName = keyof Commands;

/** Each helper as its errors name it, made once so a call allocates nothing for it. */
const REFS = Object.fromEntries(Object.entries(TABLE).map(([name, e]) => [name, { name, usage: e.usage }])) as { readonly [K in HelperName]: HelperRef };

/** The helpers' names, for code that walks them (installing, tests). */
export const HELPER_NAMES = Object.keys(TABLE) as readonly HelperName[];

/** The helpers with trailing `undefined` arguments dropped first. */
export const HELPERS: { readonly [K in HelperName]: (...a: unknown[]) => CommandSpec } = Object.fromEntries(
  HELPER_NAMES.map((name) => {
    const build = TABLE[name].build;
    const h = REFS[name];
    return [name, (...a: unknown[]) => buildWith(build, a, h)];
  }),
) as { [K in HelperName]: (...a: unknown[]) => CommandSpec };

/**
 * `build` on `a` without its trailing `undefined`s. When that leaves too few arguments, the
 * error says an `undefined` was dropped: `set(k, undefined)` reads "needs 2 arguments, got 1"
 * otherwise, which hides that the value was undefined.
 */
function buildWith(build: Build, a: unknown[], h: HelperRef): CommandSpec {
  const t = trimmed(a);
  if (t.length === a.length) return build(t, h);
  try {
    return build(t, h);
  } catch (e) {
    if (e instanceof TypeError && /: needs \d+ arguments?, got \d+/.test(e.message)) {
      throw new TypeError(`${e.message} Argument ${t.length + 1} was undefined, which counts as missing.`);
    }
    throw e;
  }
}

/**
 * Installs every helper on a prototype. `run` receives the helper's spec and returns what the
 * helper returns (a promise on pools and leases, the batch itself on batches). A helper called
 * the wrong way throws its TypeError synchronously on a batch, and rejects on a pool.
 */
export function installHelpers(proto: object, run: string, reject = true): void {
  for (const name of HELPER_NAMES) {
    const build = TABLE[name].build;
    const h = REFS[name];
    Object.defineProperty(proto, name, {
      configurable: true,
      writable: true,
      value: function (this: Record<string, (s: CommandSpec) => unknown>, ...a: unknown[]) {
        let spec: CommandSpec;
        try {
          spec = buildWith(build, a, h);
        } catch (e) {
          if (!reject) throw e;
          return Promise.reject(e);
        }
        return this[run]!(spec);
      },
    });
  }
}

import type { Arg, Reply } from '../types.js';

/** What a typed helper turns into: the command's arguments and how to shape its reply. */
export interface CommandSpec {
  args: Arg[];
  transform?: (reply: Reply) => unknown;
  /** Server-side blocking time in seconds (0 = forever); the client deadline is extended by it. */
  blockSeconds?: number;
}

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

/** Options of SCAN and `scanIterator()`. */
export interface ScanOptions {
  /** MATCH: a glob-style pattern keys must match (filtered by the server after the step, so a step may return none). */
  match?: string;
  /** COUNT: a hint of how many keys one step looks at (the server's default is 10). */
  count?: number;
  /** TYPE: only keys of this type (`string`, `hash`, `list`, `set`, `zset`, `stream`). */
  type?: string;
}

const toStr = (v: Reply): string => (Buffer.isBuffer(v) ? v.toString() : String(v));

/** RESP2 flat `[k, v, k, v]` or RESP3 `Map` -> plain object. */
function toRecord(r: Reply): Record<string, string> {
  const out: Record<string, string> = {};
  if (r instanceof Map) {
    for (const [k, v] of r) out[toStr(k)] = v as string;
  } else if (Array.isArray(r)) {
    for (let i = 0; i < r.length; i += 2) out[toStr(r[i]!)] = r[i + 1] as string;
  }
  return out;
}

/** RESP3 `Set` -> array, so helpers answer the same under both protocols. */
function toArray(r: Reply): Reply[] {
  if (r instanceof Set) return [...r];
  return r as Reply[];
}

function toNumberOrNull(r: Reply): number | null {
  if (r === null) return null;
  if (typeof r === 'number') return r;
  const s = toStr(r);
  return s === 'inf' || s === '+inf' ? Infinity : s === '-inf' ? -Infinity : Number(s);
}

/** RESP3 WITHSCORES replies are `[[member, score], …]`; flatten to the RESP2 shape. */
function flattenPairs(r: Reply): Reply[] {
  const a = r as Reply[];
  if (a.length > 0 && Array.isArray(a[0])) {
    const out: Reply[] = [];
    for (const p of a as Reply[][]) out.push(p[0]!, typeof p[1] === 'number' ? (p[1] === Infinity ? 'inf' : p[1] === -Infinity ? '-inf' : String(p[1])) : p[1]!);
    return out;
  }
  return a;
}

function scanReply(r: Reply): [cursor: string, keys: string[]] {
  const a = r as Reply[];
  return [toStr(a[0]!), a[1] as string[]];
}

function checkKeys(name: string, keys: unknown[]): void {
  if (keys.length === 0) throw new TypeError(`${name} needs at least one key.`);
}

/**
 * The typed helpers, as pure functions from arguments to a {@link CommandSpec}. Pools, leases,
 * views and batches share them, so a helper behaves the same everywhere.
 */
export const HELPERS = {
  get: (key: Arg): CommandSpec => ({ args: ['GET', key] }),
  set: (key: Arg, value: Arg, options?: SetOptions): CommandSpec => {
    const args: Arg[] = ['SET', key, value];
    if (options) {
      if (options.EX !== undefined) args.push('EX', options.EX);
      if (options.PX !== undefined) args.push('PX', options.PX);
      if (options.EXAT !== undefined) args.push('EXAT', options.EXAT);
      if (options.PXAT !== undefined) args.push('PXAT', options.PXAT);
      if (options.NX) args.push('NX');
      if (options.XX) args.push('XX');
      if (options.KEEPTTL) args.push('KEEPTTL');
      if (options.GET) args.push('GET');
    }
    return { args };
  },
  del: (...keys: Arg[]): CommandSpec => (checkKeys('del', keys), { args: ['DEL', ...keys] }),
  exists: (...keys: Arg[]): CommandSpec => (checkKeys('exists', keys), { args: ['EXISTS', ...keys] }),
  expire: (key: Arg, seconds: number, mode?: 'NX' | 'XX' | 'GT' | 'LT'): CommandSpec => ({ args: mode ? ['EXPIRE', key, seconds, mode] : ['EXPIRE', key, seconds] }),
  ttl: (key: Arg): CommandSpec => ({ args: ['TTL', key] }),
  incr: (key: Arg): CommandSpec => ({ args: ['INCR', key] }),
  incrby: (key: Arg, increment: number | bigint): CommandSpec => ({ args: ['INCRBY', key, increment] }),
  decr: (key: Arg): CommandSpec => ({ args: ['DECR', key] }),
  mget: (...keys: Arg[]): CommandSpec => (checkKeys('mget', keys), { args: ['MGET', ...keys] }),
  mset: (...pairs: [Record<string, Arg>] | Arg[]): CommandSpec => {
    const args: Arg[] = ['MSET'];
    if (pairs.length === 1 && typeof pairs[0] === 'object' && !Buffer.isBuffer(pairs[0])) {
      for (const [k, v] of Object.entries(pairs[0] as Record<string, Arg>)) args.push(k, v);
    } else {
      args.push(...(pairs as Arg[]));
    }
    if (args.length < 3 || args.length % 2 === 0) throw new TypeError('mset needs key/value pairs.');
    return { args };
  },
  hget: (key: Arg, field: Arg): CommandSpec => ({ args: ['HGET', key, field] }),
  hset: (key: Arg, fieldOrRecord: Arg | Record<string, Arg>, value?: Arg): CommandSpec => {
    const args: Arg[] = ['HSET', key];
    if (typeof fieldOrRecord === 'object' && !Buffer.isBuffer(fieldOrRecord)) {
      for (const [f, v] of Object.entries(fieldOrRecord)) args.push(f, v);
      if (args.length === 2) throw new TypeError('hset needs at least one field.');
    } else {
      if (value === undefined) throw new TypeError('hset(key, field, value) needs a value.');
      args.push(fieldOrRecord, value);
    }
    return { args };
  },
  hgetall: (key: Arg): CommandSpec => ({ args: ['HGETALL', key], transform: toRecord }),
  hdel: (key: Arg, ...fields: Arg[]): CommandSpec => (checkKeys('hdel fields', fields), { args: ['HDEL', key, ...fields] }),
  lpush: (key: Arg, ...values: Arg[]): CommandSpec => (checkKeys('lpush values', values), { args: ['LPUSH', key, ...values] }),
  rpush: (key: Arg, ...values: Arg[]): CommandSpec => (checkKeys('rpush values', values), { args: ['RPUSH', key, ...values] }),
  lpop: (key: Arg, count?: number): CommandSpec => ({ args: count === undefined ? ['LPOP', key] : ['LPOP', key, count] }),
  rpop: (key: Arg, count?: number): CommandSpec => ({ args: count === undefined ? ['RPOP', key] : ['RPOP', key, count] }),
  lrange: (key: Arg, start: number, stop: number): CommandSpec => ({ args: ['LRANGE', key, start, stop] }),
  blpop: (...keysAndTimeout: [...keys: Arg[], timeoutSeconds: number]): CommandSpec => {
    const timeout = keysAndTimeout[keysAndTimeout.length - 1];
    if (typeof timeout !== 'number' || timeout < 0) throw new TypeError('blpop(...keys, timeoutSeconds) needs a timeout in seconds as its last argument (0 waits forever).');
    checkKeys('blpop', keysAndTimeout.slice(0, -1));
    return { args: ['BLPOP', ...keysAndTimeout], blockSeconds: timeout };
  },
  sadd: (key: Arg, ...members: Arg[]): CommandSpec => (checkKeys('sadd members', members), { args: ['SADD', key, ...members] }),
  srem: (key: Arg, ...members: Arg[]): CommandSpec => (checkKeys('srem members', members), { args: ['SREM', key, ...members] }),
  smembers: (key: Arg): CommandSpec => ({ args: ['SMEMBERS', key], transform: toArray }),
  zadd: (key: Arg, ...scoreMembers: Arg[] | [Record<string, number>]): CommandSpec => {
    const args: Arg[] = ['ZADD', key];
    if (scoreMembers.length === 1 && typeof scoreMembers[0] === 'object' && !Buffer.isBuffer(scoreMembers[0])) {
      for (const [m, s] of Object.entries(scoreMembers[0] as Record<string, number>)) args.push(s, m);
    } else {
      args.push(...(scoreMembers as Arg[]));
    }
    if (args.length < 4) throw new TypeError('zadd needs score/member pairs.');
    return { args };
  },
  zrange: (key: Arg, start: Arg, stop: Arg, options?: { WITHSCORES?: boolean; REV?: boolean; BYSCORE?: boolean; BYLEX?: boolean }): CommandSpec => {
    const args: Arg[] = ['ZRANGE', key, start, stop];
    if (options?.BYSCORE) args.push('BYSCORE');
    if (options?.BYLEX) args.push('BYLEX');
    if (options?.REV) args.push('REV');
    if (options?.WITHSCORES) args.push('WITHSCORES');
    return { args, transform: options?.WITHSCORES ? flattenPairs : undefined };
  },
  zscore: (key: Arg, member: Arg): CommandSpec => ({ args: ['ZSCORE', key, member], transform: toNumberOrNull }),
  publish: (channel: Arg, message: Arg): CommandSpec => ({ args: ['PUBLISH', channel, message] }),
  eval: (script: string, numKeys: number, ...keysAndArgs: Arg[]): CommandSpec => ({ args: ['EVAL', script, numKeys, ...keysAndArgs] }),
  evalsha: (sha: string, numKeys: number, ...keysAndArgs: Arg[]): CommandSpec => ({ args: ['EVALSHA', sha, numKeys, ...keysAndArgs] }),
  scan: (cursor: Arg, options?: ScanOptions): CommandSpec => {
    const args: Arg[] = ['SCAN', cursor];
    if (options?.match !== undefined) args.push('MATCH', options.match);
    if (options?.count !== undefined) args.push('COUNT', options.count);
    if (options?.type !== undefined) args.push('TYPE', options.type);
    return { args, transform: scanReply };
  },
};

/** Names of the typed helpers. */
export type HelperName = keyof typeof HELPERS;

/** The typed helpers with their reply types, as pools, leases and views expose them. */
export interface Commands {
  /** GET key: the value, or null. */
  get(key: Arg): Promise<string | null>;
  /** SET key value [EX|PX|EXAT|PXAT|KEEPTTL] [NX|XX] [GET]: 'OK', null when NX/XX prevented it, or the old value with GET. */
  set(key: Arg, value: Arg, options?: SetOptions): Promise<string | null>;
  /** DEL: number of keys removed. */
  del(...keys: Arg[]): Promise<number>;
  /** EXISTS: how many of the keys exist. */
  exists(...keys: Arg[]): Promise<number>;
  /** EXPIRE: 1 if the timeout was set. */
  expire(key: Arg, seconds: number, mode?: 'NX' | 'XX' | 'GT' | 'LT'): Promise<number>;
  /** TTL in seconds; -1 no expiry, -2 no key. */
  ttl(key: Arg): Promise<number>;
  /** INCR: the value after incrementing by 1. */
  incr(key: Arg): Promise<number>;
  /** INCRBY: the value after adding `increment`. */
  incrby(key: Arg, increment: number | bigint): Promise<number>;
  /** DECR: the value after decrementing by 1. */
  decr(key: Arg): Promise<number>;
  /** MGET: values in key order, null for missing keys. */
  mget(...keys: Arg[]): Promise<Array<string | null>>;
  /** MSET k v [k v …] or MSET({ k: v }). */
  mset(...pairs: [Record<string, Arg>] | Arg[]): Promise<'OK'>;
  /** HGET: the field's value, or null. */
  hget(key: Arg, field: Arg): Promise<string | null>;
  /** HSET key field value, or HSET key { field: value }: number of new fields. */
  hset(key: Arg, fieldOrRecord: Arg | Record<string, Arg>, value?: Arg): Promise<number>;
  /** HGETALL as a plain object. */
  hgetall(key: Arg): Promise<Record<string, string>>;
  /** HDEL: number of fields removed. */
  hdel(key: Arg, ...fields: Arg[]): Promise<number>;
  /** LPUSH: the list's length afterwards. */
  lpush(key: Arg, ...values: Arg[]): Promise<number>;
  /** RPUSH: the list's length afterwards. */
  rpush(key: Arg, ...values: Arg[]): Promise<number>;
  /** LPOP key [count]: a value (or array with count), null when empty. */
  lpop(key: Arg, count?: number): Promise<string | string[] | null>;
  /** RPOP key [count]: a value (or array with count), null when empty. */
  rpop(key: Arg, count?: number): Promise<string | string[] | null>;
  /** LRANGE: the elements from `start` to `stop` (inclusive; negative counts from the end). */
  lrange(key: Arg, start: number, stop: number): Promise<string[]>;
  /** BLPOP ...keys timeoutSeconds: [key, value], or null on timeout. The client deadline is extended by the timeout. */
  blpop(...keysAndTimeout: [...keys: Arg[], timeoutSeconds: number]): Promise<[string, string] | null>;
  /** SADD: number of members added. */
  sadd(key: Arg, ...members: Arg[]): Promise<number>;
  /** SREM: number of members removed. */
  srem(key: Arg, ...members: Arg[]): Promise<number>;
  /** SMEMBERS as an array (RESP3 sets too). */
  smembers(key: Arg): Promise<string[]>;
  /** ZADD key score member [score member …], or ZADD key { member: score }. */
  zadd(key: Arg, ...scoreMembers: Arg[] | [Record<string, number>]): Promise<number>;
  /** ZRANGE; WITHSCORES gives the flat [member, score, …] shape under both protocols. */
  zrange(key: Arg, start: Arg, stop: Arg, options?: { WITHSCORES?: boolean; REV?: boolean; BYSCORE?: boolean; BYLEX?: boolean }): Promise<string[]>;
  /** ZSCORE as a number, or null. */
  zscore(key: Arg, member: Arg): Promise<number | null>;
  /** PUBLISH: number of clients that received the message. */
  publish(channel: Arg, message: Arg): Promise<number>;
  /** EVAL script numKeys ...keys ...args: the script's reply, decoded (in a cluster, routed by the keys). */
  eval(script: string, numKeys: number, ...keysAndArgs: Arg[]): Promise<Reply>;
  /** EVALSHA: as `eval`, by the script's SHA1; rejects with `NOSCRIPT` when the server does not have it. */
  evalsha(sha: string, numKeys: number, ...keysAndArgs: Arg[]): Promise<Reply>;
  /** One SCAN step: [nextCursor, keys]. */
  scan(cursor: Arg, options?: ScanOptions): Promise<[cursor: string, keys: string[]]>;
}

/** The same helpers on a batch: each queues its command and returns the batch. */
export type BatchCommands<B> = { [K in keyof Commands]: (...args: Parameters<Commands[K]>) => B };

/**
 * Installs every helper on a prototype. `run` receives the helper's spec and returns what the
 * helper returns (a promise on pools and leases, the batch itself on batches).
 */
export function installHelpers(proto: object, run: string): void {
  for (const name of Object.keys(HELPERS) as HelperName[]) {
    const build = HELPERS[name] as (...a: unknown[]) => CommandSpec;
    Object.defineProperty(proto, name, {
      configurable: true,
      writable: true,
      value: function (this: Record<string, (s: CommandSpec) => unknown>, ...a: unknown[]) {
        return this[run]!(build(...a));
      },
    });
  }
}

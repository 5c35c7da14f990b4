import type { Arg, Reply } from '../types.js';
import {
  arg, atLeast, atMost, int, isArg, isRecord, knownKeys, list, numeric, pairsOf, token, tokens, trimmed, usageError, type HelperId,
} from './helper-args.js';
import { flattenScores, scanReply, toArray, toBool, toIdOrNull, toNumber, toNumberOrNull, toRecord, toStreamMessages, toStreams } from './replies.js';

export type { Commands, BatchCommands, SetOptions, GetExOptions, ScanOptions, ZRangeOptions, XAddOptions, XReadOptions, XReadGroupOptions } from './commands.js';
export type { StreamMessage, StreamMessages } from './replies.js';

/** What a typed helper turns into: the command's arguments and how to shape its reply. */
export interface CommandSpec {
  args: Arg[];
  transform?: (reply: Reply) => unknown;
  /** Server-side blocking time in seconds (0 = forever); the client deadline is extended by it. */
  blockSeconds?: number;
  /** Absolute deadline (epoch ms) that replaces the call's own: a script's EVAL fallback stays within the first attempt's deadline. */
  deadline?: number;
}

/** A helper's builder: its arguments as one array (trailing undefineds already dropped). */
type Build = (a: unknown[]) => CommandSpec;

const SET_ARITY = { EX: 1, PX: 1, EXAT: 1, PXAT: 1, NX: 0, XX: 0, KEEPTTL: 0, GET: 0 } as const;
const EXPIRY = ['EX', 'PX', 'EXAT', 'PXAT'] as const;
const EXPIRE_MODES = ['NX', 'XX', 'GT', 'LT'];

/** Options of an options-object form as token -> values, refusing unknown names and wrong types. */
function fromObject(name: HelperId, o: Record<string, unknown>, arity: Readonly<Record<string, number>>, ints: readonly string[] = []): Record<string, Arg[]> {
  const out: Record<string, Arg[]> = Object.create(null) as Record<string, Arg[]>;
  // for…in with an own-property check: no key arrays on the hot path (set with { EX }).
  for (const k in o) {
    if (!Object.hasOwn(o, k)) continue;
    if (!Object.hasOwn(arity, k)) knownKeys(name, o, Object.keys(arity));
    const v = o[k];
    if (v === undefined || v === false) continue;
    if (arity[k] === 0) {
      if (v !== true) throw usageError(name, `option ${k} must be true or false (got ${typeof v})`);
      out[k] = [];
    } else {
      out[k] = [ints.includes(k) ? int(name, `option ${k}`, v) : arg(name, `option ${k}`, v)];
    }
  }
  return out;
}

/** The options of a helper given either as one object or as ioredis-style tokens. */
function options(name: HelperId, rest: readonly unknown[], arity: Readonly<Record<string, number>>, ints: readonly string[] = []): Record<string, Arg[]> {
  if (rest.length === 1 && isRecord(rest[0]) && !(rest[0] instanceof Map)) return fromObject(name, rest[0] as Record<string, unknown>, arity, ints);
  return tokens(name, rest, arity);
}

/** Appends the chosen options in `order` (the order Redis documents them in). */
function push(args: Arg[], o: Record<string, Arg[]>, order: readonly string[]): Arg[] {
  for (const k of order) {
    const values = o[k];
    if (values === undefined) continue;
    args.push(k);
    for (const v of values) args.push(v);
  }
  return args;
}

function oneExpiry(name: HelperId, o: Record<string, Arg[]>, also: string): void {
  let first: string | undefined;
  for (const k of EXPIRY) {
    if (!o[k]) continue;
    if (first) throw usageError(name, `${first} and ${k} cannot be combined`);
    first = k;
  }
  if (first && o[also]) throw usageError(name, `${first} and ${also} cannot be combined`);
}

const key = (name: HelperId, v: unknown): Arg => arg(name, 'the key', v);

/** A helper of one key and nothing else. */
const keyOnly = (name: HelperId, command: string, transform?: CommandSpec['transform']): Build => (a) => {
  atLeast(name, a, 1);
  atMost(name, a, 1);
  return { args: [command, key(name, a[0])], transform };
};

/** A helper of a key and fixed positional arguments. */
const keyAnd = (name: HelperId, command: string, what: readonly string[], transform?: CommandSpec['transform']): Build => (a) => {
  atLeast(name, a, 1 + what.length);
  atMost(name, a, 1 + what.length);
  return { args: [command, key(name, a[0]), ...what.map((w, i) => arg(name, w, a[i + 1]))], transform };
};

/** A helper of a key and at least one more item (members, fields, values), arrays flattened. */
const keyAndList = (name: HelperId, command: string, what: string, transform?: CommandSpec['transform']): Build => (a) => {
  atLeast(name, a, 2);
  return { args: [command, key(name, a[0]), ...list(name, what, a.slice(1))], transform };
};

/** A helper of one or more keys, arrays flattened (`del([a, b])`, as ioredis). */
const keys = (name: HelperId, command: string, transform?: CommandSpec['transform']): Build => (a) => ({ args: [command, ...list(name, 'key', a)], transform });

/** `field value field value …`, `{ field: value }` or a Map, as HSET, MSET and XADD take them. */
function pairs(name: HelperId, what: string, rest: readonly unknown[]): Arg[] {
  if (rest.length === 1 && isRecord(rest[0])) {
    const p = pairsOf(name, what, rest[0]);
    if (p.length === 0) throw usageError(name, `needs at least one ${what}`);
    return p;
  }
  const flat = list(name, `${what} or value`, rest, 0);
  if (flat.length === 0) throw usageError(name, `needs at least one ${what} and value`);
  if (flat.length % 2 !== 0) throw usageError(name, `got ${flat.length} ${what}/value arguments; they must come in pairs`);
  return flat;
}

/** numKeys then keys and arguments (EVAL, EVALSHA, FCALL). */
const scripted = (name: HelperId, command: string): Build => (a) => {
  atLeast(name, a, 2);
  const n = int(name, 'numKeys', a[1]);
  const rest = list(name, 'key or argument', a.slice(2), 0);
  if (Number(n) < 0 || Number(n) > rest.length) throw usageError(name, `numKeys is ${n} but ${rest.length} keys and arguments follow`);
  return { args: [command, arg(name, name === 'fcall' || name === 'fcall_ro' ? 'the function name' : name === 'evalsha' ? 'the SHA1' : 'the script', a[0]), n, ...rest] };
};

function zrangeTail(name: 'zrange' | 'zrangebyscore', rest: readonly unknown[]): { tail: Arg[]; withScores: boolean } {
  const flags: Record<string, number> = name === 'zrange' ? { BYSCORE: 0, BYLEX: 0, REV: 0, WITHSCORES: 0, LIMIT: 2 } : { WITHSCORES: 0, LIMIT: 2 };
  let o: Record<string, Arg[]>;
  if (rest.length === 1 && isRecord(rest[0]) && !(rest[0] instanceof Map)) {
    const obj = rest[0] as Record<string, unknown>;
    const { LIMIT, ...others } = obj;
    o = fromObject(name, others, { ...flags, LIMIT: 1 });
    if (LIMIT !== undefined) {
      if (!isRecord(LIMIT) || LIMIT instanceof Map) throw usageError(name, 'option LIMIT must be { offset, count }');
      knownKeys(name, LIMIT, ['offset', 'count']);
      o.LIMIT = [int(name, 'LIMIT.offset', LIMIT.offset), int(name, 'LIMIT.count', LIMIT.count)];
    }
  } else {
    o = tokens(name, rest, flags);
  }
  if (o.BYSCORE && o.BYLEX) throw usageError(name, 'BYSCORE and BYLEX cannot be combined');
  return { tail: push([], o, ['BYSCORE', 'BYLEX', 'REV', 'LIMIT', 'WITHSCORES']).filter((x) => x !== 'WITHSCORES').concat(o.WITHSCORES ? ['WITHSCORES'] : []), withScores: !!o.WITHSCORES };
}

/** `{ stream: id }`, a Map, or `[[stream, id], …]` -> `STREAMS k1 k2 id1 id2`. */
function streamsOf(name: 'xread' | 'xreadgroup', s: unknown): Arg[] {
  let entries: Array<[unknown, unknown]>;
  if (Array.isArray(s)) entries = s.map((e) => (Array.isArray(e) && e.length === 2 ? (e as [unknown, unknown]) : [undefined, undefined]));
  else if (s instanceof Map) entries = [...s.entries()];
  else if (isRecord(s)) entries = Object.entries(s);
  else throw usageError(name, 'streams must be { stream: id } or [[stream, id], …]');
  if (entries.length === 0) throw usageError(name, 'needs at least one stream');
  const ks = entries.map(([k]) => arg(name, 'every stream key', k));
  const ids = entries.map(([, id]) => arg(name, 'every stream ID', id));
  return ['STREAMS', ...ks, ...ids];
}

/** An ioredis-style XREAD/XREADGROUP argument list, checked only as far as needed to send it as given. */
function rawStreams(name: 'xread' | 'xreadgroup', a: readonly unknown[]): Arg[] {
  const args = list(name, 'argument', a, 1);
  const at = args.findIndex((x) => token(x) === 'STREAMS');
  const after = at === -1 ? 0 : args.length - at - 1;
  if (at === -1 || after === 0 || after % 2 !== 0) throw usageError(name, "the ioredis form needs 'STREAMS' followed by as many IDs as stream keys");
  return args;
}

/**
 * The typed helpers, as pure functions from arguments to a {@link CommandSpec}. Pools, leases,
 * views and batches share them, so a helper behaves the same everywhere. Each refuses
 * arguments it would not use (TypeError naming it and its forms); trailing `undefined`
 * arguments count as absent.
 */
const TABLE = {
  get: keyOnly('get', 'GET'),
  set: (a) => {
    atLeast('set', a, 2);
    const args: Arg[] = ['SET', key('set', a[0]), arg('set', 'the value', a[1])];
    if (a.length === 2) return { args };
    if (a.length === 3 && isRecord(a[2]) && !(a[2] instanceof Map)) return { args: setOptions(args, a[2] as Record<string, unknown>) };
    const o = options('set', a.slice(2), SET_ARITY, EXPIRY);
    oneExpiry('set', o, 'KEEPTTL');
    if (o.NX && o.XX) throw usageError('set', 'NX and XX cannot be combined');
    return { args: push(args, o, ['EX', 'PX', 'EXAT', 'PXAT', 'NX', 'XX', 'KEEPTTL', 'GET']) };
  },
  getdel: keyOnly('getdel', 'GETDEL'),
  getex: (a) => {
    atLeast('getex', a, 1);
    const o = options('getex', a.slice(1), { EX: 1, PX: 1, EXAT: 1, PXAT: 1, PERSIST: 0 }, EXPIRY);
    oneExpiry('getex', o, 'PERSIST');
    return { args: push(['GETEX', key('getex', a[0])], o, ['EX', 'PX', 'EXAT', 'PXAT', 'PERSIST']) };
  },
  setnx: keyAnd('setnx', 'SETNX', ['the value']),
  del: keys('del', 'DEL'),
  unlink: keys('unlink', 'UNLINK'),
  exists: keys('exists', 'EXISTS'),
  touch: keys('touch', 'TOUCH'),
  expire: (a) => expireLike('expire', 'EXPIRE', a),
  expireat: (a) => expireLike('expireat', 'EXPIREAT', a),
  persist: keyOnly('persist', 'PERSIST'),
  ttl: keyOnly('ttl', 'TTL'),
  pttl: keyOnly('pttl', 'PTTL'),
  incr: keyOnly('incr', 'INCR'),
  incrby: (a) => (atLeast('incrby', a, 2), atMost('incrby', a, 2), { args: ['INCRBY', key('incrby', a[0]), int('incrby', 'the increment', a[1])] }),
  incrbyfloat: (a) => (atLeast('incrbyfloat', a, 2), atMost('incrbyfloat', a, 2), { args: ['INCRBYFLOAT', key('incrbyfloat', a[0]), numeric('incrbyfloat', 'the increment', a[1])], transform: toNumber }),
  decr: keyOnly('decr', 'DECR'),
  decrby: (a) => (atLeast('decrby', a, 2), atMost('decrby', a, 2), { args: ['DECRBY', key('decrby', a[0]), int('decrby', 'the decrement', a[1])] }),
  mget: keys('mget', 'MGET'),
  mset: (a) => ({ args: ['MSET', ...pairs('mset', 'key', a)] }),
  hget: keyAnd('hget', 'HGET', ['the field']),
  hset: (a) => (atLeast('hset', a, 2), { args: ['HSET', key('hset', a[0]), ...pairs('hset', 'field', a.slice(1))] }),
  hmget: keyAndList('hmget', 'HMGET', 'field'),
  hgetall: keyOnly('hgetall', 'HGETALL', toRecord),
  hdel: keyAndList('hdel', 'HDEL', 'field'),
  hincrby: (a) => (atLeast('hincrby', a, 3), atMost('hincrby', a, 3), { args: ['HINCRBY', key('hincrby', a[0]), arg('hincrby', 'the field', a[1]), int('hincrby', 'the increment', a[2])] }),
  hexists: keyAnd('hexists', 'HEXISTS', ['the field'], toBool),
  lpush: keyAndList('lpush', 'LPUSH', 'value'),
  rpush: keyAndList('rpush', 'RPUSH', 'value'),
  lpop: (a) => popLike('lpop', 'LPOP', a),
  rpop: (a) => popLike('rpop', 'RPOP', a),
  lrange: (a) => (atLeast('lrange', a, 3), atMost('lrange', a, 3), { args: ['LRANGE', key('lrange', a[0]), int('lrange', 'start', a[1]), int('lrange', 'stop', a[2])] }),
  lrem: (a) => (atLeast('lrem', a, 3), atMost('lrem', a, 3), { args: ['LREM', key('lrem', a[0]), int('lrem', 'count', a[1]), arg('lrem', 'the element', a[2])] }),
  lindex: (a) => (atLeast('lindex', a, 2), atMost('lindex', a, 2), { args: ['LINDEX', key('lindex', a[0]), int('lindex', 'the index', a[1])] }),
  llen: keyOnly('llen', 'LLEN'),
  blpop: (a) => {
    const timeout = a[a.length - 1];
    if (typeof timeout !== 'number' || !(timeout >= 0) || !Number.isFinite(timeout)) throw usageError('blpop', 'the last argument must be the timeout in seconds (0 waits forever)');
    return { args: ['BLPOP', ...list('blpop', 'key', a.slice(0, -1)), timeout], blockSeconds: timeout };
  },
  sadd: keyAndList('sadd', 'SADD', 'member'),
  srem: keyAndList('srem', 'SREM', 'member'),
  smembers: keyOnly('smembers', 'SMEMBERS', toArray),
  scard: keyOnly('scard', 'SCARD'),
  sismember: keyAnd('sismember', 'SISMEMBER', ['the member'], toBool),
  zadd: (a) => {
    atLeast('zadd', a, 2);
    const args: Arg[] = ['ZADD', key('zadd', a[0])];
    let incr = false;
    if (a.length === 2 && isRecord(a[1])) {
      const entries = a[1] instanceof Map ? [...a[1].entries()] : Object.entries(a[1]);
      for (const [m, s] of entries) args.push(numeric('zadd', 'every score', s), arg('zadd', 'every member', m));
    } else {
      const rest = list('zadd', 'score or member', a.slice(1));
      let i = 0;
      while (i < rest.length && ['NX', 'XX', 'GT', 'LT', 'CH', 'INCR'].includes(token(rest[i]) ?? '')) {
        if (token(rest[i]) === 'INCR') incr = true;
        args.push(rest[i++]!);
      }
      const scored = rest.slice(i);
      if (scored.length % 2 !== 0) throw usageError('zadd', `got ${scored.length} score/member arguments; they must come in pairs`);
      for (let j = 0; j < scored.length; j += 2) args.push(numeric('zadd', 'every score', scored[j]), scored[j + 1]!);
    }
    if (args.length < 4) throw usageError('zadd', 'needs at least one score and member');
    // With INCR the reply is the new score (text under RESP2, a double under RESP3) or null.
    return incr ? { args, transform: toNumberOrNull } : { args };
  },
  zrange: (a) => {
    atLeast('zrange', a, 3);
    const { tail, withScores } = zrangeTail('zrange', a.slice(3));
    return { args: ['ZRANGE', key('zrange', a[0]), arg('zrange', 'start', a[1]), arg('zrange', 'stop', a[2]), ...tail], transform: withScores ? flattenScores : toArray };
  },
  zrangebyscore: (a) => {
    atLeast('zrangebyscore', a, 3);
    const { tail, withScores } = zrangeTail('zrangebyscore', a.slice(3));
    return { args: ['ZRANGEBYSCORE', key('zrangebyscore', a[0]), numeric('zrangebyscore', 'min', a[1]), numeric('zrangebyscore', 'max', a[2]), ...tail], transform: withScores ? flattenScores : toArray };
  },
  zscore: keyAnd('zscore', 'ZSCORE', ['the member'], toNumberOrNull),
  zincrby: (a) => (atLeast('zincrby', a, 3), atMost('zincrby', a, 3), { args: ['ZINCRBY', key('zincrby', a[0]), numeric('zincrby', 'the increment', a[1]), arg('zincrby', 'the member', a[2])], transform: toNumber }),
  zrem: keyAndList('zrem', 'ZREM', 'member'),
  zcard: keyOnly('zcard', 'ZCARD'),
  xadd: (a) => xadd(a),
  xrange: (a) => xrangeLike('xrange', 'XRANGE', a, '-', '+'),
  xrevrange: (a) => xrangeLike('xrevrange', 'XREVRANGE', a, '+', '-'),
  xlen: keyOnly('xlen', 'XLEN'),
  xread: (a) => {
    atLeast('xread', a, 1);
    if (isArg(a[0])) return { args: ['XREAD', ...rawStreams('xread', a)], transform: toStreams };
    atMost('xread', a, 2);
    const o = a[1] === undefined ? {} : options('xread', [a[1]], { COUNT: 1, BLOCK: 1 }, ['COUNT', 'BLOCK']);
    return { args: push(['XREAD'], o, ['COUNT', 'BLOCK']).concat(streamsOf('xread', a[0])), transform: toStreams };
  },
  xreadgroup: (a) => {
    atLeast('xreadgroup', a, 3);
    if (token(a[0]) === 'GROUP' && isArg(a[2])) return { args: ['XREADGROUP', ...rawStreams('xreadgroup', a)], transform: toStreams };
    atMost('xreadgroup', a, 4);
    const o = a[3] === undefined ? {} : options('xreadgroup', [a[3]], { COUNT: 1, BLOCK: 1, NOACK: 0 }, ['COUNT', 'BLOCK']);
    const args: Arg[] = ['XREADGROUP', 'GROUP', arg('xreadgroup', 'the group', a[0]), arg('xreadgroup', 'the consumer', a[1])];
    return { args: push(args, o, ['COUNT', 'BLOCK', 'NOACK']).concat(streamsOf('xreadgroup', a[2])), transform: toStreams };
  },
  xack: (a) => (atLeast('xack', a, 3), { args: ['XACK', key('xack', a[0]), arg('xack', 'the group', a[1]), ...list('xack', 'ID', a.slice(2))] }),
  xgroup: (a) => xgroup(a),
  publish: (a) => (atLeast('publish', a, 2), atMost('publish', a, 2), { args: ['PUBLISH', arg('publish', 'the channel', a[0]), arg('publish', 'the message', a[1])] }),
  eval: scripted('eval', 'EVAL'),
  evalsha: scripted('evalsha', 'EVALSHA'),
  fcall: scripted('fcall', 'FCALL'),
  fcall_ro: scripted('fcall_ro', 'FCALL_RO'),
  scan: (a) => {
    atLeast('scan', a, 1);
    const o = options('scan', a.slice(1).map((x) => (isRecord(x) ? upperKeys(x as Record<string, unknown>) : x)), { MATCH: 1, COUNT: 1, TYPE: 1 }, ['COUNT']);
    return { args: push(['SCAN', arg('scan', 'the cursor', a[0])], o, ['MATCH', 'COUNT', 'TYPE']), transform: scanReply };
  },
} satisfies Record<HelperId, Build>;

/**
 * SET's options object, by hand: `set(k, v, { EX })` is among the hottest calls, and the
 * generic option reader costs several times the rest of the call.
 */
function setOptions(args: Arg[], o: Record<string, unknown>): Arg[] {
  let expiry: string | undefined;
  let ttl: Arg | undefined;
  let nx = false, xx = false, keep = false, get = false;
  for (const k in o) {
    if (!Object.hasOwn(o, k)) continue;
    const v = o[k];
    if (v === undefined) continue;
    switch (k) {
      case 'EX': case 'PX': case 'EXAT': case 'PXAT':
        if (expiry) throw usageError('set', `${expiry} and ${k} cannot be combined`);
        expiry = k;
        ttl = int('set', `option ${k}`, v);
        break;
      case 'NX': case 'XX': case 'KEEPTTL': case 'GET':
        if (v !== true && v !== false) throw usageError('set', `option ${k} must be true or false (got ${typeof v})`);
        if (k === 'NX') nx = v;
        else if (k === 'XX') xx = v;
        else if (k === 'KEEPTTL') keep = v;
        else get = v;
        break;
      default:
        knownKeys('set', o, Object.keys(SET_ARITY));
    }
  }
  if (expiry && keep) throw usageError('set', `${expiry} and KEEPTTL cannot be combined`);
  if (nx && xx) throw usageError('set', 'NX and XX cannot be combined');
  if (expiry) args.push(expiry, ttl!);
  if (nx) args.push('NX');
  if (xx) args.push('XX');
  if (keep) args.push('KEEPTTL');
  if (get) args.push('GET');
  return args;
}

/** `{ match, count, type }` (the documented spelling of ScanOptions) as option tokens. */
function upperKeys(o: Record<string, unknown>): Record<string, unknown> {
  knownKeys('scan', o, ['match', 'count', 'type']);
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k.toUpperCase(), v]));
}

function expireLike(name: 'expire' | 'expireat', command: string, a: unknown[]): CommandSpec {
  atLeast(name, a, 2);
  atMost(name, a, 3);
  const args: Arg[] = [command, key(name, a[0]), int(name, name === 'expire' ? 'seconds' : 'the Unix time', a[1])];
  if (a.length === 3) {
    const m = token(a[2]);
    if (m === undefined || !EXPIRE_MODES.includes(m)) throw usageError(name, `the mode must be 'NX', 'XX', 'GT' or 'LT'`);
    args.push(m);
  }
  return { args };
}

function popLike(name: 'lpop' | 'rpop', command: string, a: unknown[]): CommandSpec {
  atLeast(name, a, 1);
  atMost(name, a, 2);
  return { args: a.length === 2 ? [command, key(name, a[0]), int(name, 'count', a[1])] : [command, key(name, a[0])] };
}

function xrangeLike(name: 'xrange' | 'xrevrange', command: string, a: unknown[], from: string, to: string): CommandSpec {
  atLeast(name, a, 1);
  const args: Arg[] = [command, key(name, a[0]), a.length > 1 ? arg(name, 'the first bound', a[1]) : from, a.length > 2 ? arg(name, 'the second bound', a[2]) : to];
  return { args: push(args, options(name, a.slice(3), { COUNT: 1 }, ['COUNT']), ['COUNT']), transform: toStreamMessages };
}

const TRIM = ['MAXLEN', 'MINID'];

function xadd(a: unknown[]): CommandSpec {
  atLeast('xadd', a, 3);
  const args: Arg[] = ['XADD', key('xadd', a[0])];
  if (isArg(a[2])) {
    // ioredis form: [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT n]] id field value …
    const rest = a.slice(1);
    let i = 0;
    for (;;) {
      const t = token(rest[i]);
      if (t === 'NOMKSTREAM') args.push(rest[i++] as Arg);
      else if (t !== undefined && TRIM.includes(t)) {
        args.push(rest[i++] as Arg);
        if (rest[i] === '~' || rest[i] === '=') args.push(rest[i++] as Arg);
        args.push(arg('xadd', `the ${t} threshold`, rest[i++]));
        if (token(rest[i]) === 'LIMIT') args.push(rest[i++] as Arg, int('xadd', 'LIMIT', rest[i++]));
      } else break;
    }
    args.push(arg('xadd', 'the ID', rest[i++]));
    args.push(...pairs('xadd', 'field', rest.slice(i)));
    return { args, transform: toIdOrNull };
  }
  atMost('xadd', a, 4);
  const o = a[3];
  if (o !== undefined) {
    if (!isRecord(o) || o instanceof Map) throw usageError('xadd', 'the options must be an object');
    knownKeys('xadd', o, ['NOMKSTREAM', 'MAXLEN', 'MINID', 'approximate', 'LIMIT']);
    if (o.NOMKSTREAM) args.push('NOMKSTREAM');
    if (o.MAXLEN !== undefined && o.MINID !== undefined) throw usageError('xadd', 'MAXLEN and MINID cannot be combined');
    const trim = o.MAXLEN !== undefined ? 'MAXLEN' : o.MINID !== undefined ? 'MINID' : undefined;
    if (trim) args.push(trim, o.approximate ? '~' : '=', trim === 'MAXLEN' ? int('xadd', 'MAXLEN', o.MAXLEN) : arg('xadd', 'MINID', o.MINID));
    if (o.LIMIT !== undefined) {
      if (!trim || !o.approximate) throw usageError('xadd', 'LIMIT needs MAXLEN or MINID with approximate: true');
      args.push('LIMIT', int('xadd', 'LIMIT', o.LIMIT));
    }
  }
  args.push(arg('xadd', 'the ID', a[1]), ...pairs('xadd', 'field', [a[2]]));
  return { args, transform: toIdOrNull };
}

function xgroup(a: unknown[]): CommandSpec {
  const sub = token(a[0]);
  const fixedArgs = (n: number) => {
    atLeast('xgroup', a, n);
    return a.slice(1, n).map((v, i) => arg('xgroup', ['the key', 'the group', i === 2 && sub === 'SETID' ? 'the ID' : 'the consumer'][i]!, v));
  };
  switch (sub) {
    case 'CREATE': case 'SETID': {
      atLeast('xgroup', a, 4);
      const head = [arg('xgroup', 'the key', a[1]), arg('xgroup', 'the group', a[2]), arg('xgroup', 'the ID', a[3])];
      const o = options('xgroup', a.slice(4), sub === 'CREATE' ? { MKSTREAM: 0, ENTRIESREAD: 1 } : { ENTRIESREAD: 1 }, ['ENTRIESREAD']);
      return { args: push(['XGROUP', sub, ...head], o, ['MKSTREAM', 'ENTRIESREAD']) };
    }
    case 'DESTROY':
      atMost('xgroup', a, 3);
      return { args: ['XGROUP', sub, ...fixedArgs(3)] };
    case 'CREATECONSUMER': case 'DELCONSUMER':
      atMost('xgroup', a, 4);
      return { args: ['XGROUP', sub, ...fixedArgs(4)] };
    default:
      throw usageError('xgroup', `unknown subcommand ${typeof a[0] === 'string' ? JSON.stringify(a[0]) : 'missing'}`);
  }
}

/** Names of the typed helpers. */
export type HelperName = keyof typeof TABLE;

/** The helpers with trailing `undefined` arguments dropped first. */
export const HELPERS: { readonly [K in HelperName]: (...a: unknown[]) => CommandSpec } = Object.fromEntries(
  Object.entries(TABLE).map(([name, build]) => [name, (...a: unknown[]) => buildWith(build as Build, a)]),
) as { [K in HelperName]: (...a: unknown[]) => CommandSpec };

/**
 * `build` on `a` without its trailing `undefined`s. When that leaves too few arguments, the
 * error says an `undefined` was dropped: `set(k, undefined)` reads "needs 2 arguments, got 1"
 * otherwise, which hides that the value was undefined.
 */
function buildWith(build: Build, a: unknown[]): CommandSpec {
  const t = trimmed(a);
  if (t.length === a.length) return build(t);
  try {
    return build(t);
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
  for (const name of Object.keys(TABLE) as HelperName[]) {
    const build = TABLE[name] as Build;
    Object.defineProperty(proto, name, {
      configurable: true,
      writable: true,
      value: function (this: Record<string, (s: CommandSpec) => unknown>, ...a: unknown[]) {
        let spec: CommandSpec;
        try {
          spec = buildWith(build, a);
        } catch (e) {
          if (!reject) throw e;
          return Promise.reject(e);
        }
        return this[run]!(spec);
      },
    });
  }
}

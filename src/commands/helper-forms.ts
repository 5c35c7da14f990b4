import type { Arg } from '../types.js';
import {
  arg, atLeast, atMost, int, isArg, isRecord, knownKeys, list, numeric, pairsOf, token, tokens, usageError, type Build, type CommandSpec, type HelperRef,
} from './helper-args.js';
import { flattenScores, scanReply, toArray, toIdOrNull, toNumberOrNull, toStreamMessages, toStreams } from './replies.js';

/**
 * The forms of the typed helpers: builders shared by many helpers (one key, a key and a list,
 * …) and the option-heavy ones (SET, ZRANGE, XADD, …). Each takes its arguments and the helper
 * it runs for, whose name and usage its TypeErrors show; the helper table (helpers.ts) pairs
 * each helper with its usage and one of these.
 */

const SET_ARITY = { EX: 1, PX: 1, EXAT: 1, PXAT: 1, NX: 0, XX: 0, KEEPTTL: 0, GET: 0 } as const;
const EXPIRY = ['EX', 'PX', 'EXAT', 'PXAT'] as const;
const EXPIRE_MODES = ['NX', 'XX', 'GT', 'LT'];

/** Options of an options-object form as token -> values, refusing unknown names and wrong types. */
function fromObject(h: HelperRef, o: Record<string, unknown>, arity: Readonly<Record<string, number>>, ints: readonly string[] = []): Record<string, Arg[]> {
  const out: Record<string, Arg[]> = Object.create(null) as Record<string, Arg[]>;
  // for…in with an own-property check: no key arrays on the hot path (set with { EX }).
  for (const k in o) {
    if (!Object.hasOwn(o, k)) continue;
    if (!Object.hasOwn(arity, k)) knownKeys(h, o, Object.keys(arity));
    const v = o[k];
    if (v === undefined || v === false) continue;
    if (arity[k] === 0) {
      if (v !== true) throw usageError(h, `option ${k} must be true or false (got ${typeof v})`);
      out[k] = [];
    } else {
      out[k] = [ints.includes(k) ? int(h, `option ${k}`, v) : arg(h, `option ${k}`, v)];
    }
  }
  return out;
}

/** The options of a helper given either as one object or as ioredis-style tokens. */
function options(h: HelperRef, rest: readonly unknown[], arity: Readonly<Record<string, number>>, ints: readonly string[] = []): Record<string, Arg[]> {
  if (rest.length === 1 && isRecord(rest[0]) && !(rest[0] instanceof Map)) return fromObject(h, rest[0] as Record<string, unknown>, arity, ints);
  return tokens(h, rest, arity);
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

function oneExpiry(h: HelperRef, o: Record<string, Arg[]>, also: string): void {
  let first: string | undefined;
  for (const k of EXPIRY) {
    if (!o[k]) continue;
    if (first) throw usageError(h, `${first} and ${k} cannot be combined`);
    first = k;
  }
  if (first && o[also]) throw usageError(h, `${first} and ${also} cannot be combined`);
}

const key = (h: HelperRef, v: unknown): Arg => arg(h, 'the key', v);

/** One key and nothing else. */
export const keyOnly = (command: string, transform?: CommandSpec['transform']): Build => (a, h) => {
  atLeast(h, a, 1);
  atMost(h, a, 1);
  return { args: [command, key(h, a[0])], transform };
};

/** A key and fixed positional arguments (`what` names each for its errors). */
export const keyAnd = (command: string, what: readonly string[], transform?: CommandSpec['transform']): Build => (a, h) => {
  atLeast(h, a, 1 + what.length);
  atMost(h, a, 1 + what.length);
  return { args: [command, key(h, a[0]), ...what.map((w, i) => arg(h, w, a[i + 1]))], transform };
};

/** How a positional argument is checked: `arg`, `int` or `numeric` from helper-args. */
type Reader = (h: HelperRef, what: string, v: unknown) => Arg;

/**
 * A key then one or two fixed arguments, each checked by its own reader (an integer count, a
 * numeric increment, …). Written out per count, not looped: INCRBY and HINCRBY are hot.
 */
export function keyThen(command: string, readers: readonly [readonly [string, Reader]], transform?: CommandSpec['transform']): Build;
export function keyThen(command: string, readers: readonly [readonly [string, Reader], readonly [string, Reader]], transform?: CommandSpec['transform']): Build;
export function keyThen(command: string, readers: ReadonlyArray<readonly [string, Reader]>, transform?: CommandSpec['transform']): Build {
  const [w1, r1] = readers[0]!;
  if (readers.length === 1) {
    return (a, h) => {
      atLeast(h, a, 2);
      atMost(h, a, 2);
      const args: Arg[] = [command, key(h, a[0]), r1(h, w1, a[1])];
      return transform ? { args, transform } : { args };
    };
  }
  const [w2, r2] = readers[1]!;
  return (a, h) => {
    atLeast(h, a, 3);
    atMost(h, a, 3);
    const args: Arg[] = [command, key(h, a[0]), r1(h, w1, a[1]), r2(h, w2, a[2])];
    return transform ? { args, transform } : { args };
  };
}

/** A key and at least one more item (members, fields, values), arrays flattened. */
export const keyAndList = (command: string, what: string, transform?: CommandSpec['transform']): Build => (a, h) => {
  atLeast(h, a, 2);
  return { args: [command, key(h, a[0]), ...list(h, what, a.slice(1))], transform };
};

/** One or more keys, arrays flattened (`del([a, b])`, as ioredis). */
export const keys = (command: string, transform?: CommandSpec['transform']): Build => (a, h) => ({ args: [command, ...list(h, 'key', a)], transform });

/** `field value field value …`, `{ field: value }` or a Map, as HSET, MSET and XADD take them. */
function pairs(h: HelperRef, what: string, rest: readonly unknown[]): Arg[] {
  if (rest.length === 1 && isRecord(rest[0])) {
    const p = pairsOf(h, what, rest[0]);
    if (p.length === 0) throw usageError(h, `needs at least one ${what}`);
    return p;
  }
  const flat = list(h, `${what} or value`, rest, 0);
  if (flat.length === 0) throw usageError(h, `needs at least one ${what} and value`);
  if (flat.length % 2 !== 0) throw usageError(h, `got ${flat.length} ${what}/value arguments; they must come in pairs`);
  return flat;
}

/** MSET: pairs only. */
export const mset: Build = (a, h) => ({ args: ['MSET', ...pairs(h, 'key', a)] });

/** HSET: a key, then pairs. */
export const hset: Build = (a, h) => (atLeast(h, a, 2), { args: ['HSET', key(h, a[0]), ...pairs(h, 'field', a.slice(1))] });

/** numKeys then keys and arguments (EVAL, EVALSHA, FCALL); `first` names the first argument. */
export const scripted = (command: string, first: string): Build => (a, h) => {
  atLeast(h, a, 2);
  const n = int(h, 'numKeys', a[1]);
  const rest = list(h, 'key or argument', a.slice(2), 0);
  if (Number(n) < 0 || Number(n) > rest.length) throw usageError(h, `numKeys is ${n} but ${rest.length} keys and arguments follow`);
  return { args: [command, arg(h, first, a[0]), n, ...rest] };
};

export const set: Build = (a, h) => {
  atLeast(h, a, 2);
  const args: Arg[] = ['SET', key(h, a[0]), arg(h, 'the value', a[1])];
  if (a.length === 2) return { args };
  if (a.length === 3 && isRecord(a[2]) && !(a[2] instanceof Map)) return { args: setOptions(h, args, a[2] as Record<string, unknown>) };
  const o = options(h, a.slice(2), SET_ARITY, EXPIRY);
  oneExpiry(h, o, 'KEEPTTL');
  if (o.NX && o.XX) throw usageError(h, 'NX and XX cannot be combined');
  return { args: push(args, o, ['EX', 'PX', 'EXAT', 'PXAT', 'NX', 'XX', 'KEEPTTL', 'GET']) };
};

/**
 * SET's options object, by hand: `set(k, v, { EX })` is among the hottest calls, and the
 * generic option reader costs several times the rest of the call.
 */
function setOptions(h: HelperRef, args: Arg[], o: Record<string, unknown>): Arg[] {
  let expiry: string | undefined;
  let ttl: Arg | undefined;
  let nx = false, xx = false, keep = false, get = false;
  for (const k in o) {
    if (!Object.hasOwn(o, k)) continue;
    const v = o[k];
    if (v === undefined) continue;
    switch (k) {
      case 'EX': case 'PX': case 'EXAT': case 'PXAT':
        if (expiry) throw usageError(h, `${expiry} and ${k} cannot be combined`);
        expiry = k;
        ttl = int(h, `option ${k}`, v);
        break;
      case 'NX': case 'XX': case 'KEEPTTL': case 'GET':
        if (v !== true && v !== false) throw usageError(h, `option ${k} must be true or false (got ${typeof v})`);
        if (k === 'NX') nx = v;
        else if (k === 'XX') xx = v;
        else if (k === 'KEEPTTL') keep = v;
        else get = v;
        break;
      default:
        knownKeys(h, o, Object.keys(SET_ARITY));
    }
  }
  if (expiry && keep) throw usageError(h, `${expiry} and KEEPTTL cannot be combined`);
  if (nx && xx) throw usageError(h, 'NX and XX cannot be combined');
  if (expiry) args.push(expiry, ttl!);
  if (nx) args.push('NX');
  if (xx) args.push('XX');
  if (keep) args.push('KEEPTTL');
  if (get) args.push('GET');
  return args;
}

export const getex: Build = (a, h) => {
  atLeast(h, a, 1);
  const o = options(h, a.slice(1), { EX: 1, PX: 1, EXAT: 1, PXAT: 1, PERSIST: 0 }, EXPIRY);
  oneExpiry(h, o, 'PERSIST');
  return { args: push(['GETEX', key(h, a[0])], o, ['EX', 'PX', 'EXAT', 'PXAT', 'PERSIST']) };
};

/** EXPIRE / EXPIREAT: a key, a time, and an optional mode. */
export const expireLike = (command: string, what: string): Build => (a, h) => {
  atLeast(h, a, 2);
  atMost(h, a, 3);
  const args: Arg[] = [command, key(h, a[0]), int(h, what, a[1])];
  if (a.length === 3) {
    const m = token(a[2]);
    if (m === undefined || !EXPIRE_MODES.includes(m)) throw usageError(h, `the mode must be 'NX', 'XX', 'GT' or 'LT'`);
    args.push(m);
  }
  return { args };
};

/** LPOP / RPOP: a key and an optional count. */
export const popLike = (command: string): Build => (a, h) => {
  atLeast(h, a, 1);
  atMost(h, a, 2);
  return { args: a.length === 2 ? [command, key(h, a[0]), int(h, 'count', a[1])] : [command, key(h, a[0])] };
};

export const blpop: Build = (a, h) => {
  const timeout = a[a.length - 1];
  if (typeof timeout !== 'number' || !(timeout >= 0) || !Number.isFinite(timeout)) throw usageError(h, 'the last argument must be the timeout in seconds (0 waits forever)');
  return { args: ['BLPOP', ...list(h, 'key', a.slice(0, -1)), timeout], blockSeconds: timeout };
};

export const zadd: Build = (a, h) => {
  atLeast(h, a, 2);
  const args: Arg[] = ['ZADD', key(h, a[0])];
  let incr = false;
  if (a.length === 2 && isRecord(a[1])) {
    const entries = a[1] instanceof Map ? [...a[1].entries()] : Object.entries(a[1]);
    for (const [m, s] of entries) args.push(numeric(h, 'every score', s), arg(h, 'every member', m));
  } else {
    const rest = list(h, 'score or member', a.slice(1));
    let i = 0;
    while (i < rest.length && ['NX', 'XX', 'GT', 'LT', 'CH', 'INCR'].includes(token(rest[i]) ?? '')) {
      if (token(rest[i]) === 'INCR') incr = true;
      args.push(rest[i++]!);
    }
    const scored = rest.slice(i);
    if (scored.length % 2 !== 0) throw usageError(h, `got ${scored.length} score/member arguments; they must come in pairs`);
    for (let j = 0; j < scored.length; j += 2) args.push(numeric(h, 'every score', scored[j]), scored[j + 1]!);
  }
  if (args.length < 4) throw usageError(h, 'needs at least one score and member');
  // With INCR the reply is the new score (text under RESP2, a double under RESP3) or null.
  return incr ? { args, transform: toNumberOrNull } : { args };
};

/** ZRANGE (all of BYSCORE, BYLEX, REV, LIMIT, WITHSCORES) or ZRANGEBYSCORE (LIMIT, WITHSCORES; numeric bounds). */
export const zrangeLike = (command: 'ZRANGE' | 'ZRANGEBYSCORE'): Build => (a, h) => {
  atLeast(h, a, 3);
  const { tail, withScores } = zrangeTail(h, command === 'ZRANGE', a.slice(3));
  const bound = command === 'ZRANGE' ? arg : numeric;
  const [from, to] = command === 'ZRANGE' ? ['start', 'stop'] : ['min', 'max'];
  return { args: [command, key(h, a[0]), bound(h, from, a[1]), bound(h, to, a[2]), ...tail], transform: withScores ? flattenScores : toArray };
};

function zrangeTail(h: HelperRef, full: boolean, rest: readonly unknown[]): { tail: Arg[]; withScores: boolean } {
  const flags: Record<string, number> = full ? { BYSCORE: 0, BYLEX: 0, REV: 0, WITHSCORES: 0, LIMIT: 2 } : { WITHSCORES: 0, LIMIT: 2 };
  let o: Record<string, Arg[]>;
  if (rest.length === 1 && isRecord(rest[0]) && !(rest[0] instanceof Map)) {
    const obj = rest[0] as Record<string, unknown>;
    const { LIMIT, ...others } = obj;
    o = fromObject(h, others, { ...flags, LIMIT: 1 });
    if (LIMIT !== undefined) {
      if (!isRecord(LIMIT) || LIMIT instanceof Map) throw usageError(h, 'option LIMIT must be { offset, count }');
      knownKeys(h, LIMIT, ['offset', 'count']);
      o.LIMIT = [int(h, 'LIMIT.offset', LIMIT.offset), int(h, 'LIMIT.count', LIMIT.count)];
    }
  } else {
    o = tokens(h, rest, flags);
  }
  if (o.BYSCORE && o.BYLEX) throw usageError(h, 'BYSCORE and BYLEX cannot be combined');
  return { tail: push([], o, ['BYSCORE', 'BYLEX', 'REV', 'LIMIT', 'WITHSCORES']).filter((x) => x !== 'WITHSCORES').concat(o.WITHSCORES ? ['WITHSCORES'] : []), withScores: !!o.WITHSCORES };
}

/** `{ stream: id }`, a Map, or `[[stream, id], …]` -> `STREAMS k1 k2 id1 id2`. */
function streamsOf(h: HelperRef, s: unknown): Arg[] {
  let entries: Array<[unknown, unknown]>;
  if (Array.isArray(s)) entries = s.map((e) => (Array.isArray(e) && e.length === 2 ? (e as [unknown, unknown]) : [undefined, undefined]));
  else if (s instanceof Map) entries = [...s.entries()];
  else if (isRecord(s)) entries = Object.entries(s);
  else throw usageError(h, 'streams must be { stream: id } or [[stream, id], …]');
  if (entries.length === 0) throw usageError(h, 'needs at least one stream');
  const ks = entries.map(([k]) => arg(h, 'every stream key', k));
  const ids = entries.map(([, id]) => arg(h, 'every stream ID', id));
  return ['STREAMS', ...ks, ...ids];
}

/** An ioredis-style XREAD/XREADGROUP argument list, checked only as far as needed to send it as given. */
function rawStreams(h: HelperRef, a: readonly unknown[]): Arg[] {
  const args = list(h, 'argument', a, 1);
  const at = args.findIndex((x) => token(x) === 'STREAMS');
  const after = at === -1 ? 0 : args.length - at - 1;
  if (at === -1 || after === 0 || after % 2 !== 0) throw usageError(h, "the ioredis form needs 'STREAMS' followed by as many IDs as stream keys");
  return args;
}

export const xread: Build = (a, h) => {
  atLeast(h, a, 1);
  if (isArg(a[0])) return { args: ['XREAD', ...rawStreams(h, a)], transform: toStreams };
  atMost(h, a, 2);
  const o = a[1] === undefined ? {} : options(h, [a[1]], { COUNT: 1, BLOCK: 1 }, ['COUNT', 'BLOCK']);
  return { args: push(['XREAD'], o, ['COUNT', 'BLOCK']).concat(streamsOf(h, a[0])), transform: toStreams };
};

export const xreadgroup: Build = (a, h) => {
  atLeast(h, a, 3);
  if (token(a[0]) === 'GROUP' && isArg(a[2])) return { args: ['XREADGROUP', ...rawStreams(h, a)], transform: toStreams };
  atMost(h, a, 4);
  const o = a[3] === undefined ? {} : options(h, [a[3]], { COUNT: 1, BLOCK: 1, NOACK: 0 }, ['COUNT', 'BLOCK']);
  const args: Arg[] = ['XREADGROUP', 'GROUP', arg(h, 'the group', a[0]), arg(h, 'the consumer', a[1])];
  return { args: push(args, o, ['COUNT', 'BLOCK', 'NOACK']).concat(streamsOf(h, a[2])), transform: toStreams };
};

export const xack: Build = (a, h) => (atLeast(h, a, 3), { args: ['XACK', key(h, a[0]), arg(h, 'the group', a[1]), ...list(h, 'ID', a.slice(2))] });

/** XRANGE / XREVRANGE: bounds default to the whole stream, in the command's order. */
export const xrangeLike = (command: string, from: string, to: string): Build => (a, h) => {
  atLeast(h, a, 1);
  const args: Arg[] = [command, key(h, a[0]), a.length > 1 ? arg(h, 'the first bound', a[1]) : from, a.length > 2 ? arg(h, 'the second bound', a[2]) : to];
  return { args: push(args, options(h, a.slice(3), { COUNT: 1 }, ['COUNT']), ['COUNT']), transform: toStreamMessages };
};

const TRIM = ['MAXLEN', 'MINID'];

export const xadd: Build = (a, h) => {
  atLeast(h, a, 3);
  const args: Arg[] = ['XADD', key(h, a[0])];
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
        args.push(arg(h, `the ${t} threshold`, rest[i++]));
        if (token(rest[i]) === 'LIMIT') args.push(rest[i++] as Arg, int(h, 'LIMIT', rest[i++]));
      } else break;
    }
    args.push(arg(h, 'the ID', rest[i++]));
    args.push(...pairs(h, 'field', rest.slice(i)));
    return { args, transform: toIdOrNull };
  }
  atMost(h, a, 4);
  const o = a[3];
  if (o !== undefined) {
    if (!isRecord(o) || o instanceof Map) throw usageError(h, 'the options must be an object');
    knownKeys(h, o, ['NOMKSTREAM', 'MAXLEN', 'MINID', 'approximate', 'LIMIT']);
    if (o.NOMKSTREAM) args.push('NOMKSTREAM');
    if (o.MAXLEN !== undefined && o.MINID !== undefined) throw usageError(h, 'MAXLEN and MINID cannot be combined');
    const trim = o.MAXLEN !== undefined ? 'MAXLEN' : o.MINID !== undefined ? 'MINID' : undefined;
    if (trim) args.push(trim, o.approximate ? '~' : '=', trim === 'MAXLEN' ? int(h, 'MAXLEN', o.MAXLEN) : arg(h, 'MINID', o.MINID));
    if (o.LIMIT !== undefined) {
      if (!trim || !o.approximate) throw usageError(h, 'LIMIT needs MAXLEN or MINID with approximate: true');
      args.push('LIMIT', int(h, 'LIMIT', o.LIMIT));
    }
  }
  args.push(arg(h, 'the ID', a[1]), ...pairs(h, 'field', [a[2]]));
  return { args, transform: toIdOrNull };
};

export const xgroup: Build = (a, h) => {
  const sub = token(a[0]);
  const fixedArgs = (n: number) => {
    atLeast(h, a, n);
    return a.slice(1, n).map((v, i) => arg(h, ['the key', 'the group', i === 2 && sub === 'SETID' ? 'the ID' : 'the consumer'][i]!, v));
  };
  switch (sub) {
    case 'CREATE': case 'SETID': {
      atLeast(h, a, 4);
      const head = [arg(h, 'the key', a[1]), arg(h, 'the group', a[2]), arg(h, 'the ID', a[3])];
      const o = options(h, a.slice(4), sub === 'CREATE' ? { MKSTREAM: 0, ENTRIESREAD: 1 } : { ENTRIESREAD: 1 }, ['ENTRIESREAD']);
      return { args: push(['XGROUP', sub, ...head], o, ['MKSTREAM', 'ENTRIESREAD']) };
    }
    case 'DESTROY':
      atMost(h, a, 3);
      return { args: ['XGROUP', sub, ...fixedArgs(3)] };
    case 'CREATECONSUMER': case 'DELCONSUMER':
      atMost(h, a, 4);
      return { args: ['XGROUP', sub, ...fixedArgs(4)] };
    default:
      throw usageError(h, `unknown subcommand ${typeof a[0] === 'string' ? JSON.stringify(a[0]) : 'missing'}`);
  }
};

export const publish: Build = (a, h) => (atLeast(h, a, 2), atMost(h, a, 2), { args: ['PUBLISH', arg(h, 'the channel', a[0]), arg(h, 'the message', a[1])] });

export const scan: Build = (a, h) => {
  atLeast(h, a, 1);
  const o = options(h, a.slice(1).map((x) => (isRecord(x) ? upperKeys(h, x as Record<string, unknown>) : x)), { MATCH: 1, COUNT: 1, TYPE: 1 }, ['COUNT']);
  return { args: push(['SCAN', arg(h, 'the cursor', a[0])], o, ['MATCH', 'COUNT', 'TYPE']), transform: scanReply };
};

/** `{ match, count, type }` (the documented spelling of ScanOptions) as option tokens. */
function upperKeys(h: HelperRef, o: Record<string, unknown>): Record<string, unknown> {
  knownKeys(h, o, ['match', 'count', 'type']);
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k.toUpperCase(), v]));
}

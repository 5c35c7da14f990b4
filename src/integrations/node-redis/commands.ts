/**
 * node-redis v5 call shapes -> the pool's typed helpers. Each translation reads the camelCase
 * arguments and option objects node-redis takes and says which pool helper to run with which
 * arguments, and how to shape its reply back; a handle runs it on the pool, a `multi()` queues
 * it on a batch, so both answer alike. An option a translation does not place is refused with
 * a TypeError naming it, never dropped: a dropped `expiration` would store a session forever.
 */
import type { Arg } from '../../index.js';

/** What one node-redis call becomes on the pool. */
export interface Step {
  /** The pool (or batch) helper to run: `get`, `set`, `xadd`, … or `call` for a raw command. */
  helper: string;
  /** Its arguments, in the pool's shape. */
  args: unknown[];
  /** Reshapes the pool's reply into node-redis's (e.g. SCAN's `{ cursor, keys }`). */
  post?: (reply: unknown) => unknown;
  /** A blocking read: it runs under the handle's abort signal, so `destroy()` ends it. */
  blocking?: boolean;
}

/** The name the facade goes by in its messages. */
export const FACADE = 'asNodeRedis';

/** A TypeError that names the facade and the method. */
export function usage(method: string, message: string): TypeError {
  return new TypeError(`${FACADE}: ${method}() ${message}`);
}

/**
 * The options object `o` of `method` as a record, refusing any key outside `known` (undefined
 * values count as absent, as node-redis reads them).
 */
export function readOptions(method: string, o: unknown, known: readonly string[]): Record<string, unknown> {
  if (o === undefined || o === null) return {};
  if (typeof o !== 'object' || Array.isArray(o) || o instanceof Map || Buffer.isBuffer(o)) {
    throw usage(method, `takes its options as an object; got ${Array.isArray(o) ? 'an array' : typeof o}.`);
  }
  const r = o as Record<string, unknown>;
  for (const k of Object.keys(r)) {
    if (r[k] !== undefined && !known.includes(k)) {
      throw usage(method, `got the option "${k}", which this facade does not handle (it handles ${known.join(', ')}). Nothing was sent.`);
    }
  }
  return r;
}

/** A node-redis variadic argument (one value or an array of them) as an array. */
function variadic(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [v];
}

const SET_OPTIONS = ['expiration', 'condition', 'EX', 'PX', 'EXAT', 'PXAT', 'KEEPTTL', 'NX', 'XX', 'GET'];
const EXPIRATION_TYPES = ['EX', 'PX', 'EXAT', 'PXAT', 'KEEPTTL'];

/** node-redis SET options (v5 `expiration`/`condition` and the older flat keys) -> the pool's. */
function setOptions(o: unknown): Record<string, unknown> | undefined {
  if (o === undefined) return undefined;
  const r = readOptions('set', o, SET_OPTIONS);
  const out: Record<string, unknown> = {};
  for (const k of ['EX', 'PX', 'EXAT', 'PXAT', 'KEEPTTL', 'NX', 'XX', 'GET']) if (r[k] !== undefined) out[k] = r[k];
  const e = r.expiration;
  if (e !== undefined) {
    if (e === 'KEEPTTL') out.KEEPTTL = true;
    else {
      const x = readOptions('set', e, ['type', 'value']);
      const type = x.type;
      if (typeof type !== 'string' || !EXPIRATION_TYPES.includes(type)) {
        throw usage('set', `got expiration.type ${JSON.stringify(type)}; it takes ${EXPIRATION_TYPES.join(', ')}.`);
      }
      if (type === 'KEEPTTL') out.KEEPTTL = true;
      else out[type] = x.value;
    }
  }
  const c = r.condition;
  if (c !== undefined) {
    if (c !== 'NX' && c !== 'XX') throw usage('set', `got condition ${JSON.stringify(c)}; this facade handles 'NX' and 'XX'.`);
    out[c] = true;
  }
  return out;
}

/** node-redis XADD options (`TRIM: { strategy, strategyModifier, threshold, limit }`) -> the pool's. */
function xAddOptions(o: unknown): Record<string, unknown> | undefined {
  if (o === undefined) return undefined;
  const r = readOptions('xAdd', o, ['TRIM']);
  if (r.TRIM === undefined) return {};
  const t = readOptions('xAdd', r.TRIM, ['strategy', 'strategyModifier', 'threshold', 'limit']);
  if (t.strategy !== 'MAXLEN' && t.strategy !== 'MINID') throw usage('xAdd', `needs TRIM.strategy 'MAXLEN' or 'MINID'; got ${JSON.stringify(t.strategy)}.`);
  if (t.strategyModifier !== undefined && t.strategyModifier !== '=' && t.strategyModifier !== '~') {
    throw usage('xAdd', `got TRIM.strategyModifier ${JSON.stringify(t.strategyModifier)}; it takes '=' or '~'.`);
  }
  const out: Record<string, unknown> = { [t.strategy]: t.threshold, approximate: t.strategyModifier === '~' };
  if (t.limit !== undefined) out.LIMIT = t.limit;
  return out;
}

/** node-redis XREAD streams (`{ key, id }` or an array of them) -> the pool's `[[key, id], …]`. */
function xReadStreams(s: unknown): Array<[unknown, unknown]> {
  if (s === undefined || s === null || typeof s !== 'object') throw usage('xRead', 'takes the streams as { key, id } or an array of them.');
  return variadic(s).map((x) => {
    const r = readOptions('xRead', x, ['key', 'id']);
    if (r.key === undefined || r.id === undefined) throw usage('xRead', 'takes the streams as { key, id } or an array of them; one lacks its key or id.');
    return [r.key, r.id];
  });
}

/** node-redis EVAL/EVALSHA options `{ keys, arguments }` -> `numKeys, ...keys, ...args`. */
function evalArgs(method: string, o: unknown): unknown[] {
  const r = readOptions(method, o, ['keys', 'arguments']);
  const keys = r.keys === undefined ? [] : variadic(r.keys);
  const args = r.arguments === undefined ? [] : variadic(r.arguments);
  return [keys.length, ...keys, ...args];
}

/** `{ MATCH, COUNT, TYPE }` -> the pool's `{ match, count, type }`. */
export function scanOptions(method: string, o: unknown): { match?: string; count?: number; type?: string } {
  const r = readOptions(method, o, ['MATCH', 'COUNT', 'TYPE']);
  const out: { match?: string; count?: number; type?: string } = {};
  if (r.MATCH !== undefined) out.match = r.MATCH as string;
  if (r.COUNT !== undefined) out.count = r.COUNT as number;
  if (r.TYPE !== undefined) out.type = r.TYPE as string;
  return out;
}

const scanReply = (r: unknown): { cursor: string; keys: unknown[] } => {
  const [cursor, keys] = r as [string, unknown[]];
  return { cursor, keys };
};

/** `mode` given only when present: a trailing undefined would read as a missing argument. */
const opt = (v: unknown): unknown[] => (v === undefined ? [] : [v]);

/**
 * The commands a handle and its `multi()` share, by node-redis name. Blocking reads (`xRead`
 * with BLOCK) and SCAN are the handle's only: a transaction cannot block, and a cluster walks
 * SCAN per node.
 */
export const COMMANDS = {
  get: (key: unknown): Step => ({ helper: 'get', args: [key] }),
  set: (key: unknown, value: unknown, options?: unknown): Step => {
    const o = setOptions(options);
    return { helper: 'set', args: o === undefined ? [key, value] : [key, value, o] };
  },
  mGet: (keys: unknown): Step => ({ helper: 'mget', args: [variadic(keys)] }),
  del: (keys: unknown): Step => ({ helper: 'del', args: [variadic(keys)] }),
  unlink: (keys: unknown): Step => ({ helper: 'unlink', args: [variadic(keys)] }),
  exists: (keys: unknown): Step => ({ helper: 'exists', args: [variadic(keys)] }),
  expire: (key: unknown, seconds: unknown, mode?: unknown): Step => ({ helper: 'expire', args: [key, seconds, ...opt(mode)] }),
  pExpire: (key: unknown, ms: unknown, mode?: unknown): Step => ({ helper: 'call', args: ['PEXPIRE', key, ms, ...opt(mode)] }),
  ttl: (key: unknown): Step => ({ helper: 'ttl', args: [key] }),
  pTTL: (key: unknown): Step => ({ helper: 'pttl', args: [key] }),
  incrBy: (key: unknown, increment: unknown): Step => ({ helper: 'incrby', args: [key, increment] }),
  flushDb: (mode?: unknown): Step => {
    if (mode !== undefined && mode !== 'ASYNC' && mode !== 'SYNC') throw usage('flushDb', `takes 'ASYNC' or 'SYNC'; got ${JSON.stringify(mode)}.`);
    return { helper: 'call', args: ['FLUSHDB', ...opt(mode)] };
  },
  xAdd: (key: unknown, id: unknown, message: unknown, options?: unknown): Step => {
    const o = xAddOptions(options);
    return { helper: 'xadd', args: o === undefined ? [key, id, message] : [key, id, message, o] };
  },
  xRange: (key: unknown, start: unknown, end: unknown, options?: unknown): Step => {
    const r = readOptions('xRange', options, ['COUNT']);
    return { helper: 'xrange', args: r.COUNT === undefined ? [key, start, end] : [key, start, end, { COUNT: r.COUNT }] };
  },
  eval: (script: unknown, options?: unknown): Step => ({ helper: 'eval', args: [script, ...evalArgs('eval', options)] }),
  evalSha: (sha: unknown, options?: unknown): Step => ({ helper: 'evalsha', args: [sha, ...evalArgs('evalSha', options)] }),
  publish: (channel: unknown, message: unknown): Step => ({ helper: 'publish', args: [channel, message] }),
  sPublish: (channel: unknown, message: unknown): Step => ({ helper: 'call', args: ['SPUBLISH', channel, message] }),
} satisfies Record<string, (...a: never[]) => Step>;

/** Commands only a handle runs (see {@link COMMANDS}). */
export const HANDLE_ONLY = {
  xRead: (streams: unknown, options?: unknown): Step => {
    const list = xReadStreams(streams);
    const r = readOptions('xRead', options, ['COUNT', 'BLOCK']);
    const o: Record<string, unknown> = {};
    if (r.COUNT !== undefined) o.COUNT = r.COUNT;
    if (r.BLOCK !== undefined) o.BLOCK = r.BLOCK;
    return { helper: 'xread', args: [list, o], blocking: r.BLOCK !== undefined };
  },
  scan: (cursor: unknown, options?: unknown): Step => ({ helper: 'scan', args: [cursor, scanOptions('scan', options)], post: scanReply }),
} satisfies Record<string, (...a: never[]) => Step>;

/** A raw command as node-redis's `sendCommand` takes it: a non-empty array of arguments. */
export function rawCommand(method: string, args: unknown): [string, ...Arg[]] {
  if (!Array.isArray(args) || args.length === 0) throw usage(method, 'takes the command as a non-empty array: sendCommand([\'SET\', key, value]).');
  return [String(args[0]), ...(args.slice(1) as Arg[])];
}

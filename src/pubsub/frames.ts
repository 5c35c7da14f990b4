import type { Reply } from '../types.js';

/** What a subscription listens to: channels (SUBSCRIBE), patterns (PSUBSCRIBE) or sharded channels (SSUBSCRIBE). */
export type SubscriptionKind = 'channel' | 'pattern' | 'shard';

/** The commands that add and remove names of one kind. */
export const COMMANDS: Record<SubscriptionKind, { subscribe: string; unsubscribe: string }> = {
  channel: { subscribe: 'SUBSCRIBE', unsubscribe: 'UNSUBSCRIBE' },
  pattern: { subscribe: 'PSUBSCRIBE', unsubscribe: 'PUNSUBSCRIBE' },
  shard: { subscribe: 'SSUBSCRIBE', unsubscribe: 'SUNSUBSCRIBE' },
};

/** One identity per (kind, name): a channel and a pattern with the same text are different subscriptions. */
export function nameKey(kind: SubscriptionKind, name: string): string {
  return (kind === 'channel' ? 'c:' : kind === 'pattern' ? 'p:' : 's:') + name;
}

/** The kind and name a {@link nameKey} stands for. */
export function parseNameKey(key: string): { kind: SubscriptionKind; name: string } {
  const kind: SubscriptionKind = key.startsWith('c:') ? 'channel' : key.startsWith('p:') ? 'pattern' : 'shard';
  return { kind, name: key.slice(2) };
}

/** What one pub/sub frame from a subscriber connection means. */
export type PubSubFrame =
  | { type: 'message'; key: string; channel: string; pattern: string | undefined; payload: string | Buffer }
  /** The server dropped a subscription on its own: a sharded channel whose slot left the node. */
  | { type: 'dropped'; key: string; kind: SubscriptionKind; name: string }
  | { type: 'other' };

function text(v: Reply | undefined): string | undefined {
  return typeof v === 'string' ? v : Buffer.isBuffer(v) ? v.toString() : undefined;
}

function payloadOf(v: Reply | undefined): string | Buffer | undefined {
  return typeof v === 'string' || Buffer.isBuffer(v) ? v : undefined;
}

const DROPS: Record<string, SubscriptionKind> = { unsubscribe: 'channel', punsubscribe: 'pattern', sunsubscribe: 'shard' };

/**
 * Reads a push (RESP3) or an out-of-band array (RESP2) from a subscriber connection. Confirmations
 * of our own commands never get here (the connection matches them to the command); an
 * unsubscribe that does is one the server decided on.
 */
export function readFrame(value: readonly Reply[]): PubSubFrame {
  const head = text(value[0]);
  if (head === 'message' || head === 'smessage') {
    const channel = text(value[1]);
    const payload = payloadOf(value[2]);
    if (channel === undefined || payload === undefined) return { type: 'other' };
    return { type: 'message', key: nameKey(head === 'message' ? 'channel' : 'shard', channel), channel, pattern: undefined, payload };
  }
  if (head === 'pmessage') {
    const pattern = text(value[1]);
    const channel = text(value[2]);
    const payload = payloadOf(value[3]);
    if (pattern === undefined || channel === undefined || payload === undefined) return { type: 'other' };
    return { type: 'message', key: nameKey('pattern', pattern), channel, pattern, payload };
  }
  const kind = head === undefined ? undefined : DROPS[head];
  if (kind !== undefined) {
    const name = text(value[1]);
    if (name !== undefined) return { type: 'dropped', key: nameKey(kind, name), kind, name };
  }
  return { type: 'other' };
}

/**
 * Keyspace notifications are produced by each node for its own keys and not broadcast across a
 * cluster, so a subscription to them must be on every master.
 */
export function isKeyspaceName(name: string): boolean {
  return name.startsWith('__keyspace@') || name.startsWith('__keyevent@') || name.startsWith('__key*@');
}

/** Options of one subscription. */
export interface SubscriptionOptions {
  /** Deliver messages as Buffers (binary-safe) instead of UTF-8 strings. Default false. */
  returnBuffers?: boolean;
  /** Messages the async iterator holds for a consumer that is behind. Default 1000. */
  highWaterMark?: number;
  /**
   * What happens beyond `highWaterMark`: `'drop-oldest'` (default) drops the oldest held message
   * and reports the count in a `dropped` event; `'error'` ends the iteration with a
   * `SlowConsumerError`.
   */
  overflow?: 'drop-oldest' | 'error';
}

/** Subscription options with defaults applied. */
export interface ResolvedSubscriptionOptions {
  returnBuffers: boolean;
  highWaterMark: number;
  overflow: 'drop-oldest' | 'error';
}

/** Checks names, listener and options at once: bad input is a TypeError naming what is wrong. */
export function checkSubscribeInput(method: string, names: unknown, listener: unknown, options: unknown): { names: string[]; options: ResolvedSubscriptionOptions } {
  const list = Array.isArray(names) ? names : [names];
  if (list.length === 0) throw new TypeError(`${method} needs at least one name; got an empty list.`);
  for (const n of list) {
    if (typeof n !== 'string' || n.length === 0) throw new TypeError(`${method}: every name must be a non-empty string; got ${typeof n === 'string' ? 'an empty string' : typeof n}.`);
  }
  if (listener !== undefined && typeof listener !== 'function') throw new TypeError(`${method}: the listener must be a function; got ${typeof listener}.`);
  if (options !== undefined && (typeof options !== 'object' || options === null)) throw new TypeError(`${method}: options must be an object.`);
  const o = (options ?? {}) as Record<string, unknown>;
  for (const k of Object.keys(o)) {
    if (k !== 'returnBuffers' && k !== 'highWaterMark' && k !== 'overflow') throw new TypeError(`${method}: unknown option ${k}.`);
  }
  if (o.returnBuffers !== undefined && typeof o.returnBuffers !== 'boolean') throw new TypeError(`${method}: option returnBuffers must be a boolean.`);
  if (o.highWaterMark !== undefined && (typeof o.highWaterMark !== 'number' || !Number.isInteger(o.highWaterMark) || o.highWaterMark < 1)) {
    throw new TypeError(`${method}: option highWaterMark must be an integer >= 1.`);
  }
  if (o.overflow !== undefined && o.overflow !== 'drop-oldest' && o.overflow !== 'error') throw new TypeError(`${method}: option overflow must be 'drop-oldest' or 'error'.`);
  return {
    names: [...new Set(list as string[])],
    options: {
      returnBuffers: (o.returnBuffers as boolean | undefined) ?? false,
      highWaterMark: (o.highWaterMark as number | undefined) ?? 1000,
      overflow: (o.overflow as 'drop-oldest' | 'error' | undefined) ?? 'drop-oldest',
    },
  };
}

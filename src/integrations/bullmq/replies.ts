/**
 * The shapes BullMQ's `IRedisClient` promises (ioredis's), from the pool's replies, which
 * differ between RESP2 and RESP3 for some commands (scores, maps, sets); and the checks of
 * the options objects its methods take.
 */
import type { Arg, Reply } from '../../index.js';

/** Refuses an option the method does not handle, naming it and the facade. */
export function checkOptions(method: string, options: unknown, known: readonly string[]): void {
  if (options === undefined || options === null) return;
  if (typeof options !== 'object' || Array.isArray(options)) throw new TypeError(`asBullMQ: ${method} options must be an object.`);
  for (const k of Object.keys(options)) {
    if (!known.includes(k)) throw new TypeError(`asBullMQ: ${method} has no option "${k}"; it handles: ${known.join(', ') || 'none'}.`);
  }
}

/** A score (RESP3 sends doubles) as ioredis gives it: a string. */
export function scoreString(v: unknown): string {
  return typeof v === 'string' ? v : Buffer.isBuffer(v) ? v.toString() : String(v);
}

/** `[member, score, member, score …]` with string scores, from RESP2's flat or RESP3's paired reply. */
export function flatWithScores(reply: Reply): string[] {
  const out: string[] = [];
  for (const e of reply as Reply[]) {
    if (Array.isArray(e)) out.push(String(e[0]), scoreString(e[1]));
    else out.push(String(e));
  }
  // RESP2: every second element is a score already given as a string.
  return out;
}

/** BZPOPMIN's `[key, member, score]` (score a string), or null on timeout. */
export function popTuple(reply: Reply): [key: string, member: string, score: string] | null {
  if (reply === null || reply === undefined) return null;
  const r = reply as Reply[];
  return [String(r[0]), String(r[1]), scoreString(r[2])];
}

/** One stream entry as ioredis gives it: `[id, [field, value, …]]`. */
type Entry = [string, string[]];

function entries(list: Reply): Entry[] {
  return ((list as Reply[] | null) ?? []).map((e) => {
    const [id, fields] = e as [Reply, Reply];
    if (fields instanceof Map) return [String(id), [...fields].flatMap(([f, v]) => [String(f), String(v)])];
    return [String(id), ((fields as Reply[] | null) ?? []).map(String)];
  });
}

/** XREAD's reply as ioredis gives it: `[[stream, [[id, [f, v, …]], …]], …]`, or null. */
export function streamsReply(reply: Reply): Array<[string, Entry[]]> | null {
  if (reply === null || reply === undefined) return null;
  if (reply instanceof Map) return [...reply].map(([name, list]) => [String(name), entries(list)]);
  return (reply as Reply[]).map((s) => {
    const [name, list] = s as [Reply, Reply];
    return [String(name), entries(list)];
  });
}

/** SCAN/HSCAN/SSCAN's `[cursor, items]` with a string cursor. */
export function cursorReply(reply: Reply): [string, string[]] {
  const [cursor, items] = reply as [Reply, Reply];
  const list = items instanceof Set ? [...items] : items instanceof Map ? [...items].flat() : ((items as Reply[] | null) ?? []);
  return [String(cursor), list.map(String)];
}

/** A set (RESP3) or array (RESP2) of members as an array of strings. */
export function members(reply: Reply): string[] {
  return (reply instanceof Set ? [...reply] : ((reply as Reply[] | null) ?? [])).map(String);
}

/** `{ field: value }` as `[field, value, …]` arguments. */
export function flatRecord(method: string, data: unknown): Arg[] {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) throw new TypeError(`asBullMQ: ${method} needs an object of fields and values.`);
  const out: Arg[] = [];
  for (const [f, v] of Object.entries(data as Record<string, unknown>)) out.push(f, toArg(v));
  return out;
}

/**
 * An argument as ioredis sends it: strings, Buffers and numbers as they are, undefined and
 * null as an empty string (BullMQ's scripts rely on the position), anything else as text.
 */
export function toArg(v: unknown): Arg {
  if (typeof v === 'string' || typeof v === 'number' || typeof v === 'bigint' || Buffer.isBuffer(v)) return v;
  if (v === undefined || v === null) return '';
  return String(v);
}

/** ioredis lets a script's arguments come as one array: `client.name([k1, a1])`. */
export function scriptArgs(args: readonly unknown[]): Arg[] {
  const list = args.length === 1 && Array.isArray(args[0]) ? (args[0] as unknown[]) : args;
  return list.map(toArg);
}

/** `XADD key [MAXLEN [~] n] id field value …` (approximate unless `approximate: false`, as ioredis's adapter does). */
export function xaddArgs(key: string, id: string, fields: unknown, options: { MAXLEN?: number; approximate?: boolean } | undefined): Arg[] {
  checkOptions('xadd', options, ['MAXLEN', 'approximate']);
  const args: Arg[] = ['XADD', key];
  if (options?.MAXLEN !== undefined && options.MAXLEN !== null) {
    args.push('MAXLEN');
    if (options.approximate !== false) args.push('~');
    args.push(options.MAXLEN);
  }
  args.push(id, ...flatRecord('xadd', fields));
  return args;
}

/** `XREAD [BLOCK ms] [COUNT n] STREAMS k… id…`, and how long it blocks (undefined: it does not). */
export function xreadArgs(streams: ReadonlyArray<{ key: string; id: string }>, options: { BLOCK?: number; COUNT?: number } | undefined): { args: Arg[]; blocks: boolean } {
  checkOptions('xread', options, ['BLOCK', 'COUNT']);
  if (!Array.isArray(streams) || streams.length === 0) throw new TypeError('asBullMQ: xread needs at least one { key, id }.');
  const args: Arg[] = ['XREAD'];
  const blocks = options?.BLOCK !== undefined && options.BLOCK !== null;
  if (blocks) args.push('BLOCK', options!.BLOCK!);
  if (options?.COUNT !== undefined && options.COUNT !== null) args.push('COUNT', options.COUNT);
  args.push('STREAMS', ...streams.map((s) => s.key), ...streams.map((s) => s.id));
  return { args, blocks };
}

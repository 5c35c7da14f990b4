import type { Reply } from '../types.js';

/**
 * Reply shapers of the typed helpers: RESP2 and RESP3 answer the same commands with different
 * types (flat arrays or maps, bulk strings or doubles, integers or booleans); these give one
 * JavaScript shape for both. Values stay as the connection decoded them (strings, or Buffers
 * under `with({ returnBuffers: true })`); names a user indexes by (hash fields, stream names,
 * stream IDs, scores) become strings.
 */

/** A bulk or simple string (or a number) as text. */
export const toStr = (v: Reply): string => (Buffer.isBuffer(v) ? v.toString() : String(v));

/** RESP2 flat `[k, v, k, v]` or RESP3 `Map` -> plain object with string keys. */
export function toRecord(r: Reply): Record<string, Reply> {
  const out: Record<string, Reply> = {};
  if (r instanceof Map) {
    for (const [k, v] of r) out[toStr(k)] = v;
  } else if (Array.isArray(r)) {
    for (let i = 0; i + 1 < r.length; i += 2) out[toStr(r[i]!)] = r[i + 1]!;
  }
  return out;
}

/** RESP3 `Set` -> array, so helpers answer the same under both protocols. */
export function toArray(r: Reply): Reply[] {
  if (r instanceof Set) return [...r];
  return (r ?? []) as Reply[];
}

/** 1/0 (RESP2 and RESP3 integers) or a RESP3 boolean -> boolean. */
export function toBool(r: Reply): boolean {
  return r === true || r === 1;
}

/** A score or float as a number: RESP2 sends text ('inf', '1.5'), RESP3 a double. Null stays null. */
export function toNumberOrNull(r: Reply): number | null {
  if (r === null) return null;
  if (typeof r === 'number') return r;
  if (typeof r === 'bigint') return Number(r);
  const s = toStr(r);
  return s === 'inf' || s === '+inf' ? Infinity : s === '-inf' ? -Infinity : Number(s);
}

export function toNumber(r: Reply): number {
  return toNumberOrNull(r) ?? NaN;
}

/** A score as Redis spells it in RESP2 text, from either protocol. */
function scoreText(v: Reply): string {
  if (typeof v === 'number') return v === Infinity ? 'inf' : v === -Infinity ? '-inf' : String(v);
  return toStr(v);
}

/**
 * WITHSCORES replies as the flat `[member, score, …]` of RESP2 (and ioredis), scores as text:
 * RESP3 sends `[[member, score], …]` with double scores.
 */
export function flattenScores(r: Reply): Reply[] {
  const a = toArray(r);
  const out: Reply[] = [];
  if (a.length > 0 && Array.isArray(a[0])) {
    for (const p of a as Reply[][]) out.push(p[0]!, scoreText(p[1]!));
  } else {
    for (let i = 0; i < a.length; i++) out.push(i % 2 === 1 ? scoreText(a[i]!) : a[i]!);
  }
  return out;
}

/** One SCAN/SSCAN/HSCAN/ZSCAN step: the cursor as text and the page as an array. */
export function scanReply(r: Reply): [cursor: string, items: Reply[]] {
  const a = r as Reply[];
  return [toStr(a[0]!), toArray(a[1]!)];
}

/** One stream entry: its ID and fields (null when the entry was deleted while pending, in XREADGROUP history). */
export interface StreamMessage<S extends string | Buffer = string> {
  /** The entry's ID (`<ms>-<seq>`). */
  id: string;
  /** Its fields and values; null for an entry deleted while pending (XREADGROUP history). */
  message: Record<string, S> | null;
}

/** The entries one stream answered in XREAD / XREADGROUP. */
export interface StreamMessages<S extends string | Buffer = string> {
  /** The stream's key. */
  name: string;
  /** Its entries, oldest first. */
  messages: Array<StreamMessage<S>>;
}

/** `[[id, [f, v, …]], …]` -> `[{ id, message: { f: v } }]`. */
export function toStreamMessages(r: Reply): Array<StreamMessage<string | Buffer>> {
  return toArray(r).map((e) => {
    const [id, fields] = e as [Reply, Reply];
    return { id: toStr(id), message: fields === null ? null : (toRecord(fields) as Record<string, string | Buffer>) };
  });
}

/**
 * XREAD / XREADGROUP: null when nothing arrived, else one entry per stream in the order the
 * server answered. RESP2 sends `[[name, entries], …]`, RESP3 a map of name to entries.
 */
export function toStreams(r: Reply): Array<StreamMessages<string | Buffer>> | null {
  if (r === null) return null;
  const out: Array<StreamMessages<string | Buffer>> = [];
  if (r instanceof Map) {
    for (const [name, entries] of r) out.push({ name: toStr(name), messages: toStreamMessages(entries) });
  } else {
    for (const s of r as Reply[]) {
      const [name, entries] = s as [Reply, Reply];
      out.push({ name: toStr(name), messages: toStreamMessages(entries) });
    }
  }
  return out;
}

/** A reply that is an ID or null (XADD with NOMKSTREAM). */
export function toIdOrNull(r: Reply): string | null {
  return r === null ? null : toStr(r);
}

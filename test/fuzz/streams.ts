/**
 * Fuzz inputs for the RESP decoder, built on the models of ./generators.ts: chunk plans,
 * mutations, bad headers (oversized, huge, negative, malformed lengths), deep nesting, values
 * at the edge of maxReplyBytes, and a combined stream arbitrary (used by the connection
 * property). Each builder also says what the decoder must make of its bytes.
 */
import fc from 'fast-check';
import type { Reply } from '../../src/types.js';
import {
  cut, expected, expectedDouble, norm, serializeTop, topFrameArb, type Event, type Model, type TopFrame,
} from './generators.js';

// ------------------------------------------------------------------ chunking

/**
 * How one input is cut into socket chunks: at the given offsets, or by cycling sizes, or byte by
 * byte; `mode` picks which of these (besides whole) an input is decoded under.
 */
export interface ChunkPlan {
  cuts: number[];
  sizes: number[];
  mode: number;
}

export const chunkPlanArb: fc.Arbitrary<ChunkPlan> = fc.record({
  cuts: fc.array(fc.nat(), { maxLength: 24 }),
  sizes: fc.array(fc.oneof(fc.integer({ min: 1, max: 8 }), fc.integer({ min: 1, max: 300 })), { minLength: 1, maxLength: 6 }),
  mode: fc.nat(),
});

/** Cuts `bytes` at `cuts` taken modulo its length (so any nat works as an offset). */
export function cutAt(bytes: Buffer, cuts: readonly number[]): Buffer[] {
  return cut(bytes, cuts.map((c) => c % (bytes.length + 1)));
}

/** Consecutive chunks whose sizes cycle through `sizes`. */
export function bySizes(bytes: Buffer, sizes: readonly number[]): Buffer[] {
  const out: Buffer[] = [];
  let i = 0;
  for (let off = 0; off < bytes.length; i++) {
    const n = Math.max(1, sizes[i % sizes.length]!);
    out.push(bytes.subarray(off, off + n));
    off += n;
  }
  return out;
}

export function byteByByte(bytes: Buffer): Buffer[] {
  const out: Buffer[] = new Array(bytes.length);
  for (let i = 0; i < bytes.length; i++) out[i] = bytes.subarray(i, i + 1);
  return out;
}

/**
 * The chunkings an input is decoded under, whole first; their results must all be the same.
 * `all` gives every kind, otherwise whole plus the one `plan.mode` picks (byte by byte only
 * up to `byteByByteMax` bytes).
 */
export function chunkings(bytes: Buffer, plan: ChunkPlan, byteByByteMax = 600, all = false): Array<{ how: string; chunks: Buffer[] }> {
  const way = (k: number) =>
    k === 0 ? { how: `cut at ${JSON.stringify(plan.cuts.map((c) => c % (bytes.length + 1)))}`, chunks: cutAt(bytes, plan.cuts) }
      : k === 1 ? { how: `in sizes ${JSON.stringify(plan.sizes)}`, chunks: bySizes(bytes, plan.sizes) }
        : { how: 'byte by byte', chunks: byteByByte(bytes) };
  const kinds = bytes.length <= byteByByteMax ? 3 : 2;
  const out = [{ how: 'whole', chunks: [bytes] }];
  if (all) {
    for (let k = 0; k < kinds; k++) out.push(way(k));
  } else {
    const k = plan.mode % kinds;
    // No cuts would be "whole" again.
    out.push(way(k === 0 && plan.cuts.length === 0 ? 1 : k));
  }
  return out;
}

// ------------------------------------------------------------------ valid streams

/** Serialized frames and the offset where each one ends. */
export interface Stream {
  frames: TopFrame[];
  bytes: Buffer;
  ends: number[];
}

export function streamOf(frames: TopFrame[]): Stream {
  const parts = frames.map(serializeTop);
  const ends: number[] = [];
  let n = 0;
  for (const p of parts) ends.push((n += p.length));
  return { frames, bytes: Buffer.concat(parts, n), ends };
}

/** The frames that lie wholly in the first `upTo` bytes. */
export function framesWithin(s: Stream, upTo: number): TopFrame[] {
  let k = 0;
  while (k < s.ends.length && s.ends[k]! <= upTo) k++;
  return s.frames.slice(0, k);
}

export const framesArb = (min: number, max: number): fc.Arbitrary<TopFrame[]> => fc.array(topFrameArb, { minLength: min, maxLength: max });

// ------------------------------------------------------------------ mutations

export type Mutation =
  | { op: 'set'; at: number; byte: number }
  | { op: 'insert'; at: number; bytes: Buffer }
  | { op: 'delete'; at: number; len: number }
  | { op: 'duplicate'; at: number; len: number }
  /** Appends digits to the next digit at or after `at`: a declared length or count grows 10-1000x. */
  | { op: 'growDigits'; at: number; digits: string }
  /** Puts '-' before the next digit: a negative length or count. */
  | { op: 'negate'; at: number };

const TYPE_BYTES = '+-:$*%~>|_#,(!='.split('').map((c) => c.charCodeAt(0));
const specialByte = fc.oneof(
  fc.constantFrom(13, 10, 45, 43, 0, 0xff, 0x80, ...TYPE_BYTES),
  fc.integer({ min: 48, max: 57 }),
  fc.integer({ min: 0, max: 255 }),
);
const snippet = fc.oneof(
  fc.constantFrom(
    '\r\n', '\r', '\n', '-1', '-2', '0', '9999999999', '999999999999', '9007199254740993', '*1\r\n', '*-1\r\n', '$-1\r\n',
    '$0\r\n\r\n', '%1\r\n', '~2\r\n', '|1\r\n+a\r\n+b\r\n', '>1\r\n', '_\r\n', '#t\r\n', ',nan\r\n', '=3\r\nab\r\n', '!-1\r\n',
  ).map((s) => Buffer.from(s, 'latin1')),
  fc.uint8Array({ minLength: 1, maxLength: 8 }).map((a) => Buffer.from(a)),
);

export const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ op: fc.constant('set' as const), at: fc.nat(), byte: specialByte }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('insert' as const), at: fc.nat(), bytes: snippet }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('delete' as const), at: fc.nat(), len: fc.integer({ min: 1, max: 6 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('duplicate' as const), at: fc.nat(), len: fc.integer({ min: 1, max: 40 }) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('growDigits' as const), at: fc.nat(), digits: fc.constantFrom('0', '9', '00', '999', '0000000') }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('negate' as const), at: fc.nat() }) },
);

/**
 * Applies the mutations in order. `untouched` is the length of the prefix no mutation
 * changed: the frames that end within it must still decode exactly.
 */
export function mutate(bytes: Buffer, mutations: readonly Mutation[]): { bytes: Buffer; untouched: number } {
  let b = bytes;
  let untouched = b.length;
  const nextDigit = (from: number) => {
    for (let i = from; i < b.length; i++) if (b[i]! >= 48 && b[i]! <= 57) return i;
    return -1;
  };
  for (const m of mutations) {
    let at = m.at % (b.length + 1);
    switch (m.op) {
      case 'set':
        if (at === b.length) continue;
        b = Buffer.from(b);
        b[at] = m.byte;
        break;
      case 'insert':
        b = Buffer.concat([b.subarray(0, at), m.bytes, b.subarray(at)]);
        break;
      case 'delete':
        if (at === b.length) continue;
        b = Buffer.concat([b.subarray(0, at), b.subarray(at + m.len)]);
        break;
      case 'duplicate':
        b = Buffer.concat([b.subarray(0, at + m.len), b.subarray(at)]);
        break;
      case 'growDigits': {
        const d = nextDigit(at);
        if (d === -1) continue;
        at = d + 1;
        b = Buffer.concat([b.subarray(0, at), Buffer.from(m.digits), b.subarray(at)]);
        break;
      }
      case 'negate': {
        const d = nextDigit(at);
        if (d === -1) continue;
        at = d;
        b = Buffer.concat([b.subarray(0, at), Buffer.from('-'), b.subarray(at)]);
        break;
      }
    }
    untouched = Math.min(untouched, at);
  }
  return { bytes: b, untouched };
}

// ------------------------------------------------------------------ bad headers

export type BadLengthKind = 'over' | 'huge' | 'negative' | 'malformed';

/** A header whose declared length the decoder must refuse as soon as the line is complete. */
export interface BadHeader {
  type: string;
  length: string;
  kind: BadLengthKind;
}

const LENGTH_TYPES = ['$', '!', '=', '*', '%', '~', '>', '|'] as const;

export function badHeaderArb(max: number): fc.Arbitrary<BadHeader> {
  const type = fc.constantFrom(...LENGTH_TYPES);
  const over = fc.oneof(
    fc.integer({ min: 1, max: 1_000_000 }).map((d) => String(max + d)),
    fc.constantFrom(1e9, 1e10, 1e11, 999_999_999_999, 536_870_913).filter((n) => n > max).map(String),
  );
  const huge = fc.constantFrom(
    '1000000000000', '9007199254740991', '9007199254740992', '9007199254740993', '9223372036854775807', '18446744073709551616',
    '1' + '0'.repeat(30), '9'.repeat(100),
  );
  const negative = fc.constantFrom('-2', '-0', '-10', '-01', '-9007199254740993', '-999999999999');
  const malformed = fc.constantFrom('', '+5', ' 5', '5 ', '0x10', '1e3', '--1', '1.5', '5a', '\t1', '1_0');
  return fc.oneof(
    fc.record({ type, length: over, kind: fc.constant<BadLengthKind>('over') }),
    fc.record({ type, length: huge, kind: fc.constant<BadLengthKind>('huge') }),
    fc.record({ type, length: negative, kind: fc.constant<BadLengthKind>('negative') }),
    // -1 is a null only for bulk strings and arrays.
    fc.record({ type: fc.constantFrom('!', '=', '%', '~', '>', '|'), length: fc.constant('-1'), kind: fc.constant<BadLengthKind>('negative') }),
    fc.record({ type, length: malformed, kind: fc.constant<BadLengthKind>('malformed') }),
  );
}

/** Aggregates left open around the bad header, so it is met while frames are on the decoder's stack. */
export const openWrappersArb = fc.array(fc.constantFrom('*2\r\n:1\r\n', '%1\r\n+k\r\n', '~3\r\n_\r\n#f\r\n', '|1\r\n+a\r\n', '>2\r\n+message\r\n', '*1\r\n'), { maxLength: 3 });

/** Bytes after the bad header: a body the decoder must neither wait for nor buffer. */
export const junkBodyArb = fc.oneof(
  fc.uint8Array({ maxLength: 64 }).map((a) => Buffer.from(a)),
  fc.integer({ min: 1, max: 4096 }).map((n) => Buffer.alloc(n, 0x61)),
  fc.constant(Buffer.from('+OK\r\n:1\r\n')),
);

// ------------------------------------------------------------------ deep nesting

export type LevelKind = 'array' | 'set' | 'map' | 'push' | 'attr';

/** The decoder refuses more open aggregates than this (src/resp/decoder.ts). */
export const MAX_DEPTH = 512;

export interface DeepCase {
  depth: number;
  /** Level i has kind pattern[i % pattern.length]. */
  pattern: LevelKind[];
  inner: 'int' | 'bulk' | 'null' | 'emptyArray' | 'emptyMap' | 'bool';
}

export const deepCaseArb: fc.Arbitrary<DeepCase> = fc.record({
  depth: fc.oneof(
    { weight: 6, arbitrary: fc.integer({ min: 1, max: 700 }) },
    { weight: 3, arbitrary: fc.constantFrom(MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1) },
    { weight: 1, arbitrary: fc.constantFrom(1000, 10_000, 100_000) },
  ),
  pattern: fc.array(fc.constantFrom<LevelKind>('array', 'array', 'set', 'map', 'push', 'attr'), { minLength: 1, maxLength: 5 }),
  inner: fc.constantFrom('int', 'bulk', 'null', 'emptyArray', 'emptyMap', 'bool'),
});

const INNER: Record<DeepCase['inner'], [string, Reply]> = {
  int: [':7\r\n', 7],
  bulk: ['$3\r\nabc\r\n', 'abc'],
  null: ['_\r\n', null],
  emptyArray: ['*0\r\n', []],
  emptyMap: ['%0\r\n', new Map()],
  bool: ['#t\r\n', true],
};

/**
 * Bytes of a value nested `depth` levels deep, the event it must give (within the limit),
 * and the offset just past the header line that opens one level too many (beyond it).
 */
export function buildDeep(c: DeepCase, buffers = false): { bytes: Buffer; event: Event | undefined; tooDeepAt: number | undefined } {
  const kindAt = (i: number) => c.pattern[i % c.pattern.length]!;
  const pre: string[] = [];
  const post: string[] = [];
  let offset = 0;
  let tooDeepAt: number | undefined;
  for (let i = 0; i < c.depth; i++) {
    const k = kindAt(i);
    if (i === MAX_DEPTH) tooDeepAt = offset + 4;
    const head = k === 'array' ? '*1\r\n' : k === 'set' ? '~1\r\n' : k === 'map' ? '%1\r\n+k\r\n' : k === 'push' ? '>1\r\n' : `|1\r\n+a${i}\r\n`;
    pre.push(head);
    offset += head.length;
    if (k === 'attr') post.push(`:${i}\r\n`);
  }
  const bytes = Buffer.from(pre.join('') + INNER[c.inner][0] + post.reverse().join(''), 'latin1');
  if (c.depth > MAX_DEPTH) return { bytes, event: undefined, tooDeepAt };
  // Inside out: the deepest attribute completes first, so its entry comes first in the map.
  let v: Reply = c.inner === 'bulk' && buffers ? Buffer.from('abc') : INNER[c.inner][1];
  const attrs = new Map<Reply, Reply>();
  for (let i = c.depth - 1; i >= 0; i--) {
    switch (kindAt(i)) {
      case 'array': case 'push': v = [v]; break;
      case 'set': v = new Set([v]); break;
      case 'map': v = new Map([['k', v]]); break;
      case 'attr': attrs.set(`a${i}`, v); v = i; break;
    }
  }
  // A push at the top is delivered as a push; attributes inside it belong to no reply.
  const event: Event = kindAt(0) === 'push'
    ? { kind: 'push', value: norm(v) }
    : { kind: 'reply', value: norm(v), attrs: norm(attrs.size > 0 ? attrs : undefined) };
  return { bytes, event, tooDeepAt };
}

// ------------------------------------------------------------------ values at the edge of maxReplyBytes

export type EdgeType = '+' | '-' | '(' | ',' | '$' | '!' | '=';

/**
 * A line of content length `max - 2 + delta` (accepted iff the line, marker and CR included,
 * is at most max bytes: delta <= 0), or a bulk of declared length `max + delta` (accepted iff
 * delta <= 0).
 */
export interface EdgeCase {
  type: EdgeType;
  delta: number;
}

export const edgeCaseArb: fc.Arbitrary<EdgeCase> = fc.record({
  type: fc.constantFrom<EdgeType>('+', '-', '(', ',', '$', '!', '='),
  delta: fc.integer({ min: -3, max: 3 }),
});

export function buildEdge(c: EdgeCase, max: number, buffers: boolean): { bytes: Buffer; accepted: boolean; event: Event } {
  const isLine = c.type === '+' || c.type === '-' || c.type === '(' || c.type === ',';
  if (isLine) {
    const n = max - 2 + c.delta;
    const content = c.type === '+' ? 'a'.repeat(n) : c.type === '-' ? 'E'.repeat(n) : '1'.repeat(n);
    const bytes = Buffer.from(c.type + content + '\r\n', 'latin1');
    const m: Model = c.type === '+' ? { t: 'simple', s: content } : c.type === '-' ? { t: 'error', s: content }
      : c.type === '(' ? { t: 'bigNumber', v: BigInt(content) } : { t: 'double', text: content };
    const value = m.t === 'double' ? expectedDouble(content) : expected(m, buffers, []);
    return { bytes, accepted: c.delta <= 0, event: { kind: 'reply', value: norm(value), attrs: undefined } };
  }
  const n = max + c.delta;
  const body = c.type === '=' ? Buffer.concat([Buffer.from('txt:'), Buffer.alloc(n - 4, 0x62)]) : Buffer.alloc(n, 0x62);
  const bytes = Buffer.concat([Buffer.from(`${c.type}${n}\r\n`), body, Buffer.from('\r\n')]);
  const m: Model = c.type === '$' ? { t: 'bulk', b: body } : c.type === '!' ? { t: 'bulkError', b: body } : { t: 'verbatim', format: 'txt', b: body.subarray(4) };
  return { bytes, accepted: c.delta <= 0, event: { kind: 'reply', value: norm(expected(m, buffers, [])), attrs: undefined } };
}

// ------------------------------------------------------------------ combined streams (connection property)

/** What was done to a valid stream before it is sent. */
export type Damage =
  | { kind: 'none' }
  | { kind: 'truncate'; at: number }
  | { kind: 'mutate'; mutations: Mutation[] }
  | { kind: 'badHeader'; header: BadHeader; junk: Buffer }
  | { kind: 'deep'; deep: DeepCase }
  | { kind: 'garbage'; bytes: Buffer };

export interface DamagedStream {
  stream: Stream;
  damage: Damage;
  bytes: Buffer;
  /** Bytes at the start that are the valid stream's own: frames ending within them decode exactly. */
  untouched: number;
}

export function damage(stream: Stream, d: Damage): DamagedStream {
  const b = stream.bytes;
  switch (d.kind) {
    case 'none': return { stream, damage: d, bytes: b, untouched: b.length };
    case 'truncate': {
      const at = d.at % (b.length + 1);
      return { stream, damage: d, bytes: b.subarray(0, at), untouched: at };
    }
    case 'mutate': {
      const m = mutate(b, d.mutations);
      return { stream, damage: d, bytes: m.bytes, untouched: m.untouched };
    }
    case 'badHeader':
      return { stream, damage: d, bytes: Buffer.concat([b, Buffer.from(`${d.header.type}${d.header.length}\r\n`, 'latin1'), d.junk]), untouched: b.length };
    case 'deep':
      return { stream, damage: d, bytes: Buffer.concat([b, buildDeep(d.deep).bytes]), untouched: b.length };
    case 'garbage':
      return { stream, damage: d, bytes: Buffer.concat([b, d.bytes]), untouched: b.length };
  }
}

export function damageArb(max: number): fc.Arbitrary<Damage> {
  return fc.oneof(
    { weight: 3, arbitrary: fc.constant<Damage>({ kind: 'none' }) },
    { weight: 2, arbitrary: fc.nat().map((at): Damage => ({ kind: 'truncate', at })) },
    { weight: 3, arbitrary: fc.array(mutationArb, { minLength: 1, maxLength: 3 }).map((mutations): Damage => ({ kind: 'mutate', mutations })) },
    { weight: 1, arbitrary: fc.tuple(badHeaderArb(max), junkBodyArb).map(([header, junk]): Damage => ({ kind: 'badHeader', header, junk })) },
    { weight: 1, arbitrary: deepCaseArb.filter((c) => c.depth <= 2000).map((deep): Damage => ({ kind: 'deep', deep })) },
    { weight: 1, arbitrary: fc.uint8Array({ minLength: 1, maxLength: 64 }).map((a): Damage => ({ kind: 'garbage', bytes: Buffer.from(a) })) },
  );
}

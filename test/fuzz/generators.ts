/**
 * Shared generators for the RESP decoder's property tests (test/unit/resp.test.ts) and its
 * fuzzer (test/fuzz/run.ts, test/unit/resp-fuzz.test.ts).
 *
 * Wire bytes are produced by a small serializer written here, independent of `src/resp`,
 * from a model of the value; the expected decoded JS value is derived from the same model.
 */
import fc from 'fast-check';
import { RespDecoder, type DecodedValue } from '../../src/resp/decoder.js';
import { ProtocolError, RedisError } from '../../src/errors.js';
import type { Reply } from '../../src/types.js';

// ------------------------------------------------------------------ model and serializer

export type Model =
  | { t: 'simple'; s: string }
  | { t: 'error'; s: string }
  | { t: 'int'; n: bigint }
  | { t: 'bulk'; b: Buffer }
  | { t: 'nullBulk' }
  | { t: 'array'; items: Model[] }
  | { t: 'nullArray' }
  | { t: 'null' }
  | { t: 'bool'; v: boolean }
  | { t: 'double'; text: string }
  | { t: 'bigNumber'; v: bigint }
  | { t: 'bulkError'; b: Buffer }
  | { t: 'verbatim'; format: string; b: Buffer }
  | { t: 'map'; pairs: Array<[Model, Model]> }
  | { t: 'set'; items: Model[] }
  /** A push frame nested inside an aggregate: an ordinary array to the caller. */
  | { t: 'push'; items: Model[] }
  /** An attribute frame followed by the value it describes. */
  | { t: 'attr'; pairs: Array<[Model, Model]>; value: Model };

/** One top-level frame of a stream: a reply (maybe wrapped in attributes) or a push. */
export type TopFrame = { kind: 'reply'; m: Model } | { kind: 'push'; items: Model[] };

export const CRLF = Buffer.from('\r\n');
export const line = (s: string): Buffer => Buffer.from(s + '\r\n', 'utf8');

export function serialize(m: Model): Buffer {
  switch (m.t) {
    case 'simple': return line('+' + m.s);
    case 'error': return line('-' + m.s);
    case 'int': return line(':' + m.n.toString());
    case 'bulk': return Buffer.concat([line('$' + m.b.length), m.b, CRLF]);
    case 'nullBulk': return line('$-1');
    case 'array': return Buffer.concat([line('*' + m.items.length), ...m.items.map(serialize)]);
    case 'nullArray': return line('*-1');
    case 'null': return line('_');
    case 'bool': return line('#' + (m.v ? 't' : 'f'));
    case 'double': return line(',' + m.text);
    case 'bigNumber': return line('(' + m.v.toString());
    case 'bulkError': return Buffer.concat([line('!' + m.b.length), m.b, CRLF]);
    case 'verbatim': return Buffer.concat([line('=' + (m.b.length + 4)), Buffer.from(m.format + ':'), m.b, CRLF]);
    case 'map': return Buffer.concat([line('%' + m.pairs.length), ...m.pairs.flatMap(([k, v]) => [serialize(k), serialize(v)])]);
    case 'set': return Buffer.concat([line('~' + m.items.length), ...m.items.map(serialize)]);
    case 'push': return Buffer.concat([line('>' + m.items.length), ...m.items.map(serialize)]);
    case 'attr': return Buffer.concat([
      line('|' + m.pairs.length), ...m.pairs.flatMap(([k, v]) => [serialize(k), serialize(v)]), serialize(m.value),
    ]);
  }
}

export function serializeTop(f: TopFrame): Buffer {
  return f.kind === 'reply' ? serialize(f.m) : serialize({ t: 'push', items: f.items });
}

/** Attribute maps in the order the decoder completes them (inner ones first). */
export type AttrSink = Array<Map<Reply, Reply>>;

export function expectedDouble(text: string): number {
  if (text === 'inf' || text === '+inf') return Infinity;
  if (text === '-inf') return -Infinity;
  if (text === 'nan' || text === '-nan') return NaN;
  return Number(text);
}

/** The JS value a caller should get for `m`; `buffers` = returnBuffers. */
export function expected(m: Model, buffers: boolean, attrs: AttrSink): DecodedValue {
  const bulk = (b: Buffer): Reply => (buffers ? Buffer.from(b) : b.toString('utf8'));
  switch (m.t) {
    case 'simple': return Buffer.from(m.s, 'utf8').toString('utf8');
    case 'error': return new RedisError(Buffer.from(m.s, 'utf8').toString('utf8'));
    case 'int': {
      const safe = m.n >= BigInt(Number.MIN_SAFE_INTEGER) && m.n <= BigInt(Number.MAX_SAFE_INTEGER);
      return safe ? Number(m.n) : m.n;
    }
    case 'bulk': return bulk(m.b);
    case 'nullBulk': case 'nullArray': case 'null': return null;
    case 'array': case 'push': return m.items.map((x) => expected(x, buffers, attrs) as Reply);
    case 'bool': return m.v;
    case 'double': return expectedDouble(m.text);
    case 'bigNumber': return m.v;
    case 'bulkError': return new RedisError(m.b.toString('utf8'));
    case 'verbatim': return bulk(m.b);
    case 'map': {
      const out = new Map<Reply, Reply>();
      for (const [k, v] of m.pairs) {
        const kk = expected(k, buffers, attrs) as Reply;
        out.set(kk, expected(v, buffers, attrs) as Reply);
      }
      return out;
    }
    case 'set': {
      const out = new Set<Reply>();
      for (const x of m.items) out.add(expected(x, buffers, attrs) as Reply);
      return out;
    }
    case 'attr': {
      const a = new Map<Reply, Reply>();
      for (const [k, v] of m.pairs) {
        const kk = expected(k, buffers, attrs) as Reply;
        a.set(kk, expected(v, buffers, attrs) as Reply);
      }
      attrs.push(a);
      return expected(m.value, buffers, attrs);
    }
  }
}

export type Event =
  | { kind: 'reply'; value: unknown; attrs: unknown }
  | { kind: 'push'; value: unknown }
  | { kind: 'error'; error: ProtocolError };

export function expectedEvents(frames: TopFrame[], buffers: boolean): Event[] {
  return frames.map((f): Event => {
    if (f.kind === 'push') return { kind: 'push', value: norm(f.items.map((x) => expected(x, buffers, []))) };
    const sink: AttrSink = [];
    const value = expected(f.m, buffers, sink);
    let attrs: Map<Reply, Reply> | undefined;
    for (const a of sink) {
      attrs ??= new Map();
      for (const [k, v] of a) attrs.set(k, v);
    }
    return { kind: 'reply', value: norm(value), attrs: norm(attrs) };
  });
}

/** A comparable, readable form: keeps the distinctions a caller sees (Buffer vs string, bigint vs number, Map order …). */
export function norm(v: unknown): unknown {
  if (v instanceof RedisError) return { $redisError: v.message, code: v.code };
  if (v instanceof Error) return { $otherError: `${v.name}: ${v.message}` };
  if (Buffer.isBuffer(v)) return { $buffer: v.toString('hex') };
  if (v instanceof Map) return { $map: [...v].map(([k, x]) => [norm(k), norm(x)]) };
  if (v instanceof Set) return { $set: [...v].map(norm) };
  if (Array.isArray(v)) return v.map(norm);
  if (typeof v === 'bigint') return { $bigint: v.toString() };
  if (typeof v === 'number') return Number.isNaN(v) ? { $nan: true } : Object.is(v, -0) ? { $negZero: true } : v;
  return v;
}

// ------------------------------------------------------------------ decoding harness

export function newDecoder(buffers: boolean | (() => boolean), maxReplyBytes?: number) {
  const events: Event[] = [];
  const raw: Array<{ value: DecodedValue; attrs: Map<Reply, Reply> | undefined }> = [];
  const pushes: Reply[][] = [];
  const decoder = new RespDecoder({
    maxReplyBytes,
    onReply: (value, attrs) => {
      raw.push({ value, attrs });
      events.push({ kind: 'reply', value: norm(value), attrs: norm(attrs) });
    },
    onPush: (value) => {
      pushes.push(value);
      events.push({ kind: 'push', value: norm(value) });
    },
    onProtocolError: (error) => events.push({ kind: 'error', error }),
    wantBuffers: typeof buffers === 'function' ? buffers : () => buffers,
  });
  return { decoder, events, raw, pushes };
}

/** Cuts `bytes` at the given offsets (any order, duplicates and out-of-range ignored). */
export function cut(bytes: Buffer, offsets: number[]): Buffer[] {
  const points = [...new Set(offsets.filter((o) => o > 0 && o < bytes.length))].sort((a, b) => a - b);
  const out: Buffer[] = [];
  let prev = 0;
  for (const p of points) {
    out.push(bytes.subarray(prev, p));
    prev = p;
  }
  out.push(bytes.subarray(prev));
  return out;
}

// ------------------------------------------------------------------ arbitraries

/** Text without CR or LF (simple strings and errors cannot carry them). */
export const lineText = fc.string({ unit: 'grapheme', maxLength: 20 }).filter((s) => !/[\r\n]/.test(s));
export const anyBytes = fc.oneof(
  fc.uint8Array({ maxLength: 40 }).map((a) => Buffer.from(a)),
  fc.string({ unit: 'grapheme', maxLength: 20 }).map((s) => Buffer.from(s, 'utf8')),
  fc.constantFrom('', '\r\n', '$3\r\n', 'a\r\nb', '\0\xff').map((s) => Buffer.from(s, 'latin1')),
);
export const int64 = fc.oneof(
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
  fc.integer().map(BigInt),
  fc.constantFrom(
    0n, 2n ** 53n - 1n, 2n ** 53n, 2n ** 53n + 1n, -(2n ** 53n) + 1n, -(2n ** 53n), -(2n ** 53n) - 1n,
    10n ** 15n - 1n, 10n ** 15n, -(10n ** 15n), 2n ** 63n - 1n, -(2n ** 63n),
  ),
);
export const doubleText = fc.oneof(
  fc.double().map((d) => (Number.isNaN(d) ? 'nan' : d === Infinity ? 'inf' : d === -Infinity ? '-inf' : String(d))),
  fc.constantFrom('inf', '-inf', '+inf', 'nan', '-nan', '0', '-0', '1.5', '3.14159', '1e+300', '-2.5E-10', '10'),
);

export const { value: valueArb } = fc.letrec<{ value: Model; scalar: Model; aggregate: Model }>((tie) => ({
  value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, tie('scalar'), tie('aggregate')),
  scalar: fc.oneof(
    lineText.map((s): Model => ({ t: 'simple', s })),
    lineText.map((s): Model => ({ t: 'error', s })),
    fc.constantFrom('ERR unknown command', 'WRONGTYPE Operation against a key', 'MOVED 3999 127.0.0.1:6381', 'NOAUTH')
      .map((s): Model => ({ t: 'error', s })),
    int64.map((n): Model => ({ t: 'int', n })),
    anyBytes.map((b): Model => ({ t: 'bulk', b })),
    fc.constant<Model>({ t: 'nullBulk' }),
    fc.constant<Model>({ t: 'nullArray' }),
    fc.constant<Model>({ t: 'null' }),
    fc.boolean().map((v): Model => ({ t: 'bool', v })),
    doubleText.map((text): Model => ({ t: 'double', text })),
    fc.bigInt({ min: -(10n ** 60n), max: 10n ** 60n }).map((v): Model => ({ t: 'bigNumber', v })),
    anyBytes.map((b): Model => ({ t: 'bulkError', b })),
    fc.tuple(fc.constantFrom('txt', 'mkd'), anyBytes).map(([format, b]): Model => ({ t: 'verbatim', format, b })),
  ),
  aggregate: fc.oneof(
    { depthSize: 'small' },
    fc.array(tie('value'), { maxLength: 5 }).map((items): Model => ({ t: 'array', items })),
    fc.array(fc.tuple(tie('value'), tie('value')), { maxLength: 4 }).map((pairs): Model => ({ t: 'map', pairs })),
    fc.array(tie('value'), { maxLength: 5 }).map((items): Model => ({ t: 'set', items })),
    fc.array(tie('value'), { maxLength: 4 }).map((items): Model => ({ t: 'push', items })),
    fc.tuple(fc.array(fc.tuple(tie('scalar'), tie('value')), { maxLength: 3 }), tie('value'))
      .map(([pairs, value]): Model => ({ t: 'attr', pairs, value })),
  ),
}));

/** Models without attributes (used inside top-level pushes, whose attributes have no reply to go to). */
export function hasAttr(m: Model): boolean {
  switch (m.t) {
    case 'attr': return true;
    case 'array': case 'set': case 'push': return m.items.some(hasAttr);
    case 'map': return m.pairs.some(([k, v]) => hasAttr(k) || hasAttr(v));
    default: return false;
  }
}

/** A '>' at the top level is a push, not a reply: turn it into an array there. */
export function asReply(m: Model): Model {
  if (m.t === 'push') return { t: 'array', items: m.items };
  if (m.t === 'attr') return { ...m, value: asReply(m.value) };
  return m;
}

/** Any value a command can get as its reply. */
export const replyArb = valueArb.map(asReply);

export const topFrameArb: fc.Arbitrary<TopFrame> = fc.oneof(
  { weight: 4, arbitrary: replyArb.map((m): TopFrame => ({ kind: 'reply', m })) },
  { weight: 1, arbitrary: fc.array(valueArb.filter((m) => !hasAttr(m)), { maxLength: 4 }).map((items): TopFrame => ({ kind: 'push', items })) },
);

/** Bytes biased towards RESP syntax, so the parser gets deep before it fails. */
export const respish = fc.array(
  fc.oneof(
    fc.constantFrom(...'+-:$*%~>|_#,(!=\r\n0123456789-tfinaxyz'.split('')).map((c) => Buffer.from(c, 'latin1')),
    fc.constantFrom('\r\n', '$-1\r\n', '*-1\r\n', '*3\r\n', '%2\r\n', '|1\r\n', '>2\r\n', '$5\r\nhello\r\n', ':99999999999999999999\r\n', '$99999999999\r\n').map((s) => Buffer.from(s)),
    fc.uint8Array({ maxLength: 4 }).map((a) => Buffer.from(a)),
  ),
  { maxLength: 60 },
).map((parts) => Buffer.concat(parts));
export const garbage = fc.oneof(fc.uint8Array({ maxLength: 300 }).map((a) => Buffer.from(a)), respish);

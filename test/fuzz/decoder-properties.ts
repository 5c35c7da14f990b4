/**
 * Properties of the RESP decoder, shared by `npm run fuzz` (test/fuzz/run.ts, a million inputs)
 * and the seeded slice in `npm test` (test/unit/resp-fuzz.test.ts).
 *
 * Every input is decoded under several chunkings (whole, at random offsets, in cycling small
 * sizes, byte by byte when small), and after every `feed` the harness checks that it did not
 * throw, that nothing came after a ProtocolError, and that the decoder holds at most
 * maxReplyBytes + 2 bytes. Checks are plain `node:assert`, so the same code runs under vitest
 * and under tsx.
 */
import assert from 'node:assert/strict';
import v8 from 'node:v8';
import vm from 'node:vm';
import fc from 'fast-check';
import { DEFAULT_MAX_REPLY_BYTES, RespDecoder } from '../../src/resp/decoder.js';
import { ProtocolError } from '../../src/errors.js';
import { expectedEvents, garbage, norm, replyArb, serialize } from './generators.js';
import {
  badHeaderArb, buildDeep, type ChunkPlan, buildEdge, bySizes, byteByByte, chunkPlanArb, chunkings, cutAt, deepCaseArb, edgeCaseArb,
  framesArb, framesWithin, junkBodyArb, MAX_DEPTH, mutate, mutationArb, openWrappersArb, streamOf,
} from './streams.js';

// ------------------------------------------------------------------ harness

/** A decoder event in comparable form (errors by message). */
export type Outcome =
  | { kind: 'reply'; value: unknown; attrs: unknown }
  | { kind: 'push'; value: unknown }
  | { kind: 'error'; message: string };

/** A single input may take this long before it counts as a hang (generous: CI machines stall). */
export const INPUT_TIME_LIMIT_MS = 5000;

export interface DecodeResult {
  events: Outcome[];
  /** Largest `bufferedBytes` seen between two feeds. */
  maxBuffered: number;
  bufferedAtEnd: number;
}

const maxes = [1024, 4096, 64 * 1024, DEFAULT_MAX_REPLY_BYTES] as const;
export const maxArb = fc.constantFrom(...maxes);

/**
 * Feeds `chunks` to a fresh decoder and checks, after every feed: no exception escaped, at most
 * one error and nothing after it, the error a ProtocolError raised by the decoder itself (not an
 * internal exception it wrapped), and at most max + 2 bytes held.
 */
export function decode(chunks: readonly Buffer[], max: number | undefined, buffers: boolean, onFeed?: (i: number, d: RespDecoder, events: Outcome[]) => void): DecodeResult {
  const limit = max ?? DEFAULT_MAX_REPLY_BYTES;
  const events: Outcome[] = [];
  let errors = 0;
  const d = new RespDecoder({
    maxReplyBytes: max,
    onReply: (value, attrs) => {
      assert.equal(errors, 0, 'a reply was delivered after a ProtocolError');
      events.push({ kind: 'reply', value: norm(value), attrs: norm(attrs) });
    },
    onPush: (value) => {
      assert.equal(errors, 0, 'a push was delivered after a ProtocolError');
      events.push({ kind: 'push', value: norm(value) });
    },
    onProtocolError: (err) => {
      errors++;
      assert.equal(errors, 1, 'more than one ProtocolError');
      assert.ok(err instanceof ProtocolError, `onProtocolError got ${String(err)}`);
      // The decoder wraps an internal exception (TypeError, RangeError …) as "Could not decode": a bug.
      assert.equal(err.cause, undefined, `an internal exception escaped the parser: ${String(err.cause)}\n${(err.cause as Error | undefined)?.stack ?? ''}`);
      events.push({ kind: 'error', message: err.message });
    },
    wantBuffers: () => buffers,
  });
  let maxBuffered = 0;
  for (let i = 0; i < chunks.length; i++) {
    try {
      d.feed(chunks[i]!);
    } catch (err) {
      if (err instanceof assert.AssertionError) throw err;
      assert.fail(`feed() threw: ${(err as Error)?.stack ?? String(err)}`);
    }
    const held = d.bufferedBytes;
    if (held > maxBuffered) maxBuffered = held;
    assert.ok(held <= limit + 2, `the decoder holds ${held} bytes, more than maxReplyBytes (${limit}) + 2`);
    if (errors > 0) assert.equal(held, 0, 'a dead decoder still holds bytes');
    onFeed?.(i, d, events);
  }
  if (errors > 0) {
    // Dead for good: later bytes are ignored and nothing is held.
    const n = events.length;
    d.feed(Buffer.from('+OK\r\n'));
    assert.equal(events.length, n, 'the decoder delivered a value after its ProtocolError');
    assert.equal(d.bufferedBytes, 0);
  }
  return { events, maxBuffered, bufferedAtEnd: d.bufferedBytes };
}

/** Decodes under every chunking and checks they all give the same events; returns them. */
function decodeAllWays(bytes: Buffer, plan: ChunkPlan, max: number | undefined, buffers: boolean, byteByByteMax?: number): DecodeResult {
  let first: DecodeResult | undefined;
  for (const { how, chunks } of chunkings(bytes, plan, byteByByteMax)) {
    const r = decode(chunks, max, buffers);
    if (first === undefined) first = r;
    else assertSameEvents(r.events, first.events, `decoding ${how} differs from decoding it whole`);
  }
  return first!;
}

/** Infinity would print as null: keep it apart. */
function jsonReplacer(_k: string, v: unknown): unknown {
  return v === Infinity ? { $inf: 1 } : v === -Infinity ? { $inf: -1 } : v;
}

/**
 * Events compared as JSON of their normalized form (fast); on a mismatch, deepStrictEqual gives
 * the readable diff.
 */
export function assertSameEvents(actual: unknown, expected: unknown, message?: string): void {
  if (JSON.stringify(actual, jsonReplacer) === JSON.stringify(expected, jsonReplacer)) return;
  assert.deepStrictEqual(actual, expected, message);
  assert.fail(`${message ?? 'events differ'}: ${JSON.stringify(actual, jsonReplacer).slice(0, 2000)} vs ${JSON.stringify(expected, jsonReplacer).slice(0, 2000)}`);
}

function errorsOf(events: Outcome[]): Outcome[] {
  return events.filter((e) => e.kind === 'error');
}

// ------------------------------------------------------------------ property table

export interface PropertyStats {
  runs: number;
  slowestMs: number;
  /** Called after every run (progress reports). */
  tick?: () => void;
}

// Properties of any arity, sync or async, as fc.check takes them.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyProperty = fc.IRawProperty<any, boolean>;

export interface FuzzProperty {
  name: string;
  what: string;
  /** Share of the total runs, or … */
  share?: number;
  /** … a fixed number of runs per million total (at least `min`). */
  perMillion?: number;
  min?: number;
  /** Builds the property; it updates `stats` as it runs. */
  build(stats: PropertyStats): AnyProperty;
}

/** Wraps a predicate: counts runs, times each input, fails one that takes longer than INPUT_TIME_LIMIT_MS. */
function timed<T extends unknown[]>(stats: PropertyStats, fn: (...args: T) => void): (...args: T) => void {
  return (...args: T) => {
    const t0 = performance.now();
    fn(...args);
    const ms = performance.now() - t0;
    stats.runs++;
    if (ms > stats.slowestMs) stats.slowestMs = ms;
    stats.tick?.();
    assert.ok(ms <= INPUT_TIME_LIMIT_MS, `one input took ${ms.toFixed(0)} ms (limit ${INPUT_TIME_LIMIT_MS} ms): a hang?`);
  };
}

const buffersArb = fc.boolean();

export const decoderProperties: FuzzProperty[] = [
  {
    name: 'valid-stream',
    what: 'valid RESP2/RESP3 streams (every type, replies, pushes, attributes) -> exactly the modelled events under any chunking',
    share: 0.2,
    build: (stats) => fc.property(framesArb(1, 12), buffersArb, chunkPlanArb, maxArb, timed(stats, (frames, buffers, plan, max) => {
      const { bytes } = streamOf(frames);
      const r = decodeAllWays(bytes, plan, max, buffers);
      assertSameEvents(r.events, expectedEvents(frames, buffers));
      assert.equal(r.bufferedAtEnd, 0);
    })),
  },
  {
    name: 'valid-every-split',
    what: 'one valid reply split in two at every byte offset (and in three at random) -> the modelled value',
    share: 0.03,
    build: (stats) => fc.property(replyArb, buffersArb, fc.nat(), timed(stats, (m, buffers, third) => {
      const bytes = serialize(m);
      const want = expectedEvents([{ kind: 'reply', m }], buffers);
      assertSameEvents(decode([bytes], undefined, buffers).events, want);
      assertSameEvents(decode(byteByByte(bytes), undefined, buffers).events, want, 'byte by byte');
      // Every offset for values up to 48 bytes, 48 offsets spread over larger ones (from a random start).
      const step = Math.max(1, Math.ceil(bytes.length / 48));
      for (let i = 1 + (third % step); i < bytes.length; i += step) {
        assertSameEvents(decode(cutAt(bytes, [i]), undefined, buffers).events, want, `split at ${i}`);
      }
      // And in three at random.
      const i = 1 + (third % Math.max(1, bytes.length - 1));
      const j = i + 1 + ((third >>> 8) % Math.max(1, bytes.length - i));
      assertSameEvents(decode(cutAt(bytes, [i, j]), undefined, buffers).events, want, `split at ${i} and ${j}`);
    })),
  },
  {
    name: 'truncated',
    what: 'a valid stream cut short -> exactly the complete frames, no error, only the unfinished frame buffered; the rest completes it',
    share: 0.1,
    build: (stats) => fc.property(framesArb(1, 8), fc.nat(), buffersArb, chunkPlanArb, timed(stats, (frames, at, buffers, plan) => {
      const s = streamOf(frames);
      const p = at % (s.bytes.length + 1);
      const done = framesWithin(s, p);
      const boundary = done.length === 0 ? 0 : s.ends[done.length - 1]!;
      const head = s.bytes.subarray(0, p);
      const tail = s.bytes.subarray(p);
      const wantAtCut = expectedEvents(done, buffers);
      const wantAll = expectedEvents(frames, buffers);
      for (const { how, chunks } of chunkings(head, plan)) {
        const r = decode([...chunks, ...cutAt(tail, plan.cuts)], undefined, buffers, (i, d, events) => {
          if (i !== chunks.length - 1) return;
          // At the cut: the complete frames and nothing else; at most the unfinished frame's bytes held.
          assertSameEvents(events, wantAtCut, `events at the cut (${how})`);
          assert.ok(d.bufferedBytes <= p - boundary, `holds ${d.bufferedBytes} bytes, more than the ${p - boundary} of the unfinished frame`);
        });
        assertSameEvents(r.events, wantAll, `after the rest arrived (${how})`);
        assert.equal(r.bufferedAtEnd, 0);
      }
    })),
  },
  {
    name: 'mutated',
    what: 'valid streams with bytes set, inserted, deleted, duplicated, lengths grown or negated -> intact frames exact, then values and at most one ProtocolError, the same under any chunking',
    share: 0.25,
    build: (stats) => fc.property(framesArb(1, 8), fc.array(mutationArb, { minLength: 1, maxLength: 4 }), buffersArb, chunkPlanArb, maxArb, timed(stats, (frames, mutations, buffers, plan, max) => {
      const s = streamOf(frames);
      const { bytes, untouched } = mutate(s.bytes, mutations);
      const r = decodeAllWays(bytes, plan, max, buffers);
      const intact = expectedEvents(framesWithin(s, untouched), buffers);
      assertSameEvents(r.events.slice(0, intact.length), intact, `the frames before offset ${untouched} are intact`);
      const errs = errorsOf(r.events);
      if (errs.length === 0) assert.ok(r.bufferedAtEnd <= bytes.length);
      else assert.equal(r.events[r.events.length - 1]!.kind, 'error');
    })),
  },
  {
    name: 'garbage',
    what: 'random bytes and RESP-like token soup -> values and at most one ProtocolError, the same under any chunking',
    share: 0.25,
    build: (stats) => fc.property(garbage, buffersArb, chunkPlanArb, maxArb, timed(stats, (bytes, buffers, plan, max) => {
      const r = decodeAllWays(bytes, plan, max, buffers);
      if (errorsOf(r.events).length > 0) assert.equal(r.events[r.events.length - 1]!.kind, 'error');
    })),
  },
  {
    name: 'bad-length',
    what: 'a declared length or count beyond maxReplyBytes, near 2^53 and beyond, negative (other than a null -1) or malformed, inside open aggregates -> the frames before, then one ProtocolError as soon as the header line is complete; the body is never waited for nor held',
    share: 0.08,
    build: (stats) => fc.property(
      fc.integer({ min: 1024, max: 1 << 20 }).chain((max) => fc.tuple(fc.constant(max), badHeaderArb(max))),
      framesArb(0, 4), openWrappersArb, junkBodyArb, buffersArb, chunkPlanArb,
      timed(stats, ([max, header], frames, wrappers, junk, buffers, plan) => {
        const prefix = streamOf(frames).bytes;
        const head = Buffer.from(wrappers.join('') + header.type + header.length + '\r\n', 'latin1');
        const want = expectedEvents(frames, buffers);
        for (const { how, chunks } of chunkings(Buffer.concat([prefix, head]), plan)) {
          const r = decode([...chunks, ...bySizes(junk, plan.sizes)], max, buffers, (i, d, events) => {
            if (i !== chunks.length - 1) return;
            assert.equal(events[events.length - 1]?.kind, 'error', `no ProtocolError once the header "${header.type}${header.length}" is complete (${how})`);
            assert.equal(d.bufferedBytes, 0);
          });
          assertSameEvents(r.events.slice(0, -1), want, how);
          const last = r.events[r.events.length - 1]!;
          assert.equal(last.kind, 'error');
          if (header.kind === 'over') {
            const msg = (last as { message: string }).message;
            assert.ok(msg.includes(String(max)) && msg.includes(header.length), `the message names the limit and the length: ${msg}`);
          }
        }
      }),
    ),
  },
  {
    name: 'deep-nesting',
    what: 'arrays, sets, maps, pushes and attributes nested 1-700, 511-513, 1k, 10k, 100k levels -> the value within 512 levels, else one ProtocolError at the 513th header; never a stack overflow',
    share: 0.02,
    build: (stats) => fc.property(deepCaseArb, buffersArb, chunkPlanArb, timed(stats, (c, buffers, plan) => {
      const { bytes, event, tooDeepAt } = buildDeep(c, buffers);
      const big = bytes.length > 64 * 1024;
      const ways = big ? [{ how: 'whole', chunks: [bytes] }, { how: 'sizes', chunks: bySizes(bytes, plan.sizes.map((n) => n * 97)) }] : chunkings(bytes, plan, 0);
      for (const { how, chunks } of ways) {
        if (event !== undefined) {
          assertSameEvents(decode(chunks, undefined, buffers).events, [event], `depth ${c.depth} (${how})`);
          continue;
        }
        // Feed up to the end of the header that opens level 513: the error must be there already.
        const head = big ? bySizes(bytes.subarray(0, tooDeepAt), plan.sizes.map((n) => n * 97)) : cutAt(bytes.subarray(0, tooDeepAt), plan.cuts);
        const r = decode([...head, bytes.subarray(tooDeepAt!)], undefined, buffers, (i, _d, events) => {
          if (i === head.length - 1) assert.equal(events.length, 1, `no ProtocolError at the header of level ${MAX_DEPTH + 1}`);
        });
        assert.equal(r.events.length, 1, `depth ${c.depth} (${how}): ${JSON.stringify(r.events).slice(0, 300)}`);
        assert.match((r.events[0] as { message: string }).message, new RegExp(`deeper than ${MAX_DEPTH}`));
      }
    })),
  },
  {
    name: 'limit-edge',
    what: `lines and bulks at maxReplyBytes +-3 in small chunks -> accepted up to the limit, one ProtocolError beyond it, whatever the chunking; never more than maxReplyBytes + 2 held`,
    share: 0.04,
    build: (stats) => fc.property(fc.integer({ min: 1024, max: 8192 }), edgeCaseArb, framesArb(0, 3), framesArb(0, 3), buffersArb, chunkPlanArb,
      timed(stats, (max, edge, before, after, buffers, plan) => {
        const e = buildEdge(edge, max, buffers);
        const bytes = Buffer.concat([streamOf(before).bytes, e.bytes, streamOf(after).bytes]);
        const want = expectedEvents(before, buffers);
        const r = decodeAllWays(bytes, { ...plan, sizes: plan.sizes.map((n) => Math.min(n, 512)) }, max, buffers, 0);
        if (e.accepted) {
          assertSameEvents(r.events, [...want, e.event, ...expectedEvents(after, buffers)]);
        } else {
          assertSameEvents(r.events.slice(0, -1), want);
          const last = r.events[r.events.length - 1];
          assert.equal(last?.kind, 'error', `${edge.type} of ${edge.delta} bytes beyond the limit ${max} was accepted`);
          assert.match((last as { message: string }).message, /maxReplyBytes/);
        }
      })),
  },
  {
    name: 'huge-declared-few-bytes',
    what: 'a bulk or aggregate declaring up to 512 MiB followed by a few bytes -> nothing allocated for the declared size: held bytes = bytes received, heap growth bounded',
    share: 0.03,
    build: (stats) => fc.property(
      fc.constantFrom('$', '!', '=', '*', '%', '~', '>', '|'),
      fc.oneof(fc.integer({ min: DEFAULT_MAX_REPLY_BYTES / 2, max: DEFAULT_MAX_REPLY_BYTES }), fc.integer({ min: 1 << 20, max: DEFAULT_MAX_REPLY_BYTES })),
      fc.integer({ min: 0, max: 4096 }),
      openWrappersArb,
      timed(stats, (type, n, few, wrappers) => {
        const before = process.memoryUsage();
        const head = Buffer.from(`${wrappers.join('')}${type}${n}\r\n`, 'latin1');
        const body = type === '$' || type === '!' || type === '=' ? Buffer.alloc(few, 0x61) : Buffer.from(':1\r\n'.repeat(Math.ceil(few / 4)));
        let held = 0;
        const r = decode([head, ...bySizes(body, [1024])], undefined, false, (_i, d) => {
          held = d.bufferedBytes;
        });
        assertSameEvents(r.events, []);
        if (type === '$' || type === '!' || type === '=') assert.equal(held, body.length, 'a bulk holds exactly the body bytes received');
        else assert.ok(held < 4, 'an aggregate holds at most an unfinished line');
        const after = process.memoryUsage();
        const buffersGrew = after.arrayBuffers - before.arrayBuffers;
        const heapGrew = after.heapUsed - before.heapUsed;
        assert.ok(buffersGrew < n / 2, `Buffer memory grew by ${buffersGrew} bytes after declaring ${n} and sending ${few}`);
        assert.ok(heapGrew < 64 * 1024 * 1024, `the heap grew by ${heapGrew} bytes after declaring ${n} and sending ${few}`);
      }),
    ),
  },
  {
    name: 'work-linear',
    what: 'a 1.5-4 MiB line fed in 64 B-1 KiB chunks takes time linear in its size, like the same bulk (at most 10x it + 100 ms)',
    perMillion: 40,
    min: 2,
    build: (stats) => fc.property(fc.integer({ min: 1536 * 1024, max: 4 * 1024 * 1024 }), fc.integer({ min: 64, max: 1024 }), timedLong(stats, (size, chunk) => {
      const c = Math.max(chunk, Math.ceil(size / 65536));
      const max = 8 * 1024 * 1024;
      const bulk = Buffer.concat([Buffer.from(`$${size}\r\n`), Buffer.alloc(size, 0x61), Buffer.from('\r\n')]);
      const lineBytes = Buffer.concat([Buffer.from('+'), Buffer.alloc(size, 0x61), Buffer.from('\r\n')]);
      const time = (b: Buffer) => {
        const t0 = performance.now();
        const r = decode(bySizes(b, [c]), max, false);
        assert.equal(r.events.length, 1);
        return performance.now() - t0;
      };
      const tBulk = time(bulk);
      const tLine = time(lineBytes);
      assert.ok(tLine <= 10 * tBulk + 100, `a ${size}-byte line in ${c}-byte chunks took ${tLine.toFixed(0)} ms, the same bulk ${tBulk.toFixed(0)} ms: not linear`);
    })),
  },
  {
    name: 'memory-tiny-chunks',
    what: 'a 256-768 KiB line or bulk fed in 1-16 byte chunks keeps no object per chunk: the JS heap grows by at most 1 MiB (a Buffer per chunk would be 7-110x the value)',
    perMillion: 24,
    min: 2,
    build: (stats) => fc.property(fc.integer({ min: 256 * 1024, max: 768 * 1024 }), fc.integer({ min: 1, max: 16 }), fc.boolean(), timedLong(stats, (size, chunk, asLine) => {
      const gc = getGc();
      const bytes = asLine
        ? Buffer.concat([Buffer.from('+'), Buffer.alloc(size, 0x61), Buffer.from('\r\n')])
        : Buffer.concat([Buffer.from(`$${size}\r\n`), Buffer.alloc(size, 0x61), Buffer.from('\r\n')]);
      const d = new RespDecoder({ maxReplyBytes: 2 * size, onReply() {}, onPush() {}, onProtocolError(e) { throw e; } });
      gc();
      const m0 = process.memoryUsage().heapUsed;
      // All but the last byte, each chunk a fresh copy as a socket delivers them (a view into
      // `bytes` would share its memory and hide what the decoder keeps).
      for (let off = 0; off < bytes.length - 1; off += chunk) d.feed(Buffer.from(bytes.subarray(off, Math.min(off + chunk, bytes.length - 1))));
      gc();
      // Only the JS heap: Buffer objects live there, their bytes outside it (and
      // memoryUsage().arrayBuffers lags behind frees too much to be judged per input).
      const grew = process.memoryUsage().heapUsed - m0;
      assert.ok(d.bufferedBytes >= size, 'the decoder holds the unfinished value');
      assert.ok(grew <= 1024 * 1024, `${asLine ? 'a line' : 'a bulk'} of ${size} bytes in ${chunk}-byte chunks grew the heap by ${grew} bytes`);
    })),
  },
];

/** Like `timed`, without the per-input time limit (for the inputs that measure time themselves). */
function timedLong<T extends unknown[]>(stats: PropertyStats, fn: (...args: T) => void): (...args: T) => void {
  return (...args: T) => {
    const t0 = performance.now();
    fn(...args);
    stats.runs++;
    stats.slowestMs = Math.max(stats.slowestMs, performance.now() - t0);
    stats.tick?.();
  };
}

let gcFn: (() => void) | undefined;
/** `global.gc` when node runs with --expose-gc, else the same function obtained at run time. */
export function getGc(): () => void {
  if (gcFn) return gcFn;
  const g = (globalThis as { gc?: () => void }).gc;
  if (typeof g === 'function') return (gcFn = g);
  v8.setFlagsFromString('--expose-gc');
  gcFn = vm.runInNewContext('gc') as () => void;
  return gcFn;
}

// ------------------------------------------------------------------ running

export interface RunOptions {
  seed: number;
  numRuns: number;
  /** fast-check replay path (from a failure report). */
  path?: string;
  /** Called now and then with the number of runs done. */
  onProgress?: (runs: number) => void;
  /** Called after every run with the number of runs done (must be cheap). */
  onRun?: (runs: number) => void;
  /**
   * Runs with `Error.stackTraceLimit = 0` (error replies build a RedisError per value, and stack
   * capture is most of their cost), then replays a failure with stack traces.
   */
  fastErrors?: boolean;
}

export interface PropertyResult {
  name: string;
  runs: number;
  seed: number;
  ms: number;
  slowestMs: number;
  failure: string | undefined;
}

/** Each property's own seed: the base seed mixed with its name, so properties do not depend on each other's order. */
export function propertySeed(base: number, name: string): number {
  let h = 2166136261;
  for (const ch of name) h = Math.imul(h ^ ch.charCodeAt(0), 16777619);
  return (h ^ base) | 0;
}

export function runsFor(p: FuzzProperty, total: number): number {
  if (p.share !== undefined) return Math.max(1, Math.round(p.share * total));
  return Math.max(p.min ?? 1, Math.round(((p.perMillion ?? 0) * total) / 1_000_000));
}

export async function runProperty(p: FuzzProperty, opts: RunOptions): Promise<PropertyResult> {
  const stats: PropertyStats = { runs: 0, slowestMs: 0 };
  const seed = propertySeed(opts.seed, p.name);
  const prop = p.build(stats);
  let timer: NodeJS.Timeout | undefined;
  if (opts.onProgress || opts.onRun) {
    const report = opts.onProgress;
    const each = opts.onRun;
    // A synchronous property blocks the event loop, so progress also goes out from the runs.
    let last = 0;
    stats.tick = () => {
      each?.(stats.runs);
      if (report && stats.runs - last >= 500) {
        last = stats.runs;
        report(stats.runs);
      }
    };
    if (report) timer = setInterval(() => report(stats.runs), 2000);
  }
  const t0 = performance.now();
  const params = { seed, numRuns: opts.numRuns, ...(opts.path !== undefined ? { path: opts.path } : {}) };
  const limit = Error.stackTraceLimit;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const check = async (q: AnyProperty, ps: fc.Parameters<any>) => (q.isAsync() ? await fc.check(q as fc.IAsyncProperty<any>, ps) : fc.check(q as fc.IProperty<any>, ps));
  try {
    if (opts.fastErrors) Error.stackTraceLimit = 0;
    let details = await check(prop, params);
    Error.stackTraceLimit = limit;
    if (details.failed && opts.fastErrors && details.counterexamplePath !== null) {
      // The shrunk counterexample again, now with stacks in its error.
      const again = await check(p.build({ runs: 0, slowestMs: 0 }), { seed, path: details.counterexamplePath, numRuns: opts.numRuns, endOnFailure: true });
      if (again.failed) details = { ...details, errorInstance: again.errorInstance };
    }
    return {
      name: p.name,
      runs: details.failed ? details.numRuns : opts.numRuns,
      seed,
      ms: performance.now() - t0,
      slowestMs: stats.slowestMs,
      failure: details.failed ? failureReport(details) : undefined,
    };
  } finally {
    Error.stackTraceLimit = limit;
    if (timer) clearInterval(timer);
  }
}

/** fast-check's report (seed, path, shrunk counterexample) plus the error the counterexample raised. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
function failureReport(details: fc.RunDetails<any>): string {
  const report = fc.defaultReportMessage(details) ?? 'failed';
  const err = details.errorInstance;
  const text = err instanceof Error ? (err.stack ?? err.message) : String(err);
  return `${report}\nError: ${text.length > 4000 ? text.slice(0, 4000) + ' …' : text}`;
}

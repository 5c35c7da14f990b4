/**
 * RESP codec: property tests of the decoder (every RESP2/RESP3 type, any chunking, garbage
 * input, limits) and of the command encoder.
 *
 * Wire bytes come from the serializer in test/fuzz/generators.ts (shared with the fuzzer),
 * independent of `src/resp`; the expected decoded JS value is derived from the same model.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { encodeCommand, encodedLength } from '../../src/resp/encoder.js';
import { ProtocolError, RedisError } from '../../src/errors.js';
import type { Reply } from '../../src/types.js';
import { decodeCommand } from '../support/resp-wire.js';
import {
  CRLF, cut, expectedEvents, garbage, line, newDecoder, norm, replyArb, serialize, serializeTop, topFrameArb, type Event,
} from '../fuzz/generators.js';

function decodeChunks(chunks: Buffer[], buffers: boolean, maxReplyBytes?: number): Event[] {
  const { decoder, events } = newDecoder(buffers, maxReplyBytes);
  for (const c of chunks) decoder.feed(c);
  expect(decoder.bufferedBytes).toBe(0);
  return events;
}

/** Decodes `bytes` whole, one byte at a time, and (for small inputs) split in two at every offset. */
function decodeEverySplit(bytes: Buffer, buffers: boolean): Event[] {
  const whole = decodeChunks([bytes], buffers);
  const single = decodeChunks(cut(bytes, Array.from({ length: bytes.length }, (_, i) => i)), buffers);
  expect(single).toEqual(whole);
  if (bytes.length <= 400) {
    for (let i = 1; i < bytes.length; i++) expect(decodeChunks(cut(bytes, [i]), buffers)).toEqual(whole);
  }
  return whole;
}

// ------------------------------------------------------------------ decoder tests

describe('RespDecoder: every RESP type', () => {
  it('decodes one value of any type, whole, byte by byte and split at every offset', () => {
    fc.assert(
      fc.property(replyArb, fc.boolean(), (m, buffers) => {
        const bytes = serialize(m);
        expect(decodeEverySplit(bytes, buffers)).toEqual(expectedEvents([{ kind: 'reply', m }], buffers));
      }),
      { numRuns: 300 },
    );
  });

  it('decodes a stream of many replies and pushes, in one chunk and under random splits', () => {
    fc.assert(
      fc.property(
        fc.array(topFrameArb, { minLength: 1, maxLength: 20 }),
        fc.boolean(),
        fc.array(fc.nat(), { maxLength: 30 }),
        (frames, buffers, cuts) => {
          const bytes = Buffer.concat(frames.map(serializeTop));
          const want = expectedEvents(frames, buffers);
          expect(decodeChunks([bytes], buffers)).toEqual(want);
          expect(decodeChunks(cut(bytes, cuts.map((c) => c % (bytes.length + 1))), buffers)).toEqual(want);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('simple string -> string, error -> RedisError with its code', () => {
    const { decoder, raw } = newDecoder(false);
    decoder.feed(Buffer.from('+OK\r\n-WRONGTYPE Operation against a key holding the wrong kind of value\r\n-NOAUTH\r\n'));
    expect(raw.map((r) => r.value)).toHaveLength(3);
    expect(raw[0]!.value).toBe('OK');
    const e = raw[1]!.value;
    expect(e).toBeInstanceOf(RedisError);
    expect((e as RedisError).code).toBe('WRONGTYPE');
    expect((e as RedisError).message).toBe('WRONGTYPE Operation against a key holding the wrong kind of value');
    expect((raw[2]!.value as RedisError).code).toBe('NOAUTH');
  });

  it('integers beyond 2^53 are bigints, within it numbers', () => {
    const { decoder, raw } = newDecoder(false);
    decoder.feed(Buffer.from(':9007199254740991\r\n:9007199254740992\r\n:-9007199254740993\r\n:-9223372036854775808\r\n:42\r\n:-7\r\n'));
    expect(raw.map((r) => r.value)).toEqual([9007199254740991, 9007199254740992n, -9007199254740993n, -9223372036854775808n, 42, -7]);
  });

  it('bulk strings: text, binary Buffers with returnBuffers, empty, null', () => {
    const binary = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    const wire = Buffer.concat([line('$256'), binary, CRLF, line('$0'), CRLF, line('$-1'), line('*-1')]);
    const asBuffers = newDecoder(true);
    asBuffers.decoder.feed(wire);
    expect(Buffer.isBuffer(asBuffers.raw[0]!.value)).toBe(true);
    expect((asBuffers.raw[0]!.value as Buffer).equals(binary)).toBe(true);
    expect(asBuffers.raw.slice(1).map((r) => r.value)).toEqual([Buffer.alloc(0), null, null]);
    const asText = newDecoder(false);
    asText.decoder.feed(Buffer.from('$6\r\nh\xc3\xa9llo\r\n', 'latin1'));
    expect(asText.raw[0]!.value).toBe('héllo');
  });

  it('decodes each top-level reply as its own caller asked (wantBuffers), under any split', () => {
    const wire = Buffer.from('*2\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n');
    const wants = [true, false, true];
    for (let at = 0; at < wire.length; at++) {
      const { decoder, raw } = newDecoder(() => wants[raw.length]!);
      for (const c of cut(wire, [at])) decoder.feed(c);
      expect(raw.map((r) => norm(r.value))).toEqual([[{ $buffer: '61' }, { $buffer: '62' }], 'c', { $buffer: '64' }]);
    }
  });

  it('RESP3 scalars: null, booleans, doubles (inf, -inf, nan), big numbers, bulk errors, verbatim strings', () => {
    const { decoder, raw } = newDecoder(false);
    decoder.feed(Buffer.from('_\r\n#t\r\n#f\r\n,1.5\r\n,inf\r\n,-inf\r\n,nan\r\n,-2e-3\r\n(3492890328409238509324850943850943825024385\r\n!21\r\nSYNTAX invalid syntax\r\n=15\r\ntxt:Some string\r\n'));
    expect(raw.map((r) => r.value)).toEqual([
      null, true, false, 1.5, Infinity, -Infinity, NaN, -0.002, 3492890328409238509324850943850943825024385n,
      expect.any(RedisError), 'Some string',
    ]);
    expect((raw[9]!.value as RedisError).code).toBe('SYNTAX');
  });

  it('map -> Map, set -> Set, aggregates nested', () => {
    const { decoder, raw } = newDecoder(false);
    decoder.feed(Buffer.from('%2\r\n+first\r\n:1\r\n$6\r\nsecond\r\n*2\r\n~2\r\n+a\r\n+b\r\n%0\r\n'));
    const v = raw[0]!.value as Map<Reply, Reply>;
    expect(v).toBeInstanceOf(Map);
    expect(v.get('first')).toBe(1);
    const inner = v.get('second') as Reply[];
    expect(inner[0]).toEqual(new Set(['a', 'b']));
    expect(inner[1]).toEqual(new Map());
  });

  it('attributes are kept out of the value and handed to onReply as its second argument', () => {
    const { decoder, raw } = newDecoder(false);
    decoder.feed(Buffer.from('|1\r\n+key-popularity\r\n%2\r\n$1\r\na\r\n,0.1923\r\n$1\r\nb\r\n,0.0012\r\n*2\r\n:2039123\r\n:9543892\r\n+next\r\n'));
    expect(raw).toHaveLength(2);
    expect(raw[0]!.value).toEqual([2039123, 9543892]);
    expect(raw[0]!.attrs).toEqual(new Map([['key-popularity', new Map([['a', 0.1923], ['b', 0.0012]])]]));
    // An attribute nested inside an aggregate is not an element of it either.
    const nested = newDecoder(false);
    nested.decoder.feed(Buffer.from('*2\r\n:1\r\n|1\r\n+ttl\r\n:3600\r\n:2\r\n'));
    expect(nested.raw[0]!.value).toEqual([1, 2]);
    expect(nested.raw[0]!.attrs).toEqual(new Map([['ttl', 3600]]));
    expect(raw[1]!.attrs).toBeUndefined();
  });

  it('push frames go to onPush, never to onReply, even between the parts of a split reply', () => {
    const { decoder, raw, pushes } = newDecoder(false);
    const wire = Buffer.from('>3\r\n+message\r\n+ch\r\n$5\r\nhello\r\n*2\r\n+a\r\n>2\r\n+x\r\n+y\r\n>3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$0\r\n\r\n');
    for (const b of wire) decoder.feed(Buffer.from([b]));
    expect(pushes).toEqual([['message', 'ch', 'hello'], ['message', 'ch', '']]);
    // A '>' nested in an aggregate is part of that reply.
    expect(raw.map((r) => r.value)).toEqual([['a', ['x', 'y']]]);
  });

  // An attribute frame inside a push (or in front of one) has no reply to belong to; it must
  // not be attached to the next, unrelated reply.
  it('attributes that came with a push frame do not leak onto the next reply', () => {
    const { decoder, raw, pushes } = newDecoder(false);
    decoder.feed(Buffer.from('>2\r\n|1\r\n+a\r\n+b\r\n+invalidate\r\n*0\r\n|1\r\n+c\r\n+d\r\n>1\r\n+x\r\n+OK\r\n'));
    expect(pushes).toEqual([['invalidate', []], ['x']]);
    expect(raw).toHaveLength(1);
    expect(raw[0]!.value).toBe('OK');
    expect(raw[0]!.attrs).toBeUndefined();
  });
});

describe('RespDecoder: malformed input', () => {
  it('random bytes yield values or one ProtocolError; feed never throws; nothing after the error', () => {
    let errored = 0;
    fc.assert(
      fc.property(garbage, fc.array(fc.nat(), { maxLength: 20 }), fc.boolean(), (bytes, cuts, buffers) => {
        const { decoder, events } = newDecoder(buffers, 64 * 1024);
        for (const c of cut(bytes, cuts.map((x) => x % (bytes.length + 1)))) {
          expect(() => decoder.feed(c)).not.toThrow();
        }
        const errors = events.filter((e) => e.kind === 'error');
        expect(errors.length).toBeLessThanOrEqual(1);
        if (errors.length === 1) {
          errored++;
          expect(events[events.length - 1]!.kind).toBe('error');
          expect((errors[0] as { error: unknown }).error).toBeInstanceOf(ProtocolError);
          // Dead: a valid reply afterwards is ignored and nothing is held.
          const before = events.length;
          decoder.feed(Buffer.from('+OK\r\n'));
          expect(events).toHaveLength(before);
          expect(decoder.bufferedBytes).toBe(0);
        }
      }),
      { numRuns: 2000 },
    );
    // The rule after the error was exercised, not only inputs that happened to decode.
    expect(errored).toBeGreaterThan(100);
  });

  it('valid replies before garbage are delivered, then one ProtocolError', () => {
    fc.assert(
      fc.property(fc.array(topFrameArb, { maxLength: 5 }), fc.array(fc.nat(), { maxLength: 10 }), (frames, cuts) => {
        const good = Buffer.concat(frames.map(serializeTop));
        const bytes = Buffer.concat([good, Buffer.from('@garbage\r\n+OK\r\n')]);
        const events = (() => {
          const { decoder, events } = newDecoder(false);
          for (const c of cut(bytes, cuts.map((x) => x % (bytes.length + 1)))) decoder.feed(c);
          return events;
        })();
        expect(events.slice(0, -1)).toEqual(expectedEvents(frames, false));
        expect(events[events.length - 1]!.kind).toBe('error');
      }),
      { numRuns: 200 },
    );
  });

  it.each([
    ['unknown type byte', '@hello\r\n'],
    ['CR without LF', '+OK\rX\n'],
    ['bulk body not followed by CRLF', '$3\r\nabcXY'],
    ['bulk length not a number', '$abc\r\n'],
    ['negative bulk length other than -1', '$-2\r\n'],
    ['map with length -1', '%-1\r\n'],
    ['integer not a number', ':12a\r\n'],
    ['integer beyond 64 bits', ':123456789012345678901\r\n'],
    ['empty integer', ':\r\n'],
    ['RESP3 null with content', '_x\r\n'],
    ['boolean neither t nor f', '#x\r\n'],
    ['double not a number', ',abc\r\n'],
    ['big number not an integer', '(1.5\r\n'],
    ['verbatim string without format', '=2\r\nab\r\n'],
    ['bulk error with length -1', '!-1\r\n'],
  ])('%s -> ProtocolError, decoder stays dead', (_what, wire) => {
    const { decoder, events } = newDecoder(false);
    decoder.feed(Buffer.from('+before\r\n'));
    decoder.feed(Buffer.from(wire, 'latin1'));
    decoder.feed(Buffer.from('\r\n+after\r\n'));
    expect(events.map((e) => e.kind)).toEqual(['reply', 'error']);
    expect((events[1] as { error: unknown }).error).toBeInstanceOf(ProtocolError);
  });

  it('nesting deeper than the limit is a ProtocolError, not a stack overflow', () => {
    const { decoder, events } = newDecoder(false);
    decoder.feed(Buffer.from('*1\r\n'.repeat(100_000)));
    expect(events.map((e) => e.kind)).toEqual(['error']);
  });

  it('deep nesting within the limit decodes', () => {
    const { decoder, raw } = newDecoder(false);
    decoder.feed(Buffer.from('*1\r\n'.repeat(500) + ':7\r\n'));
    let v: unknown = raw[0]!.value;
    for (let i = 0; i < 500; i++) v = (v as unknown[])[0];
    expect(v).toBe(7);
  });
});

describe('RespDecoder: limits and large values', () => {
  const MAX = 1024 * 1024;

  it('a bulk length over maxReplyBytes is a ProtocolError as soon as the header arrives', () => {
    const { decoder, events } = newDecoder(false, MAX);
    decoder.feed(Buffer.from(`$${MAX + 1}\r\n`));
    expect(events.map((e) => e.kind)).toEqual(['error']);
    expect((events[0] as { error: Error }).error.message).toMatch(/maxReplyBytes/);
    // The body that follows is neither buffered nor decoded.
    for (let i = 0; i < 20; i++) decoder.feed(Buffer.alloc(64 * 1024, 0x61));
    expect(decoder.bufferedBytes).toBe(0);
    expect(events).toHaveLength(1);
  });

  it('a bulk of exactly maxReplyBytes is accepted', () => {
    const { decoder, raw, events } = newDecoder(true, MAX);
    decoder.feed(Buffer.concat([line(`$${MAX}`), Buffer.alloc(MAX, 7), CRLF]));
    expect(events.map((e) => e.kind)).toEqual(['reply']);
    expect((raw[0]!.value as Buffer).length).toBe(MAX);
  });

  it('an aggregate count over maxReplyBytes is a ProtocolError', () => {
    for (const t of ['*', '%', '~', '>', '|']) {
      const { decoder, events } = newDecoder(false, MAX);
      decoder.feed(Buffer.from(`${t}${MAX + 1}\r\n`));
      expect(events.map((e) => e.kind)).toEqual(['error']);
    }
  });

  it('a header line that never ends is a ProtocolError once it exceeds maxReplyBytes, not unbounded buffering', () => {
    const { decoder, events } = newDecoder(false, MAX);
    decoder.feed(Buffer.from('+'));
    for (let i = 0; i < 40 && events.length === 0; i++) decoder.feed(Buffer.alloc(64 * 1024, 0x61));
    expect(events.map((e) => e.kind)).toEqual(['error']);
    expect(decoder.bufferedBytes).toBe(0);
  });

  it('a 50 MB bulk delivered in 64 KiB chunks decodes correctly (linear, not quadratic)', () => {
    const size = 50 * 1024 * 1024;
    const body = Buffer.allocUnsafe(size);
    for (let i = 0; i < size; i += 4) body.writeUInt32LE(i, i);
    const wire = Buffer.concat([line(`$${size}`), body, CRLF, line('+after')]);
    const { decoder, raw } = newDecoder(true);
    const chunk = 64 * 1024;
    let maxBuffered = 0;
    for (let off = 0; off < wire.length; off += chunk) {
      decoder.feed(wire.subarray(off, Math.min(wire.length, off + chunk)));
      maxBuffered = Math.max(maxBuffered, decoder.bufferedBytes);
    }
    expect(raw).toHaveLength(2);
    const got = raw[0]!.value as Buffer;
    expect(got.length).toBe(size);
    expect(got.equals(body)).toBe(true);
    expect(raw[1]!.value).toBe('after');
    expect(decoder.bufferedBytes).toBe(0);
    expect(maxBuffered).toBeLessThanOrEqual(size + 2);
  }, 30_000);

  it('many small replies in 3-byte chunks stay linear (100k replies)', () => {
    const wire = Buffer.from(':1\r\n'.repeat(100_000));
    const { decoder, raw } = newDecoder(false);
    for (let i = 0; i < wire.length; i += 3) decoder.feed(wire.subarray(i, i + 3));
    expect(raw).toHaveLength(100_000);
  }, 30_000);
});

// ------------------------------------------------------------------ encoder

/** Reference encoding written independently of the library. */
function refEncode(args: Array<string | Buffer | number | bigint>): Buffer {
  const parts: Buffer[] = [Buffer.from(`*${args.length}\r\n`)];
  for (const a of args) {
    const b = Buffer.isBuffer(a) ? a : Buffer.from(String(a), 'utf8');
    parts.push(Buffer.from(`$${b.length}\r\n`), b, CRLF);
  }
  return Buffer.concat(parts);
}

function toBytes(e: string | Array<string | Buffer>): Buffer {
  return typeof e === 'string' ? Buffer.from(e, 'utf8') : Buffer.concat(e.map((p) => (typeof p === 'string' ? Buffer.from(p, 'utf8') : p)));
}

describe('encodeCommand', () => {
  const argArb = fc.oneof(
    fc.string({ unit: 'grapheme', maxLength: 30 }),
    fc.string({ unit: 'binary', maxLength: 10 }).map((s) => Buffer.from(s, 'utf8').toString('utf8')),
    fc.uint8Array({ maxLength: 40 }).map((a) => Buffer.from(a)),
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.bigInt(),
  );

  it('encodes any mix of strings, Buffers, numbers and bigints byte for byte', () => {
    fc.assert(
      fc.property(fc.array(argArb, { minLength: 1, maxLength: 8 }), (args) => {
        const encoded = encodeCommand(args);
        const bytes = toBytes(encoded);
        expect(bytes.equals(refEncode(args))).toBe(true);
        expect(encodedLength(encoded)).toBe(bytes.length);
        // Binary arguments are passed through as they are, not copied into a string.
        const buffers = args.filter((a) => Buffer.isBuffer(a)) as unknown[];
        if (buffers.length === 0) expect(typeof encoded).toBe('string');
        else for (const b of buffers) expect((encoded as unknown[]).includes(b)).toBe(true);
        // An independent decoder finds exactly that many arguments, ending on the last byte.
        const decoded = decodeCommand(bytes)!;
        expect(decoded.next).toBe(bytes.length);
        expect(decoded.value).toHaveLength(args.length);
      }),
      { numRuns: 500 },
    );
  });

  it('uses byte lengths for unicode strings', () => {
    expect(encodeCommand(['SET', 'k€y', '😀'])).toBe('*3\r\n$3\r\nSET\r\n$5\r\nk€y\r\n$4\r\n😀\r\n');
    expect(encodeCommand(['', 'é'])).toBe('*2\r\n$0\r\n\r\n$2\r\né\r\n');
  });

  it('writes Buffers byte for byte, including CR, LF and non-UTF-8 bytes', () => {
    const bin = Buffer.from([0x00, 0x0d, 0x0a, 0xff, 0xfe, 0x80, 0x24]);
    const enc = encodeCommand(['SET', bin, 'v']);
    expect(toBytes(enc).equals(Buffer.concat([Buffer.from('*3\r\n$3\r\nSET\r\n$7\r\n'), bin, Buffer.from('\r\n$1\r\nv\r\n')]))).toBe(true);
  });

  it('encodes numbers and bigints as decimal text', () => {
    expect(encodeCommand(['EXPIRE', 'k', 10])).toBe('*3\r\n$6\r\nEXPIRE\r\n$1\r\nk\r\n$2\r\n10\r\n');
    expect(encodeCommand([-1.5, 0, 2n ** 64n])).toBe('*3\r\n$4\r\n-1.5\r\n$1\r\n0\r\n$20\r\n18446744073709551616\r\n');
  });

  it.each([
    ['null', null],
    ['undefined', undefined],
    ['boolean', true],
    ['object', { a: 1 }],
    ['array', ['x']],
    ['symbol', Symbol('s')],
  ])('rejects a %s argument with a TypeError naming its position', (_what, bad) => {
    expect(() => encodeCommand(['SET', 'k', bad as never])).toThrow(TypeError);
    expect(() => encodeCommand(['SET', 'k', bad as never])).toThrow(/argument 2/);
  });
});

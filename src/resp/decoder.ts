import { ProtocolError, RedisError } from '../errors.js';
import type { Reply } from '../types.js';

/** Default cap on a bulk length or aggregate count: 512 MiB, Redis's own `proto-max-bulk-len`. */
export const DEFAULT_MAX_REPLY_BYTES = 512 * 1024 * 1024;

/** What the decoder hands over for each complete top-level value. */
export type DecodedValue = Reply | RedisError;

/** Callbacks and limits of a {@link RespDecoder}. */
export interface DecoderOptions {
  /** Largest bulk length or aggregate count accepted; larger ones are a `ProtocolError`. */
  maxReplyBytes?: number;
  /** A complete reply (a server error reply arrives as a `RedisError` value). `attributes` holds any RESP3 attributes seen inside it. */
  onReply(value: DecodedValue, attributes: Map<Reply, Reply> | undefined): void;
  /** A RESP3 push frame (`>`): pub/sub messages, invalidations. Never matched with a command. */
  onPush(value: Reply[]): void;
  /** Malformed input. The decoder stops after this; the connection must be dropped. */
  onProtocolError(err: ProtocolError): void;
  /** Asked once at the start of each top-level value: decode bulk strings as Buffers? */
  wantBuffers?(): boolean;
}

const CR = 13;
const LF = 10;

const enum FrameKind { Array, Map, Set, Push, Attribute }

interface Frame {
  kind: FrameKind;
  remaining: number;
  items: Array<DecodedValue>;
}

/** Returned by the element parser when it opened an aggregate frame. */
const OPENED = Symbol('opened');
/** Returned when an attribute frame completed: no value to add to the parent. */
const NOTHING = Symbol('nothing');

/**
 * An incremental RESP2 + RESP3 decoder.
 *
 * It keeps an explicit stack of open aggregates, so a reply split at any byte resumes where
 * it stopped instead of being parsed again from its start, and a large bulk string that spans
 * many chunks is collected as a list of chunks and joined once (no quadratic copying).
 * Only the bytes of one unfinished line are ever carried over between chunks.
 */
export class RespDecoder {
  private readonly max: number;
  private readonly opts: DecoderOptions;
  private stack: Frame[] = [];
  // The start of a header line whose end has not arrived yet.
  private carry: Pieces | undefined;
  private buffers = false;
  private attributes: Map<Reply, Reply> | undefined;
  private dead = false;
  // A bulk body being collected across chunks.
  private bulkParts: Pieces | undefined;
  private bulkNeed = 0;
  private bulkType = 0;

  constructor(options: DecoderOptions) {
    this.opts = options;
    this.max = options.maxReplyBytes ?? DEFAULT_MAX_REPLY_BYTES;
  }

  /** Feeds bytes from the socket. Complete values are delivered through the callbacks before it returns. */
  feed(chunk: Buffer): void {
    if (this.dead || chunk.length === 0) return;
    try {
      this.run(chunk);
    } catch (err) {
      this.dead = true;
      this.carry = undefined;
      this.bulkParts = undefined;
      this.stack = [];
      const perr = err instanceof ProtocolError ? err : new ProtocolError(`Could not decode the reply: ${(err as Error).message}`, { cause: err });
      this.opts.onProtocolError(perr);
    }
  }

  /** Bytes held while waiting for the rest of a value (for tests and stats). */
  get bufferedBytes(): number {
    return (this.carry?.length ?? 0) + (this.bulkParts?.length ?? 0);
  }

  private run(chunk: Buffer): void {
    let buf = chunk;
    let pos = 0;
    if (this.bulkParts !== undefined) {
      const take = this.bulkNeed;
      if (take > chunk.length) {
        this.bulkParts.add(chunk);
        this.bulkNeed -= chunk.length;
        return;
      }
      const body = this.bulkParts.join(chunk.subarray(0, take));
      this.bulkParts = undefined;
      if (body[body.length - 2] !== CR || body[body.length - 1] !== LF) throw new ProtocolError('A bulk string is not followed by CRLF.');
      this.complete(this.bulkValue(this.bulkType, body, 0, body.length - 2));
      pos = take;
    } else if (this.carry !== undefined) {
      const carry = this.carry;
      // Still no end of line (past its type byte the carry holds no CR, but maybe as its last
      // byte): keep the chunk and join once the end arrives, so that a long line fed in small
      // chunks costs linear time, not a copy and a scan of everything so far per chunk.
      if (carry.last !== CR) {
        const cr = chunk.indexOf(CR);
        if (cr === -1 || cr === chunk.length - 1) {
          carry.add(chunk);
          if (carry.length > this.max) throw new ProtocolError(`A reply line is longer than maxReplyBytes (${this.max}).`);
          return;
        }
      }
      buf = carry.join(chunk);
      this.carry = undefined;
    }
    const len = buf.length;
    while (pos < len) {
      if (this.stack.length === 0 && this.attributes === undefined) this.buffers = this.opts.wantBuffers?.() ?? false;
      const start = pos;
      const type = buf[pos]!;
      // Every element starts with a header line.
      const cr = buf.indexOf(CR, pos + 1);
      if (cr === -1 || cr + 1 >= len) {
        if (len - start > this.max) throw new ProtocolError(`A reply line is longer than maxReplyBytes (${this.max}).`);
        this.carry = new Pieces(buf.subarray(start));
        return;
      }
      // The same limit on a line that arrived whole, so that the outcome does not depend on where the chunks were cut.
      if (cr - start >= this.max) throw new ProtocolError(`A reply line is longer than maxReplyBytes (${this.max}).`);
      if (buf[cr + 1] !== LF) throw new ProtocolError('A reply line ends with CR without LF.');
      const next = cr + 2;
      let value: DecodedValue | typeof OPENED | typeof NOTHING;
      switch (type) {
        case 43: // '+' simple string; '+OK' is by far the most common reply
          value = cr === pos + 3 && buf[pos + 1] === 79 && buf[pos + 2] === 75 ? 'OK' : buf.toString('utf8', pos + 1, cr);
          break;
        case 45: // '-' error
          value = new RedisError(buf.toString('utf8', pos + 1, cr));
          break;
        case 58: // ':' integer
          value = parseInteger(buf, pos + 1, cr);
          break;
        case 36: // '$' bulk string
        case 33: // '!' bulk error
        case 61: { // '=' verbatim string
          const n = parseLength(buf, pos + 1, cr, this.max, true);
          if (n === -1) {
            if (type !== 36) throw new ProtocolError('Only bulk strings may have length -1.');
            value = null;
            break;
          }
          const end = next + n;
          if (end + 2 > len) {
            // Body incomplete: collect the rest chunk by chunk.
            this.bulkParts = new Pieces(buf.subarray(next));
            this.bulkNeed = end + 2 - len;
            this.bulkType = type;
            return;
          }
          if (buf[end] !== CR || buf[end + 1] !== LF) throw new ProtocolError('A bulk string is not followed by CRLF.');
          value = this.bulkValue(type, buf, next, end);
          pos = end + 2;
          this.complete(value);
          continue;
        }
        case 42: // '*' array
        case 37: // '%' map
        case 126: // '~' set
        case 62: // '>' push
        case 124: { // '|' attribute
          const n = parseLength(buf, pos + 1, cr, this.max, type === 42);
          if (n === -1) { value = null; break; }
          const kind = type === 42 ? FrameKind.Array : type === 37 ? FrameKind.Map : type === 126 ? FrameKind.Set : type === 62 ? FrameKind.Push : FrameKind.Attribute;
          const count = kind === FrameKind.Map || kind === FrameKind.Attribute ? n * 2 : n;
          if (count === 0) {
            value = this.closeFrame({ kind, remaining: 0, items: [] });
          } else {
            if (this.stack.length >= 512) throw new ProtocolError('Reply nesting is deeper than 512 levels.');
            this.stack.push({ kind, remaining: count, items: [] });
            value = OPENED;
          }
          break;
        }
        case 95: // '_' null
          if (cr !== pos + 1) throw new ProtocolError('A RESP3 null has content.');
          value = null;
          break;
        case 35: { // '#' boolean
          const c = buf[pos + 1];
          if (cr !== pos + 2 || (c !== 116 && c !== 102)) throw new ProtocolError('A RESP3 boolean is neither t nor f.');
          value = c === 116;
          break;
        }
        case 44: // ',' double
          value = parseDouble(buf.toString('latin1', pos + 1, cr));
          break;
        case 40: { // '(' big number
          const text = buf.toString('latin1', pos + 1, cr);
          if (!/^-?\d+$/.test(text)) throw new ProtocolError('A RESP3 big number is not an integer.');
          value = BigInt(text);
          break;
        }
        default:
          throw new ProtocolError(`Unexpected byte 0x${type.toString(16).padStart(2, '0')} where a RESP type marker was expected.`);
      }
      pos = next;
      if (value !== OPENED) this.complete(value);
    }
  }

  private bulkValue(type: number, buf: Buffer, start: number, end: number): DecodedValue {
    if (type === 33) return new RedisError(buf.toString('utf8', start, end));
    if (type === 61) {
      // Verbatim strings carry a 3-letter format and ':' before the text.
      if (end - start < 4 || buf[start + 3] !== 58) throw new ProtocolError('A RESP3 verbatim string lacks its format prefix.');
      start += 4;
    }
    if (this.buffers) {
      const out = Buffer.allocUnsafe(end - start);
      buf.copy(out, 0, start, end);
      return out;
    }
    return buf.toString('utf8', start, end);
  }

  /** Adds a finished value to the open aggregate, closing every aggregate it completes. */
  private complete(value: DecodedValue | typeof NOTHING): void {
    for (;;) {
      const top = this.stack[this.stack.length - 1];
      if (top === undefined) {
        if (value === NOTHING) return; // a top-level attribute: the value it describes follows
        const attrs = this.attributes;
        this.attributes = undefined;
        this.opts.onReply(value, attrs);
        return;
      }
      if (value === NOTHING) return;
      top.items.push(value);
      if (--top.remaining > 0) return;
      this.stack.pop();
      value = this.closeFrame(top);
      if (value === NOTHING) return;
    }
  }

  private closeFrame(f: Frame): DecodedValue | typeof NOTHING {
    switch (f.kind) {
      case FrameKind.Array:
        return f.items as Reply[];
      case FrameKind.Push:
        if (this.stack.length === 0) {
          this.attributes = undefined;
          this.opts.onPush(f.items as Reply[]);
          return NOTHING;
        }
        return f.items as Reply[];
      case FrameKind.Set:
        return new Set(f.items as Reply[]);
      case FrameKind.Map:
      case FrameKind.Attribute: {
        const m = new Map<Reply, Reply>();
        for (let i = 0; i < f.items.length; i += 2) m.set(f.items[i] as Reply, f.items[i + 1] as Reply);
        if (f.kind === FrameKind.Map) return m;
        if (this.attributes === undefined) this.attributes = m;
        else for (const [k, v] of m) this.attributes.set(k, v);
        return NOTHING;
      }
    }
  }
}

/** Pieces of at least this many bytes are held as they came; smaller ones are copied together. */
const SMALL_PIECE = 1024;
const TAIL_MIN = 2048;
const TAIL_MAX = 64 * 1024;

/**
 * Bytes held across chunks until a line or a bulk body is complete, then joined once.
 * Large pieces are kept as they are (no copy); small ones are copied into a shared tail
 * buffer, so that a value arriving in many tiny chunks costs about its own size in memory,
 * not a Buffer object (and its backing store) per chunk.
 */
class Pieces {
  length = 0;
  /** The last byte added (-1 while empty). */
  last = -1;
  private readonly list: Buffer[] = [];
  private tail: Buffer | undefined;
  private used = 0;

  /** The first piece (the rest of the chunk that started the value) is held as it is. */
  constructor(first: Buffer) {
    const n = first.length;
    if (n === 0) return;
    this.length = n;
    this.last = first[n - 1]!;
    this.list.push(first);
  }

  add(b: Buffer): void {
    const n = b.length;
    if (n === 0) return;
    this.length += n;
    this.last = b[n - 1]!;
    if (n >= SMALL_PIECE) {
      this.seal();
      this.list.push(b);
      return;
    }
    let t = this.tail;
    if (t === undefined) {
      t = this.tail = Buffer.allocUnsafe(TAIL_MIN);
    } else if (this.used + n > t.length) {
      if (t.length < TAIL_MAX) {
        const grown = Buffer.allocUnsafe(t.length * 2);
        t.copy(grown, 0, 0, this.used);
        t = this.tail = grown;
      } else {
        this.seal();
        t = this.tail = Buffer.allocUnsafe(TAIL_MAX);
      }
    }
    b.copy(t, this.used);
    this.used += n;
  }

  /** Everything added, then `extra`, as one Buffer. */
  join(extra?: Buffer): Buffer {
    const list = this.list;
    if (this.tail !== undefined) list.push(this.tail.subarray(0, this.used));
    this.tail = undefined;
    if (extra !== undefined) list.push(extra);
    return list.length === 1 ? list[0]! : Buffer.concat(list, this.length + (extra?.length ?? 0));
  }

  private seal(): void {
    const t = this.tail;
    if (t === undefined) return;
    // A mostly empty tail is copied out at its size rather than held whole.
    if (this.used > 0) this.list.push(this.used * 2 < t.length ? Buffer.from(t.subarray(0, this.used)) : t.subarray(0, this.used));
    this.tail = undefined;
    this.used = 0;
  }
}

function parseLength(buf: Buffer, start: number, end: number, max: number, allowNull: boolean): number {
  if (end - start === 2 && buf[start] === 45 && buf[start + 1] === 49) {
    if (!allowNull) throw new ProtocolError('Only bulk strings and arrays may have length -1.');
    return -1;
  }
  if (end === start || end - start > 12) throw new ProtocolError('A length is empty or too long.');
  let n = 0;
  for (let i = start; i < end; i++) {
    const c = buf[i]! - 48;
    if (c < 0 || c > 9) throw new ProtocolError('A length is not a number.');
    n = n * 10 + c;
  }
  if (n > max) throw new ProtocolError(`A reply length of ${n} exceeds maxReplyBytes (${max}).`);
  return n;
}

function parseInteger(buf: Buffer, start: number, end: number): number | bigint {
  let i = start;
  let neg = false;
  if (buf[i] === 45) { neg = true; i++; } else if (buf[i] === 43) i++;
  if (i === end || end - i > 19) throw new ProtocolError('An integer reply is empty or too long.');
  if (end - i > 15) {
    const text = buf.toString('latin1', start, end);
    if (!/^[-+]?\d+$/.test(text)) throw new ProtocolError('An integer reply is not a number.');
    const big = BigInt(text);
    // Lossless: beyond 2^53 the value stays a bigint.
    return big >= BigInt(Number.MIN_SAFE_INTEGER) && big <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : big;
  }
  let n = 0;
  for (; i < end; i++) {
    const c = buf[i]! - 48;
    if (c < 0 || c > 9) throw new ProtocolError('An integer reply is not a number.');
    n = n * 10 + c;
  }
  return neg ? -n : n;
}

function parseDouble(text: string): number {
  switch (text) {
    case 'inf': case '+inf': return Infinity;
    case '-inf': return -Infinity;
    case 'nan': case '-nan': return NaN;
  }
  const n = Number(text);
  if (text === '' || Number.isNaN(n) || !/^[-+]?[\d.]+([eE][-+]?\d+)?$/.test(text)) throw new ProtocolError('A RESP3 double is not a number.');
  return n;
}

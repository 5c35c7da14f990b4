/**
 * A tiny RESP codec for the test harness, written independently of `src/resp`
 * so that a bug in the library's codec cannot hide itself in the tests that
 * exercise it. It handles what the harness needs and nothing more:
 * - encoding commands as arrays of bulk strings;
 * - decoding RESP2 replies (plus the RESP3 scalar and aggregate types, in case
 *   a test switches a connection to RESP3), with bulk strings as UTF-8 text;
 * - decoding the commands a client sends (multibulk or inline).
 */

/** An error reply (`-ERR ...`) as the harness sees it. */
export class ReplyError extends Error {
  override readonly name = 'ReplyError';
}

export type RespValue = string | number | bigint | boolean | null | ReplyError | RespValue[];

/** A decoded frame and the offset just past it. */
export interface Decoded<T> {
  value: T;
  next: number;
}

const CRLF = '\r\n';

/** Encodes one command as a RESP array of bulk strings. */
export function encodeCommand(args: readonly (string | number | Buffer)[]): Buffer {
  const parts: Buffer[] = [Buffer.from(`*${args.length}${CRLF}`)];
  for (const arg of args) {
    const bytes = Buffer.isBuffer(arg) ? arg : Buffer.from(String(arg));
    parts.push(Buffer.from(`$${bytes.length}${CRLF}`), bytes, Buffer.from(CRLF));
  }
  return Buffer.concat(parts);
}

function readLine(buf: Buffer, pos: number): Decoded<string> | undefined {
  const end = buf.indexOf(CRLF, pos);
  if (end < 0) return undefined;
  return { value: buf.toString('utf8', pos, end), next: end + 2 };
}

function parseIntStrict(text: string, what: string): number {
  if (!/^-?\d+$/.test(text)) throw new Error(`Protocol error: bad ${what} ${JSON.stringify(text)}`);
  return Number(text);
}

/**
 * Decodes one reply starting at `pos`. Returns `undefined` when the buffer
 * does not yet hold a whole frame; throws on a malformed frame.
 */
export function decodeReply(buf: Buffer, pos = 0): Decoded<RespValue> | undefined {
  if (pos >= buf.length) return undefined;
  const type = String.fromCharCode(buf[pos]!);
  const line = readLine(buf, pos + 1);
  if (!line) return undefined;
  switch (type) {
    case '+':
      return line;
    case '-':
      return { value: new ReplyError(line.value), next: line.next };
    case ':':
      return { value: parseIntStrict(line.value, 'integer'), next: line.next };
    case '(':
      return { value: BigInt(line.value), next: line.next };
    case ',':
      return { value: Number(line.value.replace(/^(-?)inf$/, '$1Infinity')), next: line.next };
    case '#':
      return { value: line.value === 't', next: line.next };
    case '_':
      return { value: null, next: line.next };
    case '$':
    case '=':
    case '!': {
      const len = parseIntStrict(line.value, 'bulk length');
      if (len < 0) return { value: null, next: line.next };
      if (buf.length < line.next + len + 2) return undefined;
      const text = buf.toString('utf8', line.next, line.next + len);
      const next = line.next + len + 2;
      if (type === '!') return { value: new ReplyError(text), next };
      return { value: type === '=' ? text.slice(4) : text, next };
    }
    case '*':
    case '~':
    case '>':
    case '%': {
      const count = parseIntStrict(line.value, 'aggregate length');
      if (count < 0) return { value: null, next: line.next };
      const items = type === '%' ? count * 2 : count;
      const out: RespValue[] = [];
      let next = line.next;
      for (let i = 0; i < items; i++) {
        const item = decodeReply(buf, next);
        if (!item) return undefined;
        out.push(item.value);
        next = item.next;
      }
      return { value: out, next };
    }
    default:
      throw new Error(`Protocol error: unexpected type byte ${JSON.stringify(type)}`);
  }
}

/**
 * Decodes one client command (a multibulk array of bulk strings, or an inline
 * command line) starting at `pos`. Returns `undefined` when incomplete.
 */
export function decodeCommand(buf: Buffer, pos = 0): Decoded<string[]> | undefined {
  if (pos >= buf.length) return undefined;
  if (buf[pos] !== 0x2a /* '*' */) {
    const line = readLine(buf, pos);
    if (!line) return undefined;
    const args = line.value.trim().split(/\s+/).filter((a) => a.length > 0);
    return { value: args, next: line.next };
  }
  const header = readLine(buf, pos + 1);
  if (!header) return undefined;
  const count = parseIntStrict(header.value, 'multibulk length');
  const args: string[] = [];
  let next = header.next;
  for (let i = 0; i < count; i++) {
    if (next >= buf.length) return undefined;
    if (buf[next] !== 0x24 /* '$' */) {
      throw new Error(`Protocol error: expected '$', got ${JSON.stringify(String.fromCharCode(buf[next]!))}`);
    }
    const len = readLine(buf, next + 1);
    if (!len) return undefined;
    const n = parseIntStrict(len.value, 'bulk length');
    if (buf.length < len.next + n + 2) return undefined;
    args.push(buf.toString('utf8', len.next, len.next + n));
    next = len.next + n + 2;
  }
  return { value: args, next };
}

/** Wire-format builders for scripted replies. Aggregates take already-encoded items. */
export const resp = {
  simple: (s: string): string => `+${s}${CRLF}`,
  error: (s: string): string => `-${s}${CRLF}`,
  int: (n: number | bigint): string => `:${n}${CRLF}`,
  /** A bulk string; `null` gives the RESP2 null bulk `$-1`. Length is in bytes. */
  bulk: (s: string | null): string => (s === null ? `$-1${CRLF}` : `$${Buffer.byteLength(s)}${CRLF}${s}${CRLF}`),
  /** An array of already-encoded items; `null` gives the RESP2 null array `*-1`. */
  array: (items: readonly string[] | null): string =>
    items === null ? `*-1${CRLF}` : `*${items.length}${CRLF}${items.join('')}`,
  /** A RESP3 push frame of already-encoded items. */
  push: (items: readonly string[]): string => `>${items.length}${CRLF}${items.join('')}`,
  /** A RESP3 map of already-encoded key/value pairs. */
  map: (pairs: readonly (readonly [string, string])[]): string =>
    `%${pairs.length}${CRLF}${pairs.map(([k, v]) => k + v).join('')}`,
  /** The RESP3 null `_`. */
  null: (): string => `_${CRLF}`,
  /** An array of bulk strings, for the common "reply with a list of words" case. */
  bulks: (items: readonly string[]): string => `*${items.length}${CRLF}${items.map((s) => resp.bulk(s)).join('')}`,
};

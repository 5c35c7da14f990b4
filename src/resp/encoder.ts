import type { Arg } from '../types.js';

/**
 * Encodes one command as RESP (an array of bulk strings).
 *
 * The result is a string when every argument is text (the common case: one string
 * concatenation, no Buffer allocation), or a list of parts when a Buffer is present,
 * so binary values are written as they are, byte for byte, without a copy.
 */
export function encodeCommand(args: readonly Arg[]): string | Array<string | Buffer> {
  let out = '*' + args.length + '\r\n';
  let parts: Array<string | Buffer> | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (typeof a === 'string') {
      out += '$' + Buffer.byteLength(a) + '\r\n' + a + '\r\n';
    } else if (typeof a === 'number' || typeof a === 'bigint') {
      const s = String(a);
      out += '$' + s.length + '\r\n' + s + '\r\n';
    } else if (Buffer.isBuffer(a)) {
      (parts ??= []).push(out + '$' + a.length + '\r\n', a);
      out = '\r\n';
    } else {
      throw new TypeError(`Command argument ${i} must be a string, Buffer, number or bigint (got ${a === null ? 'null' : typeof a}).`);
    }
  }
  if (parts === undefined) return out;
  parts.push(out);
  return parts;
}

/** Byte length of an encoded command, for write-size accounting. */
export function encodedLength(encoded: string | Array<string | Buffer>): number {
  if (typeof encoded === 'string') return Buffer.byteLength(encoded);
  let n = 0;
  for (const p of encoded) n += typeof p === 'string' ? Buffer.byteLength(p) : p.length;
  return n;
}

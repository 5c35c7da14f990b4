import type { Arg } from '../types.js';

/** Number of hash slots in a Redis Cluster. */
export const SLOT_COUNT = 16384;

// CRC16/XMODEM (poly 0x1021, init 0, no reflection, no final xor), the variant Redis uses.
// A 256-entry table processes a byte per lookup instead of eight shift/xor steps.
const TABLE = /* @__PURE__ */ (() => {
  const t = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let crc = i << 8;
    for (let b = 0; b < 8; b++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    t[i] = crc;
  }
  return t;
})();

const OPEN = 0x7b; // '{'
const CLOSE = 0x7d; // '}'

/**
 * CRC16/XMODEM of `bytes[start, end)`. `crc16(Buffer.from('123456789')) === 0x31c3`.
 */
export function crc16(bytes: Uint8Array, start = 0, end = bytes.length): number {
  let crc = 0;
  for (let i = start; i < end; i++) crc = ((crc << 8) & 0xff00) ^ TABLE[((crc >> 8) ^ bytes[i]!) & 0xff]!;
  return crc;
}

function bytesSlot(bytes: Uint8Array): number {
  const len = bytes.length;
  let open = -1;
  for (let i = 0; i < len; i++) {
    if (bytes[i] === OPEN) {
      open = i;
      break;
    }
  }
  if (open !== -1) {
    for (let i = open + 1; i < len; i++) {
      if (bytes[i] === CLOSE) {
        // An empty tag (`{}`) does not count: Redis then hashes the whole key, and so
        // must we, or `foo{}{bar}` lands on a different node than the server expects.
        if (i > open + 1) return crc16(bytes, open + 1, i) & 0x3fff;
        break;
      }
    }
  }
  return crc16(bytes, 0, len) & 0x3fff;
}

/**
 * The hash slot (0..16383) of a key, exactly as Redis's `keyHashSlot` computes it:
 * CRC16/XMODEM mod 16384 over the key's UTF-8 bytes, or over the hash tag only when the key
 * has one. The hash tag is what lies between the first `{` and the first `}` after it, and it
 * counts only when non-empty (so `foo{}{bar}` hashes the whole key, and `{}x` too).
 *
 * Numbers and bigints are hashed as their decimal text, which is what the encoder sends.
 */
export function keySlot(key: Arg): number {
  if (typeof key !== 'string') {
    if (typeof key === 'number' || typeof key === 'bigint') key = String(key);
    else return bytesSlot(key);
  }
  // Fast path: no allocation. It is valid even when the key has non-ASCII characters
  // *outside* the hashed range, because '{' and '}' are single UTF-8 bytes that never occur
  // inside a multi-byte sequence, so the first '{' character is also the first '{' byte.
  let start = 0;
  let end = key.length;
  const open = key.indexOf('{');
  if (open !== -1) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) {
      start = open + 1;
      end = close;
    }
  }
  let crc = 0;
  for (let i = start; i < end; i++) {
    const c = key.charCodeAt(i);
    if (c >= 0x80) return bytesSlot(Buffer.from(key, 'utf8'));
    crc = ((crc << 8) & 0xff00) ^ TABLE[((crc >> 8) ^ c) & 0xff]!;
  }
  return crc & 0x3fff;
}

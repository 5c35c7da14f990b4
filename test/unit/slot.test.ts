import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { crc16, keySlot, SLOT_COUNT } from '../../src/cluster/slot.js';
import { startStandalone, type StandaloneTopology } from '../support/topology.js';
import { decodeReply, encodeCommand } from '../support/resp-wire.js';

describe('crc16', () => {
  it('matches the CRC16/XMODEM check value', () => {
    expect(crc16(Buffer.from('123456789'))).toBe(0x31c3);
  });
  it('is 0 for no bytes', () => {
    expect(crc16(Buffer.alloc(0))).toBe(0);
  });
});

describe('keySlot', () => {
  // Expected slots come from `CLUSTER KEYSLOT` on redis-server 7.0.15.
  it.each([
    ['123456789', 12739],
    ['foo', 12182],
    ['bar', 5061],
    ['foo{bar}', 5061],
    ['foo{}{bar}', 8363], // empty first tag: whole key (the cluster-key-slot package says 4015)
    ['{}foo', 9500],
    ['foo{', 7673],
    ['a{b', 13340],
    ['{', 4092],
    ['{}', 15257],
    ['{a}}', 15495],
    ['}{a}', 15495], // a '}' before the first '{' does not matter
    ['{{a}}', 10276], // the tag is "{a"
    ['', 0],
    ['{user1000}.following', 3443],
    ['ключ', 10303],
    ['héllo', 11061],
    ['标签', 10302],
    ['键{标签}x', 10302], // non-ASCII inside the tag
  ])('%j -> %i', (key, slot) => {
    expect(keySlot(key)).toBe(slot);
  });

  it('gives keys with the same hash tag the same slot', () => {
    expect(keySlot('{user1000}.following')).toBe(keySlot('{user1000}.followers'));
  });

  it('hashes Buffers by their bytes, including non-UTF-8 ones', () => {
    expect(keySlot(Buffer.from('foo{}{bar}'))).toBe(8363);
    expect(keySlot(Buffer.from([0xff, 0xfe, 0x7b, 0x80, 0x7d]))).toBe(4488);
  });

  it('hashes numbers and bigints as their decimal text', () => {
    expect(keySlot(123456789)).toBe(12739);
    expect(keySlot(123456789n)).toBe(12739);
  });

  it('agrees between the string fast path and the Buffer path', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 20 }), (s) => {
        expect(keySlot(s)).toBe(keySlot(Buffer.from(s, 'utf8')));
      }),
      { numRuns: 2000 },
    );
  });

  it('always returns a slot in range', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 40 }), (bytes) => {
        const s = keySlot(Buffer.from(bytes));
        expect(s >= 0 && s < SLOT_COUNT).toBe(true);
      }),
    );
  });
});

/** Pipelines commands on one connection and returns the replies (error replies as Error values). */
async function pipeline(port: number, commands: (string | Buffer)[][]): Promise<unknown[]> {
  const socket = net.connect({ host: '127.0.0.1', port });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  return new Promise((resolve, reject) => {
    const replies: unknown[] = [];
    let buf = Buffer.alloc(0);
    socket.on('error', reject);
    socket.on('data', (chunk) => {
      buf = Buffer.concat([buf, chunk]);
      let pos = 0;
      for (;;) {
        const r = decodeReply(buf, pos);
        if (!r) break;
        replies.push(r.value);
        pos = r.next;
      }
      buf = buf.subarray(pos);
      if (replies.length === commands.length) {
        socket.destroy();
        resolve(replies);
      }
    });
    socket.write(Buffer.concat(commands.map((c) => encodeCommand(c))));
  });
}

describe('keySlot against CLUSTER KEYSLOT on a real server', () => {
  let server: StandaloneTopology;

  beforeAll(async () => {
    server = await startStandalone({ config: { 'cluster-enabled': 'yes' } });
  }, 30_000);

  afterAll(async () => {
    await server?.stop();
  });

  it('agrees for 2000 random keys with braces, unicode and raw bytes', async () => {
    // Bias towards braces: they are where implementations disagree.
    const braceHeavy = fc.string({ unit: fc.constantFrom('{', '}', 'a', 'b', 'é', '键', '😀', 'x'), maxLength: 12 });
    const strings = fc.sample(fc.oneof(braceHeavy, fc.string({ unit: 'grapheme', maxLength: 30 }), fc.string({ maxLength: 30 })), {
      numRuns: 1600,
      seed: 42,
    });
    const buffers = fc
      .sample(fc.uint8Array({ maxLength: 24 }), { numRuns: 400, seed: 7 })
      .map((b, i) => (i % 2 ? Buffer.from(b) : Buffer.concat([Buffer.from(b), Buffer.from('{'), Buffer.from(b.slice(0, 3)), Buffer.from('}')])));
    const keys: (string | Buffer)[] = [...strings, ...buffers];
    const replies = await pipeline(
      server.address.port,
      keys.map((k) => ['CLUSTER', 'KEYSLOT', k]),
    );
    expect(replies.every((r) => typeof r === 'number')).toBe(true);
    // Enough keys exercise the tag rule, with both non-empty and empty tags.
    expect(keys.filter((k) => /\{[^}]+\}/.test(k.toString('latin1'))).length).toBeGreaterThan(200);
    expect(keys.filter((k) => k.toString('latin1').includes('{}')).length).toBeGreaterThan(30);
    const mismatches = keys.filter((k, i) => keySlot(k) !== replies[i]);
    expect(mismatches).toEqual([]);
    expect(keys.length).toBe(2000);
  });
});

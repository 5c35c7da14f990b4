/**
 * What one flush hands the socket (src/connection/write-batch.ts): the queued encodings in
 * order, commands given up before the write left out, Buffers and very long text as chunks.
 * test/unit/connection.test.ts checks the same against a socket.
 */
import { describe, expect, it } from 'vitest';
import { partsSize, QUEUED, SETTLED } from '../../src/connection/command.js';
import { chunkEnd, skippedByFlush, writeOf, type QueuedEncoding } from '../../src/connection/write-batch.js';

const q = (encoded: string | Array<string | Buffer>, state = QUEUED): QueuedEncoding => ({ state, encoded, size: typeof encoded === 'string' ? encoded.length : partsSize(encoded) });
const gaveUp = (encoded: string | Array<string | Buffer>) => q(encoded, SETTLED);
const buf = Buffer.from([0xff, 0x00, 0x01]);

describe('skippedByFlush', () => {
  it.each<[string, QueuedEncoding, boolean]>([
    ['queued', q('A'), false],
    ['settled before the write (timeout, abort)', gaveUp('A'), true],
    ['settled, with Buffer parts', gaveUp(['A', buf]), true],
    ['a SUBSCRIBE placeholder, even settled: it must absorb its confirmation', gaveUp(''), false],
    ['a queued placeholder', q(''), false],
  ])('%s -> %s', (_, cmd, expected) => {
    expect(skippedByFlush(cmd)).toBe(expected);
  });
});

describe('writeOf', () => {
  it.each<[string, QueuedEncoding[], number, string | Array<string | Buffer>]>([
    ['nothing queued', [], 10, ''],
    ['one command', [q('A')], 10, 'A'],
    ['text is joined into one string, in order', [q('A'), q('B'), q('C')], 10, 'ABC'],
    ['given-up commands are left out', [q('A'), gaveUp('X'), q('B')], 10, 'AB'],
    ['only given-up commands: nothing to write', [gaveUp('X'), gaveUp(['Y', buf])], 10, ''],
    ['placeholders add no bytes', [q('S'), q(''), q(''), q('B')], 10, 'SB'],
    ['a Buffer-carrying command splits the text around its parts', [q('A'), q(['$3\r\n', buf, '\r\n']), q('B')], 10, ['A', '$3\r\n', buf, '\r\n', 'B']],
    ['parts first: no empty string before them', [q(['P', buf]), q('B')], 10, ['P', buf, 'B']],
    ['parts last: no empty string after them', [q('A'), q(['P', buf])], 10, ['A', 'P', buf]],
    ['a given-up Buffer command leaves one string', [q('A'), gaveUp(['P', buf]), q('B')], 10, 'AB'],
    ['text at the limit stays one string', [q('12345'), q('67890')], 10, '1234567890'],
    ['text past the limit is cut after the command that passed it', [q('123456'), q('78901'), q('AB')], 10, ['12345678901', 'AB']],
    ['…and a batch that ends just past it is chunks, not one string', [q('123456'), q('78901')], 10, ['12345678901']],
    ['one long command past the limit, then more', [q('x'.repeat(12)), q('y'.repeat(12)), q('z')], 10, ['x'.repeat(12), 'y'.repeat(12), 'z']],
  ])('%s', (_, batch, limit, expected) => {
    expect(writeOf(batch, limit)).toEqual(expected);
  });
});

describe('chunkEnd', () => {
  const sized = (...sizes: number[]) => sizes.map((n) => q('x'.repeat(n)));
  it.each<[string, QueuedEncoding[], number, number, number]>([
    ['an empty queue', [], 0, 10, 0],
    ['all of it fits under the cap', sized(3, 3, 3), 0, 10, 3],
    ['ends after the command that reaches the cap', sized(4, 4, 4, 4), 0, 8, 2],
    ['…or passes it', sized(4, 5, 4), 0, 8, 2],
    ['one command larger than the cap is a chunk by itself', sized(20, 1), 0, 8, 1],
    ['counts from start', sized(4, 4, 4, 4), 2, 8, 4],
    ['placeholders weigh nothing', [q('abcd'), q(''), q(''), q('efgh'), q('i')], 0, 8, 4],
  ])('%s', (_, queue, start, cap, expected) => {
    expect(chunkEnd(queue, start, cap)).toBe(expected);
  });
  it('chunks cover the queue exactly once, in order', () => {
    const queue = sized(...Array.from({ length: 50 }, (_, i) => (i * 7) % 13 + 1));
    const ends: number[] = [];
    for (let s = 0; s < queue.length; ) ends.push((s = chunkEnd(queue, s, 16)));
    expect(ends.at(-1)).toBe(queue.length);
    expect(ends.every((e, i) => i === 0 || e > ends[i - 1]!)).toBe(true);
  });
});

/**
 * What one flush hands the socket (src/connection/write-batch.ts): the queued encodings in
 * order, commands given up before the write left out, Buffers and very long text as chunks.
 * test/unit/connection.test.ts checks the same against a socket.
 */
import { describe, expect, it } from 'vitest';
import { QUEUED, SETTLED } from '../../src/connection/command.js';
import { skippedByFlush, writeOf, type QueuedEncoding } from '../../src/connection/write-batch.js';

const q = (encoded: string | Array<string | Buffer>, state = QUEUED): QueuedEncoding => ({ state, encoded });
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

/**
 * Addresses as users write them: what a URL may carry is used, and what it may not carry
 * (query parameters, a fragment, a bad port) is refused with a TypeError that says so,
 * never ignored, and never repeats a password.
 */
import { describe, expect, it } from 'vitest';
import { parseAddress } from '../../src/address.js';

const SECRET = 'pw-Zq81';

describe('parseAddress', () => {
  it.each([
    ['127.0.0.1:6380', { host: '127.0.0.1', port: 6380 }],
    ['[::1]:6380', { host: '::1', port: 6380 }],
    ['redis://h', { host: 'h', port: 6379 }],
    ['redis://h:', { host: 'h', port: 6379 }],
    ['rediss://h:6390', { host: 'h', port: 6390, tls: true }],
    ['redis://[::1]:6380/1', { host: '::1', port: 6380, db: 1 }],
    ['redis://u:p@h:7000/3', { host: 'h', port: 7000, username: 'u', password: 'p', db: 3 }],
    ['redis://u:p%2Fw@h:6379', { host: 'h', port: 6379, username: 'u', password: 'p/w' }],
    ['redis://u:p@ss@h:6379', { host: 'h', port: 6379, username: 'u', password: 'p@ss' }],
  ])('%s', (input, expected) => {
    expect(parseAddress(input, 'address')).toEqual(expected);
  });

  it.each([
    ['redis://h:99999', /address port must be an integer from 1 to 65535 \(got '99999'\)/],
    ['redis://h:abc', /address port must be an integer from 1 to 65535 \(got 'abc'\)/],
    ['redis://h:0', /address port must be an integer from 1 to 65535 \(got '0'\)/],
    [`redis://:${SECRET}@h:65536/0`, /address port must be an integer from 1 to 65535 \(got '65536'\)/],
    ['h:70000', /address port must be an integer from 1 to 65535 \(got 70000\)/],
    [{ host: 'h', port: '6379' }, /address\.port must be an integer from 1 to 65535 \(got the string "6379"\)/],
    [{ host: 'h', port: 6379.5 }, /address\.port must be an integer from 1 to 65535 \(got 6379\.5\)/],
    [{ host: 'h', port: null }, /address\.port must be an integer from 1 to 65535 \(got object\)/],
    ['redis://h:6379?timeout=500', /query parameters 'timeout' \(use connectTimeout or commandTimeout\).*options of create\(\)/],
    ['redis://h:6379/0?protocol=3', /query parameters 'protocol' \(use protocol \(2 or 3\)\)/],
    ['redis://h:6379?protocol=3&db=2', /'protocol' .*'db' \(use the URL path/],
    ['redis://h:6379?family=6', /query parameters 'family'/],
    ['redis://h:6379?', /query parameters/],
    ['redis://h:6379#frag', /URL fragment/],
  ])('refuses %j', (input, message) => {
    // Objects as a JavaScript caller may pass them, whatever the types say.
    expect(() => parseAddress(input as never, 'address')).toThrow(TypeError);
    expect(() => parseAddress(input as never, 'address')).toThrow(message);
  });

  it.each([`redis://u:${SECRET}/x@h:6379`, `redis://u:${SECRET}?x@h`, `redis://u:${SECRET}#x@h`, `redis://u:${SECRET}@h:bad?timeout=1`])(
    'never repeats the password of %s',
    (input) => {
      let error: unknown;
      try {
        parseAddress(input, 'seeds[0]');
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(TypeError);
      expect((error as Error).message).toMatch(/^seeds\[0\] /);
      expect((error as Error).message).not.toContain(SECRET);
    },
  );
});

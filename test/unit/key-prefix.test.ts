/**
 * keyPrefix: which arguments get the prefix (the key positions the cluster router reads),
 * SCAN patterns under a prefix, and stripping it from scanned keys.
 */
import { describe, expect, it } from 'vitest';
import { CommandRegistry } from '../../src/commands/command-table.js';
import { KeyPrefixer, prefixPattern, stripPrefix } from '../../src/commands/key-prefix.js';
import { routeCommand } from '../../src/cluster/route.js';
import { keySlot } from '../../src/cluster/slot.js';
import type { Arg } from '../../src/types.js';

const registry = new CommandRegistry();
const p = new KeyPrefixer('app:', registry);

describe('prefixes exactly the key arguments', () => {
  const cases: Array<[string, Arg[], Arg[]]> = [
    ['GET', ['GET', 'k'], ['GET', 'app:k']],
    ['SET keeps value and options', ['SET', 'k', 'v', 'EX', 10], ['SET', 'app:k', 'v', 'EX', 10]],
    ['MSET: every other argument', ['MSET', 'a', '1', 'b', '2'], ['MSET', 'app:a', '1', 'app:b', '2']],
    ['DEL: every argument', ['DEL', 'a', 'b'], ['DEL', 'app:a', 'app:b']],
    ['BLPOP: all but the timeout', ['BLPOP', 'a', 'b', 5], ['BLPOP', 'app:a', 'app:b', 5]],
    ['EVALSHA: numkeys keys, not ARGV', ['EVALSHA', 'sha', 2, 'a', 'b', 'argv'], ['EVALSHA', 'sha', 2, 'app:a', 'app:b', 'argv']],
    ['FCALL', ['FCALL', 'fn', 1, 'a', 'x'], ['FCALL', 'fn', 1, 'app:a', 'x']],
    ['XREAD: the streams, not the IDs', ['XREAD', 'COUNT', 1, 'STREAMS', 's1', 's2', '0', '$'], ['XREAD', 'COUNT', 1, 'STREAMS', 'app:s1', 'app:s2', '0', '$']],
    ['XREADGROUP', ['XREADGROUP', 'GROUP', 'g', 'c', 'STREAMS', 's', '>'], ['XREADGROUP', 'GROUP', 'g', 'c', 'STREAMS', 'app:s', '>']],
    ['XGROUP CREATE: the subcommand\'s key', ['XGROUP', 'CREATE', 's', 'g', '$'], ['XGROUP', 'CREATE', 'app:s', 'g', '$']],
    ['ZUNIONSTORE: destination and sources', ['ZUNIONSTORE', 'd', 2, 'a', 'b', 'WEIGHTS', 1, 2], ['ZUNIONSTORE', 'app:d', 2, 'app:a', 'app:b', 'WEIGHTS', 1, 2]],
    ['SORT … STORE', ['SORT', 'l', 'LIMIT', 0, 1, 'STORE', 'dst'], ['SORT', 'app:l', 'LIMIT', 0, 1, 'STORE', 'app:dst']],
    ['OBJECT ENCODING', ['OBJECT', 'ENCODING', 'k'], ['OBJECT', 'ENCODING', 'app:k']],
    ['a number key', ['GET', 42], ['GET', 'app:42']],
    ['keyless PING', ['PING'], ['PING']],
    ['PUBLISH: channels are not keys', ['PUBLISH', 'ch', 'm'], ['PUBLISH', 'ch', 'm']],
    ['SPUBLISH: shard channels are not prefixed either (SSUBSCRIBE never is)', ['SPUBLISH', 'ch', 'm'], ['SPUBLISH', 'ch', 'm']],
    ['KEYS: a pattern, not a key', ['KEYS', 'a*'], ['KEYS', 'a*']],
    ['an unknown (module) command', ['MY.CMD', 'k'], ['MY.CMD', 'k']],
  ];
  it.each(cases)('%s', (_label, args, expected) => {
    const copy = [...args];
    expect(p.apply(args)).toEqual(expected);
    expect(args).toEqual(copy); // the caller's array is left alone
  });

  it('keeps Buffer keys binary', () => {
    const key = Buffer.from([0xff, 0x00, 0xfe]);
    const [, out] = p.apply(['GET', key]);
    expect(Buffer.isBuffer(out)).toBe(true);
    expect(out).toEqual(Buffer.concat([Buffer.from('app:'), key]));
  });

  it('routes by the slot of the prefixed key', () => {
    const args = p.apply(['SET', 'user:1', 'v']);
    expect(routeCommand(registry, args).slot).toBe(keySlot('app:user:1'));
    // A hash tag in the prefix puts every key in one slot.
    const tagged = new KeyPrefixer('{tenant}:', registry);
    expect(routeCommand(registry, tagged.apply(['GET', 'a'])).slot).toBe(keySlot('tenant'));
    expect(routeCommand(registry, tagged.apply(['GET', 'b'])).slot).toBe(keySlot('tenant'));
  });
});

describe('SCAN under a prefix', () => {
  const cases: Array<[string, string | undefined, string]> = [
    ['no pattern: every key of the prefix', undefined, 'app:*'],
    ['a pattern after the prefix', 'user:*', 'app:user:*'],
  ];
  it.each(cases)('%s', (_label, match, expected) => {
    expect(prefixPattern('app:', match)).toBe(expected);
  });

  it('escapes glob characters of the prefix', () => {
    expect(prefixPattern('a*b?[c]\\', 'x')).toBe('a\\*b\\?\\[c\\]\\\\x');
  });

  it('strips the prefix from scanned keys, strings and Buffers', () => {
    const bytes = Buffer.from('app:');
    expect(stripPrefix('app:', bytes, 'app:user:1')).toBe('user:1');
    expect(stripPrefix('app:', bytes, 'other')).toBe('other');
    expect(stripPrefix('app:', bytes, Buffer.from('app:\xff', 'latin1'))).toEqual(Buffer.from('\xff', 'latin1'));
  });
});

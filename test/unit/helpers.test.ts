/**
 * The typed helpers' argument shaping, as pure functions: what each form sends, and which
 * calls are refused (ioredis habits included) with a TypeError naming the helper and its forms.
 */
import { describe, expect, it } from 'vitest';
import { HELPERS, type HelperName } from '../../src/commands/helpers.js';
import { flattenScores, toRecord, toStreams } from '../../src/commands/replies.js';
import { defineScript } from '../../src/commands/script.js';
import type { Reply } from '../../src/types.js';

const sent = (name: HelperName, ...a: unknown[]) => HELPERS[name](...a).args;

/** The error `call` throws; fails the test when it returns instead. */
function thrown(call: () => unknown): Error {
  try {
    call();
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected the call to throw, but it returned');
}

describe('what each form sends', () => {
  const cases: Array<[string, HelperName, unknown[], unknown[]]> = [
    ['set, options object', 'set', ['k', 'v', { EX: 10, NX: true }], ['SET', 'k', 'v', 'EX', 10, 'NX']],
    ['set, ioredis tokens', 'set', ['k', 'v', 'EX', 10], ['SET', 'k', 'v', 'EX', 10]],
    ['set, ioredis tokens in any case and order', 'set', ['k', 'v', 'nx', 'px', 500, 'GET'], ['SET', 'k', 'v', 'PX', 500, 'NX', 'GET']],
    ['set, trailing undefined options', 'set', ['k', 'v', undefined], ['SET', 'k', 'v']],
    ['set, false flags are left out', 'set', ['k', 'v', { NX: false, KEEPTTL: true }], ['SET', 'k', 'v', 'KEEPTTL']],
    ['getex, object', 'getex', ['k', { PX: 100 }], ['GETEX', 'k', 'PX', 100]],
    ['getex, tokens', 'getex', ['k', 'PERSIST'], ['GETEX', 'k', 'PERSIST']],
    ['del, spread', 'del', ['a', 'b'], ['DEL', 'a', 'b']],
    ['del, an array (ioredis)', 'del', [['a', 'b'], 'c'], ['DEL', 'a', 'b', 'c']],
    ['exists, an array', 'exists', [['a', 'b']], ['EXISTS', 'a', 'b']],
    ['unlink, an array', 'unlink', [['a']], ['UNLINK', 'a']],
    ['mget, an array', 'mget', [['a', 'b']], ['MGET', 'a', 'b']],
    ['mset, a Map', 'mset', [new Map([['a', 1]])], ['MSET', 'a', 1]],
    ['hset, many pairs (ioredis)', 'hset', ['h', 'a', '1', 'b', '2'], ['HSET', 'h', 'a', '1', 'b', '2']],
    ['hset, a record', 'hset', ['h', { a: '1', b: 2 }], ['HSET', 'h', 'a', '1', 'b', 2]],
    ['hset, a Map', 'hset', ['h', new Map([['a', '1']])], ['HSET', 'h', 'a', '1']],
    ['hmget, an array of fields', 'hmget', ['h', ['a', 'b']], ['HMGET', 'h', 'a', 'b']],
    ['sadd, an array of members', 'sadd', ['s', ['x', 'y'], 'z'], ['SADD', 's', 'x', 'y', 'z']],
    ['blpop, an array of keys', 'blpop', [['a', 'b'], 5], ['BLPOP', 'a', 'b', 5]],
    ['expire with a mode', 'expire', ['k', 10, 'gt'], ['EXPIRE', 'k', 10, 'GT']],
    ['expireat', 'expireat', ['k', 1_900_000_000], ['EXPIREAT', 'k', 1_900_000_000]],
    ['incrbyfloat', 'incrbyfloat', ['k', 1.5], ['INCRBYFLOAT', 'k', 1.5]],
    ['incrby, integer text beyond 2^53 sent as given (not rounded)', 'incrby', ['k', '9007199254740993'], ['INCRBY', 'k', '9007199254740993']],
    ['incrby, a bigint', 'incrby', ['k', 9007199254740993n], ['INCRBY', 'k', 9007199254740993n]],
    ['zadd, ioredis flags then pairs', 'zadd', ['z', 'NX', 'CH', 1, 'a', '-inf', 'b'], ['ZADD', 'z', 'NX', 'CH', 1, 'a', '-inf', 'b']],
    ['zadd, a record', 'zadd', ['z', { a: 1, b: Infinity }], ['ZADD', 'z', 1, 'a', '+inf', 'b']],
    ['zrange, WITHSCORES token (ioredis)', 'zrange', ['z', 0, -1, 'WITHSCORES'], ['ZRANGE', 'z', 0, -1, 'WITHSCORES']],
    ['zrange, object with LIMIT', 'zrange', ['z', 0, 10, { BYSCORE: true, LIMIT: { offset: 1, count: 2 }, WITHSCORES: true }], ['ZRANGE', 'z', 0, 10, 'BYSCORE', 'LIMIT', 1, 2, 'WITHSCORES']],
    ['zrange, tokens with LIMIT', 'zrange', ['z', '(1', '+inf', 'BYSCORE', 'LIMIT', 0, 5], ['ZRANGE', 'z', '(1', '+inf', 'BYSCORE', 'LIMIT', 0, 5]],
    ['zrangebyscore, tokens', 'zrangebyscore', ['z', '-inf', 5, 'WITHSCORES', 'LIMIT', 0, 3], ['ZRANGEBYSCORE', 'z', '-inf', 5, 'LIMIT', 0, 3, 'WITHSCORES']],
    ['zrem, an array', 'zrem', ['z', ['a', 'b']], ['ZREM', 'z', 'a', 'b']],
    ['xadd, record and options', 'xadd', ['s', '*', { f: 'v' }, { MAXLEN: 100, approximate: true }], ['XADD', 's', 'MAXLEN', '~', 100, '*', 'f', 'v']],
    ['xadd, flat pairs', 'xadd', ['s', '1-1', ['f', 'v', 'g', 'w']], ['XADD', 's', '1-1', 'f', 'v', 'g', 'w']],
    ['xadd, the ioredis form', 'xadd', ['s', 'NOMKSTREAM', 'MAXLEN', '~', 1000, '*', 'f', 'v'], ['XADD', 's', 'NOMKSTREAM', 'MAXLEN', '~', 1000, '*', 'f', 'v']],
    ['xrange, defaults', 'xrange', ['s'], ['XRANGE', 's', '-', '+']],
    ['xrange, COUNT token', 'xrange', ['s', '-', '+', 'COUNT', 2], ['XRANGE', 's', '-', '+', 'COUNT', 2]],
    ['xread, typed', 'xread', [{ a: '0', b: '$' }, { COUNT: 5, BLOCK: 100 }], ['XREAD', 'COUNT', 5, 'BLOCK', 100, 'STREAMS', 'a', 'b', '0', '$']],
    ['xread, the ioredis form', 'xread', ['COUNT', 1, 'STREAMS', 'a', '0'], ['XREAD', 'COUNT', 1, 'STREAMS', 'a', '0']],
    ['xreadgroup, typed', 'xreadgroup', ['g', 'c', [['a', '>']], { NOACK: true }], ['XREADGROUP', 'GROUP', 'g', 'c', 'NOACK', 'STREAMS', 'a', '>']],
    ['xreadgroup, the ioredis form', 'xreadgroup', ['GROUP', 'g', 'c', 'STREAMS', 'a', '>'], ['XREADGROUP', 'GROUP', 'g', 'c', 'STREAMS', 'a', '>']],
    ['xack, an array of IDs', 'xack', ['s', 'g', ['1-1', '1-2']], ['XACK', 's', 'g', '1-1', '1-2']],
    ['xgroup create, MKSTREAM option', 'xgroup', ['CREATE', 's', 'g', '$', { MKSTREAM: true }], ['XGROUP', 'CREATE', 's', 'g', '$', 'MKSTREAM']],
    ['xgroup create, MKSTREAM token (ioredis)', 'xgroup', ['create', 's', 'g', '0', 'MKSTREAM'], ['XGROUP', 'CREATE', 's', 'g', '0', 'MKSTREAM']],
    ['xgroup destroy', 'xgroup', ['DESTROY', 's', 'g'], ['XGROUP', 'DESTROY', 's', 'g']],
    ['eval with an array of keys and args', 'eval', ['return 1', 2, ['a', 'b'], 'x'], ['EVAL', 'return 1', 2, 'a', 'b', 'x']],
    ['fcall', 'fcall', ['fn', 1, 'k', 'a'], ['FCALL', 'fn', 1, 'k', 'a']],
    ['scan, options object', 'scan', ['0', { match: 'a*', count: 10, type: 'hash' }], ['SCAN', '0', 'MATCH', 'a*', 'COUNT', 10, 'TYPE', 'hash']],
    ['scan, ioredis tokens', 'scan', ['0', 'MATCH', 'a*'], ['SCAN', '0', 'MATCH', 'a*']],
  ];
  it.each(cases)('%s', (_label, name, args, expected) => {
    expect(sent(name, ...args)).toEqual(expected);
  });

  it('the blocking helpers extend the deadline by their timeout', () => {
    expect(HELPERS.blpop('a', 2.5).blockSeconds).toBe(2.5);
  });
});

describe('refused calls: a TypeError naming the helper and showing the right form', () => {
  const cases: Array<[string, HelperName, unknown[], RegExp]> = [
    ['set with an unknown token', 'set', ['k', 'v', 'EXPIRE', 10], /^set: unexpected argument "EXPIRE".*Use set\(key, value, \{ EX/],
    ['set with a token lacking its value', 'set', ['k', 'v', 'EX'], /^set: EX needs 1 value after it/],
    ['set with a lower-case option name', 'set', ['k', 'v', { ex: 10 }], /^set: unknown option "ex"/],
    ['set with a string expiry in the object', 'set', ['k', 'v', { EX: '10s' }], /^set: option EX must be an integer/],
    ['set with EX and PX', 'set', ['k', 'v', { EX: 1, PX: 1000 }], /^set: EX and PX cannot be combined/],
    ['set with NX and XX', 'set', ['k', 'v', 'NX', 'XX'], /^set: NX and XX cannot be combined/],
    ['set without a value', 'set', ['k'], /^set: needs 2 arguments, got 1/],
    ['set with an undefined value', 'set', ['k', undefined], /^set: needs 2 arguments, got 1\..*Argument 2 was undefined, which counts as missing\.$/],
    ['get with an extra argument', 'get', ['k', 'extra'], /^get: takes at most 1 argument, got 2.*Use get\(key\)/],
    ['hget with a missing field', 'hget', ['h'], /^hget: needs 2 arguments/],
    ['hset with an odd number of field/value arguments', 'hset', ['h', 'a', '1', 'b'], /^hset: got 3 field\/value arguments; they must come in pairs/],
    ['hset with an empty record', 'hset', ['h', {}], /^hset: needs at least one field/],
    ['del with nothing', 'del', [], /^del: needs at least 1 key.*del\(\[keys\]\)/],
    ['del with an object', 'del', [{ a: 1 }], /^del: key must be a string, Buffer, number or bigint \(got an object\)/],
    ['del with a nested array', 'del', [[['a']]], /^del: key must be .* \(got an array\)/],
    ['mget with null', 'mget', ['a', null], /^mget: key must be .* \(got null\)/],
    ['zrange with an unknown option', 'zrange', ['z', 0, -1, { withscores: true }], /^zrange: unknown option "withscores"/],
    ['zrange with LIMIT lacking its count', 'zrange', ['z', 0, -1, 'BYSCORE', 'LIMIT', 0], /^zrange: LIMIT needs 2 values/],
    ['zrange with BYSCORE and BYLEX', 'zrange', ['z', 0, 1, { BYSCORE: true, BYLEX: true }], /BYSCORE and BYLEX cannot be combined/],
    ['zadd with an odd score/member list', 'zadd', ['z', 1, 'a', 2], /^zadd: got 3 score\/member arguments/],
    ['zadd with a non-numeric score', 'zadd', ['z', 'a', 1], /^zadd: got 2|zadd: every score must be a number/],
    ['expire with a bad mode', 'expire', ['k', 10, 'EX'], /^expire: the mode must be 'NX', 'XX', 'GT' or 'LT'/],
    ['expire with fractional seconds', 'expire', ['k', 1.5], /^expire: seconds must be an integer/],
    ['incrby with a float', 'incrby', ['k', 0.5], /^incrby: the increment must be an integer.*incrby\(key, increment\)/],
    ['lrange with too many arguments', 'lrange', ['l', 0, -1, 'extra'], /^lrange: takes at most 3 arguments/],
    ['blpop without a timeout', 'blpop', ['a', 'b'], /^blpop: the last argument must be the timeout in seconds/],
    ['xadd with an odd field list (ioredis form)', 'xadd', ['s', '*', 'f'], /^xadd: got 1 field\/value arguments/],
    ['xadd with LIMIT but exact trimming', 'xadd', ['s', '*', { f: 'v' }, { MAXLEN: 10, LIMIT: 5 }], /LIMIT needs MAXLEN or MINID with approximate: true/],
    ['xread without STREAMS (ioredis form)', 'xread', ['COUNT', 1, 'a', '0'], /^xread: the ioredis form needs 'STREAMS'/],
    ['xread with an empty stream list', 'xread', [{}], /^xread: needs at least one stream/],
    ['xgroup with an unknown subcommand', 'xgroup', ['MAKE', 's', 'g'], /^xgroup: unknown subcommand "MAKE"/],
    ['eval with more keys than arguments', 'eval', ['return 1', 3, 'a'], /^eval: numKeys is 3 but 1 keys and arguments follow/],
    ['publish with an extra argument', 'publish', ['ch', 'm', 'x'], /^publish: takes at most 2 arguments/],
    ['scan with an unknown option', 'scan', ['0', { pattern: 'a*' }], /^scan: unknown option "pattern"/],
  ];
  it.each(cases)('%s', (_label, name, args, message) => {
    const call = () => HELPERS[name](...args);
    expect(call).toThrow(TypeError);
    expect(call).toThrow(message);
  });

  it('never puts the offending value into the message', () => {
    const secret = { password: 'hunter2' };
    for (const [call, shown] of [
      [() => HELPERS.del(secret), /^del: key must be .* \(got an object\)/],
      [() => HELPERS.get([secret]), /^get: the key must be .* \(got an array\)/],
      [() => HELPERS.hset('h', { f: secret }), /^hset: the value of field "f" must be .* \(got an object\)/],
      [() => HELPERS.set('k', 'v', { EX: secret }), /^set: option EX must be an integer \(got an object\)/],
    ] as Array<[() => unknown, RegExp]>) {
      const e = thrown(call);
      expect(e).toBeInstanceOf(TypeError);
      expect(e.message).toMatch(shown);
      expect(e.message).not.toContain('hunter2');
    }
    // A token is echoed only when it is a string the caller typed as an option name.
    expect(thrown(() => HELPERS.set('k', 'v', 'hunter2')).message).toMatch(/^set: unexpected argument "hunter2"/);
  });
});

describe('reply shapes are the same under RESP2 and RESP3', () => {
  const cases: Array<[string, (r: Reply) => unknown, Reply, Reply, unknown]> = [
    ['WITHSCORES', flattenScores, ['a', '1', 'b', 'inf'], [['a', 1], ['b', Infinity]], ['a', '1', 'b', 'inf']],
    ['WITHSCORES, fractional and negative', flattenScores, ['a', '-2.5'], [['a', -2.5]], ['a', '-2.5']],
    ['HGETALL', toRecord, ['f', 'v', 'g', 'w'], new Map<Reply, Reply>([['f', 'v'], ['g', 'w']]), { f: 'v', g: 'w' }],
    [
      'XREAD',
      toStreams,
      [['s', [['1-1', ['f', 'v']]]]],
      new Map<Reply, Reply>([['s', [['1-1', ['f', 'v']]]]]),
      [{ name: 's', messages: [{ id: '1-1', message: { f: 'v' } }] }],
    ],
    ['XREADGROUP, an entry deleted while pending', toStreams, [['s', [['1-1', null]]]], new Map<Reply, Reply>([['s', [['1-1', null]]]]), [{ name: 's', messages: [{ id: '1-1', message: null }] }]],
    ['XREAD timeout', toStreams, null, null, null],
  ];
  it.each(cases)('%s', (_label, shape, resp2, resp3, expected) => {
    expect(shape(resp2)).toEqual(expected);
    expect(shape(resp3)).toEqual(expected);
  });

  it('buffer scores (RESP2 with returnBuffers) become text like the RESP3 doubles', () => {
    expect(flattenScores([Buffer.from('m'), Buffer.from('1.5')])).toEqual([Buffer.from('m'), '1.5']);
  });
});

describe('script definitions', () => {
  it('computes the SHA1 Redis uses, locally', () => {
    // SHA1 of "return 1", as SCRIPT LOAD answers it.
    expect(defineScript('return 1', { keys: 0 }).sha).toBe('e0e1f9fabfc9d4800c877a703b823ac0578ff8db');
  });

  it('sends EVALSHA first and EVAL as the fallback, keys counted', () => {
    const d = defineScript('return KEYS[1]', { keys: 1 });
    expect(d.evalsha(['k', 'a']).args).toEqual(['EVALSHA', d.sha, 1, 'k', 'a']);
    expect(d.eval(['k', 'a']).args).toEqual(['EVAL', 'return KEYS[1]', 1, 'k', 'a']);
    const ro = defineScript('return 1', { keys: 0, readOnly: true });
    expect(ro.evalsha([]).args[0]).toBe('EVALSHA_RO');
    expect(ro.eval([]).args[0]).toBe('EVAL_RO');
  });

  const bad: Array<[string, unknown, unknown, RegExp]> = [
    ['no source', '', { keys: 0 }, /needs the Lua source/],
    ['no options', 'return 1', undefined, /needs options with keys/],
    ['a negative key count', 'return 1', { keys: -1 }, /Option script.keys must be an integer >= 0/],
    ['an unknown option', 'return 1', { keys: 0, numberOfKeys: 1 }, /Unknown option script.numberOfKeys/],
    ['a non-boolean readOnly', 'return 1', { keys: 0, readOnly: 'yes' }, /Option script.readOnly must be a boolean/],
  ];
  it.each(bad)('refuses %s with a TypeError', (_label, source, options, message) => {
    expect(() => defineScript(source, options)).toThrow(TypeError);
    expect(() => defineScript(source, options)).toThrow(message);
  });

  it('refuses a call with fewer arguments than keys', () => {
    expect(() => defineScript('return 1', { keys: 2 }).check(['a'])).toThrow(/takes 2 keys first/);
  });
});

/**
 * A command's traits, by tables: what the surface, batches, leases, retries, durability, the
 * cache, the key prefix, the cluster router and the connection read instead of the name.
 */
import { describe, expect, it } from 'vitest';
import { CommandRegistry, commandKeyPositions } from '../../src/commands/command-table.js';
import {
  blockingSeconds, builtinClassifier, carried, classifierFor, CONNECTION_STATE, keyPositions, keysOf, transactionRole, traitsOf,
  type CommandTraits,
} from '../../src/commands/traits.js';
import type { Arg } from '../../src/types.js';

const split = (command: string): string[] => command.split(' ');

describe('kind: how call() sends a command', () => {
  it.each([
    ['GET k', 'plain'], ['set k v', 'plain'], ['PING', 'plain'], ['CLIENT', 'plain'], ['CLIENT LIST', 'plain'], ['client id', 'plain'],
    ['CLIENT KILL ID 5', 'plain'], ['CLIENT INFO', 'plain'], ['CLIENT NOSUCH', 'plain'], ['MADE.UP k', 'plain'],
    ['CLIENT REPLY OFF', 'connection-state'], ['client reply skip', 'connection-state'], ['CLIENT TRACKING ON', 'connection-state'],
    ['CLIENT CACHING yes', 'connection-state'], ['CLIENT SETNAME x', 'connection-state'], ['CLIENT SETINFO LIB-NAME x', 'connection-state'],
    ['CLIENT NO-EVICT on', 'connection-state'], ['client no-touch on', 'connection-state'],
    ['WATCH k', 'connection-state'], ['UNWATCH', 'connection-state'], ['multi', 'connection-state'], ['EXEC', 'connection-state'],
    ['DISCARD', 'connection-state'], ['SELECT 1', 'connection-state'], ['AUTH pw', 'connection-state'], ['HELLO 3', 'connection-state'],
    ['RESET', 'connection-state'], ['READONLY', 'connection-state'], ['READWRITE', 'connection-state'], ['QUIT', 'connection-state'],
    ['BLPOP a 0', 'blocking'], ['BZMPOP 1 1 z MIN', 'blocking'], ['WAIT 1 0', 'blocking'], ['WAITAOF 1 0 0', 'blocking'], ['xread STREAMS s 0', 'blocking'],
    ['SUBSCRIBE c', 'subscribe'], ['ssubscribe c', 'subscribe'], ['PUNSUBSCRIBE', 'subscribe'], ['MONITOR', 'subscribe'],
    // Server-wide, not this connection's state: runs anywhere.
    ['SWAPDB 0 1', 'plain'], ['FLUSHDB', 'plain'],
  ])('%s -> %s', (command, kind) => {
    expect(traitsOf(split(command)).kind).toBe(kind);
  });
});

describe('one table of connection-state commands', () => {
  it('every entry is refused by call() and acted on by a lease; nothing else is', () => {
    for (const [name, effect] of CONNECTION_STATE) {
      const t = traitsOf(split(name));
      expect(t.kind, name).toBe('connection-state');
      expect(t.state, name).toBe(effect);
    }
    for (const command of ['GET k', 'SWAPDB 0 1', 'CLIENT LIST', 'CLIENT ID', 'PING', 'SUBSCRIBE c', 'BLPOP a 1']) {
      expect(traitsOf(split(command)).state, command).toBeUndefined();
    }
  });

  it.each([
    // The two hand-kept lists disagreed: SWAPDB was only in the lease's (its connection was
    // closed after use), QUIT only in call()'s refusal. One table now answers both.
    ['SWAPDB 0 1', undefined, 'plain'],
    ['QUIT', 'other', 'connection-state'],
    ['WATCH k', 'watch', 'connection-state'],
    ['UNWATCH', 'unwatch', 'connection-state'],
    ['MULTI', 'multi', 'connection-state'],
    ['EXEC', 'end', 'connection-state'],
    ['DISCARD', 'end', 'connection-state'],
    ['RESET', 'reset', 'connection-state'],
    ['SELECT 2', 'other', 'connection-state'],
    ['CLIENT SETNAME w', 'other', 'connection-state'],
  ])('%s: lease effect %s, kind %s', (command, effect, kind) => {
    const t = traitsOf(split(command));
    expect(t.state).toBe(effect);
    expect(t.kind).toBe(kind);
  });
});

describe('transaction role, as the connection tracks MULTI', () => {
  it.each([
    ['MULTI', 'multi'], ['multi', 'multi'], ['EXEC', 'end'], ['exec', 'end'], ['DISCARD', 'end'], ['RESET', 'end'],
    ['WATCH', undefined], ['GET', undefined], ['PING', undefined], ['HELLO', undefined], ['SET', undefined], ['MULTIX', undefined],
  ])('%s -> %s, from the traits and from the name alone', (name, role) => {
    expect(traitsOf([name]).transaction).toBe(role);
    expect(transactionRole(name)).toBe(role);
  });
});

describe('read-only, write, and whether durability waits for it', () => {
  it.each<[string, boolean, boolean, boolean]>([
    // command, readOnly, write, durable
    ['GET k', true, false, false],
    ['MGET a b', true, false, false],
    ['SET k v', false, true, true],
    ['INCR n', false, true, true],
    ['XADD s * f v', false, true, true],
    ['BLMOVE a b LEFT RIGHT 0', false, true, true],
    ['FLUSHALL', false, true, true],
    ['EVAL s 0', false, false, true],
    ['EVALSHA h 0', false, false, true],
    ['FCALL f 0', false, false, true],
    ['EVAL_RO s 0', true, false, false],
    ['FCALL_RO f 0', true, false, false],
    ['FUNCTION LOAD code', false, true, true],
    ['FUNCTION LIST', false, false, false],
    ['SCRIPT EXISTS h', false, false, false],
    ['XINFO STREAM s', true, false, false],
    ['OBJECT ENCODING k', true, false, false],
    ['PING', false, false, false],
    ['PUBLISH c m', false, false, false],
    ['WAIT 1 100', false, false, false],
    ['MULTI', false, false, false],
    ['CLIENT SETNAME x', false, false, false],
    // Unknown to the table: not read-only (never resent after an uncertain write), and waited for.
    ['MADEUP.MODULECMD k', false, false, true],
  ])('%s: readOnly %s, write %s, durable %s', (command, readOnly, write, durable) => {
    const t = traitsOf(split(command));
    expect([t.readOnly, t.write, t.durable]).toEqual([readOnly, write, durable]);
  });
});

describe('blocking: where the timeout is', () => {
  it.each<[Arg[], number | undefined]>([
    [['BLPOP', 'a', 'b', 5], 5],
    [['brpop', 'a', '0'], 0],
    [['BRPOPLPUSH', 'a', 'b', '1.5'], 1.5],
    [['BLMOVE', 'a', 'b', 'LEFT', 'RIGHT', 2], 2],
    [['BZPOPMIN', 'z', 3], 3],
    [['BLMPOP', 4, 1, 'l', 'LEFT'], 4],
    [['BZMPOP', '0', 1, 'z', 'MIN'], 0],
    [['WAIT', 1, 250], 0.25],
    // WAITAOF's timeout is its last argument in ms, as WAIT's (it counted as "forever" before).
    [['WAITAOF', 1, 0, 500], 0.5],
    [['XREAD', 'BLOCK', 1000, 'STREAMS', 's', '$'], 1],
    [['XREADGROUP', 'GROUP', 'g', 'c', 'BLOCK', '0', 'STREAMS', 's', '>'], 0],
    [['XREAD', 'COUNT', 1, 'STREAMS', 's', '0'], undefined],
    // BLOCK after STREAMS is a stream's name, not the option.
    [['XREAD', 'STREAMS', 'BLOCK', '0'], undefined],
    [['GET', 'k'], undefined],
  ])('%j -> %s s', (args, seconds) => {
    expect(blockingSeconds(traitsOf(args), args)).toBe(seconds);
  });

  it.each<[Arg[], RegExp]>([
    [['BLPOP', 'a', 'soon'], /^BLPOP needs a timeout that is a non-negative number \(got "soon"\); it was not sent\.$/],
    [['BLPOP', 'a', -1], /BLPOP needs a timeout/],
    [['BLMPOP'], /BLMPOP needs a timeout .*\(got none\)/],
    [['XREAD', 'BLOCK', '', 'STREAMS', 's', '$'], /XREAD BLOCK needs a timeout/],
  ])('%j is refused before it is sent', (args, message) => {
    expect(() => blockingSeconds(traitsOf(args), args)).toThrow(TypeError);
    expect(() => blockingSeconds(traitsOf(args), args)).toThrow(message);
  });
});

describe('cache role', () => {
  it.each([
    ['GET k', 'read'], ['HGETALL h', 'read'], ['ZRANGE z 0 -1', 'read'], ['EXISTS k', 'read'],
    ['MGET a b', 'mget'],
    ['SET k v', 'write'], ['DEL a b', 'write'], ['GETEX k EX 1', 'write'], ['EVAL s 1 k', 'write'],
    // A subcommand that writes a key drops that key's entries (XGROUP CREATE … MKSTREAM creates it).
    ['XGROUP CREATE s g $ MKSTREAM', 'write'],
    ['TTL k', undefined], ['SRANDMEMBER s', undefined], ['PING', undefined], ['OBJECT ENCODING k', undefined], ['MADE.UP k', undefined],
    ['FLUSHALL', undefined], ['PUBLISH c m', undefined],
  ])('%s -> %s', (command, role) => {
    expect(traitsOf(split(command)).cache).toBe(role);
  });
});

describe('key positions: the same as the command table says', () => {
  const registry = new CommandRegistry();
  it.each<[Arg[], number[]]>([
    [['GET', 'k'], [1]],
    [['MSET', 'a', 1, 'b', 2], [1, 3]],
    [['BLPOP', 'a', 'b', 5], [1, 2]],
    [['EVALSHA', 'sha', 2, 'a', 'b', 'x'], [3, 4]],
    [['XREAD', 'COUNT', 1, 'STREAMS', 's1', 's2', '0', '$'], [4, 5]],
    [['XGROUP', 'CREATE', 's', 'g', '$'], [2]],
    [['OBJECT', 'ENCODING', 'k'], [2]],
    [['SORT', 'l', 'STORE', 'd'], [1, 3]],
    [['ZUNIONSTORE', 'd', 2, 'a', 'b'], [1, 3, 4]],
    [['GEORADIUS', 'g', 0, 0, 1, 'km', 'STORE', 'd'], [1, 7]],
    [['SPUBLISH', 'ch', 'm'], [1]],
    [['PING'], []],
    [['KEYS', '*'], []],
    [['MADE.UP', 'k'], []],
    [[], []],
  ])('%j -> %j', (args, positions) => {
    const t = traitsOf(args);
    expect(keyPositions(t, args)).toEqual(positions);
    expect(keysOf(t, args)).toEqual(positions.map((i) => args[i]));
    if (args.length) expect(keyPositions(t, args)).toEqual(commandKeyPositions(registry.get(String(args[0])), args));
  });

  it('shard channels are marked: routed by slot, never prefixed', () => {
    expect(traitsOf(['SPUBLISH', 'c', 'm']).channels).toBe(true);
    expect(traitsOf(['ssubscribe', 'c']).channels).toBe(true);
    expect(traitsOf(['PUBLISH', 'c', 'm']).channels).toBe(false);
    expect(traitsOf(['GET', 'k']).channels).toBe(false);
  });
});

describe('worked out once', () => {
  it('one traits object per command, whatever the spelling; subcommands apart', () => {
    const a = traitsOf(['GET', 'x']);
    expect(traitsOf(['GET', 'y'])).toBe(a);
    expect(traitsOf(['get', 'y'])).toBe(a);
    expect(traitsOf(['Get', 'y'])).toBe(a);
    expect(a.name).toBe('GET');
    expect(a.lower).toBe('get');
    const setname = traitsOf(['CLIENT', 'SETNAME', 'a']);
    expect(traitsOf(['CLIENT', 'SETNAME', 'b'])).toBe(setname);
    expect(setname.name).toBe('CLIENT SETNAME');
    expect(traitsOf(['CLIENT', 'LIST'])).not.toBe(setname);
    expect(traitsOf(['client', 'setname', 'b']).name).toBe('CLIENT SETNAME');
  });

  it('traits are frozen: a caller cannot change what every other call reads', () => {
    const t = traitsOf(['SET', 'k', 'v']) as { readOnly: boolean };
    expect(() => { t.readOnly = true; }).toThrow(TypeError);
    expect(traitsOf(['SET', 'k', 'v']).readOnly).toBe(false);
  });

  it('a Buffer name is classified as its text', () => {
    expect(traitsOf([Buffer.from('blpop'), 'q', 1]).kind).toBe('blocking');
    expect(traitsOf([Buffer.from('MULTI')]).transaction).toBe('multi');
  });

  it('carried traits win; without them the arguments are looked up', () => {
    const get = traitsOf(['GET', 'k']);
    expect(carried(get, ['SET', 'k', 'v'])).toBe(get);
    expect(carried(undefined, ['SET', 'k', 'v'])).toBe(traitsOf(['SET']));
  });

  it('a made-up name flood does not grow the memo without bound', () => {
    const c = classifierFor(new CommandRegistry());
    for (let i = 0; i < 10_000; i++) c.of([`MADE.UP.${i}`]);
    // Still classified correctly past the bound.
    expect(c.of(['MADE.UP.99999', 'k']).durable).toBe(true);
    expect(c.of(['GET', 'k']).readOnly).toBe(true);
  });
});

describe('a table loaded from the server', () => {
  it('its classifier starts over when the table changes', () => {
    const r = new CommandRegistry();
    const c = classifierFor(r);
    expect(classifierFor(r)).toBe(c);
    const before: CommandTraits = c.of(['MY.MODGET', 'k']);
    expect(before.readOnly).toBe(false);
    expect(before.info).toBeUndefined();
    r.load([
      ['my.modget', 2, ['readonly', 'fast'], 1, 1, 1, [], [], [], []],
      ['get', 2, ['readonly', 'fast'], 1, 1, 1, [], ['request_policy:special'], [], []],
    ]);
    const after = c.of(['MY.MODGET', 'k']);
    expect(after.readOnly).toBe(true);
    expect(after.durable).toBe(false);
    expect(keyPositions(after, ['MY.MODGET', 'k'])).toEqual([1]);
    expect(c.of(['GET', 'k']).info?.requestPolicy).toBe('special');
    // The built-in classifier is another table's: unchanged.
    expect(builtinClassifier().of(['MY.MODGET', 'k']).readOnly).toBe(false);
  });
});

import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  crossSlotError,
  groupByNode,
  isSplittable,
  isUnsplittableMultiSlot,
  mergeFanout,
  mergeSplit,
  splitBySlot,
} from '../../src/cluster/plan.js';
import { keySlot } from '../../src/cluster/slot.js';
import { CrossSlotError, RedisError } from '../../src/errors.js';
import type { Arg, Reply } from '../../src/types.js';

// A readable fake: the slot is the key's first letter, so 'a1' and 'a2' share a slot.
const slotOf = (k: Arg) => String(k).charCodeAt(0);

describe('splitBySlot', () => {
  it('splits MGET by slot, in order of first appearance, keeping key order', () => {
    expect(splitBySlot('MGET', ['a1', 'b1', 'a2', 'c1', 'b2'], slotOf)).toEqual([
      { slot: 97, args: ['a1', 'a2'], indices: [0, 2] },
      { slot: 98, args: ['b1', 'b2'], indices: [1, 4] },
      { slot: 99, args: ['c1'], indices: [3] },
    ]);
  });

  it('splits MSET by key/value pairs', () => {
    expect(splitBySlot('mset', ['a1', 'v1', 'b1', 'v2', 'a2', 'v3'], slotOf)).toEqual([
      { slot: 97, args: ['a1', 'v1', 'a2', 'v3'], indices: [0, 2] },
      { slot: 98, args: ['b1', 'v2'], indices: [1] },
    ]);
  });

  it.each(['DEL', 'UNLINK', 'EXISTS', 'TOUCH'])('splits %s', (cmd) => {
    expect(splitBySlot(cmd, ['a', 'b', 'a'], slotOf)).toEqual([
      { slot: 97, args: ['a', 'a'], indices: [0, 2] },
      { slot: 98, args: ['b'], indices: [1] },
    ]);
  });

  it('splits by slot even when slots would share a node, with real slots', () => {
    const parts = splitBySlot('DEL', ['{foo}', '{foo}1', 'bar'], keySlot)!;
    expect(parts.map((p) => p.args)).toEqual([['{foo}', '{foo}1'], ['bar']]);
    expect(parts.map((p) => p.slot)).toEqual([keySlot('foo'), keySlot('bar')]);
  });

  it('returns one part when all keys share a slot', () => {
    expect(splitBySlot('MGET', ['a1', 'a2'], slotOf)).toEqual([{ slot: 97, args: ['a1', 'a2'], indices: [0, 1] }]);
  });

  it.each<[string, Arg[]]>([
    ['GET', ['a']],
    ['MSETNX', ['a', '1', 'b', '2']],
    ['MGET', []],
    ['MSET', ['a', '1', 'b']],
  ])('leaves %s %j unsplit (not splittable or malformed)', (cmd, args) => {
    expect(splitBySlot(cmd, args, slotOf)).toBeUndefined();
  });

  it('keeps Buffers by reference', () => {
    const k = Buffer.from('a');
    expect(splitBySlot('MGET', [k], slotOf)![0]!.args[0]).toBe(k);
  });
});

describe('mergeSplit', () => {
  it('puts MGET values back in key order', () => {
    const parts = splitBySlot('MGET', ['a1', 'b1', 'a2', 'c1', 'b2'], slotOf)!;
    expect(mergeSplit('MGET', parts, [['A1', null], ['B1', 'B2'], ['C1']])).toEqual(['A1', 'B1', null, 'C1', 'B2']);
  });

  it('round-trips any MGET split', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ maxLength: 3 }), { minLength: 1, maxLength: 30 }), (keys) => {
        const parts = splitBySlot('MGET', keys, keySlot)!;
        const results = parts.map((p) => p.args.map((k) => `v:${String(k)}`));
        expect(mergeSplit('MGET', parts, results)).toEqual(keys.map((k) => `v:${k}`));
      }),
    );
  });

  it.each(['DEL', 'unlink', 'EXISTS', 'TOUCH'])('sums %s counts', (cmd) => {
    const parts = splitBySlot(cmd, ['a', 'b', 'c'], slotOf)!;
    expect(mergeSplit(cmd, parts, [1, 0, 1])).toBe(2);
    expect(mergeSplit(cmd, parts.slice(0, 1), [5n])).toBe(5);
  });

  it('answers OK for MSET', () => {
    const parts = splitBySlot('MSET', ['a', '1', 'b', '2'], slotOf)!;
    expect(mergeSplit('MSET', parts, ['OK', 'OK'])).toBe('OK');
  });

  it('throws the first error of any part', () => {
    const parts = splitBySlot('DEL', ['a', 'b', 'c'], slotOf)!;
    const e1 = new RedisError('CLUSTERDOWN x');
    const e2 = new RedisError('ERR y');
    expect(() => mergeSplit('DEL', parts, [1, e1, e2])).toThrow(e1);
  });

  it('rejects mismatched shapes', () => {
    const parts = splitBySlot('MGET', ['a', 'b'], slotOf)!;
    expect(() => mergeSplit('MGET', parts, [['A']])).toThrow(RangeError);
    expect(() => mergeSplit('MGET', parts, [['A'], 'B'])).toThrow(TypeError);
    expect(() => mergeSplit('MGET', parts, [['A'], ['B', 'extra']])).toThrow(TypeError);
    expect(() => mergeSplit('DEL', parts, [1, 'x'])).toThrow(TypeError);
    expect(() => mergeSplit('GET', parts, [1, 1])).toThrow(TypeError);
  });
});

describe('isUnsplittableMultiSlot / isSplittable', () => {
  it.each(['MSETNX', 'msetnx', 'RENAME', 'SMOVE', 'SUNIONSTORE', 'ZINTERSTORE', 'EVAL', 'FCALL', 'BLMOVE', 'PFMERGE', 'BITOP', 'LMPOP', 'SINTERCARD', 'WATCH'])(
    '%s must be refused across slots',
    (cmd) => {
      expect(isUnsplittableMultiSlot(cmd)).toBe(true);
      expect(isSplittable(cmd)).toBe(false);
    },
  );

  it.each(['MGET', 'MSET', 'DEL', 'UNLINK', 'EXISTS', 'TOUCH', 'del'])('%s is split instead', (cmd) => {
    expect(isUnsplittableMultiSlot(cmd)).toBe(false);
    expect(isSplittable(cmd)).toBe(true);
  });

  it('single-key and keyless commands are neither', () => {
    expect(isUnsplittableMultiSlot('GET')).toBe(false);
    expect(isSplittable('GET')).toBe(false);
  });

  it('builds a CrossSlotError that names the slots and the fix', () => {
    const err = crossSlotError('msetnx', [5, 1, 5, 9]);
    expect(err).toBeInstanceOf(CrossSlotError);
    expect(err.message).toContain('MSETNX keys hash to 3 different slots (1, 5, 9)');
    expect(err.message).toContain('hash tag');
  });
});

describe('mergeFanout', () => {
  const err = new RedisError('ERR boom');

  it.each<[string | undefined, Reply[], Reply]>([
    ['agg_sum', [1, 2, 3], 6],
    ['agg_sum', [1, 2n], 3n],
    ['agg_sum', [[1, 2], [3, 4]], [4, 6]],
    ['agg_min', [3, 1, 2], 1],
    ['agg_min', [[3, 1], [2, 5]], [2, 1]],
    ['agg_max', [3, 1, 2], 3],
    ['agg_logical_and', [1, 1, 0], 0],
    ['agg_logical_and', [1, 1], 1],
    ['agg_logical_and', [[1, 0, 1], [1, 1, 0]], [1, 0, 0]], // SCRIPT EXISTS
    ['agg_logical_and', [true, false], false],
    ['agg_logical_or', [0, 0, 1], 1],
    ['agg_logical_or', [[0, 0], [0, 1]], [0, 1]],
    ['agg_logical_or', [false, false], false],
    ['all_succeeded', ['OK', 'OK', 'OK'], 'OK'],
    ['one_succeeded', ['OK', 'OK'], 'OK'],
    ['special', ['# Server\r\n', '# Server\r\n'], ['# Server\r\n', '# Server\r\n']],
    [undefined, [['a', 'b'], [], ['c']], ['a', 'b', 'c']], // KEYS
    [undefined, [null, 'k2', 'k3'], 'k2'], // RANDOMKEY
    [undefined, [null, null], null],
    [undefined, [new Set(['a']), new Set(['a', 'b'])], new Set(['a', 'b'])],
    [undefined, [new Map([['a', 1]]), new Map([['b', 2]])], new Map<Reply, Reply>([['a', 1], ['b', 2]])],
  ])('%s (case %#)', (policy, replies, expected) => {
    expect(mergeFanout(policy, replies)).toEqual(expected);
  });

  it('all_succeeded and the aggregations throw the first error', () => {
    for (const policy of ['all_succeeded', 'agg_sum', 'agg_min', 'agg_logical_and', 'special', undefined]) {
      expect(() => mergeFanout(policy, ['OK', err, new RedisError('ERR later')])).toThrow(err);
    }
  });

  it('one_succeeded returns the first success, or throws the first error when all failed', () => {
    const e2 = new RedisError('ERR two');
    expect(mergeFanout('one_succeeded', [err, 'OK', e2])).toBe('OK');
    expect(() => mergeFanout('one_succeeded', [err, e2])).toThrow(err);
  });

  it('rejects shapes that cannot be aggregated', () => {
    expect(() => mergeFanout('agg_sum', ['x', 1])).toThrow(TypeError);
    expect(() => mergeFanout('agg_sum', [[1, 2], [1]])).toThrow(TypeError);
    expect(() => mergeFanout('agg_sum', [])).toThrow(TypeError);
    expect(() => mergeFanout('one_succeeded', [])).toThrow(TypeError);
    expect(() => mergeFanout('agg_median', [1])).toThrow(TypeError);
  });
});

describe('groupByNode', () => {
  it('groups in first-seen node order and keeps item order', () => {
    const items = ['a@n1', 'b@n2', 'c@n1', 'd@n3', 'e@n2'];
    const groups = groupByNode(items, (s) => s.split('@')[1]!);
    expect([...groups.keys()]).toEqual(['n1', 'n2', 'n3']);
    expect(groups.get('n1')).toEqual({ indices: [0, 2], items: ['a@n1', 'c@n1'] });
    expect(groups.get('n2')).toEqual({ indices: [1, 4], items: ['b@n2', 'e@n2'] });
    expect(groups.get('n3')).toEqual({ indices: [3], items: ['d@n3'] });
  });

  it('is empty for no items', () => {
    expect(groupByNode([], () => 'x').size).toBe(0);
  });

  it('lets replies be put back in order', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 5 })), (nodes) => {
        const groups = groupByNode(nodes, (n) => `n${n}`);
        const out = new Array<number>(nodes.length);
        for (const g of groups.values()) g.indices.forEach((at, j) => (out[at] = g.items[j]!));
        expect(out).toEqual(nodes);
      }),
    );
  });
});

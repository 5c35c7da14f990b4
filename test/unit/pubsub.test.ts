/** The pure decisions of pub/sub: what a frame means, what to send where, and what input is refused. */
import { describe, expect, it } from 'vitest';
import { checkSubscribeInput, isKeyspaceName, nameKey, parseNameKey, readFrame } from '../../src/pubsub/frames.js';
import { groupBy, planSubscriptions } from '../../src/pubsub/plan.js';

describe('readFrame', () => {
  const buf = (s: string) => Buffer.from(s);
  it.each([
    ['message', ['message', 'ch', 'hi'], { type: 'message', key: 'c:ch', channel: 'ch', pattern: undefined, payload: 'hi' }],
    ['message with Buffers', [buf('message'), buf('ch'), buf('hi')], { type: 'message', key: 'c:ch', channel: 'ch', pattern: undefined, payload: buf('hi') }],
    ['smessage', ['smessage', '{a}x', 'v'], { type: 'message', key: 's:{a}x', channel: '{a}x', pattern: undefined, payload: 'v' }],
    ['pmessage', ['pmessage', 'n.*', 'n.1', 'v'], { type: 'message', key: 'p:n.*', channel: 'n.1', pattern: 'n.*', payload: 'v' }],
    ['server sunsubscribe', ['sunsubscribe', '{a}x', 0], { type: 'dropped', key: 's:{a}x', kind: 'shard', name: '{a}x' }],
    ['server unsubscribe', ['unsubscribe', 'ch', 0], { type: 'dropped', key: 'c:ch', kind: 'channel', name: 'ch' }],
    ['invalidate (not pub/sub)', ['invalidate', ['k']], { type: 'other' }],
    ['malformed message', ['message', 'ch'], { type: 'other' }],
    ['pong', ['pong', ''], { type: 'other' }],
  ])('%s', (_name, frame, expected) => {
    expect(readFrame(frame as never)).toEqual(expected);
  });

  it.each([['channel', 'a:b'], ['pattern', 'news.*'], ['shard', '{x}c:1']] as const)('parseNameKey undoes nameKey (%s %s)', (kind, name) => {
    expect(parseNameKey(nameKey(kind, name))).toEqual({ kind, name });
  });

  it('a channel and a pattern with the same text are different names', () => {
    expect(nameKey('channel', 'a*')).not.toBe(nameKey('pattern', 'a*'));
    expect(nameKey('shard', 'a')).not.toBe(nameKey('channel', 'a'));
  });
});

describe('isKeyspaceName', () => {
  it.each([
    ['__keyspace@0__:foo', true],
    ['__keyevent@0__:set', true],
    ['__key*@*__:*', true],
    ['news', false],
    ['_keyspace@0__', false],
  ])('%s -> %s', (name, expected) => {
    expect(isKeyspaceName(name)).toBe(expected);
  });
});

describe('planSubscriptions', () => {
  const plan = (wanted: Record<string, string[]>, actual: Record<string, string[]>) => {
    const p = planSubscriptions(new Map(Object.entries(wanted)), new Map(Object.entries(actual).map(([t, n]) => [t, new Set(n)])));
    return { add: Object.fromEntries(p.add), remove: Object.fromEntries(p.remove), idle: p.idle };
  };
  it.each([
    ['nothing yet: subscribe where wanted', { a: ['A'], b: ['A'] }, {}, { add: { A: ['a', 'b'] }, remove: {}, idle: [] }],
    ['already there: nothing to send', { a: ['A'] }, { A: ['a'] }, { add: {}, remove: {}, idle: [] }],
    ['moved: add on the new node, remove from the old, old idle', { a: ['B'] }, { A: ['a'] }, { add: { B: ['a'] }, remove: { A: ['a'] }, idle: ['A'] }],
    ['no longer wanted: remove; a node that keeps others stays', { b: ['A'] }, { A: ['a', 'b'] }, { add: {}, remove: { A: ['a'] }, idle: [] }],
    ['everything gone: the node is idle', {}, { A: ['a'] }, { add: {}, remove: { A: ['a'] }, idle: ['A'] }],
    ['on every master (keyspace): one add per missing node', { k: ['A', 'B', 'C'] }, { A: ['k'] }, { add: { B: ['k'], C: ['k'] }, remove: {}, idle: [] }],
    ['an empty connection that gets a name is not idle', { a: ['A'] }, { A: [] }, { add: { A: ['a'] }, remove: {}, idle: [] }],
    ['nowhere to go (slot unserved): removed, nothing added', { a: [] }, { A: ['a'] }, { add: {}, remove: { A: ['a'] }, idle: ['A'] }],
  ])('%s', (_name, wanted, actual, expected) => {
    expect(plan(wanted, actual)).toEqual(expected);
  });
});

describe('groupBy', () => {
  it('keeps order within groups', () => {
    expect(Object.fromEntries(groupBy(['a1', 'b1', 'a2'], (n) => n[0]))).toEqual({ a: ['a1', 'a2'], b: ['b1'] });
  });
});

describe('checkSubscribeInput', () => {
  it('applies defaults and removes duplicate names', () => {
    expect(checkSubscribeInput('subscribe', ['a', 'a', 'b'], undefined, undefined)).toEqual({
      names: ['a', 'b'],
      options: { returnBuffers: false, highWaterMark: 1000, overflow: 'drop-oldest' },
    });
    expect(checkSubscribeInput('subscribe', 'a', () => {}, { highWaterMark: 5, overflow: 'error', returnBuffers: true }).options).toEqual({ returnBuffers: true, highWaterMark: 5, overflow: 'error' });
  });
  it.each([
    ['an empty list', [], undefined, undefined, /at least one name/],
    ['an empty name', [''], undefined, undefined, /non-empty string/],
    ['a number', [42], undefined, undefined, /non-empty string; got number/],
    ['a listener that is not a function', ['a'], 'x', undefined, /listener must be a function/],
    ['options that are not an object', ['a'], undefined, 5, /options must be an object/],
    ['an unknown option', ['a'], undefined, { hwm: 1 }, /unknown option hwm/],
    ['highWaterMark 0', ['a'], undefined, { highWaterMark: 0 }, /highWaterMark must be an integer >= 1/],
    ['highWaterMark 1.5', ['a'], undefined, { highWaterMark: 1.5 }, /highWaterMark/],
    ['overflow block', ['a'], undefined, { overflow: 'block' }, /overflow must be/],
    ['returnBuffers as a string', ['a'], undefined, { returnBuffers: 'yes' }, /returnBuffers must be a boolean/],
  ])('refuses %s with a TypeError', (_name, names, listener, options, message) => {
    expect(() => checkSubscribeInput('subscribe', names, listener, options)).toThrow(TypeError);
    expect(() => checkSubscribeInput('subscribe', names, listener, options)).toThrow(message);
  });
});

/**
 * Durable acknowledgements: the pure decisions (which commands get a WAIT, what a WAIT reply
 * means, how its timeout fits the call's deadline) and the option checks, by tables.
 */
import { describe, expect, it } from 'vitest';
import { DurabilityError, isNotExecuted, RedisError } from '../../src/index.js';
import { CommandRegistry } from '../../src/commands/command-table.js';
import { mayResend } from '../../src/retry.js';
import { needsConfirmation, shortMessage, waitOutcome, waitTimeout } from '../../src/connection/durability.js';
import { checkDurability, confirmsWrite, DurabilityCounters, effectiveDurability, isDurableWrite } from '../../src/pool/durability.js';
import { checkCallOptions } from '../../src/pool/call-options.js';
import { resolveCommon } from '../../src/pool/common-options.js';
import { decideRedirect } from '../../src/cluster/redirect.js';

describe('which commands wait for replicas', () => {
  const table = new CommandRegistry();
  it.each([
    [['SET', 'k', 'v'], true],
    [['set', 'k', 'v'], true],
    [['INCR', 'n'], true],
    [['DEL', 'a', 'b'], true],
    [['XADD', 's', '*', 'f', 'v'], true],
    [['BLMOVE', 'a', 'b', 'LEFT', 'RIGHT', '0'], true],
    [['FLUSHALL'], true],
    [['EVAL', 'return 1', '0'], true],
    [['EVALSHA', 'abc', '0'], true],
    [['FCALL', 'f', '0'], true],
    [['FUNCTION', 'LOAD', 'code'], true],
    [['MADEUP.MODULECMD', 'k'], true],
    [['GET', 'k'], false],
    [['MGET', 'a', 'b'], false],
    [['EVAL_RO', 'return 1', '0'], false],
    [['FCALL_RO', 'f', '0'], false],
    [['FUNCTION', 'LIST'], false],
    [['PING'], false],
    [['PUBLISH', 'ch', 'm'], false],
    [['WAIT', '1', '100'], false],
    [['MULTI'], false],
    [['EXEC'], false],
    [['CLIENT', 'SETNAME', 'x'], false],
  ])('%j -> %s', (args, expected) => {
    expect(isDurableWrite(args)).toBe(expected);
    // The cached answer is the same as the first.
    expect(isDurableWrite(args)).toBe(expected);
    if (args.length === 1 || args[0] !== 'FUNCTION') expect(confirmsWrite(table.get(args[0]!))).toBe(expected);
  });
});

describe('waitTimeout: the WAIT counts within the call deadline', () => {
  it.each([
    ['no deadline', 500, 0, 1000, 500],
    ['deadline far away', 500, 10_000, 1000, 500],
    ['deadline closer than the timeout', 500, 1300, 1000, 300],
    ['deadline already passed: never 0 (WAIT 0 blocks forever)', 500, 900, 1000, 1],
    ['deadline right now', 500, 1000, 1000, 1],
  ])('%s', (_name, timeout, earliest, now, expected) => {
    expect(waitTimeout(timeout, earliest, now)).toBe(expected);
  });
});

describe('needsConfirmation', () => {
  it.each([
    ['SET', 'OK', true],
    ['INCR', 5, true],
    ['SET', null, true], // SET NX that did not set: still confirmed (cheap, and nothing to special-case)
    ['EXEC', ['OK', 1], true],
    ['EXEC', null, false], // WATCH aborted: nothing was written
    ['exec', null, false],
    ['DEL', 0, true],
  ] as const)('%s replied %j -> %s', (name, reply, expected) => {
    expect(needsConfirmation(name, reply as never)).toBe(expected);
  });
});

describe('waitOutcome', () => {
  const denied = new RedisError("NOPERM this user has no permissions to run the 'wait' command");
  it.each([
    ['enough', 1, 1, { kind: 'confirmed', replicas: 1 }],
    ['more than enough', 2, 1, { kind: 'confirmed', replicas: 2 }],
    ['short', 1, 2, { kind: 'short', replicas: 1 }],
    ['none', 0, 1, { kind: 'short', replicas: 0 }],
    ['bigint (RESP3 big number)', 2n, 2, { kind: 'confirmed', replicas: 2 }],
  ] as const)('%s', (_name, reply, required, expected) => {
    expect(waitOutcome(reply, required)).toEqual(expected);
  });
  it('an error reply or a reply that is not a count fails', () => {
    expect(waitOutcome(denied, 1)).toEqual({ kind: 'failed', error: denied });
    const odd = waitOutcome('QUEUED', 1);
    expect(odd.kind).toBe('failed');
    expect(odd.kind === 'failed' && odd.error.message).toMatch(/QUEUED/);
  });
});

describe('DurabilityError', () => {
  it('says what ran where, how many confirmed, and what to do; it is never re-sent', () => {
    const none = shortMessage('SET', '127.0.0.1:6379', 0, 1, 500);
    expect(none).toMatch(/^SET ran on 127\.0\.0\.1:6379, but only 0 of 1 replicas confirmed it within 500 ms/);
    expect(none).toMatch(/connected_slaves/);
    expect(none).toMatch(/not re-sent/);
    expect(shortMessage('SET', 'h:1', 1, 2, 500)).toMatch(/lower durability\.replicas/);
    const e = new DurabilityError('m', { replicas: 1, required: 2, address: { host: 'h', port: 1 } });
    expect([e.name, e.replicas, e.required, e.address]).toEqual(['DurabilityError', 1, 2, { host: 'h', port: 1 }]);
    expect(e).toBeInstanceOf(Error);
    // It ran on the master: not "not executed", and no retry rule sends it again.
    expect(isNotExecuted(e)).toBe(false);
    expect(mayResend(e, true, false, true)).toBe(false);
    expect(mayResend(e, false, true, true)).toBe(false);
  });
});

describe('the durability option', () => {
  it.each([
    [{ replicas: 1, timeout: 500 }],
    [{ replicas: 2, timeout: 1 }],
  ])('accepts %j', (value) => {
    expect(() => checkDurability('durability', value, false)).not.toThrow();
    expect(() => resolveCommon({ durability: value })).not.toThrow();
  });
  it.each([
    ['durability', 'yes', /Option durability must be an object/],
    ['durability', null, /Option durability must be an object/],
    ['durability', false, /Option durability must be an object \{ replicas, timeout \} \(got boolean\)/],
    ['durability', { timeout: 500 }, /Option durability\.replicas is required/],
    ['durability', { replicas: 1 }, /Option durability\.timeout is required/],
    ['durability', { replicas: 0, timeout: 500 }, /Option durability\.replicas must be an integer from 1/],
    ['durability', { replicas: 1.5, timeout: 500 }, /Option durability\.replicas must be an integer/],
    ['durability', { replicas: 1, timeout: 0 }, /Option durability\.timeout must be an integer from 1/],
    ['durability', { replicas: 1, timeout: '500' }, /Option durability\.timeout must be an integer/],
    ['durability', { replicas: 1, timeout: 500, replica: 1 }, /Unknown option durability\.replica/],
  ])('%s = %j -> TypeError', (name, value, message) => {
    expect(() => resolveCommon({ [name]: value } as never)).toThrow(TypeError);
    expect(() => resolveCommon({ [name]: value } as never)).toThrow(message);
  });
  it('per call: an object or false; the TypeError names with.durability', () => {
    expect(() => checkCallOptions({ durability: false })).not.toThrow();
    expect(() => checkCallOptions({ durability: { replicas: 1, timeout: 10 } })).not.toThrow();
    expect(() => checkCallOptions({ durability: true as never })).toThrow(/Option with\.durability must be an object \{ replicas, timeout \} or false/);
    expect(() => checkCallOptions({ durability: { replicas: 1, timeout: -1 } })).toThrow(/Option with\.durability\.timeout/);
  });
  it('what a call asks for: its own value, false for off, else the pool\'s; counted with the pool', () => {
    const counters = new DurabilityCounters();
    const pool = { replicas: 1, timeout: 500, stats: counters };
    expect(effectiveDurability(pool, undefined, counters)).toBe(pool);
    expect(effectiveDurability(pool, false, counters)).toBeUndefined();
    expect(effectiveDurability(pool, { replicas: 1, timeout: 500 }, counters)).toBe(pool);
    expect(effectiveDurability(pool, { replicas: 2, timeout: 100 }, counters)).toEqual({ replicas: 2, timeout: 100, stats: counters });
    expect(effectiveDurability(undefined, { replicas: 2, timeout: 100 }, counters)).toEqual({ replicas: 2, timeout: 100, stats: counters });
    expect(effectiveDurability(undefined, undefined, counters)).toBeUndefined();
  });
});

describe('DurabilityCounters', () => {
  it('counts waits, confirmed and failed writes, and WAIT times', () => {
    const c = new DurabilityCounters();
    expect(c.snapshot()).toEqual({ waits: 0, confirmed: 0, durabilityErrors: 0, uncertain: 0, waitTime: { last: 0, mean: 0, max: 0 } });
    c.sent();
    c.sent();
    c.sent();
    c.answer(2, 10, 0);
    c.answer(6, 0, 3);
    c.lost(4, false);
    expect(c.snapshot()).toEqual({ waits: 3, confirmed: 10, durabilityErrors: 3, uncertain: 4, waitTime: { last: 6, mean: 4, max: 6 } });
  });
});

describe('a cluster never retries a DurabilityError', () => {
  it('decideRedirect fails it, idempotent or not', () => {
    const e = new DurabilityError('m', { replicas: 0, required: 1 });
    for (const idempotent of [false, true]) {
      const d = decideRedirect(e, { sent: true, readOnly: false, idempotent, redirections: 0, maxRedirections: 16, from: { host: 'h', port: 1 } });
      expect(d).toEqual({ action: 'fail', error: e, exhausted: false });
    }
  });
});

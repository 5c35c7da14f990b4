/**
 * The payload builders of diagnostics_channel: what a subscriber gets, and what it never gets
 * (argument values).
 */
import { describe, expect, it } from 'vitest';
import { acquireInfo, commandContext, DIAGNOSTICS_CHANNELS } from '../../src/diagnostics.js';
import { TimeoutError } from '../../src/errors.js';
import type { Arg } from '../../src/types.js';

const origin = { mode: 'cluster' as const, address: Object.freeze({ host: '127.0.0.1', port: 7000 }) };

describe('commandContext', () => {
  const cases: Array<{ args: Arg[]; batchSize?: number; command: string; argCount: number }> = [
    { args: ['get', 'user:1'], command: 'GET', argCount: 1 },
    { args: ['SET', 'k', 'v', 'EX', 10], command: 'SET', argCount: 4 },
    { args: ['PING'], command: 'PING', argCount: 0 },
    { args: ['client', 'setname', 'x'], command: 'CLIENT', argCount: 2 },
    { args: [Buffer.from('hset'), 'h', 'f', Buffer.from('v')], batchSize: 3, command: 'HSET', argCount: 3 },
    { args: ['MULTI'], batchSize: 4, command: 'MULTI', argCount: 0 },
  ];
  it.each(cases)('$args.0 -> $command with $argCount arguments', ({ args, batchSize, command, argCount }) => {
    const ctx = commandContext(args, origin, 2, batchSize);
    expect(ctx).toEqual({ command, argCount, address: { host: '127.0.0.1', port: 7000 }, mode: 'cluster', attempt: 2, ...(batchSize !== undefined ? { batchSize } : {}) });
    // No batchSize key at all for a single command (subscribers test `'batchSize' in ctx`).
    expect('batchSize' in ctx).toBe(batchSize !== undefined);
  });

  it('never carries argument values', () => {
    const secret = 's3cr3t-Value';
    const ctx = commandContext(['AUTH', 'alice', secret], origin, 1);
    const keyCtx = commandContext(['SET', `session:${secret}`, secret], origin, 1, 2);
    expect(JSON.stringify([ctx, keyCtx])).not.toContain(secret);
  });

  it('shares one frozen address: a subscriber cannot move the pool', () => {
    const ctx = commandContext(['GET', 'k'], origin, 1);
    expect(Object.isFrozen(ctx.address)).toBe(true);
    expect(() => { (ctx.address as { port: number }).port = 1; }).toThrow(TypeError);
  });
});

describe('acquireInfo', () => {
  it.each([
    { started: 1000, ended: 1250, queued: 2, error: undefined, waitMs: 250 },
    { started: 1000, ended: 999, queued: 0, error: undefined, waitMs: 0 }, // a clock step back is no negative wait
    { started: 1000, ended: 1200, queued: 1, error: new TimeoutError('no connection'), waitMs: 200 },
    { started: 5, ended: 5, queued: 0, error: 'odd', waitMs: 0 },
  ])('waited $waitMs ms (queued $queued, error $error)', ({ started, ended, queued, error, waitMs }) => {
    const address = { host: '::1', port: 6379 };
    const info = acquireInfo(address, 'sentinel', started, ended, queued, error);
    expect(info).toMatchObject({ address, mode: 'sentinel', waitMs, queued });
    expect(info.address).not.toBe(address);
    if (error === undefined) expect('error' in info).toBe(false);
    else expect(info.error).toBeInstanceOf(Error);
  });
});

describe('channel names', () => {
  it('are the pinned contract', () => {
    expect(DIAGNOSTICS_CHANNELS).toEqual({
      command: 'redis-ha-pool:command',
      connect: 'redis-ha-pool:connect',
      close: 'redis-ha-pool:close',
      failover: 'redis-ha-pool:failover',
      topology: 'redis-ha-pool:topology',
      redirect: 'redis-ha-pool:redirect',
      acquire: 'redis-ha-pool:acquire',
      maintenance: 'redis-ha-pool:maintenance',
    });
  });
});

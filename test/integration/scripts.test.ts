/**
 * pool.script(): EVALSHA first, EVAL when the server lost the script (a fresh server, SCRIPT
 * FLUSH, a promoted replica after a real Sentinel failover), never a second run of a script
 * that failed otherwise; batches send EVAL; views and leases work alike; keyPrefix in a
 * SentinelPool (its cluster and standalone tests are in cluster-helpers / key-prefix).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisError, SentinelPool, StandalonePool } from '../../src/index.js';
import type { NodeAddress } from '../../src/types.js';
import { sendCommand } from '../support/mini-client.js';
import { startSentinel, startStandalone, waitFor, type SentinelTopology, type StandaloneTopology } from '../support/topology.js';

/** Calls of one command on a node since its last CONFIG RESETSTAT, from INFO commandstats. */
async function calls(node: { cli(...a: string[]): Promise<string> }, command: string): Promise<number> {
  const info = await node.cli('INFO', 'commandstats');
  const m = new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(info);
  return m ? Number(m[1]) : 0;
}

const INCR_BY = "return redis.call('INCRBY', KEYS[1], ARGV[1])";

describe('standalone', () => {
  let topo: StandaloneTopology;
  let pool: StandalonePool;

  beforeAll(async () => {
    topo = await startStandalone();
    pool = await StandalonePool.create(topo.url);
  });
  afterAll(async () => {
    await pool?.close();
    await topo?.stop();
  });

  it('sends EVALSHA (SHA1 computed locally); the first call on an empty cache falls back to EVAL once', async () => {
    const incr = pool.script(INCR_BY, { keys: 1 });
    expect(incr.sha).toBe(await topo.server.cli('SCRIPT', 'LOAD', INCR_BY));
    await topo.server.cli('SCRIPT', 'FLUSH');
    await topo.server.cli('CONFIG', 'RESETSTAT');
    expect(await incr('sc:n', 5)).toBe(5);
    expect(await incr('sc:n', 2)).toBe(7);
    expect(await incr('sc:n', 1)).toBe(8);
    expect(await calls(topo.server, 'evalsha')).toBe(3);
    expect(await calls(topo.server, 'eval')).toBe(1);
  });

  it('still works after SCRIPT FLUSH: the next call re-sends the source, later calls use the SHA again', async () => {
    const incr = pool.script(INCR_BY, { keys: 1 });
    await incr('sc:f', 1);
    await topo.server.cli('SCRIPT', 'FLUSH');
    await topo.server.cli('CONFIG', 'RESETSTAT');
    expect(await incr('sc:f', 1)).toBe(2);
    expect(await incr('sc:f', 1)).toBe(3);
    expect(await calls(topo.server, 'eval')).toBe(1);
    expect(await calls(topo.server, 'evalsha')).toBe(2);
  });

  it('a script error rejects with the RedisError and is not sent again as EVAL', async () => {
    const boom = pool.script("return redis.error_reply('BOOM ' .. ARGV[1])", { keys: 0 });
    await boom('warm').catch(() => {});
    await topo.server.cli('CONFIG', 'RESETSTAT');
    const err = await boom('x').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RedisError);
    expect((err as RedisError).message).toContain('BOOM x');
    expect(await calls(topo.server, 'eval')).toBe(0);
    expect(await calls(topo.server, 'evalsha')).toBe(1);
  });

  it('works on views and leases, read-only scripts as EVALSHA_RO, and refuses calls short of keys', async () => {
    const get = pool.with({ timeout: 5000 }).script("#!lua flags=no-writes\nreturn redis.call('GET', KEYS[1])", { keys: 1, readOnly: true });
    await pool.set('sc:ro', 'v');
    await topo.server.cli('CONFIG', 'RESETSTAT');
    expect(await get('sc:ro')).toBe('v');
    expect(await calls(topo.server, 'evalsha_ro')).toBe(1);
    const viaLease = await pool.use(async (lease) => lease.script(INCR_BY, { keys: 1 })('sc:lease', 4));
    expect(viaLease).toBe(4);
    const two = pool.script('return 1', { keys: 2 });
    await expect(two('only-one')).rejects.toThrow(/This script takes 2 keys first/);
  });

  it('in a pipeline or transaction, runScript sends EVAL (no out-of-order retry is needed)', async () => {
    const incr = pool.script(INCR_BY, { keys: 1 });
    await topo.server.cli('SCRIPT', 'FLUSH');
    await topo.server.cli('CONFIG', 'RESETSTAT');
    expect(await pool.pipeline().runScript(incr, 'sc:p', 1).get('sc:p').runScript(incr, 'sc:p', 1).exec()).toEqual([1, '1', 2]);
    expect(await pool.multi().runScript(incr, 'sc:p', 10).exec()).toEqual([12]);
    expect(await calls(topo.server, 'eval')).toBe(3);
    expect(await calls(topo.server, 'evalsha')).toBe(0);
    expect(() => pool.pipeline().runScript((() => 1) as never, 'k')).toThrow(/needs a script made by pool.script/);
  });
});

describe('sentinel', () => {
  let topo: SentinelTopology;

  beforeAll(async () => {
    topo = await startSentinel({ downAfterMs: 1000, failoverTimeoutMs: 5000 });
  });
  afterAll(async () => {
    await topo?.stop();
  });

  it('keyPrefix applies in a SentinelPool too, script keys included', async () => {
    const pool = await SentinelPool.create(topo.masterName, topo.sentinelAddresses, { keyPrefix: 'sp:' });
    try {
      expect(await pool.script(INCR_BY, { keys: 1 })('n', 2)).toBe(2);
      expect(await sendCommand(pool.master(), ['GET', 'sp:n'])).toBe('2');
      expect(await sendCommand(pool.master(), ['EXISTS', 'n'])).toBe(0);
    } finally {
      await pool.close();
    }
  });

  it('after a real failover (SENTINEL FAILOVER) the promoted replica has no script cached; the script still works', async () => {
    const pool = await SentinelPool.create(topo.masterName, topo.sentinelAddresses);
    try {
      const incr = pool.script(INCR_BY, { keys: 1 });
      expect(await incr('sc:s', 1)).toBe(1);
      const from = pool.master();
      const failovers: Array<{ to: NodeAddress }> = [];
      pool.on('failover', (e) => failovers.push(e));
      expect(await topo.sentinels[0]!.cli('SENTINEL', 'FAILOVER', topo.masterName)).toBe('OK');
      const to = await topo.waitForNewMaster(from);
      await waitFor(() => failovers.length >= 1, 'the pool to follow the failover', 30_000);
      expect(pool.master()).toEqual(to);
      // The premise: the new master's script cache is empty, so a bare EVALSHA would fail.
      expect(await sendCommand(to, ['SCRIPT', 'EXISTS', incr.sha])).toEqual([0]);
      // The failover event means commands now reach the new master: the first call gets NOSCRIPT there and re-sends the source.
      const value = await incr('sc:s', 1);
      expect(value).toBe(2);
      expect(await sendCommand(to, ['SCRIPT', 'EXISTS', incr.sha])).toEqual([1]);
    } finally {
      await pool.close();
    }
  });
});

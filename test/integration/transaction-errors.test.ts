/**
 * Errors inside batches name the node that produced them, as a single command's error does:
 * a command failing inside MULTI/EXEC (its error is an element of EXEC's reply), a
 * transaction the server refused (EXECABORT), and a pipeline entry.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisError, StandalonePool } from '../../src/index.js';
import { startStandalone, type StandaloneTopology } from '../support/topology.js';

describe('errors inside multi() and pipeline()', () => {
  let server: StandaloneTopology;
  let pool: StandalonePool;

  beforeAll(async () => {
    server = await startStandalone();
    pool = await StandalonePool.create(server.url);
  });

  afterAll(async () => {
    await pool?.close();
    await server?.stop();
  });

  it('a command that fails inside EXEC carries the node address', async () => {
    await pool.set('tx:str', 'v');
    const results = await pool.multi().incr('tx:n').lpush('tx:str', 'x').get('tx:str').exec();
    expect(results).not.toBeNull();
    const [n, failed, value] = results!;
    expect(n).toBe(1);
    expect(value).toBe('v');
    expect(failed).toBeInstanceOf(RedisError);
    expect((failed as RedisError).code).toBe('WRONGTYPE');
    expect((failed as RedisError).address).toEqual(server.address);
  });

  it('the same inside a lease, and under RESP3', async () => {
    const resp3 = await StandalonePool.create(server.url, { protocol: 3 });
    try {
      const results = await resp3.use((lease) => lease.multi().lpush('tx:str', 'x').exec());
      expect((results![0] as RedisError).code).toBe('WRONGTYPE');
      expect((results![0] as RedisError).address).toEqual(server.address);
    } finally {
      await resp3.close();
    }
  });

  it('EXECABORT carries the node address, and the refused command as its cause', async () => {
    const err = await pool.multi().set('tx:a', '1').call('SET', 'tx:a').exec().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RedisError);
    expect((err as RedisError).code).toBe('EXECABORT');
    expect((err as RedisError).address).toEqual(server.address);
    expect(((err as RedisError).cause as RedisError).code).toBe('ERR');
    expect(((err as RedisError).cause as RedisError).address).toEqual(server.address);
  });

  it('a failed pipeline entry carries the node address', async () => {
    const [, failed] = await pool.pipeline().set('tx:p', 'v').lpush('tx:p', 'x').exec();
    expect((failed as RedisError).code).toBe('WRONGTYPE');
    expect((failed as RedisError).address).toEqual(server.address);
  });
});

/**
 * The typed helpers as users reach them: every method of the `Commands` interface is the
 * installed helper of that name, at run time, on a pool, a view, a lease (and a lease's view)
 * and both kinds of batch; and the helper table cannot drift from the interface at compile time.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HELPER_NAMES, type HelperEntry, type HelperTable } from '../../src/commands/helpers.js';
import type { Commands } from '../../src/commands/commands.js';
import { StandalonePool } from '../../src/index.js';
import { startStandalone, type StandaloneTopology } from '../support/topology.js';

/**
 * Every method of `Commands`, written out here rather than read from the helper table, so a
 * helper the table lost fails this test. Typed as a record over `keyof Commands`: a method added
 * to (or removed from) the interface does not compile until this list follows.
 */
const METHODS: Record<keyof Commands, true> = {
  get: true, set: true, getdel: true, getex: true, setnx: true, del: true, unlink: true, exists: true, touch: true, expire: true, expireat: true,
  persist: true, ttl: true, pttl: true, incr: true, incrby: true, incrbyfloat: true, decr: true, decrby: true, mget: true, mset: true, hget: true,
  hset: true, hmget: true, hgetall: true, hdel: true, hincrby: true, hexists: true, lpush: true, rpush: true, lpop: true, rpop: true, lrange: true,
  lrem: true, lindex: true, llen: true, blpop: true, sadd: true, srem: true, smembers: true, scard: true, sismember: true, zadd: true, zrange: true,
  zrangebyscore: true, zscore: true, zincrby: true, zrem: true, zcard: true, xadd: true, xrange: true, xrevrange: true, xlen: true, xread: true,
  xreadgroup: true, xack: true, xgroup: true, publish: true, eval: true, evalsha: true, fcall: true, fcall_ro: true, scan: true,
};
const NAMES = Object.keys(METHODS) as Array<keyof Commands>;

/**
 * What is wrong with `handle`'s helpers: a method that is missing or not a function, or that is
 * not the helper of its name. Called with no arguments, every helper refuses the call with a
 * TypeError that starts with its own name (synchronously on a batch, as a rejection elsewhere).
 */
async function problems(handle: object, what: string): Promise<string[]> {
  const out: string[] = [];
  for (const name of NAMES) {
    const fn = (handle as Record<string, unknown>)[name];
    if (typeof fn !== 'function') {
      out.push(`${what}.${name} is ${typeof fn}`);
      continue;
    }
    let error: unknown;
    try {
      await (fn as () => unknown).call(handle);
    } catch (e) {
      error = e;
    }
    if (!(error instanceof TypeError) || !error.message.startsWith(`${name}: `)) out.push(`${what}.${name}() did not refuse as the ${name} helper: ${String(error)}`);
  }
  return out;
}

describe('every Commands method at run time', () => {
  let topo: StandaloneTopology;
  let pool: StandalonePool;
  beforeAll(async () => {
    topo = await startStandalone();
    pool = await StandalonePool.create(topo.address);
  });
  afterAll(async () => {
    await pool?.close();
    await topo?.stop();
  });

  it('the list here names the same helpers as the table', () => {
    expect([...NAMES].sort()).toEqual([...HELPER_NAMES].sort());
  });

  it('on a pool, a view, a lease, a lease view, a pipeline and a transaction', async () => {
    const found = [
      ...(await problems(pool, 'pool')),
      ...(await problems(pool.with({ timeout: 1000 }), 'view')),
      ...(await problems(pool.with({ returnBuffers: true }), 'buffer view')),
      ...(await problems(pool.pipeline(), 'pipeline')),
      ...(await problems(pool.multi(), 'multi')),
      ...(await pool.use(async (lease) => [...(await problems(lease, 'lease')), ...(await problems(lease.with({ timeout: 1000 }), 'lease view'))])),
    ];
    expect(found).toEqual([]);
    // The helpers refused without sending anything: the pool still answers.
    expect(await pool.set('surface:k', 'v')).toBe('OK');
    expect(await pool.get('surface:k')).toBe('v');
  });
});

describe('the helper table and the Commands interface cannot drift apart (compile-time checks)', () => {
  // Type checks: `npx tsc -p tsconfig.test.json` fails when one of the lines marked below as an
  // expected error stops being one. At run time they only assign.
  it('a table without an entry for a Commands method does not type-check', () => {
    type WithoutGet = Omit<HelperTable, 'get'>;
    const incomplete = {} as WithoutGet;
    // @ts-expect-error `get` is a method of Commands, so a table must have its entry
    const table: HelperTable = incomplete;
    expect(table).toBe(incomplete);
  });

  it('an entry for a method Commands does not have does not type-check', () => {
    const entry: HelperEntry<'bogus'> = { usage: 'bogus(key)', build: () => ({ args: ['BOGUS'] }) };
    // @ts-expect-error `bogus` is not a method of Commands
    const table: HelperTable = { ...({} as HelperTable), bogus: entry };
    expect((table as unknown as Record<string, unknown>).bogus).toBe(entry);
  });

  it("an entry's usage must start with its own name", () => {
    // @ts-expect-error the usage of `hget` names `get`
    const entry: HelperEntry<'hget'> = { usage: 'get(key, field)', build: () => ({ args: ['HGET'] }) };
    expect(entry.usage).toBe('get(key, field)');
  });
});

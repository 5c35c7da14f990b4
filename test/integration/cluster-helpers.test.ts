/**
 * ClusterPool with the helpers of issue 13: scripts and functions routed by their keys (no
 * MOVED on the way, refused across slots), keyPrefix routed by the slot of the prefixed key,
 * scanIterator under a prefix across every master, and the stream helpers routed by key.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClusterPool, CrossSlotError, keySlot } from '../../src/index.js';
import { startCluster, type ClusterTopology, type ServerHandle } from '../support/topology.js';
import { server } from '../support/server-features.js';

let topo: ClusterTopology;
let pool: ClusterPool;
let moved = 0;

/** A key (with `stem`) whose slot is served by a different master than each key in `others`. */
async function keyOnAnotherMaster(stem: string, others: string[], prefix = ''): Promise<string> {
  const taken = new Set<number>();
  for (const o of others) taken.add((await topo.nodeForSlot(keySlot(prefix + o))).port);
  for (let i = 0; ; i++) {
    const k = `${stem}${i}`;
    if (!taken.has((await topo.nodeForSlot(keySlot(prefix + k))).port)) return k;
  }
}

async function owner(key: string): Promise<ServerHandle> {
  return topo.nodeForSlot(keySlot(key));
}

beforeAll(async () => {
  topo = await startCluster({ masters: 3, replicasPerMaster: 0 });
  pool = await ClusterPool.create(topo.seeds, { refresh: { interval: 0 } });
  pool.on('moved', () => moved++);
});
afterAll(async () => {
  await pool?.close();
  await topo?.stop();
});

describe('scripts and functions', () => {
  it('a script with keys in different slots (different masters) runs on each key\'s master, after SCRIPT FLUSH everywhere', async () => {
    await pool.call('SCRIPT', 'FLUSH'); // all_nodes: every node forgets it
    const set = pool.script("return redis.call('SET', KEYS[1], ARGV[1])", { keys: 1 });
    const a = 'sc-a';
    const b = await keyOnAnotherMaster('sc-b', [a]);
    const c = await keyOnAnotherMaster('sc-c', [a, b]);
    const before = moved;
    for (const k of [a, b, c]) expect(await set(k, `v-${k}`)).toBe('OK');
    expect(moved).toBe(before);
    for (const k of [a, b, c]) expect(await (await owner(k)).cli('GET', k)).toBe(`v-${k}`);
    // Each master cached it on its first (EVAL) run.
    for (const k of [a, b, c]) expect(await (await owner(k)).cli('SCRIPT', 'EXISTS', set.sha)).toBe('1');
  });

  it('a script whose keys span slots is refused with CrossSlotError before it is sent', async () => {
    const two = pool.script('return 1', { keys: 2 });
    const b = await keyOnAnotherMaster('x', ['y']);
    await expect(two('y', b)).rejects.toBeInstanceOf(CrossSlotError);
    expect(await two('{t}y', '{t}z')).toBe(1);
  });

  it.skipIf(!server.has('functions'))(`FCALL and FCALL_RO are routed by their keys ${server.needs('functions')}`, async () => {
    await pool.call('FUNCTION', 'LOAD', 'REPLACE', "#!lua name=chlib\nredis.register_function('ch_set', function(k, a) return redis.call('SET', k[1], a[1]) end)\nredis.register_function{function_name='ch_get', callback=function(k) return redis.call('GET', k[1]) end, flags={'no-writes'}}");
    const a = 'fn-a';
    const b = await keyOnAnotherMaster('fn-b', [a]);
    const before = moved;
    expect(await pool.fcall('ch_set', 1, a, '1')).toBe('OK');
    expect(await pool.fcall('ch_set', 1, b, '2')).toBe('OK');
    expect(await pool.fcall_ro('ch_get', 1, b)).toBe('2');
    expect(moved).toBe(before);
    expect(await (await owner(b)).cli('GET', b)).toBe('2');
  });
});

describe('keyPrefix', () => {
  let app: ClusterPool;
  beforeAll(async () => {
    app = await ClusterPool.create(topo.seeds, { keyPrefix: 'app:', refresh: { interval: 0 } });
    app.on('moved', () => moved++);
  });
  afterAll(async () => {
    await app?.close();
  });

  it('routes by the slot of the prefixed key (no MOVED), for single- and multi-key commands, pipelines and leases', async () => {
    // A key whose prefixed name lives on another master than its bare name.
    let k = 'p0';
    for (let i = 0; (await owner(k)).port === (await owner(`app:${k}`)).port; i++) k = `p${i}`;
    const before = moved;
    expect(await app.set(k, 'v')).toBe('OK');
    expect(await (await owner(`app:${k}`)).cli('GET', `app:${k}`)).toBe('v');
    expect(await pool.exists(k)).toBe(0);

    const other = await keyOnAnotherMaster('q', [k], 'app:');
    expect(await app.mset({ [k]: '1', [other]: '2' })).toBe('OK'); // split by the prefixed slots
    expect(await app.mget(k, other)).toEqual(['1', '2']);
    expect(await app.pipeline().get(k).get(other).exec()).toEqual(['1', '2']);
    await app.use(async (lease) => {
      expect(lease.address.port).toBe((await owner(`app:${other}`)).port);
      expect(await lease.get(other)).toBe('2');
    }, { key: other });
    const incr = app.script("return redis.call('INCRBY', KEYS[1], ARGV[1])", { keys: 1 });
    expect(await incr(other, 5)).toBe(7);
    expect(moved).toBe(before);
    expect(await app.del([k, other])).toBe(2);
  });

  it('scanIterator walks every master, only under the prefix, and yields keys without it', async () => {
    const mine = Array.from({ length: 30 }, (_, i) => `scan:${i}`);
    await app.mset(mine.flatMap((key) => [key, 'x']));
    await pool.mset('scan:not-prefixed', 'x', 'app2:scan:1', 'x');
    const seen: string[] = [];
    for await (const key of app.scanIterator({ match: 'scan:*' })) seen.push(key);
    expect(seen.sort()).toEqual([...mine].sort());
    const masters = new Set(await Promise.all(mine.map(async (key) => (await owner(`app:${key}`)).port)));
    expect(masters.size).toBe(3);
  });
});

describe('typed helpers in a cluster', () => {
  it('stream helpers and the scan iterators route by their key', async () => {
    const s = await keyOnAnotherMaster('stream-', ['stream-x']);
    const id = await pool.xadd(s, '*', { f: 'v' });
    expect(await pool.xgroup('CREATE', s, 'g', '0')).toBe('OK');
    expect(await pool.xreadgroup('g', 'c', { [s]: '>' })).toEqual([{ name: s, messages: [{ id, message: { f: 'v' } }] }]);
    expect(await pool.xack(s, 'g', id!)).toBe(1);
    await pool.hset('hs', { a: '1', b: '2' });
    const fields: string[] = [];
    for await (const [f] of pool.hscanIterator('hs')) fields.push(f);
    expect(fields.sort()).toEqual(['a', 'b']);
  });
});

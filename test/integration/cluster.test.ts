/**
 * ClusterPool against a real 6-node cluster (3 masters, 3 replicas): routing, hash tags,
 * cross-slot commands, cross-node pipelines, transactions, fan-out, SCAN, replica reads and a
 * live slot migration under load.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClusterPool, CrossSlotError, RedisError, keySlot } from '../../src/index.js';
import { finishMigration, migrateSlot } from '../support/cluster-ops.js';
import { startCluster, waitFor, type ClusterTopology } from '../support/topology.js';
import { server } from '../support/server-features.js';

let topo: ClusterTopology;
let pool: ClusterPool;

beforeAll(async () => {
  topo = await startCluster();
  pool = await ClusterPool.create(topo.seeds.slice(0, 1).map((s) => `${s.host}:${s.port}`), { refresh: { interval: 0 } });
});

afterAll(async () => {
  await pool?.close();
  await topo?.stop();
});

/** Keys spread over many slots (and so over every master). */
const spread = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}:${i}`);

describe('ClusterPool: creation and options', () => {
  it('validates seeds and options with TypeErrors naming them', async () => {
    await expect(ClusterPool.create([] as never)).rejects.toThrow(/seeds/);
    await expect(ClusterPool.create(['nope'])).rejects.toThrow(/seeds\[0\]/);
    await expect(ClusterPool.create(topo.seeds, { maxRedirections: -1 })).rejects.toThrow(/maxRedirections/);
    await expect(ClusterPool.create(topo.seeds, { refresh: { minInterval: 'x' as never } })).rejects.toThrow(/refresh\.minInterval/);
    await expect(ClusterPool.create(topo.seeds, { readFrom: 'any' as never })).rejects.toThrow(/readFrom/);
    await expect(ClusterPool.create(topo.seeds, { splitMultiKey: 1 as never })).rejects.toThrow(/splitMultiKey/);
    await expect(ClusterPool.create(topo.seeds, { db: 1 } as never)).rejects.toThrow(/db/);
    await expect(ClusterPool.create(topo.seeds, { natMap: 5 as never })).rejects.toThrow(/natMap/);
    await expect(ClusterPool.create(topo.seeds, { bogus: 1 } as never)).rejects.toThrow(/bogus/);
  });

  it('loads the slot map and the live COMMAND table; nodes() and stats()', async () => {
    const s = pool.stats();
    expect(s.nodes).toBe(6);
    expect(s.masters).toBe(3);
    expect(s.coveredSlots).toBe(16384);
    expect(s.liveCommandTable).toBe(true);
    // Right after the cluster forms, a node may still list replicas as empty masters: a refresh settles it.
    await waitFor(async () => {
      await pool.refresh();
      return pool.nodes().filter((n) => n.role === 'master').length === 3;
    }, 'three masters in the slot map');
    expect(pool.nodes().filter((n) => n.role === 'replica')).toHaveLength(3);
  });

  it('accepts URLs and { host, port } seeds, and one dead seed among live ones', async () => {
    const p = await ClusterPool.create(['127.0.0.1:1', `redis://${topo.seeds[1]!.host}:${topo.seeds[1]!.port}`, topo.seeds[2]!]);
    try {
      expect(await p.call('PING')).toBe('PONG');
    } finally {
      await p.close();
    }
  });

  it('applies natMap to every announced address', async () => {
    const seen: string[] = [];
    const p = await ClusterPool.create(topo.seeds, {
      natMap: (a) => {
        seen.push(`${a.host}:${a.port}`);
        return { host: 'localhost', port: a.port };
      },
    });
    try {
      await p.mset(Object.fromEntries(spread('nat', 20).map((k) => [k, '1'])));
      expect(seen.length).toBeGreaterThan(0);
      expect(p.nodes().every((n) => n.host === 'localhost')).toBe(true);
      expect(p.stats().pools.filter((s) => s.lanes.connected > 0).every((s) => s.address.host === 'localhost')).toBe(true);
    } finally {
      await p.close();
    }
  });
});

describe('ClusterPool: routing', () => {
  it('keySlot matches CLUSTER KEYSLOT on a sample, including hash-tag edge cases', async () => {
    const keys = ['foo', 'bar', '{user1}:a', 'foo{}{bar}', 'foo{{bar}}zap', 'foo{bar}{zap}', '{}', '{}x', 'a{b', 'ключ', '键{标签}', '😀{x}', ...spread('k', 40)];
    const node = topo.nodes[0]!;
    for (const k of keys) {
      expect(keySlot(k), k).toBe(Number(await node.cli('CLUSTER', 'KEYSLOT', k)));
    }
  });

  it('routes every typed helper to the right node', async () => {
    const k = (n: string) => `helper:${n}`;
    expect(await pool.set(k('s'), 'v')).toBe('OK');
    expect(await pool.get(k('s'))).toBe('v');
    expect(await pool.exists(k('s'))).toBe(1);
    expect(await pool.expire(k('s'), 100)).toBe(1);
    expect(await pool.ttl(k('s'))).toBeGreaterThan(0);
    expect(await pool.incr(k('n'))).toBe(1);
    expect(await pool.incrby(k('n'), 5)).toBe(6);
    expect(await pool.decr(k('n'))).toBe(5);
    expect(await pool.hset(k('h'), { a: '1', b: '2' })).toBe(2);
    expect(await pool.hget(k('h'), 'a')).toBe('1');
    expect(await pool.hgetall(k('h'))).toEqual({ a: '1', b: '2' });
    expect(await pool.hdel(k('h'), 'a')).toBe(1);
    expect(await pool.rpush(k('l'), 'a', 'b', 'c')).toBe(3);
    expect(await pool.lpush(k('l'), 'z')).toBe(4);
    expect(await pool.lrange(k('l'), 0, -1)).toEqual(['z', 'a', 'b', 'c']);
    expect(await pool.lpop(k('l'))).toBe('z');
    expect(await pool.rpop(k('l'))).toBe('c');
    expect(await pool.blpop(k('l'), 1)).toEqual([k('l'), 'a']);
    expect(await pool.sadd(k('set'), 'x', 'y')).toBe(2);
    expect(await pool.srem(k('set'), 'x')).toBe(1);
    expect(await pool.smembers(k('set'))).toEqual(['y']);
    expect(await pool.zadd(k('z'), 1, 'one', 2, 'two')).toBe(2);
    expect(await pool.zrange(k('z'), 0, -1)).toEqual(['one', 'two']);
    expect(await pool.zscore(k('z'), 'two')).toBe(2);
    expect(typeof (await pool.publish('chan', 'hi'))).toBe('number');
    expect(await pool.eval("return redis.call('GET', KEYS[1])", 1, k('s'))).toBe('v');
    const sha = (await pool.call('SCRIPT', 'LOAD', "return redis.call('GET', KEYS[1])")) as string;
    expect(await pool.evalsha(sha, 1, k('s'))).toBe('v');
    // One SCAN step would walk one node: refused, pointing at the iterator (which walks every master);
    // a lease scans the node of its key.
    for (const attempt of [() => pool.scan('0', { count: 1000 }), () => pool.call('SCAN', '0'), () => pool.with({ timeout: 1000 }).scan('0')]) {
      const err = await attempt().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TypeError);
      expect((err as Error).message).toMatch(/scanIterator\(\)/);
    }
    const onLease = await pool.use(async (lease) => lease.scan('0', { match: k('*'), count: 1000 }), { key: k('s') });
    // A typo in the lease's options is refused, not a lease of whichever node.
    await expect(pool.use(async () => 1, { kye: k('s') } as never)).rejects.toThrow(/Unknown option use\.kye/);
    expect(typeof onLease[0]).toBe('string');
    expect(onLease[1]).toContain(k('s'));
    // Every key landed on the node that owns its slot.
    for (const n of ['s', 'n', 'h', 'l', 'set', 'z']) {
      const owner = await topo.nodeForSlot(keySlot(k(n)));
      expect(await owner.cli('EXISTS', k(n)), n).toBe('1');
    }
  });

  it('keeps hash-tagged keys on one node; same-slot multi() works', async () => {
    const keys = ['{user1}:a', '{user1}:b', '{user1}:c'];
    expect(new Set(keys.map(keySlot)).size).toBe(1);
    const res = await pool.multi().set(keys[0]!, '1').incr(keys[1]!).mget(...keys).exec();
    expect(res).toEqual(['OK', 1, ['1', '1', null]]);
    const owner = await topo.nodeForSlot(keySlot(keys[0]!));
    expect(await owner.cli('GET', keys[0]!)).toBe('1');
    expect(await pool.call('MSETNX', '{user1}:x', '1', '{user1}:y', '2')).toBe(1);
  });

  it('splits MGET / MSET / DEL / EXISTS / TOUCH / UNLINK across slots and merges in key order', async () => {
    const keys = spread('multi', 30);
    expect(new Set(keys.map(keySlot)).size).toBeGreaterThan(20);
    expect(await pool.mset(Object.fromEntries(keys.map((k, i) => [k, `v${i}`])))).toBe('OK');
    expect(await pool.mget(...keys, 'multi:missing')).toEqual([...keys.map((_, i) => `v${i}`), null]);
    expect(await pool.exists(...keys, keys[0]!)).toBe(31);
    expect(await pool.call('TOUCH', ...keys)).toBe(30);
    expect(await pool.del(...keys.slice(0, 10))).toBe(10);
    expect(await pool.call('UNLINK', ...keys.slice(10))).toBe(20);
    expect(await pool.exists(...keys)).toBe(0);
  });

  it('refuses MSETNX and multi() across slots with CrossSlotError before sending', async () => {
    await expect(pool.call('MSETNX', 'cs:a', '1', 'cs:b', '2')).rejects.toBeInstanceOf(CrossSlotError);
    expect(keySlot('cs:a')).not.toBe(keySlot('cs:b'));
    expect(await pool.exists('cs:a', 'cs:b')).toBe(0);
    await expect(pool.multi().set('cs:a', '1').set('cs:b', '2').exec()).rejects.toBeInstanceOf(CrossSlotError);
    expect(await pool.exists('cs:a', 'cs:b')).toBe(0);
    await expect(pool.call('RENAME', 'cs:a', 'cs:b')).rejects.toBeInstanceOf(CrossSlotError);
  });

  it('refuses every unsplit multi-key command across slots with CrossSlotError, blocking ones included', async () => {
    const [a, b] = ['qa', 'qb'];
    expect(keySlot(a)).not.toBe(keySlot(b));
    await pool.del('{q}a', '{q}b');
    const started = Date.now();
    const refused: Array<[string, Promise<unknown>]> = [
      ['BLPOP', pool.blpop(a, b, 1)],
      ['BRPOP', pool.call('BRPOP', a, b, 1)],
      ['BLMOVE', pool.call('BLMOVE', a, b, 'LEFT', 'RIGHT', 1)],
      ['BRPOPLPUSH', pool.call('BRPOPLPUSH', a, b, 1)],
      ['BZPOPMIN', pool.call('BZPOPMIN', a, b, 1)],
      ['BLMPOP', pool.call('BLMPOP', 1, 2, a, b, 'LEFT')],
      ['XREAD BLOCK', pool.call('XREAD', 'BLOCK', 1000, 'STREAMS', a, b, '$', '$')],
      ['XREAD', pool.call('XREAD', 'STREAMS', a, b, '0', '0')],
      ['RENAME', pool.call('RENAME', a, b)],
      ['SMOVE', pool.call('SMOVE', a, b, 'm')],
      ['LMOVE', pool.call('LMOVE', a, b, 'LEFT', 'RIGHT')],
      ['RPOPLPUSH', pool.call('RPOPLPUSH', a, b)],
      ['SINTERSTORE', pool.call('SINTERSTORE', a, b)],
      ['SUNION', pool.call('SUNION', a, b)],
      ['ZUNIONSTORE', pool.call('ZUNIONSTORE', a, 2, a, b)],
      ['COPY', pool.call('COPY', a, b)],
      ['PFMERGE', pool.call('PFMERGE', a, b)],
      ['EVAL', pool.call('EVAL', 'return 1', 2, a, b)],
    ];
    for (const [name, p] of refused) {
      const err = await p.catch((e: unknown) => e);
      expect(err, name).toBeInstanceOf(CrossSlotError);
      expect((err as Error).message, name).toMatch(/hash to 2 different slots/);
    }
    // Refused before sending: nothing blocked for its timeout.
    expect(Date.now() - started).toBeLessThan(1000);
    // The same commands with keys in one slot run normally.
    await pool.rpush('{q}a', 'x');
    expect(await pool.blpop('{q}a', '{q}b', 1)).toEqual(['{q}a', 'x']);
    await pool.rpush('{q}a', 'y');
    expect(await pool.call('BLMOVE', '{q}a', '{q}b', 'LEFT', 'RIGHT', 1)).toBe('y');
    expect(await pool.call('RENAME', '{q}b', '{q}a')).toBe('OK');
    expect(await pool.lrange('{q}a', 0, -1)).toEqual(['y']);
    // use({ key }) is not a command: it is not checked.
    await pool.use(async (lease) => expect(await lease.call('PING')).toBe('PONG'), { key: a });
  });

  it('with splitMultiKey: false, lets the server answer CROSSSLOT (MGET & co, in pipelines too); other commands are still refused', async () => {
    const p = await ClusterPool.create(topo.seeds, { splitMultiKey: false });
    try {
      const err = await p.mget('cs:a', 'cs:b').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RedisError);
      expect((err as RedisError).code).toBe('CROSSSLOT');
      const [mget, del, rename] = (await p.pipeline().mget('cs:a', 'cs:b').del('cs:a', 'cs:b').call('RENAME', 'cs:a', 'cs:b').exec())!;
      expect((mget as RedisError).code).toBe('CROSSSLOT');
      expect((del as RedisError).code).toBe('CROSSSLOT');
      expect(rename).toBeInstanceOf(CrossSlotError);
      // The option is about splitting only: unsplittable commands are refused as with the default.
      await expect(p.blpop('qa', 'qb', 1)).rejects.toBeInstanceOf(CrossSlotError);
      await expect(p.call('SMOVE', 'qa', 'qb', 'm')).rejects.toBeInstanceOf(CrossSlotError);
    } finally {
      await p.close();
    }
  });

  it('splits cross-slot MGET / MSET / DEL / EXISTS / TOUCH / UNLINK entries of a pipeline and merges each entry\'s reply', async () => {
    const keys = spread('pipesplit', 12);
    expect(new Set(keys.map(keySlot)).size).toBeGreaterThan(3);
    const values = Object.fromEntries(keys.map((k, i) => [k, `v${i}`]));
    const res = (await pool
      .pipeline()
      .set(keys[0]!, 'before')
      .mset(values)
      .mget(...keys, 'pipesplit:missing')
      .exists(...keys, keys[0]!)
      .call('TOUCH', ...keys)
      .call('RENAME', keys[0]!, keys[1]!)
      .call('MSETNX', keys[0]!, '1', keys[1]!, '2')
      .del(...keys.slice(0, 6))
      .call('UNLINK', ...keys.slice(6))
      .exists(...keys)
      .get(keys[0]!)
      .exec())!;
    expect(res[0]).toBe('OK');
    expect(res[1]).toBe('OK');
    // Per node, entries run in the order queued: the MGET sees the MSET, not the first SET.
    expect(res[2]).toEqual([...keys.map((_, i) => `v${i}`), null]);
    expect(res[3]).toBe(13);
    expect(res[4]).toBe(12);
    expect(res[5]).toBeInstanceOf(CrossSlotError);
    expect(res[6]).toBeInstanceOf(CrossSlotError);
    expect(res[7]).toBe(6);
    expect(res[8]).toBe(6);
    expect(res[9]).toBe(0);
    expect(res[10]).toBe(null);
    // The refused entries were not sent.
    expect(await pool.exists(...keys)).toBe(0);
    // An odd MSET cannot be split: the server reports the error for that entry only.
    const mixed = (await pool.pipeline().call('MSET', 'pipesplit:y', '1', 'pipesplit:x').set('pipesplit:z', '1').exec())!;
    expect(mixed[0]).toBeInstanceOf(RedisError);
    expect(mixed[1]).toBe('OK');
    await pool.del('pipesplit:z');
  });

  it('fans out DBSIZE (sum over masters), FLUSHALL and SCRIPT LOAD (every master)', async () => {
    await pool.call('FLUSHALL');
    for (const m of await topo.masters()) expect(await m.cli('DBSIZE')).toBe('0');
    await pool.mset(Object.fromEntries(spread('db', 50).map((k) => [k, '1'])));
    let sum = 0;
    for (const m of await topo.masters()) sum += Number(await m.cli('DBSIZE'));
    expect(sum).toBe(50);
    expect(await pool.call('DBSIZE')).toBe(50);
    const sha = (await pool.call('SCRIPT', 'LOAD', 'return 42')) as string;
    for (const m of await topo.masters()) expect(await m.cli('SCRIPT', 'EXISTS', sha)).toBe('1');
    expect(await pool.call('EVALSHA', sha, 0)).toBe(42);
    expect(((await pool.call('KEYS', 'db:*')) as string[]).sort()).toEqual(spread('db', 50).sort());
  });

  it('scanIterator sees every key of every master exactly once', async () => {
    await pool.call('FLUSHALL');
    const keys = spread('scan', 500);
    await pool.mset(Object.fromEntries(keys.map((k) => [k, 'x'])));
    const seen: string[] = [];
    for await (const k of pool.scanIterator({ match: 'scan:*', count: 50 })) seen.push(k);
    expect(seen.length).toBe(500);
    expect(new Set(seen)).toEqual(new Set(keys));
  });

  it('use(fn, { key }) leases a connection on the key\'s master; no key -> some master', async () => {
    const key = 'lease:key';
    const owner = await topo.nodeForSlot(keySlot(key));
    await pool.use(async (lease) => {
      expect(lease.address.port).toBe(owner.port);
      await lease.call('WATCH', key);
      const r = await lease.multi().set(key, '1').exec();
      expect(r).toEqual(['OK']);
    }, { key });
    const masters = (await topo.masters()).map((m) => m.port);
    await pool.use(async (lease) => {
      expect(masters).toContain(lease.address.port);
    });
  });

  it('runs a cross-node pipeline of 10,000 SETs: every one applied once, results in order', async () => {
    await pool.call('FLUSHALL');
    const n = 10_000;
    const p = pool.pipeline();
    for (let i = 0; i < n; i++) p.call('INCRBY', `pipe:${i}`, i + 1);
    const res = await p.exec();
    expect(res).toHaveLength(n);
    res!.forEach((r, i) => expect(r).toBe(i + 1));
    const g = pool.pipeline();
    for (let i = 0; i < n; i++) g.get(`pipe:${i}`);
    const values = await g.exec();
    values!.forEach((v, i) => {
      if (v !== String(i + 1)) throw new Error(`pipe:${i} = ${String(v)}`);
    });
    expect(await pool.call('DBSIZE')).toBe(n);
    // Pipeline entries keep their own errors.
    const mixed = await pool.pipeline().set('pm:a', 'x').incr('pm:a').get('pm:a').exec();
    expect(mixed![0]).toBe('OK');
    expect(mixed![1]).toBeInstanceOf(RedisError);
    expect(mixed![2]).toBe('x');
  });

  it('reads from replicas with readFrom: replica (READONLY in the handshake)', async () => {
    const p = await ClusterPool.create(topo.seeds, { readFrom: 'replica' });
    try {
      // Soon after the cluster forms, CLUSTER SHARDS may still report a replica as 'loading'
      // (no replication offset gossiped yet): such a replica is skipped and reads go to the master.
      await waitFor(async () => {
        await p.refresh();
        const replicas = p.nodes().filter((n) => n.role === 'replica');
        // A map from CLUSTER SLOTS (Redis 6.2 has no CLUSTER SHARDS) carries no health: 'unknown', which reads use.
        const ready = server.has('cluster-shards') ? 'online' : 'unknown';
        return replicas.length === 3 && replicas.every((n) => n.health === ready);
      }, 'every replica to be reported online (unknown without CLUSTER SHARDS)');
      await p.set('ro:key', 'hello');
      await waitFor(async () => (await p.get('ro:key')) === 'hello', 'the replica to have the key', 10_000);
      // Writes still reach the master.
      expect(await p.incr('ro:n')).toBe(1);
      const replicaPorts = new Set((await topo.replicas()).map((r) => r.port));
      const used = p.stats().pools.filter((s) => s.lanes.connected > 0).map((s) => s.address.port);
      expect(used.some((port) => replicaPorts.has(port))).toBe(true);
    } finally {
      await p.close();
    }
  });
});

describe('ClusterPool: live slot migration under load', () => {
  it('follows ASK during the migration and MOVED after it, with zero failed commands', async () => {
    const slotKey = '{mig}';
    const slot = keySlot(slotKey);
    const source = await topo.nodeForSlot(slot);
    const target = (await topo.masters()).find((m) => m.port !== source.port)!;
    const sourceId = await source.cli('CLUSTER', 'MYID');
    const targetId = await target.cli('CLUSTER', 'MYID');
    const keys = Array.from({ length: 200 }, (_, i) => `{mig}:${i}`);
    const expected = new Map<string, number>();
    for (const k of keys) {
      await pool.set(k, 0);
      expected.set(k, 0);
    }
    let asks = 0;
    let moves = 0;
    pool.on('ask', (e) => { if (e.slot === slot) asks++; });
    pool.on('moved', (e) => { if (e.slot === slot) moves++; });

    // Load: each worker owns some keys, increments them and reads them back.
    let stop = false;
    let ops = 0;
    const failures: unknown[] = [];
    const workers = Array.from({ length: 20 }, async (_, w) => {
      const mine = keys.filter((_, i) => i % 20 === w);
      for (let i = 0; !stop; i++) {
        const k = mine[i % mine.length]!;
        try {
          const v = Number(await pool.incr(k));
          expected.set(k, v);
          const got = await pool.get(k);
          if (Number(got) !== v) failures.push(new Error(`${k}: read ${got}, wrote ${v}`));
          if (i % 10 === 0) {
            // Multi-key reads in a migrating slot get TRYAGAIN until the migration ends, however long
            // the harness takes over it on a loaded machine (redis-cli spawns): the deadline, not the
            // retry rule, must outlast it. Pipelines get ASK/MOVED per entry.
            const mg = await pool.with({ timeout: 60_000 }).mget(...mine);
            mg.forEach((x, j) => { if (Number(x) !== expected.get(mine[j]!)) failures.push(new Error(`mget ${mine[j]}: ${x}`)); });
            const pl = pool.pipeline();
            for (const m of mine) pl.get(m);
            const res = await pl.exec();
            res!.forEach((x, j) => { if (Number(x) !== expected.get(mine[j]!)) failures.push(x instanceof Error ? x : new Error(`pipeline ${mine[j]}: ${String(x)}`)); });
          }
          ops++;
        } catch (err) {
          // Recorded (the test fails on any), and a pause: a command that fails at once must not
          // turn this loop into a spin that starves the event loop and fills the heap.
          if (failures.length < 100) failures.push(err);
          await new Promise((r) => setTimeout(r, 5));
        }
      }
    });

    await waitFor(() => ops > 200, 'load to start');
    await target.cli('CLUSTER', 'SETSLOT', String(slot), 'IMPORTING', sourceId);
    await source.cli('CLUSTER', 'SETSLOT', String(slot), 'MIGRATING', targetId);
    await source.cli('MIGRATE', target.host, String(target.port), '', '0', '5000', 'KEYS', ...keys.slice(0, 100));
    // A read of a key that has moved is answered ASK by the source, whatever the workers are
    // doing at this moment (each may be in a multi-key read that waits out TRYAGAIN).
    expect(Number(await pool.get(keys[0]!))).toBeGreaterThanOrEqual(0);
    await waitFor(() => asks > 0, 'an ASK redirection');
    const opsAtAsk = ops;
    // Keep the slot half-migrated until single-key commands flowed (ASK) and multi-key ones hit TRYAGAIN.
    await waitFor(() => ops > opsAtAsk + 100 || pool.stats().redirects.tryagain > 0, 'load to continue during the migration');
    // Move the rest (whatever the source still holds), then hand the slot over.
    await finishMigration(topo, slot, source, target, targetId);
    await waitFor(() => moves > 0, 'a MOVED redirection');
    const opsAtMoved = ops;
    await waitFor(() => ops > opsAtMoved + 200, 'load to continue after the migration');
    stop = true;
    await Promise.all(workers);

    expect(failures.map((f) => String(f)).slice(0, 8)).toEqual([]);
    expect(asks).toBeGreaterThan(0);
    expect(moves).toBeGreaterThan(0);
    const values = await pool.mget(...keys);
    values.forEach((v, i) => expect(Number(v), keys[i]).toBe(expected.get(keys[i]!)));
    // Everything is on the target now.
    const onTarget = (await target.cli('CLUSTER', 'GETKEYSINSLOT', String(slot), '10000')).split('\n').filter((k) => k.startsWith('{mig}:'));
    expect(onTarget.sort()).toEqual([...keys].sort());
    expect(Number(await source.cli('CLUSTER', 'COUNTKEYSINSLOT', String(slot)))).toBe(0);
    const st = pool.stats();
    expect(st.redirects.ask).toBeGreaterThan(0);
    expect(st.redirects.moved).toBeGreaterThan(0);
  });
});

describe('ClusterPool: blocking commands follow redirections', () => {
  it('a BLPOP sent to the old owner of a migrated slot follows the MOVED and gets the pushed value', async () => {
    const stale = await ClusterPool.create(topo.seeds);
    const writer = await ClusterPool.create(topo.seeds);
    try {
      const key = '{blockmove}q';
      const slot = keySlot(key);
      // The stale pool learns the map now, then the slot moves behind its back.
      await stale.get(key);
      const source = await topo.nodeForSlot(slot);
      const target = (await topo.masters()).find((m) => m.port !== source.port)!;
      await migrateSlot(topo, slot, source, target);
      const moved: unknown[] = [];
      stale.on('moved', (m) => moved.push(m));
      const popping = stale.blpop(key, 10);
      // The writer's push lands on the new owner; the BLPOP, redirected there, receives it.
      await waitFor(() => moved.length > 0, 'the BLPOP to be redirected');
      await waitFor(async () => Number(await target.cli('CLIENT', 'LIST', 'TYPE', 'normal').then((l) => (l.match(/cmd=blpop/g) ?? []).length)) > 0, 'the BLPOP to block on the new owner');
      await writer.rpush(key, 'after-move');
      expect(await popping).toEqual([key, 'after-move']);
      expect(stale.stats().redirects.moved).toBeGreaterThan(0);
    } finally {
      await stale.close();
      await writer.close();
    }
  });
});

describe('ClusterPool: scanIterator on a view', () => {
  it('pool.with(…).scanIterator() walks every master, as pool.scanIterator() does', async () => {
    const keys = Array.from({ length: 60 }, (_, i) => `viewscan:${i}`);
    for (const k of keys) await pool.set(k, '1');
    const owners = new Set<number>();
    for (const k of keys) owners.add((await topo.nodeForSlot(keySlot(k))).port);
    expect(owners.size).toBeGreaterThan(1);
    const fromPool: string[] = [];
    for await (const k of pool.scanIterator({ match: 'viewscan:*' })) fromPool.push(k);
    const fromView: string[] = [];
    for await (const k of pool.with({ timeout: 5000 }).scanIterator({ match: 'viewscan:*', count: 10 })) fromView.push(k);
    expect(new Set(fromPool)).toEqual(new Set(keys));
    expect(new Set(fromView)).toEqual(new Set(keys));
    // A lease still walks its own node only.
    const owner = await topo.nodeForSlot(keySlot(keys[0]!));
    const fromLease: string[] = [];
    await pool.use(async (l) => { for await (const k of l.scanIterator({ match: 'viewscan:*' })) fromLease.push(k); }, { key: keys[0]! });
    const ownerKeys = [];
    for (const k of keys) if ((await topo.nodeForSlot(keySlot(k))).port === owner.port) ownerKeys.push(k);
    expect(new Set(fromLease)).toEqual(new Set(ownerKeys));
  });
});

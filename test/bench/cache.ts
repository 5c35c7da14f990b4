/**
 * Client-side cache beside no cache and beside node-redis's client-side cache, same server,
 * same run:
 *
 *   npm run bench:cache
 *
 * Workloads (BENCH_OPS operations each, BENCH_CONCURRENCY in flight):
 * - read-heavy: 90% GET / 10% SET over 10,000 keys, Zipf-like skew (s = 1);
 * - hot key: GET of one key.
 * Also the heap per cached entry (64-byte values, 10,000 entries; run with --expose-gc for a
 * steadier number).
 *
 * Environment: BENCH_OPS (default 300000), BENCH_CONCURRENCY (default 50), BENCH_ROUNDS (default 3).
 */
import { createClient } from 'redis';
import { StandalonePool } from '../../src/index.js';
import { startStandalone } from '../support/topology.js';
import { envInt, fmtInt, installCleanupHandlers, markdownTable, median, runWorkers, summarize, systemInfo } from './lib.js';

const OPS = envInt('BENCH_OPS', 300_000);
const CONCURRENCY = envInt('BENCH_CONCURRENCY', 50);
const ROUNDS = envInt('BENCH_ROUNDS', 3);
const KEYS = 10_000;
const VALUE = 'v'.repeat(64);

/** Zipf-like key indexes (s = 1), precomputed so every client sees the same sequence. */
function zipfSequence(n: number, keys: number): Uint32Array {
  const weights = new Float64Array(keys);
  let total = 0;
  for (let i = 0; i < keys; i++) total += (weights[i] = 1 / (i + 1));
  const cdf = new Float64Array(keys);
  let acc = 0;
  for (let i = 0; i < keys; i++) cdf[i] = (acc += weights[i]! / total);
  let seed = 42;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
  const out = new Uint32Array(n);
  for (let j = 0; j < n; j++) {
    const r = rnd();
    let lo = 0;
    let hi = keys - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cdf[mid]! < r) lo = mid + 1;
      else hi = mid;
    }
    out[j] = lo;
  }
  return out;
}

interface Client {
  label: string;
  get(k: string): Promise<unknown>;
  set(k: string, v: string): Promise<unknown>;
  close(): Promise<void>;
}

async function ours(port: number, cache: boolean): Promise<Client> {
  const pool = await StandalonePool.create({ host: '127.0.0.1', port }, { protocol: 3, ...(cache ? { cache: { maxEntries: 20_000 } } : {}) });
  return {
    label: cache ? 'redis-ha-pool, cache' : 'redis-ha-pool, no cache',
    get: (k) => pool.get(k),
    set: (k, v) => pool.set(k, v),
    close: () => pool.close(),
  };
}

async function nodeRedis(port: number): Promise<Client> {
  const client = createClient({ socket: { host: '127.0.0.1', port }, RESP: 3, clientSideCache: { maxEntries: 20_000 } });
  client.on('error', () => {});
  await client.connect();
  return {
    label: 'node-redis 6.3, clientSideCache',
    get: (k) => client.get(k),
    set: (k, v) => client.set(k, v),
    close: async () => { await client.close(); },
  };
}

async function main(): Promise<void> {
  installCleanupHandlers();
  const info = systemInfo();
  const topo = await startStandalone();
  const port = topo.address.port;
  const seq = zipfSequence(OPS, KEYS);
  const names = Array.from({ length: KEYS }, (_, i) => `cb:${i}`);
  try {
    const seeder = await StandalonePool.create(topo.address);
    for (let i = 0; i < KEYS; i += 500) {
      const p = seeder.pipeline();
      for (let j = i; j < Math.min(KEYS, i + 500); j++) p.set(names[j]!, VALUE);
      await p.exec();
    }
    await seeder.close();
    const makers: Array<() => Promise<Client>> = [() => ours(port, false), () => ours(port, true), () => nodeRedis(port)];
    const rows: string[][] = [];
    for (const make of makers) {
      const mixed: number[] = [];
      const hot: number[] = [];
      let label = '';
      for (let r = 0; r < ROUNDS; r++) {
        const c = await make();
        label = c.label;
        const m = await runWorkers(OPS, CONCURRENCY, (i) => (i % 10 === 9 ? c.set(names[seq[i]!]!, VALUE) : c.get(names[seq[i]!]!)), () => true);
        mixed.push(summarize(m).opsPerSec);
        const h = await runWorkers(OPS, CONCURRENCY, () => c.get(names[0]!), (v) => v === VALUE);
        if (h.bad > 0) throw new Error(`${label}: ${h.bad} wrong hot-key replies`);
        hot.push(summarize(h).opsPerSec);
        await c.close();
      }
      rows.push([label, fmtInt(median(mixed)), fmtInt(median(hot))]);
    }
    // Heap per entry: fill MEM_ENTRIES entries of 64-byte values in a fresh pool and compare heap use.
    const gc = (globalThis as { gc?: () => void }).gc;
    const MEM_ENTRIES = 50_000;
    const memPool = await StandalonePool.create(topo.address, { protocol: 3, cache: { maxEntries: MEM_ENTRIES * 2, maxBytes: 2 ** 30 } });
    const memNames = Array.from({ length: MEM_ENTRIES }, (_, i) => `cm:${i}`);
    for (let i = 0; i < MEM_ENTRIES; i += 1000) {
      const p = memPool.pipeline();
      for (const k of memNames.slice(i, i + 1000)) p.set(k, VALUE);
      await p.exec();
    }
    const settle = async () => { for (let i = 0; i < 3; i++) { gc?.(); await new Promise((r) => setImmediate(r)); } };
    await settle();
    const before = process.memoryUsage().heapUsed;
    for (let i = 0; i < MEM_ENTRIES; i += 1000) await Promise.all(memNames.slice(i, i + 1000).map((k) => memPool.get(k)));
    await settle();
    const after = process.memoryUsage().heapUsed;
    const stats = memPool.stats().cache!;
    await memPool.close();
    console.log(`\n${info.cpu}, ${info.cores} cores, Node ${info.node}; ${fmtInt(OPS)} operations per cell, ${CONCURRENCY} in flight, median of ${ROUNDS} rounds\n`);
    console.log(markdownTable(['client', '90% GET / 10% SET, Zipf over 10,000 keys (ops/s)', 'hot-key GET (ops/s)'], rows, ['left', 'right', 'right']));
    console.log(`\nMemory: ${stats.entries} entries of 64-byte values: heap +${fmtInt((after - before) / stats.entries)} bytes per entry (the cache's own estimate: ${fmtInt(stats.bytes / stats.entries)})${gc ? '' : ' (without --expose-gc: approximate)'}`);
  } finally {
    await topo.stop();
  }
}

await main();

/**
 * What durable acknowledgements cost: SET throughput and latency with `durability` off,
 * `{ replicas: 1 }` and `{ replicas: 2 }`, in the same run, on a master with two replicas reached
 * as a standalone server and through Sentinel; and GET latency beside that write load (a GET
 * shares its lane with the writes, and the server runs nothing behind a WAIT until it answers).
 *
 *   npm run bench:durability
 *
 * Environment:
 *   BENCH_OPS          commands per cell (default 100000)
 *   BENCH_CONCURRENCY  comma list of commands in flight (default 50,500)
 *   BENCH_ROUNDS       rounds; the order of the modes rotates per round (default 3)
 *
 * One topology (1 master, 2 replicas, 3 sentinels), all on this machine: the replication round
 * trip is a loopback one, so the cost shown is the floor (the WAIT's own round trip plus the
 * replicas' apply-and-acknowledge), not what a network between data centres adds. No peer is
 * compared: none of them has the feature. The table gives medians over the rounds.
 */
import { SentinelPool, StandalonePool, type DurabilityOptions } from '../../src/index.js';
import { startSentinel } from '../support/topology.js';
import { envInt, envList, fmtInt, fmtMs, installCleanupHandlers, markdownTable, median, percentile, runWorkers, summarize, systemInfo } from './lib.js';

const OPS = envInt('BENCH_OPS', 100_000);
const CONCURRENCY = [...(envList('BENCH_CONCURRENCY') ?? new Set(['50', '500']))].map(Number);
const ROUNDS = envInt('BENCH_ROUNDS', 3);
const VALUE = 'v'.repeat(64);
const KEYS = Array.from({ length: 10_000 }, (_, i) => `dur:key:${i}`);
const TIMEOUT = 1000;

type Pool = StandalonePool | SentinelPool;
const MODES: Array<{ name: string; durability: DurabilityOptions | undefined }> = [
  { name: 'off', durability: undefined },
  { name: 'replicas: 1', durability: { replicas: 1, timeout: TIMEOUT } },
  { name: 'replicas: 2', durability: { replicas: 2, timeout: TIMEOUT } },
];

interface Cell { ops: number; p50: number; p99: number }

async function sets(pool: Pool, concurrency: number): Promise<Cell> {
  const r = await runWorkers(OPS, concurrency, (i) => pool.set(KEYS[i % KEYS.length]!, VALUE), (v) => v === 'OK');
  if (r.bad > 0) throw new Error(`${r.bad} wrong replies`);
  const s = summarize(r);
  return { ops: s.opsPerSec, p50: s.p50Ms, p99: s.p99Ms };
}

/** Half SETs, half GETs at `concurrency` in flight: the GETs' latency. */
async function getsBesideSets(pool: Pool, concurrency: number): Promise<Cell> {
  const getLat: number[] = [];
  const hr = process.hrtime.bigint;
  const start = hr();
  await runWorkers(OPS, concurrency, async (i) => {
    const key = KEYS[i % KEYS.length]!;
    if (i % 2 === 0) return pool.set(key, VALUE);
    const t0 = hr();
    const v = await pool.get(key);
    getLat.push(Number(hr() - t0));
    return v;
  });
  const elapsed = Number(hr() - start) / 1e9;
  getLat.sort((a, b) => a - b);
  return { ops: OPS / elapsed, p50: percentile(getLat, 50) / 1e6, p99: percentile(getLat, 99) / 1e6 };
}

async function main(): Promise<void> {
  installCleanupHandlers();
  const info = systemInfo();
  const topo = await startSentinel({ replicas: 2 });
  const pools = new Map<string, Pool>();
  try {
    for (const m of MODES) {
      const opt = m.durability ? { durability: m.durability } : {};
      pools.set(`standalone|${m.name}`, await StandalonePool.create(topo.master.address, opt));
      pools.set(`sentinel|${m.name}`, await SentinelPool.create(topo.masterName, topo.sentinelAddresses, opt));
    }
    // Warm-up: JIT, lanes, every key present for the GETs.
    for (const p of pools.values()) await sets(p, 50);
    const results = new Map<string, Cell[]>();
    const add = (k: string, c: Cell) => results.set(k, [...(results.get(k) ?? []), c]);
    for (let round = 0; round < ROUNDS; round++) {
      const order = MODES.map((_, i) => MODES[(i + round) % MODES.length]!);
      for (const deployment of ['standalone', 'sentinel']) {
        for (const c of CONCURRENCY) {
          for (const m of order) add(`${deployment}|${m.name}|SET|${c}`, await sets(pools.get(`${deployment}|${m.name}`)!, c));
        }
        for (const m of order.filter((x) => x.name !== 'replicas: 2')) {
          add(`${deployment}|${m.name}|MIX|500`, await getsBesideSets(pools.get(`${deployment}|${m.name}`)!, 500));
        }
      }
    }
    const med = (k: string) => {
      const list = results.get(k)!;
      return { ops: median(list.map((c) => c.ops)), p50: median(list.map((c) => c.p50)), p99: median(list.map((c) => c.p99)) };
    };
    const rows: string[][] = [];
    for (const deployment of ['standalone', 'sentinel']) {
      for (const c of CONCURRENCY) {
        const off = med(`${deployment}|off|SET|${c}`);
        for (const m of MODES) {
          const x = med(`${deployment}|${m.name}|SET|${c}`);
          rows.push([deployment === 'standalone' ? 'Standalone (2 replicas)' : 'Sentinel (2 replicas)', String(c), m.name, fmtInt(x.ops), fmtMs(x.p50), fmtMs(x.p99), (x.ops / off.ops).toFixed(2)]);
        }
      }
    }
    const mix: string[][] = [];
    for (const deployment of ['standalone', 'sentinel']) {
      for (const m of MODES.filter((x) => x.name !== 'replicas: 2')) {
        const x = med(`${deployment}|${m.name}|MIX|500`);
        mix.push([deployment === 'standalone' ? 'Standalone' : 'Sentinel', m.name, fmtInt(x.ops), fmtMs(x.p50), fmtMs(x.p99)]);
      }
    }
    const stats = [...pools.entries()].filter(([k]) => !k.endsWith('|off')).map(([k, p]) => `${k}: mean WAIT ${p.stats().durability.waitTime.mean} ms over ${fmtInt(p.stats().durability.waits)} WAITs for ${fmtInt(p.stats().durability.confirmed)} writes`);
    console.log(`\n### SET with durability off, replicas: 1 and replicas: 2 (timeout ${TIMEOUT} ms; ${fmtInt(OPS)} SETs per cell, median of ${ROUNDS} rounds)\n`);
    console.log(`- ${info.node}, ${info.cpu} (${info.cores} cores); load average at start ${info.loadavg}, at end ${systemInfo().loadavg}\n`);
    console.log(markdownTable(['deployment', 'in flight', 'durability', 'ops/s', 'p50 ms', 'p99 ms', 'vs off'], rows, ['left', 'right', 'left', 'right', 'right', 'right', 'right']));
    console.log(`\n### GET latency beside SETs (half GETs, half SETs, 500 in flight)\n`);
    console.log(markdownTable(['deployment', 'durability', 'ops/s (all)', 'GET p50 ms', 'GET p99 ms'], mix, ['left', 'left', 'right', 'right', 'right']));
    console.log(`\n${stats.join('\n')}`);
  } finally {
    await Promise.all([...pools.values()].map((p) => p.close()));
    await topo.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});

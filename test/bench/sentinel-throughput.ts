/**
 * Sentinel at full speed: SentinelPool's call() beside StandalonePool on the same master, in
 * the same run, with no failover under way (the write fence and the gate should cost nothing).
 *
 *   npm run bench:sentinel-throughput
 *
 * Environment:
 *   BENCH_OPS          SETs (and GETs) per cell (default 200000)
 *   BENCH_CONCURRENCY  comma list of commands in flight (default 50,500)
 *   BENCH_ROUNDS       rounds; the order of the two pools alternates per round (default 3)
 *
 * One topology (1 master, 1 replica, 3 sentinels). Both pools point at the same master; each cell
 * runs BENCH_OPS SETs then as many GETs of 64-byte values over 10,000 keys. The table gives the
 * median ops/s over the rounds, and Sentinel / Standalone per cell.
 */
import { SentinelPool, StandalonePool } from '../../src/index.js';
import { startSentinel } from '../support/topology.js';
import { envInt, envList, fmtInt, installCleanupHandlers, markdownTable, median, runWorkers, summarize, systemInfo } from './lib.js';

const OPS = envInt('BENCH_OPS', 200_000);
const CONCURRENCY = [...(envList('BENCH_CONCURRENCY') ?? new Set(['50', '500']))].map(Number);
const ROUNDS = envInt('BENCH_ROUNDS', 3);
const VALUE = 'v'.repeat(64);
const KEYS = Array.from({ length: 10_000 }, (_, i) => `st:key:${i}`);

type Pool = StandalonePool | SentinelPool;

async function cell(pool: Pool, op: 'SET' | 'GET', concurrency: number): Promise<number> {
  const r = op === 'SET'
    ? await runWorkers(OPS, concurrency, (i) => pool.set(KEYS[i % KEYS.length]!, VALUE), (v) => v === 'OK')
    : await runWorkers(OPS, concurrency, (i) => pool.get(KEYS[i % KEYS.length]!), (v) => v === VALUE);
  if (r.bad > 0) throw new Error(`${r.bad} wrong replies`);
  return summarize(r).opsPerSec;
}

async function main(): Promise<void> {
  installCleanupHandlers();
  const info = systemInfo();
  const topo = await startSentinel({ replicas: 1 });
  const standalone = await StandalonePool.create(topo.master.address);
  const sentinel = await SentinelPool.create(topo.masterName, topo.sentinelAddresses);
  try {
    // Warm-up: JIT, lanes, and every key present for the GETs.
    for (const p of [standalone, sentinel]) await cell(p, 'SET', 50);
    const results = new Map<string, number[]>();
    for (let round = 0; round < ROUNDS; round++) {
      const order: Array<[string, Pool]> = round % 2 === 0 ? [['standalone', standalone], ['sentinel', sentinel]] : [['sentinel', sentinel], ['standalone', standalone]];
      for (const c of CONCURRENCY) {
        for (const op of ['SET', 'GET'] as const) {
          for (const [name, p] of order) {
            const k = `${name}|${op}|${c}`;
            const list = results.get(k) ?? [];
            list.push(await cell(p, op, c));
            results.set(k, list);
          }
        }
      }
    }
    const rows: string[][] = [];
    for (const c of CONCURRENCY) {
      for (const op of ['SET', 'GET'] as const) {
        const st = median(results.get(`standalone|${op}|${c}`)!);
        const se = median(results.get(`sentinel|${op}|${c}`)!);
        rows.push([op, String(c), fmtInt(st), fmtInt(se), (se / st).toFixed(2)]);
      }
    }
    console.log(`\n### SentinelPool beside StandalonePool on one master (${fmtInt(OPS)} ops per cell, median of ${ROUNDS} rounds)\n`);
    console.log(`- ${info.node}, ${info.cpu} (${info.cores} cores); load average at start ${info.loadavg}, at end ${systemInfo().loadavg}\n`);
    console.log(markdownTable(['op', 'in flight', 'Standalone ops/s', 'Sentinel ops/s', 'Sentinel / Standalone'], rows, ['left', 'right', 'right', 'right', 'right']));
  } finally {
    await standalone.close();
    await sentinel.close();
    await topo.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});

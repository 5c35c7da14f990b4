/**
 * Cluster benchmark: redis-ha-pool ClusterPool vs ioredis Cluster (with and without
 * enableAutoPipelining) vs node-redis createCluster vs `bare` (test/bench/bare-client.ts
 * BareCluster: one bare pipelined socket per master, commands routed by slot; the yardstick),
 * in one run against one 6-node cluster (3 masters, 3 replicas) this script starts and stops
 * itself.
 *
 *   npx tsx test/bench/cluster.ts
 *
 * Environment:
 *   BENCH_OPS          SETs per client and concurrency (default 200000)
 *   BENCH_CONCURRENCY  commands in flight, or a comma list of them (default 500)
 *   BENCH_PIPELINE     commands in the cross-node pipeline (default 10000)
 *   BENCH_ONLY         comma list of clients: ha, ioredis, ioredis-ap, node-redis, bare
 *   BENCH_JSON         write the results to this file as JSON (what scripts/bench-ab.sh reads)
 *
 * Workloads:
 * 1. BENCH_OPS SETs of 64-byte values over 10,000 keys (every slot range, so every master),
 *    BENCH_CONCURRENCY async workers each awaiting its SET before the next; once per
 *    concurrency. "× bare" = SET/s ÷ the bare client's at the same concurrency.
 * 2. One pipeline of BENCH_PIPELINE SETs of distinct keys spanning every master. Afterwards the
 *    keys actually written are counted on the servers (DBSIZE on every master), because a
 *    client may reject the pipeline yet have applied part of it.
 */
import { writeFileSync } from 'node:fs';
import { startCluster, type ClusterTopology } from '../support/topology.js';
import {
  bareClusterClient,
  clusterDbsize as dbsize,
  clusterFlushall as flushall,
  envInt,
  envList,
  fmtInt,
  fmtMs,
  haClusterClient,
  installCleanupHandlers,
  ioredisClusterClient,
  markdownTable,
  nodeRedisClusterClient,
  runWorkers,
  summarize,
  systemInfo,
  type ClusterBenchClient as Client,
  type Summary,
} from './lib.js';

const OPS = envInt('BENCH_OPS', 200_000);
const CONCURRENCIES = [...(envList('BENCH_CONCURRENCY') ?? ['500'])].map(Number).sort((a, b) => a - b);
const PIPELINE = envInt('BENCH_PIPELINE', 10_000);
const ONLY = envList('BENCH_ONLY');
const VALUE = 'v'.repeat(64);
const KEYS = Array.from({ length: 10_000 }, (_, i) => `bench:key:${i}`);

for (const c of CONCURRENCIES) if (!Number.isInteger(c) || c < 1) throw new TypeError(`BENCH_CONCURRENCY: bad value ${c}`);

interface Row {
  id: string;
  name: string;
  /** One per BENCH_CONCURRENCY, in that order. */
  sets: Array<{ concurrency: number; s: Summary }>;
  pipeline: { outcome: string; applied: number; ms: number };
}

async function measure(topo: ClusterTopology, id: string, make: () => Promise<Client>): Promise<Row> {
  await flushall(topo);
  const client = await make();
  try {
    // Warm-up: connections to every master, slot map loaded.
    await runWorkers(KEYS.length, CONCURRENCIES[CONCURRENCIES.length - 1]!, (i) => client.set(KEYS[i]!, VALUE));
    const sets: Row['sets'] = [];
    for (const concurrency of CONCURRENCIES) {
      const run = await runWorkers(OPS, concurrency, (i) => client.set(KEYS[i % KEYS.length]!, VALUE));
      sets.push({ concurrency, s: summarize(run) });
    }
    await flushall(topo);
    const keys = Array.from({ length: PIPELINE }, (_, i) => `pipe:${i}`);
    const t0 = performance.now();
    let outcome: string;
    try {
      const res = await client.pipeline(keys, VALUE);
      const errors = res.filter((r) => r instanceof Error).length;
      outcome = errors === 0 ? `all ${fmtInt(res.length)} OK` : `${fmtInt(errors)} of ${fmtInt(res.length)} failed (${String((res.find((r) => r instanceof Error) as Error).message).slice(0, 40)})`;
    } catch (err) {
      outcome = `rejected: ${String((err as Error).message).split('\n')[0]!.slice(0, 60)}`;
    }
    const ms = performance.now() - t0;
    const applied = await dbsize(topo);
    return { id, name: client.name, sets, pipeline: { outcome, applied, ms } };
  } finally {
    await client.close();
  }
}

async function main(): Promise<void> {
  installCleanupHandlers();
  const topo = await startCluster();
  try {
    await topo.waitForClusterOk();
    const seeds = topo.seeds.map((s) => `${s.host}:${s.port}`);
    const clients: Array<[string, () => Promise<Client>]> = [
      ['ha', () => haClusterClient(seeds)],
      ['ioredis', () => ioredisClusterClient(seeds, false)],
      ['ioredis-ap', () => ioredisClusterClient(seeds, true)],
      ['node-redis', () => nodeRedisClusterClient(seeds)],
      ['bare', () => bareClusterClient(seeds)],
    ];
    const rows: Row[] = [];
    for (const [id, make] of clients) {
      if (ONLY && !ONLY.has(id)) continue;
      process.stderr.write(`[bench] ${id}...\n`);
      rows.push(await measure(topo, id, make));
    }
    const sys = systemInfo();
    const apRow = rows.find((r) => r.id === 'ioredis-ap');
    const bareRow = rows.find((r) => r.id === 'bare');
    const vs = (r: Row, i: number, base: Row | undefined, suffix: string) =>
      base ? `${(r.sets[i]!.s.opsPerSec / base.sets[i]!.s.opsPerSec).toFixed(2)}${suffix}` : '-';
    console.log(`\n### Cluster: ${fmtInt(OPS)} SETs at ${CONCURRENCIES.join(', ')} in flight; one ${fmtInt(PIPELINE)}-command pipeline across all masters\n`);
    console.log(`${JSON.stringify(sys)}\n`);
    console.log(
      markdownTable(
        ['client', 'in flight', 'SET/s', 'p50 ms', 'p99 ms', 'vs ioredis AP', '× bare', 'cross-node pipeline', 'keys applied', 'pipeline ms'],
        rows.flatMap((r) => r.sets.map(({ concurrency, s }, i) => [
          r.name,
          String(concurrency),
          fmtInt(s.opsPerSec),
          fmtMs(s.p50Ms),
          fmtMs(s.p99Ms),
          vs(r, i, apRow, 'x'),
          vs(r, i, bareRow, ''),
          r.pipeline.outcome,
          `${fmtInt(r.pipeline.applied)} / ${fmtInt(PIPELINE)}`,
          fmtMs(r.pipeline.ms),
        ])),
        ['left', 'right', 'right', 'right', 'right', 'right', 'right', 'left', 'right', 'right'],
      ),
    );
    console.log(`\n× bare = SET/s ÷ the bare pipelined client's (test/bench/bare-client.ts BareCluster, one socket per master) at the same concurrency: the share of the Node-side ceiling a client keeps.`);
    const jsonPath = process.env.BENCH_JSON;
    if (jsonPath) writeFileSync(jsonPath, JSON.stringify({ info: sys, ops: OPS, pipeline: PIPELINE, rows }, null, 2));
  } finally {
    await topo.stop();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);

/**
 * Durability comparison: `npx tsx test/soak/durability-loss.ts [--runs N] [--lag-ms MS] [--writers W]`
 *
 * The crash of test/integration/durability-sentinel.test.ts (a Sentinel topology with two
 * replicas; the replica that gets promoted lags `--lag-ms` behind, the other one is paused; the
 * master is SIGKILLed), run `--runs` times (default 1) without `durability` and with
 * `durability: { replicas: 1, timeout: 500 }`, alternating, on one topology that is put back
 * together (old master restarted, sentinels settled) between runs. Prints per run how many
 * writes were acknowledged, how many of those the new master lacks, and how the others failed.
 *
 * Exit code 0 when no run with durability lost an acknowledged write; 1 otherwise. Every
 * process it started is stopped (by PID) on every path.
 */
import { SentinelPool, type SentinelOptions } from '../../src/index.js';
import { crashWithLaggingReplica, type CrashRun } from '../support/durability-crash.js';
import { fmt, waitSettled } from '../support/sentinel-helpers.js';
import { startSentinel } from '../support/topology.js';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  if (i === -1) return fallback;
  const v = Number(process.argv[i + 1]);
  if (!Number.isInteger(v) || v < 1) {
    process.stdout.write(`--${name} needs a positive integer\n`);
    process.exit(2);
  }
  return v;
}

const runs = arg('runs', 1);
const lagMs = arg('lag-ms', 2000);
const writers = arg('writers', 20);

const topo = await startSentinel({ replicas: 2, downAfterMs: 1000, failoverTimeoutMs: 5000 });
const rows: Array<{ mode: string; run: CrashRun }> = [];
let failed = false;
try {
  for (let i = 0; i < runs; i++) {
    for (const durable of [false, true]) {
      const options: SentinelOptions = { commandTimeout: 15_000, queueTimeout: 15_000, ...(durable ? { durability: { replicas: 1, timeout: 500 } } : {}) };
      const pool = await SentinelPool.create(topo.masterName, topo.sentinelAddresses, options);
      const mode = durable ? 'durability { replicas: 1, timeout: 500 }' : 'no durability';
      try {
        const run = await crashWithLaggingReplica(topo, pool, { writers, prefix: `loss:${i}:${durable ? 'd' : 'p'}`, lagMs, afterAcks: 500 });
        rows.push({ mode, run });
        process.stdout.write(
          `run ${i + 1} ${mode}: ${fmt(run.from)} -> ${fmt(run.to)}, ${run.acks.length} acknowledged, ${run.lost.length} of them missing on the new master; ` +
            `failed ${run.failures.length} (lag window ${JSON.stringify(run.failuresByType)}); failover ${run.failoverMs} ms after the kill\n`,
        );
        if (durable && run.lost.length > 0) failed = true;
      } finally {
        await pool.close();
      }
      // Put the topology back: the killed master comes back as a replica of the new one.
      await topo.handleFor(rows[rows.length - 1]!.run.from)!.restart();
      await waitSettled(topo, 2, 60_000);
    }
  }
  process.stdout.write(`\n| run | mode | acknowledged | acknowledged but lost | failed in the lag window |\n|---|---|---:|---:|---|\n`);
  rows.forEach(({ mode, run }, j) => {
    process.stdout.write(`| ${Math.floor(j / 2) + 1} | ${mode} | ${run.acks.length} | ${run.lost.length} | ${JSON.stringify(run.failuresByType)} |\n`);
  });
} finally {
  await topo.stop();
}
process.exit(failed ? 1 : 0);

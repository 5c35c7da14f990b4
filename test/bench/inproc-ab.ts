/**
 * Two versions of redis-ha-pool in ONE process, against the same servers, interleaved: the A/B
 * that separate bench runs cannot give on a small shared machine, where one run's ops/s moves by
 * 2x with whatever else the machine does. Each round runs base and head (the order swapped every
 * other round) and the bare pipelined client on the same keys, so drift hits all three alike.
 *
 *   BASE_SRC=/path/to/base/src HEAD_SRC=/path/to/head/src npx tsx test/bench/inproc-ab.ts
 *
 * scripts/bench-ab.sh runs it with its two worktrees. It starts one standalone server and one
 * cluster (3 masters, no replicas) with this checkout's test support, and prints, per cell
 * (standalone SET/GET and cluster SET at 50 and 500 in flight), the median ops/s and CPU µs per
 * op of each side and of bare, and head ÷ base.
 *
 * Environment: BASE_SRC, HEAD_SRC (required: folders holding index.ts), INPROC_ROUNDS (default 8),
 * BENCH_OPS (default 50000 per run).
 */
import path from 'node:path';
import { BareClient, BareCluster } from './bare-client.js';
import { installCleanupHandlers, markdownTable } from './lib.js';
import { startCluster, startStandalone } from '../support/topology.js';

interface SetGet {
  set(k: string, v: string): Promise<unknown>;
  get(k: string): Promise<unknown>;
  close(): Promise<void>;
}
interface PoolModule {
  StandalonePool: { create(a: { host: string; port: number }): Promise<SetGet> };
  ClusterPool: { create(seeds: string[]): Promise<SetGet> };
}

const ROUNDS = Number(process.env.INPROC_ROUNDS ?? 8);
const OPS = Number(process.env.BENCH_OPS ?? 50_000);
const VALUE = 'v'.repeat(64);
const KEYS = Array.from({ length: 10_000 }, (_, i) => `bench:key:${i}`);

function srcOf(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} must name a src/ folder (with index.ts) to benchmark`);
  return path.resolve(v, 'index.ts');
}

async function run(op: (i: number) => Promise<unknown>, c: number): Promise<{ ops: number; cpu: number }> {
  let next = 0;
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  await Promise.all(Array.from({ length: c }, async () => {
    while (next < OPS) await op(next++);
  }));
  const cu = process.cpuUsage(c0);
  return { ops: (OPS / (performance.now() - t0)) * 1000, cpu: (cu.user + cu.system) / OPS };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

type Side = 'base' | 'head' | 'bare';

async function main(): Promise<void> {
  installCleanupHandlers();
  const mods = {
    base: (await import(srcOf('BASE_SRC'))) as PoolModule,
    head: (await import(srcOf('HEAD_SRC'))) as PoolModule,
  };
  const standalone = await startStandalone();
  const cluster = await startCluster({ masters: 3, replicasPerMaster: 0 });
  try {
    await cluster.waitForClusterOk();
    const seeds = cluster.seeds.map((s) => `${s.host}:${s.port}`);
    const addr = { host: standalone.address.host, port: standalone.address.port };
    const bareS = await BareClient.connect(addr);
    const bareC = await BareCluster.connect(cluster.seeds[0]!);
    const clients = {
      standalone: {
        base: await mods.base.StandalonePool.create(addr),
        head: await mods.head.StandalonePool.create(addr),
      },
      cluster: {
        base: await mods.base.ClusterPool.create(seeds),
        head: await mods.head.ClusterPool.create(seeds),
      },
    };
    const opFor = (mode: 'standalone' | 'cluster', side: Side, cmd: 'SET' | 'GET') => {
      if (side === 'bare') {
        const b = mode === 'standalone' ? bareS : bareC;
        return cmd === 'SET' ? (i: number) => b.send(['SET', KEYS[i % KEYS.length]!, VALUE]) : (i: number) => b.send(['GET', KEYS[i % KEYS.length]!]);
      }
      const p = clients[mode][side];
      return cmd === 'SET' ? (i: number) => p.set(KEYS[i % KEYS.length]!, VALUE) : (i: number) => p.get(KEYS[i % KEYS.length]!);
    };
    const cells: Array<['standalone' | 'cluster', 'SET' | 'GET', number]> = [
      ['standalone', 'SET', 50], ['standalone', 'GET', 50], ['standalone', 'SET', 500], ['standalone', 'GET', 500],
      ['cluster', 'SET', 50], ['cluster', 'SET', 500],
    ];
    // Warm-up: every connection open, every function compiled, the keys present.
    for (const [mode, cmd, c] of cells) for (const side of ['base', 'head', 'bare'] as const) await run(opFor(mode, side, cmd), c);
    const results = new Map<string, Record<Side, Array<{ ops: number; cpu: number }>>>();
    for (let round = 0; round < ROUNDS; round++) {
      process.stderr.write(`[inproc-ab] round ${round + 1}/${ROUNDS}\n`);
      const order: Side[] = round % 2 ? ['head', 'base', 'bare'] : ['base', 'head', 'bare'];
      for (const [mode, cmd, c] of cells) {
        const key = `${mode} ${cmd} ${c}`;
        const r = results.get(key) ?? { base: [], head: [], bare: [] };
        results.set(key, r);
        for (const side of order) r[side].push(await run(opFor(mode, side, cmd), c));
      }
    }
    const rows = [...results].map(([key, r]) => {
      const m = (s: Side, f: 'ops' | 'cpu') => median(r[s].map((x) => x[f]));
      return [
        key,
        Math.round(m('base', 'ops')).toLocaleString('en-US'),
        Math.round(m('head', 'ops')).toLocaleString('en-US'),
        (m('head', 'ops') / m('base', 'ops')).toFixed(2),
        (m('base', 'ops') / m('bare', 'ops')).toFixed(2),
        (m('head', 'ops') / m('bare', 'ops')).toFixed(2),
        m('base', 'cpu').toFixed(2),
        m('head', 'cpu').toFixed(2),
        m('bare', 'cpu').toFixed(2),
      ];
    });
    console.log(`\n## In one process, interleaved: ${ROUNDS} rounds of ${OPS.toLocaleString('en-US')} ops per cell (medians)\n`);
    console.log(markdownTable(['cell', 'base ops/s', 'head ops/s', 'head/base', 'base × bare', 'head × bare', 'base CPU µs/op', 'head CPU µs/op', 'bare CPU µs/op'], rows, ['left', ...Array<'right'>(8).fill('right')]));
    for (const p of [...Object.values(clients.standalone), ...Object.values(clients.cluster)]) await p.close();
    await bareS.close();
    await bareC.close();
  } finally {
    await Promise.all([standalone.stop(), cluster.stop()]);
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});

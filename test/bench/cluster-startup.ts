/**
 * Cluster start-up and refresh cost by cluster size (issue 9, deliverable 3): what grows with
 * the number of nodes, not with the traffic.
 *
 *   npm run bench:cluster-startup
 *   BENCH_SIZES=fake:100 npm run bench:cluster-startup        # only the scripted 100-master map
 *
 * Sizes (BENCH_SIZES, default `real:3,real:30,fake:100`): `real:N` is a cluster of N masters
 * and N replicas started by the test helper (`startCluster`); `fake:N` is N masters and N
 * replicas of scripted nodes (test/support/fake-cluster.ts) in a child process, so this
 * process's CPU time and memory hold only the client. Fake nodes answer CLUSTER SHARDS and
 * SLOTS with the same map, COMMAND with a real redis 7.0 reply, GET/SET with MOVED for slots
 * they do not serve: start-up and refresh do the same work as against real nodes.
 *
 * Per size, with `ClusterPool` default options and 3 seeds:
 *   create ms / first reply ms  `ClusterPool.create()` until it resolves, then one SET: median
 *                    of BENCH_ROUNDS fresh pools (after one warm-up pool, so module loading
 *                    and JIT are not counted)
 *   conns after create / after load  client connections the nodes report open (INFO clients
 *                    on real nodes, minus the harness's own; the fake counts its sockets) after
 *                    the first reply, then after one SET of a key on every slot range
 *   refresh ms       `pool.refresh()` (connect, CLUSTER SHARDS, parse, install), median and
 *                    p90 of BENCH_REFRESHES, each after `refresh.minInterval`; CPU ms is
 *                    process.cpuUsage() over the refresh
 *   parse ms         slotMapFromShards() on the node's reply alone (median of 50)
 *   heap             heapUsed after gc (the script runs with --expose-gc), minus the same with
 *                    no pool open: after create() and one reply (slot map, command table, two
 *                    connections), per node the load then used (its NodePool and connection),
 *                    and in all after the load and the refreshes (RSS beside it: noisier)
 * Then nodes leave: the map shrinks (fake: 10% of the masters go, their slots to the others,
 * and every replica; real: not here, see test/integration/cluster-nodes.test.ts), the pool
 * refreshes, writes every slot again, and connections still open to nodes out of the map are
 * counted (must be 0).
 */
import os from 'node:os';
import { ClusterPool } from '../../src/index.js';
import { Connection } from '../../src/connection/connection.js';
import { resolveConnectionOptions } from '../../src/connection/options.js';
import { slotMapFromShards } from '../../src/cluster/slot-map.js';
import { keySlot } from '../../src/cluster/slot.js';
import type { NodeAddress, Reply } from '../../src/types.js';
import { sendCommands } from '../support/mini-client.js';
import { forkFakeCluster, type ForkedFakeCluster } from '../support/fake-cluster.js';
import { startCluster, type ClusterTopology } from '../support/topology.js';
import { envInt, fmtMs, installCleanupHandlers, markdownTable, median, percentile, systemInfo } from './lib.js';

const SIZES = (process.env.BENCH_SIZES ?? 'real:3,real:30,fake:100').split(',').map((s) => {
  const m = /^(real|fake):(\d+)$/.exec(s.trim());
  if (!m || Number(m[2]) < 3) throw new TypeError(`BENCH_SIZES entries are real:N or fake:N with N >= 3 (got ${JSON.stringify(s)}).`);
  return { kind: m[1] as 'real' | 'fake', masters: Number(m[2]) };
});
const ROUNDS = envInt('BENCH_ROUNDS', 5);
const REFRESHES = envInt('BENCH_REFRESHES', 20);
const NODE_TIMEOUT = envInt('BENCH_NODE_TIMEOUT', 15_000);
/** Default refresh.minInterval: a refresh() sooner than this after the last one waits for it. */
const MIN_INTERVAL = 200;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const gc = () => (globalThis as { gc?: () => void }).gc?.();

function settle(): Promise<void> {
  gc();
  return sleep(50).then(() => gc());
}

/** One key per slot range: a key of every 64th slot reaches every master of up to 256. */
function keysOverSlots(): string[] {
  const out: string[] = [];
  const seen = new Set<number>();
  for (let i = 0; out.length < 256 && i < 1_000_000; i++) {
    const k = `startup:${i}`;
    const s = keySlot(k) >> 6;
    if (!seen.has(s)) {
      seen.add(s);
      out.push(k);
    }
  }
  return out;
}

/** A cluster under test: its nodes, and how many client connections each holds. */
interface Target {
  label: string;
  nodes: NodeAddress[];
  seeds: string[];
  /** Client connections open per node (harness's own excluded). */
  connections(): Promise<Map<string, number>>;
  /** Shrinks the map; returns the nodes that left. */
  shrink?(): Promise<NodeAddress[]>;
  stop(): Promise<void>;
}

async function realTarget(masters: number): Promise<Target> {
  process.stderr.write(`[bench] starting ${masters} masters + ${masters} replicas...\n`);
  const t0 = performance.now();
  const topo: ClusterTopology = await startCluster({ masters, replicasPerMaster: 1, nodeTimeoutMs: NODE_TIMEOUT });
  try {
    await topo.waitForClusterOk(120_000);
  } catch (err) {
    await topo.stop();
    throw err;
  }
  process.stderr.write(`[bench] ${topo.nodes.length} nodes ready in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);
  return {
    label: `real ${masters} masters + ${masters} replicas`,
    nodes: topo.seeds,
    seeds: topo.seeds.slice(0, 3).map((a) => `${a.host}:${a.port}`),
    async connections() {
      const out = new Map<string, number>();
      await Promise.all(
        topo.seeds.map(async (a) => {
          const [list] = await sendCommands(a, [['CLIENT', 'LIST']], { timeoutMs: 10_000 });
          // Not the replication links (flags M, S), not the harness's own CLIENT LIST.
          const clients = String(list).split('\n').filter((l) => l.trim() && !/ flags=[^ ]*[MS]/.test(l) && !/ cmd=client\|list/.test(l));
          out.set(`${a.host}:${a.port}`, clients.length);
        }),
      );
      return out;
    },
    stop: () => topo.stop(),
  };
}

async function fakeTarget(masters: number): Promise<Target> {
  const fc: ForkedFakeCluster = await forkFakeCluster({ masters, replicasPerMaster: 1 });
  return {
    label: `fake ${masters} masters + ${masters} replicas`,
    nodes: fc.nodes,
    seeds: fc.nodes.slice(0, 3).map((a) => `${a.host}:${a.port}`),
    async connections() {
      return new Map((await fc.stats()).map((s) => [`127.0.0.1:${s.port}`, s.open]));
    },
    async shrink() {
      const keep = Math.max(3, Math.floor(masters * 0.9));
      await fc.setLayout({ masters: keep, replicasPerMaster: 0 });
      const left = (await fc.stats()).filter((s) => !s.inMap);
      return left.map((s) => ({ host: '127.0.0.1', port: s.port }));
    },
    stop: () => fc.close(),
  };
}

interface Row {
  label: string;
  nodes: number;
  createMs: number;
  firstMs: number;
  connsAfterCreate: string;
  connsAfterLoad: string;
  refreshMs: number;
  refreshP90: number;
  refreshCpuMs: number;
  parseMs: number;
  /** The pool after create() and one reply: map, command table, two connections. */
  heapCreatedKiB: number;
  /** Each node the load then used: its NodePool and connection. */
  heapPerUsedNodeKiB: number;
  /** Everything, after the load and the refreshes. */
  heapTotalKiB: number;
  rssTotalMiB: number;
  afterLeave: string;
}

const rows: Row[] = [];

/** Nodes with at least one client connection. */
const used = (conns: Map<string, number>) => [...conns.values()].filter((n) => n > 0).length;

/** "N on M nodes (a masters, b replicas)". */
function describeConns(conns: Map<string, number>, roles: Map<string, 'master' | 'replica'>): string {
  let total = 0;
  let m = 0;
  let r = 0;
  for (const [k, n] of conns) {
    if (n <= 0) continue;
    total += n;
    if (roles.get(k) === 'replica') r++;
    else m++;
  }
  return `${total} on ${m + r} nodes (${m} M, ${r} R)`;
}

async function benchTarget(t: Target): Promise<void> {
  const keys = keysOverSlots();
  // Warm-up: module loading, JIT, the command table parser.
  {
    const p = await ClusterPool.create(t.seeds);
    await p.set('warm', 'up');
    await Promise.all(keys.map((k) => p.set(k, 'w')));
    await p.close();
  }
  await settle();
  const createMs: number[] = [];
  const firstMs: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const t0 = performance.now();
    const p = await ClusterPool.create(t.seeds);
    const t1 = performance.now();
    await p.set(`first:${i}`, 'x');
    const t2 = performance.now();
    createMs.push(t1 - t0);
    firstMs.push(t2 - t1);
    await p.close();
  }
  await sleep(200);
  await settle();
  const before = process.memoryUsage();

  const pool = await ClusterPool.create(t.seeds);
  await pool.set('first', 'x');
  const roles = new Map(pool.nodes().map((n) => [`${n.host}:${n.port}`, n.role] as const));
  const nodeCount = roles.size;
  await sleep(100);
  const afterCreate = await t.connections();
  await settle();
  const created = process.memoryUsage();
  await Promise.all(keys.map((k) => pool.set(k, 'v')));
  await sleep(100);
  const afterLoad = await t.connections();

  const wall: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < REFRESHES; i++) {
    await sleep(MIN_INTERVAL + 10);
    const c0 = process.cpuUsage();
    const a = performance.now();
    await pool.refresh();
    wall.push(performance.now() - a);
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / 1000);
  }

  await settle();
  const loaded = process.memoryUsage();

  // The parse alone, on the reply of the first seed.
  const [host, port] = t.seeds[0]!.split(':');
  const from = { host: host!, port: Number(port) };
  const conn = await Connection.connect(from, resolveConnectionOptions({}, {}, '', 'node'));
  const reply: Reply = await conn.ask(['CLUSTER', 'SHARDS']);
  conn.destroy();
  const parse: number[] = [];
  for (let i = 0; i < 50; i++) {
    const a = performance.now();
    slotMapFromShards(reply, from);
    parse.push(performance.now() - a);
  }

  let afterLeave = '-';
  if (t.shrink) {
    const left = await t.shrink();
    await sleep(MIN_INTERVAL + 10);
    await pool.refresh();
    await Promise.all(keys.map((k) => pool.set(k, 'after')));
    await sleep(200);
    const conns = await t.connections();
    const stillOpen = left.reduce((n, a) => n + (conns.get(`${a.host}:${a.port}`) ?? 0), 0);
    afterLeave = `${left.length} nodes left; ${pool.stats().pools.length} pools; ${stillOpen} conns to nodes out of the map`;
  }
  await pool.close();

  const sorted = [...wall].sort((a, b) => a - b);
  rows.push({
    label: t.label,
    nodes: nodeCount,
    createMs: median(createMs),
    firstMs: median(firstMs),
    connsAfterCreate: describeConns(afterCreate, roles),
    connsAfterLoad: describeConns(afterLoad, roles),
    refreshMs: median(wall),
    refreshP90: percentile(sorted, 90),
    refreshCpuMs: median(cpu),
    parseMs: median(parse),
    heapCreatedKiB: (created.heapUsed - before.heapUsed) / 1024,
    heapPerUsedNodeKiB: (loaded.heapUsed - created.heapUsed) / 1024 / Math.max(1, used(afterLoad) - used(afterCreate)),
    heapTotalKiB: (loaded.heapUsed - before.heapUsed) / 1024,
    rssTotalMiB: (loaded.rss - before.rss) / 1024 / 1024,
    afterLeave,
  });
  const r = rows[rows.length - 1]!;
  process.stderr.write(`[bench] ${t.label}: ${JSON.stringify(r)}\n`);
}

async function main(): Promise<void> {
  installCleanupHandlers();
  if (!(globalThis as { gc?: unknown }).gc) process.stderr.write('[bench] no --expose-gc: memory figures are noisy\n');
  const sys = systemInfo();
  const started = new Date();
  for (const s of SIZES) {
    const t = s.kind === 'real' ? await realTarget(s.masters) : await fakeTarget(s.masters);
    try {
      await benchTarget(t);
    } finally {
      await t.stop();
    }
  }
  console.log(`\n## Cluster start-up and refresh by size (ClusterPool defaults, 3 seeds)\n`);
  console.log(`node ${sys.node}, ${sys.cpu}, ${sys.cores} cores; started ${started.toISOString()}; load average at end ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}\n`);
  console.log(
    markdownTable(
      ['cluster', 'nodes in map', 'create() ms', 'first reply ms', 'conns after create', 'conns after load', 'refresh ms (p90)', 'refresh CPU ms', 'parse ms', 'heap after create KiB', 'heap per used node KiB', 'heap in all KiB (RSS MiB)', 'nodes leaving'],
      rows.map((r) => [
        r.label, String(r.nodes), fmtMs(r.createMs), fmtMs(r.firstMs), r.connsAfterCreate, r.connsAfterLoad,
        `${fmtMs(r.refreshMs)} (${fmtMs(r.refreshP90)})`, fmtMs(r.refreshCpuMs), fmtMs(r.parseMs),
        r.heapCreatedKiB.toFixed(0), r.heapPerUsedNodeKiB.toFixed(1), `${r.heapTotalKiB.toFixed(0)} (${r.rssTotalMiB.toFixed(1)})`, r.afterLeave,
      ]),
      ['left', 'right', 'right', 'right', 'left', 'left', 'right', 'right', 'right', 'right', 'right', 'right', 'left'],
    ),
  );
  console.log('');
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);

/**
 * Cluster scale benchmark (issue 9): how each cluster client holds up as the cluster grows.
 * For each N in BENCH_MASTERS it starts a cluster of N masters and N replicas with the test
 * helper (`startCluster`), then runs every client in turn over the same random key sequence:
 * SET, then GET, at each in-flight count, BENCH_OPS commands per cell.
 *
 *   npm run bench:cluster-scale
 *   BENCH_MASTERS=3 BENCH_OPS=10000 npm run bench:cluster-scale     # quick check
 *
 * Clients: redis-ha-pool `ClusterPool.create(seeds)`, ioredis `Cluster` with and without
 * `enableAutoPipelining`, node-redis `createCluster`, all with default options (the
 * factories are shared with cluster.ts, in lib.ts).
 *
 * Environment:
 *   BENCH_MASTERS       comma list of master counts (default 3,10,30); each gets as many replicas
 *   BENCH_OPS           commands per cell (default 100000)
 *   BENCH_CONCURRENCY   comma list of in-flight counts (default 50,500)
 *   BENCH_KEYS          key space (default 20000 random keys, so every slot range, every master)
 *   BENCH_ONLY          comma list of clients: ha, ioredis, ioredis-ap, node-redis
 *   BENCH_NODE_TIMEOUT  cluster-node-timeout in ms (default 15000: a 60-process cluster on a
 *                       loaded 2-core machine must not fail a node over in the middle of a cell)
 *   BENCH_SEED          seed of the key names and the key sequence (default 9)
 *
 * Per client, against a flushed cluster (CONFIG RESETSTAT on every master):
 * 1. Warm-up: one SET of every key at 500 in flight (connections to every master, slot map,
 *    JIT), then one GET of every key; DBSIZE summed over the masters must equal the key space.
 * 2. Cells: SET at each in-flight count, then GET at each. Commands i = 0..BENCH_OPS-1 of a cell
 *    use key SEQ[i], one seeded sequence shared by every client and cell. Each client writes a
 *    value of its own (64 bytes, tagged with the client), so every GET must return exactly that
 *    value (a wrong reply is counted and fails the run), and after the SET cells a sample of 200
 *    keys is read back from the masters by a harness connection (not the client under test).
 * 3. After close, the SET and GET calls counted by the masters (INFO commandstats) must equal
 *    what the client completed: a client cannot look fast by dropping or merging commands.
 *
 * Columns, per cell:
 *   ops/s, p50/p99  latency of each command (hrtime around its await), runWorkers in lib.ts
 *   CPU µs/op       process.cpuUsage() (user + system, this process) delta / commands
 *   write()/op      calls of net.Socket.prototype.write (every client, every socket) / commands
 *   flushes/op      calls of net.Socket.prototype._writeGeneric / commands: one per chunk (or
 *                   corked batch, via _writev) handed to the kernel, so a client that corks
 *                   several write() calls into one writev shows fewer flushes than writes
 *   wsys/op, rsys/op  write and read syscalls of this process (/proc/self/io syscw, syscr) /
 *                   commands: the kernel's own count (libuv's write/writev and read), "-" where
 *                   /proc is not available
 *   vs ioredis AP   ops/s over ioredis with enableAutoPipelining, same N, op and in-flight count
 *
 * Every process it starts is stopped in `finally`, and on exit, SIGINT or SIGTERM by the
 * harness reapers (lib.ts installCleanupHandlers, test/support/reaper.ts).
 */
import { readFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import type { NodeAddress } from '../../src/types.js';
import { ReplyError } from '../support/resp-wire.js';
import { parseInfo, sendCommands } from '../support/mini-client.js';
import { startCluster, type ClusterTopology } from '../support/topology.js';
import {
  clusterDbsize,
  clusterFlushall,
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
  type ClusterBenchClient,
  type Summary,
} from './lib.js';

function envNumbers(name: string, def: readonly number[]): number[] {
  const v = process.env[name];
  if (!v) return [...def];
  const out = v.split(',').map((s) => Number(s.trim().replace(/_/g, '')));
  if (out.some((n) => !Number.isInteger(n) || n <= 0)) throw new TypeError(`${name} must be a comma list of positive integers (got ${JSON.stringify(v)}).`);
  return out;
}

const MASTERS = envNumbers('BENCH_MASTERS', [3, 10, 30]);
const OPS = envInt('BENCH_OPS', 100_000);
const CONCURRENCIES = envNumbers('BENCH_CONCURRENCY', [50, 500]);
const KEYSPACE = envInt('BENCH_KEYS', 20_000);
const NODE_TIMEOUT = envInt('BENCH_NODE_TIMEOUT', 15_000);
const SEED = envInt('BENCH_SEED', 9);
const ONLY = envList('BENCH_ONLY');
const WARMUP_CONCURRENCY = 500;
const VERIFY_SAMPLE = 200;

// ---------------------------------------------------------------------------------------------
// Keys: one seeded sequence for every client
// ---------------------------------------------------------------------------------------------

/** mulberry32: small, seeded, good enough to spread keys over slots. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const rand = prng(SEED);
const KEYS = Array.from({ length: KEYSPACE }, (_, i) => `scale:${Math.floor(rand() * 2 ** 32).toString(36)}:${i}`);
const SEQ = Uint32Array.from({ length: OPS }, () => Math.floor(rand() * KEYSPACE));

/** A 64-byte value naming the client that wrote it. */
function valueFor(id: string): string {
  return `${id}:`.padEnd(64, 'x');
}

// ---------------------------------------------------------------------------------------------
// Counting socket writes and syscalls
// ---------------------------------------------------------------------------------------------

const counters = { writes: 0, flushes: 0 };

/**
 * Wraps net.Socket.prototype.write (what a client calls) and _writeGeneric (what net.Socket
 * calls once per chunk or corked batch it hands to libuv; tls.TLSSocket inherits both). The
 * wrappers stay for the whole run: a counter increment costs every client the same.
 */
function installWriteCounters(): void {
  const proto = net.Socket.prototype as net.Socket & { _writeGeneric?: (...a: unknown[]) => unknown };
  const write = proto.write;
  proto.write = function (this: net.Socket, ...args: unknown[]) {
    counters.writes++;
    return (write as (...a: unknown[]) => boolean).apply(this, args);
  } as typeof proto.write;
  const generic = proto._writeGeneric;
  if (typeof generic === 'function') {
    proto._writeGeneric = function (this: net.Socket, ...args: unknown[]) {
      counters.flushes++;
      return generic.apply(this, args);
    };
  } else {
    counters.flushes = NaN;
  }
}

interface ProcIo {
  syscr: number;
  syscw: number;
}

/** This process's read/write syscall counts, or undefined without /proc. */
function procIo(): ProcIo | undefined {
  try {
    const text = readFileSync('/proc/self/io', 'utf8');
    const field = (k: string) => Number(new RegExp(`^${k}: (\\d+)$`, 'm').exec(text)?.[1] ?? NaN);
    const r = { syscr: field('syscr'), syscw: field('syscw') };
    return Number.isFinite(r.syscr) && Number.isFinite(r.syscw) ? r : undefined;
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------------------------------------
// Harness checks (through harness connections, never the client under test)
// ---------------------------------------------------------------------------------------------

async function masterAddresses(topo: ClusterTopology): Promise<NodeAddress[]> {
  return (await topo.masters()).map((m) => m.address);
}

/** CONFIG RESETSTAT on every master. */
async function resetStats(masters: readonly NodeAddress[]): Promise<void> {
  await Promise.all(masters.map((a) => sendCommands(a, [['CONFIG', 'RESETSTAT']], { timeoutMs: 10_000 })));
}

/** SET and GET calls the masters counted since the last reset. */
async function serverCalls(masters: readonly NodeAddress[]): Promise<{ SET: number; GET: number }> {
  const out = { SET: 0, GET: 0 };
  for (const a of masters) {
    const [reply] = await sendCommands(a, [['INFO', 'commandstats']], { timeoutMs: 10_000 });
    const info = parseInfo(String(reply));
    const calls = (name: string) => Number(/calls=(\d+)/.exec(info.get(`cmdstat_${name}`) ?? '')?.[1] ?? 0);
    out.SET += calls('set');
    out.GET += calls('get');
  }
  return out;
}

/**
 * Reads `keys` from every master (a master that does not own a key answers MOVED) and returns
 * how many keys did not have exactly one owner answering `expected`.
 */
async function verifyValues(masters: readonly NodeAddress[], keys: readonly string[], expected: string): Promise<number> {
  const replies = await Promise.all(masters.map((a) => sendCommands(a, keys.map((k) => ['GET', k]), { timeoutMs: 10_000 })));
  let wrong = 0;
  for (let i = 0; i < keys.length; i++) {
    const answers = replies.map((r) => r[i]).filter((v) => !(v instanceof ReplyError));
    if (answers.length !== 1 || String(answers[0]) !== expected) wrong++;
  }
  return wrong;
}

// ---------------------------------------------------------------------------------------------
// Running
// ---------------------------------------------------------------------------------------------

interface ClientSpec {
  id: string;
  label: string;
  open(seeds: string[]): Promise<ClusterBenchClient>;
}

const SPECS: ClientSpec[] = [
  { id: 'ha', label: 'redis-ha-pool', open: (s) => haClusterClient(s) },
  { id: 'ioredis-ap', label: 'ioredis (auto-pipelining)', open: (s) => ioredisClusterClient(s, true) },
  { id: 'ioredis', label: 'ioredis', open: (s) => ioredisClusterClient(s, false) },
  { id: 'node-redis', label: 'node-redis', open: (s) => nodeRedisClusterClient(s) },
];

type Op = 'SET' | 'GET';

interface Cell {
  masters: number;
  client: string;
  op: Op;
  inFlight: number;
  summary: Summary;
  cpuUsPerOp: number;
  writesPerOp: number;
  flushesPerOp: number;
  wsysPerOp: number;
  rsysPerOp: number;
  bad: number;
}

const cells: Cell[] = [];
const failures: string[] = [];

function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

async function benchClient(n: number, topo: ClusterTopology, seeds: string[], spec: ClientSpec): Promise<void> {
  const masters = await masterAddresses(topo);
  if (masters.length !== n) throw new Error(`expected ${n} masters, the cluster has ${masters.length}`);
  await clusterFlushall(topo);
  await resetStats(masters);
  gc();
  const value = valueFor(spec.id);
  const sent = { SET: 0, GET: 0 };
  const client = await spec.open(seeds);
  try {
    const ok = { SET: (r: unknown) => r === 'OK', GET: (r: unknown) => r === value };
    // Warm-up: every key once, so every GET of a cell hits and every master has a connection.
    const w1 = await runWorkers(KEYSPACE, WARMUP_CONCURRENCY, (i) => client.set(KEYS[i]!, value), ok.SET);
    const w2 = await runWorkers(KEYSPACE, WARMUP_CONCURRENCY, (i) => client.get(KEYS[i]!), ok.GET);
    sent.SET += KEYSPACE;
    sent.GET += KEYSPACE;
    if (w1.bad || w2.bad) failures.push(`N=${n} ${spec.label} warm-up: ${w1.bad} bad SET, ${w2.bad} bad GET replies`);
    const size = await clusterDbsize(topo);
    if (size !== KEYSPACE) failures.push(`N=${n} ${spec.label}: DBSIZE ${size} after warm-up, expected ${KEYSPACE}`);

    for (const op of ['SET', 'GET'] as const) {
      for (const c of CONCURRENCIES) {
        const fn = op === 'SET' ? (i: number) => client.set(KEYS[SEQ[i]!]!, value) : (i: number) => client.get(KEYS[SEQ[i]!]!);
        gc();
        const w0 = counters.writes;
        const f0 = counters.flushes;
        const io0 = procIo();
        const cpu0 = process.cpuUsage();
        const r = await runWorkers(OPS, c, fn, ok[op]);
        const cpu = process.cpuUsage(cpu0);
        const io1 = procIo();
        const writes = counters.writes - w0;
        const flushes = counters.flushes - f0;
        sent[op] += OPS;
        const s = summarize(r);
        const cell: Cell = {
          masters: n,
          client: spec.label,
          op,
          inFlight: c,
          summary: s,
          cpuUsPerOp: (cpu.user + cpu.system) / OPS,
          writesPerOp: writes / OPS,
          flushesPerOp: flushes / OPS,
          wsysPerOp: io0 && io1 ? (io1.syscw - io0.syscw) / OPS : NaN,
          rsysPerOp: io0 && io1 ? (io1.syscr - io0.syscr) / OPS : NaN,
          bad: r.bad,
        };
        cells.push(cell);
        process.stderr.write(
          `  N=${String(n).padEnd(3)} ${spec.label.padEnd(26)} ${op} c=${String(c).padEnd(4)} ${fmtInt(s.opsPerSec).padStart(8)} ops/s` +
            `  p50 ${fmtMs(s.p50Ms)}  p99 ${fmtMs(s.p99Ms)} ms  cpu ${cell.cpuUsPerOp.toFixed(1)} µs/op` +
            `  write() ${cell.writesPerOp.toFixed(3)}  flush ${cell.flushesPerOp.toFixed(3)}  wsys ${fmt3(cell.wsysPerOp)}/op` +
            `${r.bad ? `  (${r.bad} WRONG REPLIES)` : ''}\n`,
        );
        if (r.bad) failures.push(`N=${n} ${spec.label} ${op} c=${c}: ${r.bad} wrong replies`);
      }
      if (op === 'SET') {
        const sample = Array.from({ length: Math.min(VERIFY_SAMPLE, OPS) }, (_, j) => KEYS[SEQ[Math.floor((j * OPS) / Math.min(VERIFY_SAMPLE, OPS))]!]!);
        const wrong = await verifyValues(masters, sample, value);
        sent.GET += sample.length; // the owners counted these GETs too
        if (wrong) failures.push(`N=${n} ${spec.label}: ${wrong} of ${sample.length} sampled keys do not hold the value it wrote`);
      }
    }
  } finally {
    await client.close();
  }
  const seen = await serverCalls(masters);
  if (seen.SET !== sent.SET || seen.GET !== sent.GET) {
    const msg = `N=${n} ${spec.label}: masters counted SET ${seen.SET} / GET ${seen.GET}, client completed SET ${sent.SET} / GET ${sent.GET}`;
    failures.push(msg);
    process.stderr.write(`  MISMATCH ${msg}\n`);
  }
}

async function benchN(n: number): Promise<void> {
  process.stderr.write(`[bench] starting ${n} masters + ${n} replicas (load ${loadavg()})...\n`);
  const t0 = performance.now();
  const topo = await startCluster({ masters: n, replicasPerMaster: 1, nodeTimeoutMs: NODE_TIMEOUT });
  try {
    await topo.waitForClusterOk(120_000);
    process.stderr.write(`[bench] cluster of ${topo.nodes.length} nodes ready in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);
    const seeds = topo.seeds.map((s) => `${s.host}:${s.port}`);
    for (const spec of SPECS) {
      if (ONLY && !ONLY.has(spec.id)) continue;
      await benchClient(n, topo, seeds, spec);
    }
  } finally {
    await topo.stop();
  }
}

// ---------------------------------------------------------------------------------------------
// Report
// ---------------------------------------------------------------------------------------------

function loadavg(): string {
  return os.loadavg().map((l) => l.toFixed(2)).join(' ');
}

function fmt3(n: number): string {
  return Number.isFinite(n) ? n.toFixed(3) : '-';
}

function apOf(c: Cell): Cell | undefined {
  return cells.find((x) => x.masters === c.masters && x.op === c.op && x.inFlight === c.inFlight && x.client === 'ioredis (auto-pipelining)');
}

function ratio(a: Cell | undefined, b: Cell | undefined): string {
  return a && b ? `${(a.summary.opsPerSec / b.summary.opsPerSec).toFixed(2)}x` : '-';
}

function printHeader(startLoad: string, startedAt: Date): void {
  const sys = systemInfo();
  console.log(`\n## Cluster scale: N masters + N replicas, ${fmtInt(OPS)} commands per cell, ${fmtInt(KEYSPACE)} random keys, 64-byte values\n`);
  console.log(`node ${sys.node}, ${sys.cpu}, ${sys.cores} cores, ${sys.platform}`);
  console.log(`started ${startedAt.toISOString()}; load average (1/5/15 min) at start: ${startLoad}\n`);
}

/** The table of one cluster size, printed as soon as it is done. */
function printN(n: number, startLoad: string): void {
  const rows = cells.filter((c) => c.masters === n);
  if (!rows.length) return;
  const order = (c: Cell) => [c.op === 'SET' ? 0 : 1, c.inFlight, SPECS.findIndex((s) => s.label === c.client)] as const;
  rows.sort((a, b) => {
    const x = order(a);
    const y = order(b);
    return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
  });
  console.log(`### ${n} masters + ${n} replicas (load average before: ${startLoad}, after: ${loadavg()})\n`);
  console.log(
    markdownTable(
      ['client', 'op', 'in flight', 'ops/s', 'p50 ms', 'p99 ms', 'CPU µs/op', 'write()/op', 'flushes/op', 'wsys/op', 'rsys/op', 'vs ioredis AP'],
      rows.map((c) => [
        c.client,
        c.op,
        String(c.inFlight),
        fmtInt(c.summary.opsPerSec),
        fmtMs(c.summary.p50Ms),
        fmtMs(c.summary.p99Ms),
        c.cpuUsPerOp.toFixed(1),
        fmt3(c.writesPerOp),
        fmt3(c.flushesPerOp),
        fmt3(c.wsysPerOp),
        fmt3(c.rsysPerOp),
        ratio(c, apOf(c)),
      ]),
      ['left', 'left', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right'],
    ),
  );
  console.log('');
}

function printSummary(endLoad: string, minutes: number): void {
  const ha = cells.filter((c) => c.client === 'redis-ha-pool');
  if (ha.length && ha.some((c) => apOf(c))) {
    console.log('### Summary: redis-ha-pool vs ioredis with auto-pipelining\n');
    console.log(
      markdownTable(
        ['N masters', 'op', 'in flight', 'redis-ha-pool ops/s', 'ioredis-AP ops/s', 'ratio', 'ha p99 ms', 'AP p99 ms', 'ha flushes/op', 'AP flushes/op'],
        ha.map((c) => {
          const ap = apOf(c);
          return [
            String(c.masters), c.op, String(c.inFlight),
            fmtInt(c.summary.opsPerSec), ap ? fmtInt(ap.summary.opsPerSec) : '-', ratio(c, ap),
            fmtMs(c.summary.p99Ms), ap ? fmtMs(ap.summary.p99Ms) : '-',
            fmt3(c.flushesPerOp), ap ? fmt3(ap.flushesPerOp) : '-',
          ];
        }),
        ['right', 'left', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right'],
      ),
    );
    console.log('');
  }
  console.log(`load average (1/5/15 min) at end: ${endLoad}; ${minutes.toFixed(1)} min in all\n`);
  if (failures.length) {
    console.log(`### FAILURES\n\n${failures.map((f) => `- ${f}`).join('\n')}\n`);
  }
}

async function main(): Promise<void> {
  installCleanupHandlers();
  installWriteCounters();
  const startedAt = new Date();
  const startLoad = loadavg();
  process.stderr.write(
    `[bench] cluster-scale: masters ${MASTERS.join(',')}, ${fmtInt(OPS)} ops per cell, in flight ${CONCURRENCIES.join(',')}, load average ${startLoad}\n`,
  );
  printHeader(startLoad, startedAt);
  for (const n of MASTERS) {
    const before = loadavg();
    await benchN(n);
    printN(n, before);
  }
  printSummary(loadavg(), (Date.now() - startedAt.getTime()) / 60_000);
  if (failures.length) process.exitCode = 1;
}

main().then(
  () => process.exit(process.exitCode ?? 0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);

/**
 * Standalone throughput / latency benchmark: redis-ha-pool vs ioredis vs node-redis vs
 * redis-benchmark vs `bare` (test/bench/bare-client.ts: the thinnest correct pipelined client on
 * node:net, the yardstick), against one redis-server this script starts and stops itself.
 *
 *   npm run bench                       # full run (200k ops per cell, 20k at concurrency 1)
 *   BENCH_OPS=20000 npm run bench       # quick run (c=1 cells get BENCH_OPS/10)
 *   npm run bench -- --tls              # plain TCP beside TLS (see below)
 *   npm run bench -- --trace            # redis-ha-pool without and with a diagnostics_channel subscriber
 *
 * --tls: every client runs twice, on a fresh plain-TCP redis-server and on a fresh TLS-only one
 * (both from test/support/topology.ts `startStandalone()`, same config but for the TLS lines;
 * certificates from `makeTestCerts()`, clients verify them against the test CA), and the
 * report is one table of ops/s and client CPU per op, TCP beside TLS, with the TLS/TCP ratios.
 * Defaults then: BENCH_CONCURRENCY 50,500 and BENCH_ONLY ha,ioredis,ioredis-ap,node-redis,bare
 * (redis-benchmark is not run); BENCH_ROUNDS alternates which transport goes first. One round of
 * the default 200k ops takes ~1.5 min on 2 cores; ops/s swing a lot on a shared machine, so for
 * published figures use BENCH_ROUNDS=3 (~4-5 min) and read the per-round noise table.
 *
 * --trace: redis-ha-pool twice, without a subscriber and with one on the `redis-ha-pool:command`
 * tracing channel (what an APM agent does: a start time kept per command, the duration taken at
 * asyncEnd, a count), then a table of the difference. Defaults then: BENCH_ONLY ha,ha-traced.
 * The subscriber is attached only while the ha-traced client runs.
 *
 * Environment:
 *   BENCH_OPS          ops per cell at concurrency > 1 (default 200000); also redis-benchmark -n
 *   BENCH_OPS_C1       ops per cell at concurrency 1 (default BENCH_OPS / 10)
 *   BENCH_ONLY         comma list of clients: ha, ha-lanes2, ioredis, ioredis-ap, node-redis, bare,
 *                      ha-traced, redis-benchmark; bare-2 (the bare client on 2 sockets, beside
 *                      ha-lanes2) only when named
 *   BENCH_CONCURRENCY  comma list of concurrencies (default 1,50,500)
 *   BENCH_OP           set, get or set,get (default both)
 *   BENCH_ROUNDS       run every client (and redis-benchmark) this many times, in rotated
 *                      order, and report the median of each metric per cell (default 1)
 *   BENCH_PIN          1: pin redis-server to the last CPU, this process and redis-benchmark to
 *                      the others (needs taskset and >= 2 CPUs; off by default)
 *   BENCH_JSON         write the raw results to this file as JSON
 *
 * Profiling our client on the hot path:
 *   BENCH_ONLY=ha BENCH_CONCURRENCY=500 node --import tsx --cpu-prof --cpu-prof-dir=/tmp/prof test/bench/standalone.ts
 * (tsx-transformed code reports most functions at line 1; for line-level attribution compile
 * src/ + test/bench/ with tsc into a folder under node_modules/ and profile the .js instead.)
 *
 * Output: the main table (median over rounds) with each row's ops/s ÷ bare's for the same op and
 * in-flight count ("× bare": the share of the Node-side ceiling a client keeps), client CPU µs
 * per op (process.cpuUsage, more robust than ops/s on a shared machine) and, with
 * BENCH_ROUNDS > 1, ops/s of every round.
 * After each client the server's INFO commandstats must match the SET/GET count the client
 * completed, and every reply is checked ('OK' / the value), so a client cannot look fast by
 * dropping or short-circuiting commands. The exit code is 1 if anything failed.
 *
 * Concurrency N = N async workers, each awaiting its command before sending the next, so at
 * most N commands are in flight. Latency per op = process.hrtime.bigint() around each await.
 * Each client runs in this process, one after the other, with FLUSHALL between clients and a
 * warm-up (SET over the whole key space, then GET) before its measured cells.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import dc from 'node:diagnostics_channel';
import { DIAGNOSTICS_CHANNELS, StandalonePool, type CommandTraceContext } from '../../src/index.js';
import { BareClient } from './bare-client.js';
import {
  envInt, envList, fmtInt, fmtMs, installCleanupHandlers, markdownTable, median, parseInfo, pinSelf, runTracked, runWorkers,
  startRedisServer, summarize, systemInfo, type RedisServerHandle, type Summary,
} from './lib.js';

const ARGS = process.argv.slice(2);
for (const a of ARGS) if (a !== '--tls' && a !== '--trace') throw new TypeError(`unknown argument ${JSON.stringify(a)} (the flags are --tls and --trace)`);
/** `--tls`: every client over plain TCP and over TLS, on fresh servers, side by side. */
const TLS_MODE = ARGS.includes('--tls');
/** `--trace`: redis-ha-pool without and with a diagnostics_channel subscriber. */
const TRACE_MODE = ARGS.includes('--trace');
const OPS = envInt('BENCH_OPS', 200_000);
const OPS_C1 = envInt('BENCH_OPS_C1', Math.max(1, Math.round(OPS / 10)));
const CONCURRENCIES = [...(envList('BENCH_CONCURRENCY') ?? new Set(TLS_MODE ? ['50', '500'] : ['1', '50', '500']))].map(Number).sort((a, b) => a - b);
const ONLY = envList('BENCH_ONLY') ?? (TLS_MODE ? new Set(['ha', 'ioredis', 'ioredis-ap', 'node-redis', 'bare']) : TRACE_MODE ? new Set(['ha', 'ha-traced']) : undefined);
const OPS_FILTER = envList('BENCH_OP') ?? new Set(['set', 'get']);
const VALUE_BYTES = 64;
const VALUE = 'v'.repeat(VALUE_BYTES);
const KEYSPACE = 10_000;
const KEYS = Array.from({ length: KEYSPACE }, (_, i) => `bench:key:${i}`);
const WARMUP_OPS = Math.max(KEYSPACE, Math.round(OPS / 10));
const ROUNDS = envInt('BENCH_ROUNDS', 1);
const PIN = process.env.BENCH_PIN === '1';
/** CPUs of this process and redis-benchmark when pinned. */
let CLIENT_CPUS: string | undefined;

for (const c of CONCURRENCIES) if (!Number.isInteger(c) || c < 1) throw new TypeError(`BENCH_CONCURRENCY: bad value ${c}`);

/** What the bench needs from a client: SET and GET through its generic command entry point. */
interface BenchClient {
  set(key: string, value: string): Promise<unknown>;
  get(key: string): Promise<unknown>;
  close(): Promise<void>;
}

/** With --tls: the CA that signed the server certificate (IP SAN 127.0.0.1, so it verifies). */
type BenchTls = { ca: string } | undefined;

interface ClientSpec {
  id: string;
  label: string;
  /** ioredis configs are the baseline of the ratio column. */
  baseline?: boolean;
  /** Runs only when BENCH_ONLY names it. */
  optIn?: boolean;
  open(port: number, tls: BenchTls): Promise<BenchClient>;
}

/** What the bench needs from a server: its port and one-shot harness commands (FLUSHALL, INFO, ...). */
interface BenchServer {
  host: string;
  port: number;
  command(args: readonly (string | number)[]): Promise<unknown>;
}

/** The yardstick: every table gives each row's ops/s ÷ this client's for the same cell. */
const BARE_ID = 'bare';

const CLIENTS: ClientSpec[] = [
  {
    id: 'ha',
    label: 'redis-ha-pool (default)',
    async open(port, tls) {
      const pool = await StandalonePool.create({ host: '127.0.0.1', port }, tls ? { tls } : {});
      return {
        set: (k, v) => pool.call('SET', k, v),
        get: (k) => pool.call('GET', k),
        close: () => pool.close(),
      };
    },
  },
  {
    id: 'ha-lanes2',
    label: 'redis-ha-pool (lanes: 2)',
    async open(port, tls) {
      const pool = await StandalonePool.create({ host: '127.0.0.1', port }, { pool: { lanes: 2 }, ...(tls ? { tls } : {}) });
      return {
        set: (k, v) => pool.call('SET', k, v),
        get: (k) => pool.call('GET', k),
        close: () => pool.close(),
      };
    },
  },
  {
    id: 'ha-traced',
    label: 'redis-ha-pool (tracing subscriber)',
    async open(port, tls) {
      const unsubscribe = subscribeTracer();
      const pool = await StandalonePool.create({ host: '127.0.0.1', port }, tls ? { tls } : {});
      return {
        set: (k, v) => pool.call('SET', k, v),
        get: (k) => pool.call('GET', k),
        close: async () => {
          await pool.close();
          unsubscribe();
        },
      };
    },
  },
  {
    id: 'ioredis',
    label: 'ioredis 6 (default)',
    baseline: true,
    open: (port, tls) => openIoredis(port, tls, false),
  },
  {
    id: 'ioredis-ap',
    label: 'ioredis 6 (enableAutoPipelining)',
    baseline: true,
    open: (port, tls) => openIoredis(port, tls, true),
  },
  {
    id: 'node-redis',
    label: 'node-redis 6.3 (createClient)',
    async open(port, tls) {
      const socket = { host: '127.0.0.1', port, reconnectStrategy: false } as const;
      const client = createClient({ socket: tls ? { ...socket, tls: true, ca: tls.ca } : socket });
      client.on('error', (e: Error) => process.stderr.write(`[node-redis] ${e.message}\n`));
      await client.connect();
      return {
        set: (k, v) => client.sendCommand(['SET', k, v]),
        get: (k) => client.sendCommand(['GET', k]),
        close: async () => {
          try {
            await client.close();
          } finally {
            if (client.isOpen) client.destroy();
          }
        },
      };
    },
  },
  {
    id: BARE_ID,
    label: 'bare pipelined client (1 socket)',
    open: (port, tls) => openBare(port, tls, 1),
  },
  {
    id: 'bare-2',
    label: 'bare pipelined client (2 sockets)',
    optIn: true,
    open: (port, tls) => openBare(port, tls, 2),
  },
];

async function openBare(port: number, tls: BenchTls, connections: number): Promise<BenchClient> {
  const client = await BareClient.connect({ host: '127.0.0.1', port, connections, ...(tls ? { tls } : {}) });
  return {
    set: (k, v) => client.send(['SET', k, v]),
    get: (k) => client.send(['GET', k]),
    close: () => client.close(),
  };
}

/** Clients of this run: BENCH_ONLY's, or every one that is not opt-in. */
function selectedClients(): ClientSpec[] {
  return CLIENTS.filter((c) => (ONLY ? ONLY.has(c.id) : !c.optIn));
}

/** A subscriber doing what an APM agent does per command: a start time, a duration at asyncEnd, a count. */
function subscribeTracer(): () => void {
  const tc = dc.tracingChannel<object, CommandTraceContext>(DIAGNOSTICS_CHANNELS.command);
  const started = new WeakMap<CommandTraceContext, number>();
  let count = 0;
  let totalMs = 0;
  const handlers = {
    start: (ctx: CommandTraceContext) => void started.set(ctx, performance.now()),
    end: () => {},
    asyncStart: () => {},
    asyncEnd: (ctx: CommandTraceContext) => {
      count++;
      totalMs += performance.now() - (started.get(ctx) ?? 0);
    },
    error: () => {},
  };
  tc.subscribe(handlers);
  return () => {
    tc.unsubscribe(handlers);
    process.stderr.write(`  [trace] the subscriber saw ${fmtInt(count)} commands, mean ${(totalMs / Math.max(1, count)).toFixed(3)} ms\n`);
  };
}

async function openIoredis(port: number, tls: BenchTls, autoPipelining: boolean): Promise<BenchClient> {
  const redis = new Redis({ host: '127.0.0.1', port, lazyConnect: true, enableAutoPipelining: autoPipelining, retryStrategy: () => null, ...(tls ? { tls } : {}) });
  redis.on('error', (e: Error) => process.stderr.write(`[ioredis] ${e.message}\n`));
  await redis.connect();
  return {
    set: (k, v) => redis.call('SET', k, v),
    get: (k) => redis.call('GET', k),
    close: async () => {
      try {
        await redis.quit();
      } finally {
        redis.disconnect();
      }
    },
  };
}

interface Row {
  /** ClientSpec id ('redis-benchmark' for its rows): what scripts/bench-ab.sh reads from BENCH_JSON. */
  id: string;
  client: string;
  /** 'tcp' except for the TLS cells of --tls. */
  transport: 'tcp' | 'tls';
  baseline: boolean;
  op: 'SET' | 'GET';
  /** Concurrency used for the ratio lookup. */
  concurrency: number;
  inFlight: string;
  ops: number;
  /** One summary per round. */
  runs: Summary[];
  /** CPU time (user + system) of this Node process per op, µs, per round; empty for redis-benchmark. */
  cpu: number[];
  bad: number;
  note?: string;
}

/** Cells in first-seen order; a cell collects one summary per round. */
const cells = new Map<string, Row>();
const failures: string[] = [];

function record(r: Omit<Row, 'runs' | 'cpu'>, s: Summary, cpuUsPerOp?: number): void {
  const key = `${r.client}|${r.transport}|${r.op}|${r.inFlight}`;
  let cell = cells.get(key);
  if (cell) {
    cell.runs.push(s);
    cell.bad += r.bad;
  } else {
    cell = { ...r, runs: [s], cpu: [] };
    cells.set(key, cell);
  }
  if (cpuUsPerOp !== undefined) cell.cpu.push(cpuUsPerOp);
}

/** Per-metric median over the rounds. */
function med(r: Row): Summary {
  const m = (f: (s: Summary) => number) => median(r.runs.map(f));
  return { opsPerSec: m((s) => s.opsPerSec), p50Ms: m((s) => s.p50Ms), p99Ms: m((s) => s.p99Ms), meanMs: m((s) => s.meanMs), maxMs: m((s) => s.maxMs) };
}

function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

/** SET/GET calls the server counted since the last CONFIG RESETSTAT. */
async function serverCalls(server: BenchServer): Promise<{ SET: number; GET: number }> {
  const info = parseInfo(String(await server.command(['INFO', 'commandstats'])));
  const calls = (name: string) => Number(/calls=(\d+)/.exec(info[`cmdstat_${name}`] ?? '')?.[1] ?? 0);
  return { SET: calls('set'), GET: calls('get') };
}

async function benchClient(spec: ClientSpec, server: BenchServer, tls?: BenchTls): Promise<void> {
  await server.command(['FLUSHALL']);
  await server.command(['CONFIG', 'RESETSTAT']);
  gc();
  const sent = { SET: 0, GET: 0 };
  const transport = tls ? 'tls' : 'tcp';
  const label = TLS_MODE ? `${spec.label} ${transport.toUpperCase()}` : spec.label;
  const client = await spec.open(server.port, tls);
  try {
    const set = (i: number) => client.set(KEYS[i % KEYSPACE]!, VALUE);
    const get = (i: number) => client.get(KEYS[i % KEYSPACE]!);
    const setOk = (r: unknown) => r === 'OK';
    const getOk = (r: unknown) => r === VALUE;
    // Warm-up: fills the whole key space (so every GET hits) and lets the JIT settle.
    await runWorkers(WARMUP_OPS, 50, set, setOk);
    await runWorkers(WARMUP_OPS, 50, get, getOk);
    await runWorkers(Math.min(2000, WARMUP_OPS), 1, get, getOk);
    sent.SET += WARMUP_OPS;
    sent.GET += WARMUP_OPS + Math.min(2000, WARMUP_OPS);
    for (const c of CONCURRENCIES) {
      const ops = c === 1 ? OPS_C1 : OPS;
      for (const [name, fn, ok] of [['SET', set, setOk], ['GET', get, getOk]] as const) {
        if (!OPS_FILTER.has(name.toLowerCase())) continue;
        gc();
        const cpu0 = process.cpuUsage();
        const r = await runWorkers(ops, c, fn, ok);
        const cpu = process.cpuUsage(cpu0);
        sent[name] += ops;
        const s = summarize(r);
        record({ id: spec.id, client: spec.label, transport, baseline: spec.baseline ?? false, op: name, concurrency: c, inFlight: String(c), ops, bad: r.bad }, s, (cpu.user + cpu.system) / ops);
        process.stderr.write(`  ${label.padEnd(34)} ${name} c=${String(c).padEnd(3)} ${fmtInt(s.opsPerSec).padStart(9)} ops/s  p50 ${fmtMs(s.p50Ms)}  p99 ${fmtMs(s.p99Ms)} ms${r.bad ? `  (${r.bad} WRONG REPLIES)` : ''}\n`);
        if (r.bad) failures.push(`${label} ${name} c=${c}: ${r.bad} wrong replies`);
      }
    }
  } finally {
    await client.close();
  }
  // The server must have executed exactly what the client reported done: a client cannot
  // look fast by dropping, merging or caching commands.
  const seen = await serverCalls(server);
  if (seen.SET !== sent.SET || seen.GET !== sent.GET) {
    const msg = `${label}: server counted SET ${seen.SET} / GET ${seen.GET}, client completed SET ${sent.SET} / GET ${sent.GET}`;
    failures.push(msg);
    process.stderr.write(`  MISMATCH ${msg}\n`);
  }
}

/** `redis-benchmark --csv` → one row per test. */
async function benchRedisBenchmark(server: RedisServerHandle, pipeline: number): Promise<void> {
  await server.command(['FLUSHALL']);
  const conns = 50;
  const tests = [...OPS_FILTER].join(',');
  const args = ['-h', server.host, '-p', String(server.port), '-t', tests, '-n', String(OPS), '-c', String(conns), '-P', String(pipeline), '-d', String(VALUE_BYTES), '-q', '--csv'];
  process.stderr.write(`  redis-benchmark ${args.join(' ')}\n`);
  const bin = process.env.REDIS_BENCHMARK ?? 'redis-benchmark';
  const out = PIN && CLIENT_CPUS ? await runTracked('taskset', ['-c', CLIENT_CPUS, bin, ...args]) : await runTracked(bin, args);
  const lines = out.trim().split('\n').map((l) => l.trim()).filter(Boolean);
  const header = lines[0]!.split(',').map((h) => h.replace(/"/g, ''));
  const col = (name: string) => header.indexOf(name);
  for (const line of lines.slice(1)) {
    const cells = line.split(',').map((c) => c.replace(/"/g, ''));
    const op = cells[col('test')]!.toUpperCase();
    if (op !== 'SET' && op !== 'GET') continue;
    const s: Summary = {
      opsPerSec: Number(cells[col('rps')]),
      p50Ms: Number(cells[col('p50_latency_ms')]),
      p99Ms: Number(cells[col('p99_latency_ms')]),
      meanMs: Number(cells[col('avg_latency_ms')]),
      maxMs: Number(cells[col('max_latency_ms')]),
    };
    record({
      id: 'redis-benchmark',
      client: `redis-benchmark (-c ${conns} -P ${pipeline})`,
      transport: 'tcp',
      baseline: false,
      op,
      concurrency: conns,
      inFlight: pipeline === 1 ? String(conns) : `${conns}×${pipeline}`,
      ops: OPS,
      bad: 0,
      note: 'ratio vs ioredis at 50',
    }, s);
  }
}

function printReport(info: ReturnType<typeof systemInfo>, serverVersion: string, startedLoad: string, pinned: string): void {
  const rows = [...cells.values()].map((r) => ({ ...r, s: med(r) }));
  const best = new Map<string, number>();
  for (const r of rows) {
    if (!r.baseline) continue;
    const k = `${r.op}@${r.concurrency}`;
    best.set(k, Math.max(best.get(k) ?? 0, r.s.opsPerSec));
  }
  const bare = bareOpsPerSec(rows);
  const opOrder = (op: string) => (op === 'SET' ? 0 : 1);
  const sorted = [...rows].sort((a, b) => opOrder(a.op) - opOrder(b.op) || a.concurrency - b.concurrency || rows.indexOf(a) - rows.indexOf(b));
  const table = markdownTable(
    ['client', 'op', 'in flight', 'ops/s', 'p50 ms', 'p99 ms', 'ratio vs best ioredis', '× bare'],
    sorted.map((r) => {
      const b = best.get(`${r.op}@${r.concurrency}`);
      const ratio = b ? (r.s.opsPerSec / b).toFixed(2) + (r.note ? '*' : '') : '-';
      return [r.client, r.op, r.inFlight, fmtInt(r.s.opsPerSec), fmtMs(r.s.p50Ms), fmtMs(r.s.p99Ms), ratio, timesBare(r, r.s.opsPerSec, bare)];
    }),
    ['left', 'left', 'right', 'right', 'right', 'right', 'right', 'right'],
  );
  const out: string[] = [];
  out.push('');
  out.push(`## redis-ha-pool standalone benchmark`);
  out.push('');
  out.push(`- Node ${info.node}, ${info.platform}`);
  out.push(`- CPU: ${info.cpu} (${info.cores} logical cores); load average at start ${startedLoad}`);
  out.push(`- Server: redis-server ${serverVersion} on 127.0.0.1 (--save '' --appendonly no), same machine`);
  out.push(`- ${fmtInt(OPS)} ops per cell (concurrency 1: ${fmtInt(OPS_C1)} ops), ${VALUE_BYTES}-byte values, ${fmtInt(KEYSPACE)} keys; warm-up ${fmtInt(WARMUP_OPS)} SET + GET per client`);
  out.push(`- in flight = async workers, each awaiting its command before sending the next; latency = hrtime around each await`);
  out.push(`- ${ROUNDS === 1 ? '1 round' : `${ROUNDS} rounds (client order rotated each round); every figure is the median over the rounds`}; ${pinned}; load average at end ${systemInfo().loadavg}`);
  out.push('');
  out.push(table);
  out.push('');
  out.push(`ratio = ops/s ÷ the faster of ioredis (default, enableAutoPipelining) for the same op and concurrency; × bare = ops/s ÷ the bare pipelined client's (test/bench/bare-client.ts, one socket) for the same op and concurrency: the share of the Node-side ceiling a client keeps.`);
  if (rows.some((r) => r.note)) {
    out.push(`\\* redis-benchmark rows: compared with ioredis and bare at 50 in flight; "50×32" = 50 connections × 32 pipelined commands (1600 in flight), and its latencies are per request as redis-benchmark reports them (C client, no event-loop or promise overhead: the ceiling).`);
  }
  const inProc = sorted.filter((r) => r.cpu.length > 0);
  if (inProc.length) {
    out.push('');
    out.push('Client CPU per op (user + system time of this Node process ÷ ops, µs; includes ~0.2 µs of harness: worker loop + 2 hrtime calls). Less sensitive to other load on the machine than ops/s:');
    out.push('');
    out.push(markdownTable(
      ['client', 'op', 'in flight', 'CPU µs/op'],
      inProc.map((r) => [r.client, r.op, r.inFlight, median(r.cpu).toFixed(2)]),
      ['left', 'left', 'right', 'right'],
    ));
  }
  if (ROUNDS > 1) {
    out.push('');
    out.push('ops/s per round (noise check):');
    out.push('');
    out.push(markdownTable(
      ['client', 'op', 'in flight', ...Array.from({ length: ROUNDS }, (_, i) => `round ${i + 1}`), 'max/min'],
      sorted.map((r) => {
        const xs = r.runs.map((s) => s.opsPerSec);
        return [r.client, r.op, r.inFlight, ...xs.map(fmtInt), (Math.max(...xs) / Math.min(...xs)).toFixed(2)];
      }),
      ['left', 'left', 'right', ...Array.from({ length: ROUNDS + 1 }, () => 'right' as const)],
    ));
  }
  if (TRACE_MODE) out.push(...traceReport(sorted));
  if (failures.length) out.push(`\nFAILURES:\n- ${failures.join('\n- ')}`);
  process.stdout.write(out.join('\n') + '\n');
  const jsonPath = process.env.BENCH_JSON;
  if (jsonPath) {
    writeFileSync(jsonPath, JSON.stringify({ info, serverVersion, ops: OPS, opsC1: OPS_C1, rounds: ROUNDS, rows }, null, 2));
  }
}

/** ops/s of the bare client per transport, op and concurrency (medians over the rounds). */
function bareOpsPerSec(rows: ReadonlyArray<Row>): Map<string, number> {
  const m = new Map<string, number>();
  for (const r of rows) if (r.id === BARE_ID) m.set(`${r.transport}|${r.op}@${r.concurrency}`, med(r).opsPerSec);
  return m;
}

/** `ops/s ÷ bare's` for the row's cell, '-' when bare did not run it. */
function timesBare(r: Row, opsPerSec: number, bare: ReadonlyMap<string, number>): string {
  const b = bare.get(`${r.transport}|${r.op}@${r.concurrency}`);
  return b ? (opsPerSec / b).toFixed(2) + (r.note ? '*' : '') : '-';
}

/** --trace: per op and in-flight count, redis-ha-pool without and with the tracing subscriber. */
function traceReport(rows: Array<Row & { s: Summary }>): string[] {
  const plain = rows.filter((r) => r.client === 'redis-ha-pool (default)');
  const traced = rows.filter((r) => r.client === 'redis-ha-pool (tracing subscriber)');
  const pairs = plain.flatMap((p) => {
    const t = traced.find((x) => x.op === p.op && x.inFlight === p.inFlight);
    return t ? [{ p, t }] : [];
  });
  if (pairs.length === 0) return [];
  return [
    '',
    'Cost of a tracing subscriber (ops/s with ÷ without; CPU µs per op with − without):',
    '',
    markdownTable(
      ['op', 'in flight', 'ops/s without', 'ops/s with', 'with/without', 'CPU µs/op without', 'CPU µs/op with', 'CPU Δ µs/op'],
      pairs.map(({ p, t }) => {
        const [c0, c1] = [median(p.cpu), median(t.cpu)];
        const d = c1 - c0;
        return [p.op, p.inFlight, fmtInt(p.s.opsPerSec), fmtInt(t.s.opsPerSec), (t.s.opsPerSec / p.s.opsPerSec).toFixed(2), c0.toFixed(2), c1.toFixed(2), `${d >= 0 ? '+' : ''}${d.toFixed(2)}`];
      }),
      ['left', 'right', 'right', 'right', 'right', 'right', 'right', 'right'],
    ),
  ];
}

/** --tls report: per client, op and in-flight count, TCP beside TLS (medians over the rounds). */
function printTlsReport(info: ReturnType<typeof systemInfo>, serverVersion: string, startedLoad: string, pinned: string): void {
  const pairs = new Map<string, { tcp?: Row; tls?: Row }>();
  for (const r of cells.values()) {
    const k = `${r.client}|${r.op}|${r.inFlight}`;
    pairs.set(k, { ...pairs.get(k), [r.transport]: r });
  }
  const opOrder = (op: string) => (op === 'SET' ? 0 : 1);
  const rows = [...pairs.values()]
    .filter((p): p is { tcp: Row; tls: Row } => p.tcp !== undefined && p.tls !== undefined)
    .sort((a, b) => opOrder(a.tcp.op) - opOrder(b.tcp.op) || a.tcp.concurrency - b.tcp.concurrency);
  const ratio = (a: number, b: number) => (b > 0 ? (a / b).toFixed(2) : '-');
  const bare = bareOpsPerSec([...cells.values()]);
  const table = markdownTable(
    ['client', 'op', 'in flight', 'ops/s TCP', 'ops/s TLS', 'TLS/TCP', 'CPU µs/op TCP', 'CPU µs/op TLS', 'CPU TLS/TCP', 'CPU Δ µs/op', '× bare TCP', '× bare TLS'],
    rows.map(({ tcp, tls }) => {
      const [o0, o1] = [med(tcp).opsPerSec, med(tls).opsPerSec];
      const [c0, c1] = [median(tcp.cpu), median(tls.cpu)];
      const delta = c1 - c0;
      return [tcp.client, tcp.op, tcp.inFlight, fmtInt(o0), fmtInt(o1), ratio(o1, o0), c0.toFixed(2), c1.toFixed(2), ratio(c1, c0), `${delta >= 0 ? '+' : ''}${delta.toFixed(2)}`, timesBare(tcp, o0, bare), timesBare(tls, o1, bare)];
    }),
    ['left', 'left', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right'],
  );
  const out: string[] = [
    '',
    '## redis-ha-pool standalone benchmark: plain TCP beside TLS',
    '',
    `- Node ${info.node} (${process.versions.openssl ? `OpenSSL ${process.versions.openssl}` : 'OpenSSL ?'}), ${info.platform}`,
    `- CPU: ${info.cpu} (${info.cores} logical cores); load average at start ${startedLoad}`,
    `- Server: redis-server ${serverVersion} on 127.0.0.1, same machine; a fresh one per transport and round (test/support/topology.ts startStandalone: TLS-only with \`port 0\` + \`tls-port\`, or plain, otherwise the same config); clients verify the server certificate (ECDSA P-256, test CA)`,
    `- ${fmtInt(OPS)} ops per cell, ${VALUE_BYTES}-byte values, ${fmtInt(KEYSPACE)} keys (same key sequence for every client); warm-up ${fmtInt(WARMUP_OPS)} SET + GET per client and transport; every reply checked, server commandstats must match`,
    `- in flight = async workers, each awaiting its command before sending the next`,
    `- ${ROUNDS === 1 ? '1 round' : `${ROUNDS} rounds (transport and client order rotated each round); every figure is the median over the rounds`}; ${pinned}; load average at end ${systemInfo().loadavg}`,
    '',
    table,
    '',
    'TLS/TCP = ops/s over TLS ÷ ops/s over plain TCP (higher is better; 1.00 = TLS costs nothing). CPU µs/op = user + system time of this Node process ÷ ops (TLS encryption runs on the Node main thread, so it shows here), CPU TLS/TCP its ratio (lower is better) and CPU Δ what TLS adds per op in absolute terms (a fixed cost per op weighs more, relatively, on a client that spends less per op). × bare = ops/s ÷ the bare pipelined client\'s on the same transport, op and concurrency.',
  ];
  if (ROUNDS > 1) {
    out.push('', 'ops/s per round (noise check):', '', markdownTable(
      ['client', 'transport', 'op', 'in flight', ...Array.from({ length: ROUNDS }, (_, i) => `round ${i + 1}`), 'max/min'],
      rows.flatMap(({ tcp, tls }) => [tcp, tls]).map((r) => {
        const xs = r.runs.map((s) => s.opsPerSec);
        return [r.client, r.transport.toUpperCase(), r.op, r.inFlight, ...xs.map(fmtInt), (Math.max(...xs) / Math.min(...xs)).toFixed(2)];
      }),
      ['left', 'left', 'left', 'right', ...Array.from({ length: ROUNDS + 1 }, () => 'right' as const)],
    ));
  }
  if (failures.length) out.push(`\nFAILURES:\n- ${failures.join('\n- ')}`);
  process.stdout.write(out.join('\n') + '\n');
  const jsonPath = process.env.BENCH_JSON;
  if (jsonPath) writeFileSync(jsonPath, JSON.stringify({ info, serverVersion, ops: OPS, rounds: ROUNDS, rows: [...cells.values()].map((r) => ({ ...r, s: med(r) })) }, null, 2));
}

/** --tls: each round, a fresh plain server and a fresh TLS-only one (order alternating), every client on each. */
async function mainTls(info: ReturnType<typeof systemInfo>, startedLoad: string, pinned: string, serverCpus: string | undefined): Promise<void> {
  // The test harness (loaded only here, so the default bench does not depend on it).
  const { makeTestCerts, startStandalone } = await import('../support/topology.js');
  const { sendCommand } = await import('../support/mini-client.js');
  const certs = await makeTestCerts();
  const specs = selectedClients();
  let version = '?';
  for (let round = 0; round < ROUNDS; round++) {
    for (const transport of round % 2 ? (['tls', 'tcp'] as const) : (['tcp', 'tls'] as const)) {
      const topo = await startStandalone(transport === 'tls' ? { tls: { certs } } : {});
      try {
        const pid = topo.server.pid;
        if (serverCpus && pid !== undefined && spawnSync('taskset', ['-a', '-p', '-c', serverCpus, String(pid)], { stdio: 'ignore' }).status !== 0) {
          throw new Error(`BENCH_PIN=1: taskset failed for redis-server pid ${pid}.`);
        }
        // The harness's mini-client goes over TLS by itself for a TLS topology's nodes.
        const server: BenchServer = { host: topo.server.host, port: topo.server.port, command: (a) => sendCommand(topo.address, a, { timeoutMs: 10_000 }) };
        version = parseInfo(String(await server.command(['INFO', 'server']))).redis_version ?? '?';
        process.stderr.write(`${ROUNDS > 1 ? `round ${round + 1}/${ROUNDS}: ` : ''}${transport.toUpperCase()} redis-server ${version} pid ${pid} on ${topo.server.host}:${topo.server.port}\n`);
        const order = specs.map((_, i) => specs[(i + round) % specs.length]!);
        for (const spec of order) {
          try {
            await benchClient(spec, server, transport === 'tls' ? { ca: certs.ca.cert } : undefined);
          } catch (err) {
            failures.push(`${spec.label} ${transport.toUpperCase()} (round ${round + 1}): ${(err as Error).stack ?? err}`);
            process.stderr.write(`  ${spec.label} ${transport.toUpperCase()} FAILED: ${(err as Error).message}\n`);
          }
        }
      } finally {
        await topo.stop();
      }
    }
  }
  printTlsReport(info, version, startedLoad, pinned);
}

async function main(): Promise<void> {
  installCleanupHandlers();
  const info = systemInfo();
  const startedLoad = info.loadavg;
  let pinned = 'no CPU pinning';
  let serverCpus: string | undefined;
  if (PIN) {
    if (info.cores < 2) throw new Error('BENCH_PIN=1 needs at least 2 CPUs.');
    serverCpus = String(info.cores - 1);
    CLIENT_CPUS = `0-${info.cores - 2}`;
    if (!pinSelf(CLIENT_CPUS)) throw new Error('BENCH_PIN=1: taskset failed.');
    pinned = `pinned: redis-server on CPU ${serverCpus}, Node and redis-benchmark on CPU ${CLIENT_CPUS}`;
  }
  if (TLS_MODE) {
    process.stderr.write(`--tls; node ${info.node}; ${info.cpu}; ${pinned}\n`);
    await mainTls(info, startedLoad, pinned, serverCpus);
    if (failures.length) process.exitCode = 1;
    return;
  }
  const server = await startRedisServer({ cpus: serverCpus });
  process.stderr.write(`redis-server ${server.version} pid ${server.pid} on 127.0.0.1:${server.port}; node ${info.node}; ${info.cpu}; ${pinned}\n`);
  try {
    const specs = selectedClients();
    for (let round = 0; round < ROUNDS; round++) {
      if (ROUNDS > 1) process.stderr.write(`round ${round + 1}/${ROUNDS}\n`);
      const order = specs.map((_, i) => specs[(i + round) % specs.length]!);
      for (const spec of order) {
        try {
          await benchClient(spec, server);
        } catch (err) {
          failures.push(`${spec.label} (round ${round + 1}): ${(err as Error).stack ?? err}`);
          process.stderr.write(`  ${spec.label} FAILED: ${(err as Error).message}\n`);
        }
      }
      if (!ONLY || ONLY.has('redis-benchmark')) {
        for (const p of [32, 1]) {
          try {
            await benchRedisBenchmark(server, p);
          } catch (err) {
            failures.push(`redis-benchmark -P ${p} (round ${round + 1}): ${(err as Error).message}`);
          }
        }
      }
    }
    printReport(info, server.version, startedLoad, pinned);
  } finally {
    await server.stop();
  }
  if (failures.length) process.exitCode = 1;
}

main()
  .catch((err) => {
    process.stderr.write(`bench failed: ${(err as Error).stack ?? err}\n`);
    process.exitCode = 1;
  })
  .finally(() => {
    // Everything is closed by now; if some handle still keeps the loop alive, say which and exit anyway.
    setTimeout(() => {
      process.stderr.write(`[bench] still running 3 s after the end; open handles: ${process.getActiveResourcesInfo().join(', ')}. Exiting.\n`);
      process.exit(process.exitCode ?? 0);
    }, 3000).unref();
  });

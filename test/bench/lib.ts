/**
 * Shared helpers for the benchmarks (standalone now; cluster and sentinel benches later):
 *
 * - `startRedisServer()`: a throw-away redis-server on a free 127.0.0.1 port in its own temp
 *   dir, stopped by PID. Every child PID is tracked and SIGKILLed from a process `exit`
 *   handler, so a crashing bench never leaves a server behind (and with `setpriv` available
 *   the kernel kills it even if this process is SIGKILLed).
 * - `rawCommand()`: a one-shot RESP client that depends on nothing in `src/`.
 * - `runWorkers()`: N async workers, each awaiting its command before sending the next, with
 *   per-op latency measured by `process.hrtime.bigint()` around each await.
 * - `percentile()`, `summarize()`, `markdownTable()`, `systemInfo()`.
 * - Cluster clients behind one interface (`haClusterClient()`, `ioredisClusterClient()`,
 *   `nodeRedisClusterClient()`, `bareClusterClient()`) and `clusterFlushall()` /
 *   `clusterDbsize()`, for cluster.ts and cluster-scale.ts.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Cluster } from 'ioredis';
import { createCluster } from 'redis';
import { ClusterPool } from '../../src/index.js';
import { BareCluster } from './bare-client.js';
import type { ClusterTopology } from '../support/topology.js';

// ---------------------------------------------------------------------------------------------
// Child process tracking and cleanup
// ---------------------------------------------------------------------------------------------

const tracked = new Map<number, ChildProcess>();
const tempDirs = new Set<string>();
let handlersInstalled = false;

/** SIGKILLs every tracked child and removes temp dirs. Synchronous: safe inside an `exit` handler. */
export function killAllChildren(): void {
  for (const [pid] of tracked) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
  tracked.clear();
  for (const dir of tempDirs) {
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch {
      /* best effort */
    }
  }
  tempDirs.clear();
}

/**
 * Installs `exit`, SIGINT, SIGTERM, uncaughtException and unhandledRejection handlers that
 * kill every tracked child. Idempotent; called by the helpers that spawn.
 */
export function installCleanupHandlers(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  process.on('exit', killAllChildren);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(sig, () => {
      process.stderr.write(`\n[bench] ${sig}: killing ${tracked.size} child process(es)\n`);
      killAllChildren();
      process.exit(128 + (sig === 'SIGINT' ? 2 : sig === 'SIGTERM' ? 15 : 1));
    });
  }
  process.on('uncaughtException', (err) => {
    process.stderr.write(`[bench] uncaught exception: ${err?.stack ?? err}\n`);
    killAllChildren();
    process.exit(1);
  });
  process.on('unhandledRejection', (err) => {
    process.stderr.write(`[bench] unhandled rejection: ${(err as Error)?.stack ?? err}\n`);
    killAllChildren();
    process.exit(1);
  });
}

/** Tracks a child until it exits. */
export function track(child: ChildProcess): void {
  installCleanupHandlers();
  if (child.pid === undefined) return;
  const pid = child.pid;
  tracked.set(pid, child);
  child.once('exit', () => tracked.delete(pid));
}

let setprivPath: string | undefined | null = null;
/** `setpriv` (util-linux) if present: `--pdeathsig KILL` makes the kernel kill the child if we die. */
function setpriv(): string | undefined {
  if (setprivPath !== null) return setprivPath;
  setprivPath = undefined;
  if (process.platform !== 'linux') return undefined;
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const p = path.join(dir, 'setpriv');
    if (dir && existsSync(p)) {
      // Old util-linux versions lack --pdeathsig: check once.
      const r = spawnSync(p, ['--pdeathsig', 'KILL', '--', 'true']);
      if (r.status === 0) setprivPath = p;
      break;
    }
  }
  return setprivPath;
}

/** Spawns a tracked child; with `setpriv` the child dies with this process even on SIGKILL. */
export function spawnTracked(cmd: string, args: readonly string[], opts: { cwd?: string; stdio?: 'ignore' | 'pipe' } = {}): ChildProcess {
  const sp = setpriv();
  const child = sp
    ? spawn(sp, ['--pdeathsig', 'KILL', '--', cmd, ...args], { cwd: opts.cwd, stdio: ['ignore', opts.stdio ?? 'pipe', opts.stdio ?? 'pipe'] })
    : spawn(cmd, args, { cwd: opts.cwd, stdio: ['ignore', opts.stdio ?? 'pipe', opts.stdio ?? 'pipe'] });
  track(child);
  return child;
}

/** Runs a tracked child to completion; rejects on a non-zero exit. */
export function runTracked(cmd: string, args: readonly string[], timeoutMs = 600_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawnTracked(cmd, args);
    let out = '';
    let err = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${cmd} timed out after ${timeoutMs} ms`));
    }, timeoutMs);
    child.once('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(out);
      else reject(new Error(`${cmd} ${args.join(' ')} exited with ${code ?? signal}: ${err.trim() || out.trim()}`));
    });
  });
}

// ---------------------------------------------------------------------------------------------
// Ports, raw RESP, redis-server
// ---------------------------------------------------------------------------------------------

/** A port on 127.0.0.1 that was free a moment ago (bind to port 0, close). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen({ host: '127.0.0.1', port: 0, exclusive: true }, () => {
      const a = srv.address();
      const port = typeof a === 'object' && a ? a.port : 0;
      srv.close(() => (port ? resolve(port) : reject(new Error('freePort: no port'))));
    });
  });
}

type RawReply = string | number | null | RawReply[] | Error;

/** Parses one RESP2 value at `pos`; returns undefined when the buffer is incomplete. */
function parseRaw(buf: Buffer, pos: number): { value: RawReply; next: number } | undefined {
  const cr = buf.indexOf('\r\n', pos);
  if (cr === -1) return undefined;
  const type = String.fromCharCode(buf[pos]!);
  const line = buf.toString('utf8', pos + 1, cr);
  const next = cr + 2;
  switch (type) {
    case '+': return { value: line, next };
    case '-': return { value: new Error(line), next };
    case ':': return { value: Number(line), next };
    case '$': {
      const n = Number(line);
      if (n < 0) return { value: null, next };
      if (buf.length < next + n + 2) return undefined;
      return { value: buf.toString('utf8', next, next + n), next: next + n + 2 };
    }
    case '*': {
      const n = Number(line);
      if (n < 0) return { value: null, next };
      const items: RawReply[] = [];
      let p = next;
      for (let i = 0; i < n; i++) {
        const r = parseRaw(buf, p);
        if (!r) return undefined;
        items.push(r.value);
        p = r.next;
      }
      return { value: items, next: p };
    }
    default:
      throw new Error(`rawCommand: unexpected RESP type ${JSON.stringify(type)}`);
  }
}

/**
 * Sends one command on a fresh socket and returns its reply (RESP2; error replies reject).
 * Independent of `src/` so harness plumbing never depends on the client under test.
 */
export function rawCommand(port: number, args: readonly (string | number)[], host = '127.0.0.1', timeoutMs = 5000): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const sock = net.connect({ host, port });
    let buf = Buffer.alloc(0);
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error(`rawCommand ${args[0]} to ${host}:${port} timed out`));
    }, timeoutMs);
    const done = (fn: () => void) => {
      clearTimeout(timer);
      sock.destroy();
      fn();
    };
    sock.once('error', (e) => done(() => reject(e)));
    sock.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      let r;
      try {
        r = parseRaw(buf, 0);
      } catch (e) {
        done(() => reject(e));
        return;
      }
      if (!r) return;
      const v = r.value;
      done(() => (v instanceof Error ? reject(v) : resolve(v)));
    });
    let msg = `*${args.length}\r\n`;
    for (const a of args) {
      const s = String(a);
      msg += `$${Buffer.byteLength(s)}\r\n${s}\r\n`;
    }
    sock.write(msg);
  });
}

/** Parses `INFO` text into a field map. */
export function parseInfo(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\r\n')) {
    const i = line.indexOf(':');
    if (i > 0 && !line.startsWith('#')) out[line.slice(0, i)] = line.slice(i + 1);
  }
  return out;
}

export interface RedisServerHandle {
  host: string;
  port: number;
  pid: number;
  dir: string;
  /** `redis_version` from INFO server. */
  version: string;
  /** Sends one command with {@link rawCommand}. */
  command(args: readonly (string | number)[]): Promise<RawReply>;
  /** SIGTERM, then SIGKILL after `graceMs`; removes the temp dir. Idempotent. */
  stop(graceMs?: number): Promise<void>;
}

export interface StartRedisOptions {
  /** Binary; default `REDIS_SERVER` env or `redis-server` on PATH. */
  binary?: string;
  /** Extra `--name value` arguments (e.g. `['--cluster-enabled', 'yes']`). */
  args?: readonly string[];
  /** Fixed port; default a free one (retried if someone takes it first). */
  port?: number;
  /** How long to wait for PING. Default 10 s. */
  readyTimeoutMs?: number;
  /** Pin the server to these CPUs (`taskset -c` list, e.g. `'1'`); Linux with taskset only. */
  cpus?: string;
}

/**
 * Starts a redis-server on 127.0.0.1 with persistence off (`--save '' --appendonly no`),
 * in a fresh temp dir, and waits until it answers PING.
 */
export async function startRedisServer(o: StartRedisOptions = {}): Promise<RedisServerHandle> {
  installCleanupHandlers();
  const binary = o.binary ?? process.env.REDIS_SERVER ?? 'redis-server';
  let lastErr: Error | undefined;
  for (let attempt = 0; attempt < (o.port ? 1 : 5); attempt++) {
    const port = o.port ?? (await freePort());
    const dir = mkdtempSync(path.join(os.tmpdir(), 'redis-bench-'));
    tempDirs.add(dir);
    const logfile = path.join(dir, 'redis.log');
    const args = [
      '--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--logfile', logfile,
      '--save', '', '--appendonly', 'no', '--daemonize', 'no', '--protected-mode', 'yes',
      ...(o.args ?? []),
    ];
    const child = o.cpus
      ? spawnTracked('taskset', ['-c', o.cpus, binary, ...args], { cwd: dir, stdio: 'ignore' })
      : spawnTracked(binary, args, { cwd: dir, stdio: 'ignore' });
    let exited = false;
    const exitP = new Promise<void>((r) => child.once('exit', () => { exited = true; r(); }));
    child.once('error', (e) => { lastErr = e; });
    const deadline = Date.now() + (o.readyTimeoutMs ?? 10_000);
    let version = '';
    while (!exited && Date.now() < deadline) {
      try {
        if ((await rawCommand(port, ['PING'], '127.0.0.1', 1000)) === 'PONG') {
          version = parseInfo(String(await rawCommand(port, ['INFO', 'server']))).redis_version ?? '?';
          break;
        }
      } catch (e) {
        lastErr = e as Error;
      }
      await new Promise((r) => setTimeout(r, 25));
    }
    const stopOnce = async (graceMs = 5000) => {
      if (!exited && child.pid !== undefined) {
        try { process.kill(child.pid, 'SIGTERM'); } catch { /* gone */ }
        const t = setTimeout(() => { try { process.kill(child.pid!, 'SIGKILL'); } catch { /* gone */ } }, graceMs);
        await exitP;
        clearTimeout(t);
      }
      rmSync(dir, { recursive: true, force: true });
      tempDirs.delete(dir);
    };
    if (version) {
      let stopping: Promise<void> | undefined;
      return {
        host: '127.0.0.1', port, pid: child.pid!, dir, version,
        command: (a) => rawCommand(port, a),
        stop: (g) => (stopping ??= stopOnce(g)),
      };
    }
    const log = existsSync(logfile) ? readFileSync(logfile, 'utf8').trim().split('\n').slice(-5).join('\n') : '';
    await stopOnce(500);
    lastErr = new Error(`redis-server on port ${port} did not come up${exited ? ' (it exited)' : ''}: ${lastErr?.message ?? ''}\n${log}`);
    if (!/Address already in use/.test(log)) break;
  }
  throw lastErr ?? new Error('redis-server did not start');
}

// ---------------------------------------------------------------------------------------------
// Measurement
// ---------------------------------------------------------------------------------------------

export interface RunResult {
  ops: number;
  concurrency: number;
  elapsedNs: number;
  /** Per-op latency in ns, in completion order. */
  latenciesNs: Float64Array;
  /** Ops whose result `check` rejected. */
  bad: number;
}

/**
 * Runs `ops` operations with `concurrency` async workers; each worker awaits its operation
 * before starting the next. `op(i)` gets the op index. Latency = hrtime around each await.
 * `check(result)` (optional) counts wrong results, so a broken client cannot look fast.
 */
export async function runWorkers<T>(
  ops: number,
  concurrency: number,
  op: (i: number) => Promise<T>,
  check?: (r: T) => boolean,
): Promise<RunResult> {
  const lat = new Float64Array(ops);
  let next = 0;
  let done = 0;
  let bad = 0;
  const hr = process.hrtime.bigint;
  const worker = async () => {
    for (;;) {
      const i = next++;
      if (i >= ops) return;
      const t0 = hr();
      const r = await op(i);
      lat[done++] = Number(hr() - t0);
      if (check !== undefined && !check(r)) bad++;
    }
  };
  const start = hr();
  const workers: Promise<void>[] = [];
  for (let w = 0; w < Math.min(concurrency, ops); w++) workers.push(worker());
  await Promise.all(workers);
  const elapsedNs = Number(hr() - start);
  return { ops, concurrency, elapsedNs, latenciesNs: lat, bad };
}

/** Nearest-rank percentile (p in 0..100) of an ascending-sorted array. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  const n = sorted.length;
  if (n === 0) return NaN;
  const rank = Math.ceil((p / 100) * n);
  return sorted[Math.min(n - 1, Math.max(0, rank - 1))]!;
}

export interface Summary {
  opsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  meanMs: number;
  maxMs: number;
}

/** Throughput and latency percentiles (ms) of a run. */
export function summarize(r: RunResult): Summary {
  const sorted = Float64Array.from(r.latenciesNs).sort();
  let sum = 0;
  for (let i = 0; i < sorted.length; i++) sum += sorted[i]!;
  return {
    opsPerSec: r.ops / (r.elapsedNs / 1e9),
    p50Ms: percentile(sorted, 50) / 1e6,
    p99Ms: percentile(sorted, 99) / 1e6,
    meanMs: sum / sorted.length / 1e6,
    maxMs: sorted[sorted.length - 1]! / 1e6,
  };
}

// ---------------------------------------------------------------------------------------------
// Output
// ---------------------------------------------------------------------------------------------

export type Align = 'left' | 'right';

/** A markdown table with padded columns (readable raw and rendered). */
export function markdownTable(headers: readonly string[], rows: readonly (readonly string[])[], align: readonly Align[] = []): string {
  const widths = headers.map((h, c) => Math.max(h.length, 3, ...rows.map((r) => (r[c] ?? '').length)));
  const pad = (s: string, c: number) => (align[c] === 'right' ? s.padStart(widths[c]!) : s.padEnd(widths[c]!));
  const line = (cells: readonly string[]) => '| ' + cells.map((s, c) => pad(s, c)).join(' | ') + ' |';
  const sep = '| ' + widths.map((w, c) => (align[c] === 'right' ? '-'.repeat(w - 1) + ':' : '-'.repeat(w))).join(' | ') + ' |';
  return [line(headers), sep, ...rows.map((r) => line(headers.map((_, c) => r[c] ?? '')))].join('\n');
}

/** `123456.7` → `123,457`. */
export function fmtInt(n: number): string {
  return Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '-';
}

/** Milliseconds with 3 decimals. */
export function fmtMs(n: number): string {
  return Number.isFinite(n) ? n.toFixed(3) : '-';
}

export interface SystemInfo {
  node: string;
  cpu: string;
  cores: number;
  platform: string;
  loadavg: string;
}

export function systemInfo(): SystemInfo {
  const cpus = os.cpus();
  return {
    node: process.version,
    cpu: cpus[0]?.model.trim() ?? 'unknown',
    cores: cpus.length,
    platform: `${os.type()} ${os.release()} ${os.arch()}`,
    loadavg: os.loadavg().map((l) => l.toFixed(2)).join(' '),
  };
}

/**
 * Pins every thread of this process to `cpus` (a `taskset -c` list). Returns false when
 * taskset is unavailable or fails. Threads created later inherit the mask.
 */
export function pinSelf(cpus: string): boolean {
  if (process.platform !== 'linux') return false;
  const r = spawnSync('taskset', ['-a', '-p', '-c', cpus, String(process.pid)], { stdio: 'ignore' });
  return r.status === 0;
}

/** Median of numbers (mean of the two middle ones for an even count). */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const n = s.length;
  if (n === 0) return NaN;
  return n % 2 ? s[(n - 1) / 2]! : (s[n / 2 - 1]! + s[n / 2]!) / 2;
}

/** Reads an integer env var (underscores allowed: `BENCH_OPS=20_000`). */
export function envInt(name: string, def: number): number {
  const v = process.env[name];
  if (v === undefined || v === '') return def;
  const n = Number(v.replace(/_/g, ''));
  if (!Number.isFinite(n) || n <= 0) throw new TypeError(`${name} must be a positive number (got ${JSON.stringify(v)}).`);
  return Math.floor(n);
}

/** Reads a comma-separated env var into a set of lower-case names (undefined = all). */
export function envList(name: string): Set<string> | undefined {
  const v = process.env[name];
  if (!v) return undefined;
  return new Set(v.split(',').map((s) => s.trim().toLowerCase()).filter(Boolean));
}

// ---------------------------------------------------------------------------------------------
// Cluster clients (cluster.ts, cluster-scale.ts)
// ---------------------------------------------------------------------------------------------

/** One cluster client under test, behind the same few calls. */
export interface ClusterBenchClient {
  name: string;
  set(key: string, value: string): Promise<unknown>;
  get(key: string): Promise<unknown>;
  /** Runs one pipeline of SETs; resolves to per-command outcomes, or rejects when the client refuses it. */
  pipeline(keys: readonly string[], value: string): Promise<Array<unknown>>;
  close(): Promise<void>;
}

/** redis-ha-pool `ClusterPool.create(seeds)` with default options. */
export async function haClusterClient(seeds: string[]): Promise<ClusterBenchClient> {
  const pool = await ClusterPool.create(seeds);
  return {
    name: 'redis-ha-pool ClusterPool',
    set: (k, v) => pool.set(k, v),
    get: (k) => pool.get(k),
    async pipeline(keys, value) {
      const p = pool.pipeline();
      for (const k of keys) p.set(k, value);
      return (await p.exec())!;
    },
    close: () => pool.close(),
  };
}

/** ioredis `Cluster`, resolved on 'ready'. */
export async function ioredisClusterClient(seeds: string[], autoPipelining: boolean): Promise<ClusterBenchClient> {
  const c = new Cluster(seeds.map((s) => ({ host: s.split(':')[0]!, port: Number(s.split(':')[1]) })), { enableAutoPipelining: autoPipelining });
  await new Promise<void>((resolve, reject) => {
    c.once('ready', () => resolve());
    c.once('error', reject);
  });
  return {
    name: `ioredis Cluster${autoPipelining ? ' (enableAutoPipelining)' : ''}`,
    set: (k, v) => c.set(k, v),
    get: (k) => c.get(k),
    async pipeline(keys, value) {
      const p = c.pipeline();
      for (const k of keys) p.set(k, value);
      const res = await p.exec();
      return (res ?? []).map(([err, v]) => err ?? v);
    },
    close: async () => {
      await c.quit().catch(() => c.disconnect());
    },
  };
}

/** node-redis `createCluster`, connected. */
export async function nodeRedisClusterClient(seeds: string[]): Promise<ClusterBenchClient> {
  const c = createCluster({ rootNodes: seeds.map((s) => ({ url: `redis://${s}` })) });
  c.on('error', () => {});
  await c.connect();
  return {
    name: 'node-redis createCluster',
    set: (k, v) => c.set(k, v),
    get: (k) => c.get(k),
    async pipeline(keys, value) {
      const m = c.multi();
      for (const k of keys) m.set(k, value);
      return (await m.execAsPipeline()) as unknown[];
    },
    close: async () => {
      await c.close().catch(() => c.destroy());
    },
  };
}

/**
 * The yardstick (bare-client.ts): one bare socket per master from the first seed's CLUSTER SLOTS.
 * Its "pipeline" is every SET sent in one tick, so each master's share goes out in one write.
 */
export async function bareClusterClient(seeds: string[]): Promise<ClusterBenchClient> {
  const [host, port] = seeds[0]!.split(':');
  const c = await BareCluster.connect({ host: host!, port: Number(port) });
  return {
    name: 'bare pipelined client (1 socket per master)',
    set: (k, v) => c.send(['SET', k, v]),
    get: (k) => c.send(['GET', k]),
    pipeline: (keys, value) => Promise.all(keys.map((k) => c.send(['SET', k, value]).catch((e: unknown) => e))),
    close: () => c.close(),
  };
}

/** Keys on every master (DBSIZE summed). */
export async function clusterDbsize(topo: ClusterTopology): Promise<number> {
  let n = 0;
  for (const m of await topo.masters()) n += Number(await m.cli('DBSIZE'));
  return n;
}

/** FLUSHALL on every master (replicas follow). */
export async function clusterFlushall(topo: ClusterTopology): Promise<void> {
  for (const m of await topo.masters()) await m.cli('FLUSHALL');
}

/**
 * Local Redis topologies without Docker, from the same process-backed harness the tests use
 * (test/support/topology.ts): real redis-server / redis-sentinel processes on free 127.0.0.1
 * ports, in a temp dir.
 *
 *   npm run topology -- up standalone|sentinel|cluster [--masters N] [--replicas N] [--sentinels N]
 *   npm run topology -- status
 *   npm run topology -- down
 *
 * `up` starts a detached keeper process that owns the servers (they die with it: the harness
 * starts them with a parent-death signal), waits until the topology is ready, prints the
 * addresses and the `create()` line to paste, and returns. The keeper writes a state file
 * (`<tmpdir>/redis-ha-pool-topology.json`, or REDIS_HA_POOL_TOPOLOGY_STATE) with every PID
 * and dir; `down` stops the keeper by PID, which stops the servers by PID and removes their
 * dir, and kills by PID any server that outlived it. One topology at a time.
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startCluster, startSentinel, startStandalone, type ServerHandle } from '../test/support/topology.js';

type Kind = 'standalone' | 'sentinel' | 'cluster';
const KINDS: readonly Kind[] = ['standalone', 'sentinel', 'cluster'];

interface NodeState {
  role: 'server' | 'master' | 'replica' | 'sentinel';
  host: string;
  port: number;
  pid: number | undefined;
  dir: string;
}

interface State {
  kind: Kind;
  keeperPid: number;
  startedAt: string;
  /** The harness's temp dir (parent of every node's dir). */
  dir: string;
  log: string;
  nodes: NodeState[];
  /** The import line and the `create()` line to paste. */
  code: string[];
  /** Sentinel only. */
  masterName?: string;
}

const STATE_FILE = process.env.REDIS_HA_POOL_TOPOLOGY_STATE || path.join(os.tmpdir(), 'redis-ha-pool-topology.json');
const LOG_FILE = STATE_FILE.replace(/\.json$/, '') + '.log';
const SELF = fileURLToPath(import.meta.url);
/** How long `up` waits for the keeper to report ready (a cluster takes a few seconds). */
const UP_TIMEOUT_MS = Number(process.env.REDIS_HA_POOL_TOPOLOGY_UP_TIMEOUT ?? 120_000);
/** How long `down` waits for the keeper and the servers to exit before killing what is left. */
const DOWN_TIMEOUT_MS = 15_000;

function usage(): never {
  process.stderr.write(
    'usage: npm run topology -- up standalone|sentinel|cluster [--masters N] [--replicas N] [--sentinels N]\n' +
      '       npm run topology -- status\n' +
      '       npm run topology -- down\n',
  );
  process.exit(2);
}

function isAlive(pid: number | undefined): boolean {
  if (pid === undefined) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function readState(): State | undefined {
  try {
    return JSON.parse(readFileSync(STATE_FILE, 'utf8')) as State;
  } catch {
    return undefined;
  }
}

const addr = (n: { host: string; port: number }) => `${n.host}:${n.port}`;

function parseFlags(args: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (let i = 0; i < args.length; i++) {
    const m = /^--(masters|replicas|sentinels)$/.exec(args[i]!);
    const v = Number(args[i + 1]);
    if (!m || !Number.isInteger(v) || v < 0) {
      process.stderr.write(`topology: unknown or invalid argument '${args[i]}${args[i + 1] !== undefined ? ` ${args[i + 1]}` : ''}' (expected --masters N, --replicas N or --sentinels N)\n`);
      usage();
    }
    out[m[1]!] = v;
    i++;
  }
  return out;
}

// ------------------------------------------------------------------ keeper (detached)

async function keep(kind: Kind, flags: Record<string, number>): Promise<void> {
  const node = (role: NodeState['role'], h: ServerHandle): NodeState => ({ role, host: h.host, port: h.port, pid: h.pid, dir: h.dir });
  let stop: () => Promise<void>;
  let nodes: NodeState[];
  let code: string[];
  if (kind === 'standalone') {
    const t = await startStandalone();
    stop = () => t.stop();
    nodes = [node('server', t.server)];
    code = [`import { StandalonePool } from 'redis-ha-pool';`, `const pool = await StandalonePool.create('${t.url}');`];
  } else if (kind === 'sentinel') {
    const t = await startSentinel({ replicas: flags.replicas, sentinels: flags.sentinels });
    stop = () => t.stop();
    nodes = [node('master', t.master), ...t.replicas.map((r) => node('replica', r)), ...t.sentinels.map((s) => node('sentinel', s))];
    code = [
      `import { SentinelPool } from 'redis-ha-pool';`,
      `const pool = await SentinelPool.create('${t.masterName}', [${t.sentinelAddresses.map((a) => `'${addr(a)}'`).join(', ')}]);`,
    ];
  } else {
    const t = await startCluster({ masters: flags.masters, replicasPerMaster: flags.replicas });
    stop = () => t.stop();
    const masters = new Set((await t.masters()).map((m) => addr(m)));
    nodes = t.nodes.map((n) => node(masters.has(addr(n)) ? 'master' : 'replica', n));
    code = [`import { ClusterPool } from 'redis-ha-pool';`, `const pool = await ClusterPool.create([${t.seeds.map((a) => `'${addr(a)}'`).join(', ')}]);`];
  }
  const state: State = {
    kind,
    keeperPid: process.pid,
    startedAt: new Date().toISOString(),
    dir: path.dirname(nodes[0]!.dir),
    log: LOG_FILE,
    nodes,
    code,
    ...(kind === 'sentinel' ? { masterName: 'mymaster' } : {}),
  };
  writeFileSync(STATE_FILE, JSON.stringify(state, null, 2) + '\n');

  let stopping = false;
  const shutdown = async (why: string) => {
    if (stopping) return;
    stopping = true;
    process.stdout.write(`keeper: ${why}; stopping ${nodes.length} processes\n`);
    await stop().catch((err) => process.stderr.write(`keeper: stop failed: ${(err as Error).message}\n`));
    if (readState()?.keeperPid === process.pid) rmSync(STATE_FILE, { force: true });
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGHUP', () => void shutdown('SIGHUP'));
  // The servers' handles are unref'd (a test must not hang on them); this keeps the keeper up,
  // and stops everything when every server is gone (killed by hand): no half topology lingers.
  setInterval(() => {
    if (nodes.every((n) => !isAlive(n.pid))) void shutdown('every server has exited');
  }, 1000);
  process.send?.({ ready: true });
  process.disconnect?.();
}

// ------------------------------------------------------------------ commands

function printState(s: State, heading: string): void {
  const out: string[] = [heading, ''];
  for (const n of s.nodes) {
    const alive = isAlive(n.pid);
    out.push(`  ${n.role.padEnd(8)} ${addr(n).padEnd(16)} pid ${String(n.pid ?? '?').padEnd(8)} ${alive ? 'running' : 'NOT RUNNING'}`);
  }
  out.push('', 'Paste into your code:', '', ...s.code.map((l) => `  ${l}`), '');
  const data = s.nodes.find((n) => n.role === 'master' || n.role === 'server')!;
  if (s.kind === 'sentinel') {
    const sentinel = s.nodes.find((n) => n.role === 'sentinel')!;
    out.push(`Try a failover:  redis-cli -p ${sentinel.port} SENTINEL FAILOVER ${s.masterName ?? 'mymaster'}`);
  } else if (s.kind === 'cluster') {
    out.push(`Inspect:         redis-cli -c -p ${data.port} CLUSTER SHARDS`);
  } else {
    out.push(`Inspect:         redis-cli -p ${data.port} INFO server`);
  }
  out.push(`Logs and data:   ${s.dir}`, `State file:      ${STATE_FILE}`, 'Stop:            npm run topology -- down', '');
  process.stdout.write(out.join('\n'));
}

async function up(kind: Kind, flags: Record<string, number>): Promise<void> {
  const existing = readState();
  if (existing && isAlive(existing.keeperPid)) {
    process.stderr.write(`A ${existing.kind} topology is already running (keeper pid ${existing.keeperPid}); run 'npm run topology -- down' first.\n`);
    process.exit(1);
  }
  if (existing) rmSync(STATE_FILE, { force: true }); // left by a keeper that was killed: its servers died with it
  const log = openSync(LOG_FILE, 'w');
  // The keeper runs this file again under the same loader (tsx's flags are in execArgv), in its
  // own session (detached), so the terminal's Ctrl-C and closing it do not reach it.
  const child = spawn(process.execPath, [...process.execArgv, SELF, '__keep', kind, ...Object.entries(flags).flatMap(([k, v]) => [`--${k}`, String(v)])], {
    detached: true,
    stdio: ['ignore', log, log, 'ipc'],
  });
  closeSync(log);
  const outcome = await new Promise<'ready' | string>((resolve) => {
    const timer = setTimeout(() => resolve(`not ready after ${UP_TIMEOUT_MS} ms`), UP_TIMEOUT_MS);
    child.on('message', (m: { ready?: boolean }) => {
      if (m.ready) {
        clearTimeout(timer);
        resolve('ready');
      }
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve(`the keeper exited (${signal ?? `code ${code}`})`);
    });
  });
  if (outcome !== 'ready') {
    if (isAlive(child.pid)) process.kill(child.pid!, 'SIGTERM');
    let tail = '';
    try {
      tail = readFileSync(LOG_FILE, 'utf8').trim().split('\n').slice(-20).join('\n');
    } catch {
      // no log
    }
    process.stderr.write(`Could not start the ${kind} topology: ${outcome}.\n${tail ? `--- ${LOG_FILE} ---\n${tail}\n` : ''}`);
    process.exit(1);
  }
  child.unref();
  child.disconnect?.();
  printState(readState()!, `${kind} topology is up (keeper pid ${child.pid}):`);
}

function status(): void {
  const s = readState();
  if (!s) {
    process.stdout.write(`No topology is running (no ${STATE_FILE}). Start one with 'npm run topology -- up standalone|sentinel|cluster'.\n`);
    return;
  }
  const alive = isAlive(s.keeperPid);
  printState(s, `${s.kind} topology, started ${s.startedAt}, keeper pid ${s.keeperPid} ${alive ? 'running' : 'NOT RUNNING (its servers died with it; run down to clean up)'}:`);
  if (!alive) process.exitCode = 1;
}

async function down(): Promise<void> {
  const s = readState();
  if (!s) {
    process.stdout.write('No topology is running.\n');
    return;
  }
  if (isAlive(s.keeperPid)) process.kill(s.keeperPid, 'SIGTERM');
  const pids = [s.keeperPid, ...s.nodes.map((n) => n.pid).filter((p): p is number => p !== undefined)];
  const deadline = Date.now() + DOWN_TIMEOUT_MS;
  while (pids.some(isAlive) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  // Whatever outlived the keeper is killed by its own PID, and only if it still runs a redis binary
  // (a PID can be reused once its process is gone).
  for (const n of s.nodes) {
    if (!isAlive(n.pid)) continue;
    let cmd = '';
    try {
      cmd = readFileSync(`/proc/${n.pid}/cmdline`, 'utf8');
    } catch {
      // not Linux: trust the state file
      cmd = 'redis';
    }
    if (cmd.includes('redis')) process.kill(n.pid!, 'SIGKILL');
  }
  if (existsSync(s.dir)) rmSync(s.dir, { recursive: true, force: true });
  rmSync(STATE_FILE, { force: true });
  rmSync(s.log, { force: true });
  process.stdout.write(`Stopped the ${s.kind} topology (${s.nodes.length} processes).\n`);
}

const [cmd, ...rest] = process.argv.slice(2);
if (cmd === '__keep') {
  const kind = rest[0] as Kind;
  keep(kind, parseFlags(rest.slice(1))).catch((err) => {
    process.stderr.write(`keeper: ${(err as Error)?.stack ?? err}\n`);
    process.exit(1);
  });
} else if (cmd === 'up') {
  const kind = rest[0] as Kind;
  if (!KINDS.includes(kind)) usage();
  await up(kind, parseFlags(rest.slice(1)));
} else if (cmd === 'status') {
  status();
} else if (cmd === 'down') {
  await down();
} else {
  usage();
}

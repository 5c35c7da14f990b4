/**
 * Soak: `npm run soak -- [--minutes N] [--seed S] [--mode sentinel|cluster|both]`
 *
 * Drives a SentinelPool and a ClusterPool (real redis-server / redis-sentinel processes, a
 * fault proxy in front of every node and sentinel, the pools reaching the nodes through
 * them with `natMap`) with a mixed load (see load.ts: strings, hashes, counters, pipelines,
 * transactions, BLPOP fed by LPUSH, pub/sub on a lease) under a seeded schedule of process
 * and network faults (see faults.ts), one at a time with settle time between.
 *
 * `--mode both` (the default) runs the modes one after the other, Sentinel first, each for
 * half of the minutes (default 10): one topology at a time on a small machine. The time
 * counts from the moment the load runs; set-up, the final checks and teardown come on top.
 * Each mode's schedule comes from its own stream derived from the seed, so `--mode cluster
 * --seed S` replays the cluster half of a `both` run with seed S (given the same minutes).
 *
 * Per fault it prints: start, how long the fault lasted, recovery (from the fault's start to
 * the end of the longest run without a success, over the worker types whose calls touch the
 * fault's node or slots; runs up to 250 ms are not counted), failures by error class from
 * the fault's start on, acknowledged writes lost (every write acknowledged in the window,
 * read back from the current master(s) with the harness's own client once the topology has
 * settled and the load is paused: missing or older value = lost), the process RSS, active
 * resources (`process.getActiveResourcesInfo().length`) and the event-loop delay p99 of the
 * window. At the end: a Markdown table, totals, a full re-check of every acknowledged write
 * of each mode, and checks that `pool.close()` closed every connection and the active
 * resources are back to the baseline.
 *
 * Exit code 0 when nothing was lost and everything closed; 1 otherwise (the reasons are
 * printed); 130 on Ctrl-C. Every process it started is stopped (by PID) on every path.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { randomInt } from 'node:crypto';
import { ClusterPool, SentinelPool, keySlot, type ClusterStats } from '../../src/index.js';
import { proxyCluster, proxySentinel, type ProxySet } from '../support/fault-proxy.js';
import { ReplyError, type RespValue } from '../support/resp-wire.js';
import { fmt } from '../support/sentinel-helpers.js';
import { startCluster, startSentinel, type ClusterTopology, type SentinelTopology } from '../support/topology.js';
import { waitFor } from '../support/wait.js';
import {
  CLUSTER_FAULTS,
  Rng,
  SENTINEL_FAULTS,
  clusterSlotOwners,
  deriveSeed,
  queryChunked,
  settleCluster,
  settleSentinel,
  type ClusterContext,
  type Fault,
  type FaultContext,
  type SentinelContext,
} from './faults.js';
import { GAP_THRESHOLD_MS, Load, WORKERS, errorClass, type Window } from './load.js';

// ------------------------------------------------------------------ arguments

type Mode = 'sentinel' | 'cluster';

function usage(): never {
  process.stdout.write('usage: npm run soak -- [--minutes N (default 10)] [--seed S (uint32)] [--mode sentinel|cluster|both (default both)] [--only TEXT (only the faults whose name contains TEXT)]\n');
  process.exit(2);
}

function parseArgs(argv: string[]): { minutes: number; seed: number; modes: Mode[]; only: string | undefined } {
  let minutes = 10;
  let only: string | undefined;
  let seed: number | undefined;
  let mode = 'both';
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const [flag, inline] = a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a, undefined];
    const value = () => inline ?? argv[++i] ?? usage();
    if (flag === '--minutes') minutes = Number(value());
    else if (flag === '--seed') seed = Number(value());
    else if (flag === '--mode') mode = value();
    else if (flag === '--only') only = value();
    else if (flag === '--help' || flag === '-h') usage();
    else {
      process.stdout.write(`unknown argument ${a}\n`);
      usage();
    }
  }
  if (!Number.isFinite(minutes) || minutes <= 0) usage();
  if (seed !== undefined && (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff)) usage();
  if (mode !== 'sentinel' && mode !== 'cluster' && mode !== 'both') usage();
  return { minutes, seed: seed ?? randomInt(0, 0xffffffff), modes: mode === 'both' ? ['sentinel', 'cluster'] : [mode], only };
}

// ------------------------------------------------------------------ output, time

const runStart = Date.now();
const rel = (t: number) => `+${((t - runStart) / 1000).toFixed(1)}s`;
const int = (n: number) => Math.round(n).toLocaleString('en-US');
const MiB = 1024 * 1024;
function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

const stopping = new AbortController();
function sleep(ms: number): Promise<void> {
  return new Promise((resolve, reject) => {
    if (stopping.signal.aborted) return reject(new Error('stopping'));
    const t = setTimeout(() => {
      stopping.signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(new Error('stopping'));
    };
    stopping.signal.addEventListener('abort', onAbort, { once: true });
  });
}

async function withTimeout<T>(p: Promise<T>, ms: number): Promise<{ ok: true; value: T; ms: number } | { ok: false; error: unknown; ms: number }> {
  const t0 = Date.now();
  let timer: NodeJS.Timeout | undefined;
  try {
    const value = await Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`did not finish within ${ms} ms`)), ms)))]);
    return { ok: true, value, ms: Date.now() - t0 };
  } catch (error) {
    return { ok: false, error, ms: Date.now() - t0 };
  } finally {
    clearTimeout(timer);
  }
}

// ------------------------------------------------------------------ cleanup on every path

const closers: Array<{ name: string; fn: () => Promise<unknown> }> = [];
function onCleanup(name: string, fn: () => Promise<unknown>): () => void {
  const entry = { name, fn };
  closers.push(entry);
  return () => {
    const i = closers.indexOf(entry);
    if (i >= 0) closers.splice(i, 1);
  };
}
/** Runs every registered closer, newest first, each bounded in time. */
async function closeAll(): Promise<void> {
  while (closers.length) {
    const c = closers.pop()!;
    const r = await withTimeout(c.fn(), 20_000);
    if (!r.ok) say(`  cleanup: ${c.name} failed: ${(r.error as Error)?.message ?? String(r.error)}`);
  }
}

let shuttingDown: Promise<never> | undefined;
function shutdown(code: number, why: string): Promise<never> {
  shuttingDown ??= (async () => {
    stopping.abort();
    say(`\n${why}: stopping the load, closing pools and proxies, stopping every process started...`);
    const hard = setTimeout(() => process.exit(code), 60_000);
    hard.unref();
    await closeAll();
    process.exit(code);
  })();
  return shuttingDown;
}
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.on(sig, () => {
    if (shuttingDown) process.exit(130); // second Ctrl-C: the reaper SIGKILLs the children on exit
    void shutdown(sig === 'SIGINT' ? 130 : 143, sig);
  });
}
process.on('unhandledRejection', (err) => {
  if (shuttingDown) return;
  say(`unhandled rejection: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  void shutdown(1, 'unhandled rejection');
});
process.on('uncaughtException', (err) => {
  if (shuttingDown) return;
  say(`uncaught exception: ${err.stack ?? err.message}`);
  void shutdown(1, 'uncaught exception');
});

// ------------------------------------------------------------------ metrics

const eld = monitorEventLoopDelay({ resolution: 10 });

interface Snapshot {
  rssMb: number;
  heapMb: number;
  handles: number;
  eldP99Ms: number;
  eldMaxMs: number;
}
function snapshot(): Snapshot {
  const m = process.memoryUsage();
  return {
    rssMb: m.rss / MiB,
    heapMb: m.heapUsed / MiB,
    handles: process.getActiveResourcesInfo().length,
    eldP99Ms: eld.percentile(99) / 1e6,
    eldMaxMs: eld.max / 1e6,
  };
}

function resourceHistogram(list: string[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const r of list) m.set(r, (m.get(r) ?? 0) + 1);
  return m;
}

// ------------------------------------------------------------------ reading back acknowledged writes

/** Sends read commands (each names its key at index 1) to the node(s) that own the keys now. */
type Reader = (cmds: string[][]) => Promise<RespValue[]>;

function sentinelReader(topo: SentinelTopology): Reader {
  return async (cmds) => queryChunked(await topo.currentMaster(), cmds);
}

function clusterReader(topo: ClusterTopology): Reader {
  return async (cmds) => {
    const out: RespValue[] = new Array(cmds.length);
    let todo = cmds.map((_, i) => i);
    for (let attempt = 0; attempt < 3 && todo.length > 0; attempt++) {
      const owners = await clusterSlotOwners(topo);
      const byPort = new Map<number, number[]>();
      for (const i of todo) {
        const port = owners[keySlot(cmds[i]![1]!)]!;
        let l = byPort.get(port);
        if (!l) byPort.set(port, (l = []));
        l.push(i);
      }
      await Promise.all(
        [...byPort].map(async ([port, idx]) => {
          const replies = await queryChunked({ host: '127.0.0.1', port }, idx.map((i) => cmds[i]!));
          idx.forEach((i, j) => (out[i] = replies[j]!));
        }),
      );
      // A MOVED here means the map changed between CLUSTER SLOTS and the read: read those again.
      todo = todo.filter((i) => out[i] instanceof ReplyError && /^(MOVED|ASK|TRYAGAIN|CLUSTERDOWN)/.test((out[i] as ReplyError).message));
    }
    return out;
  };
}

interface CheckResult {
  checked: number;
  lost: number;
  unreadable: number;
  examples: string[];
  listUnaccounted: number;
  listUncertainPops: number;
  listLost: number;
  /** Items popped twice (a pop acknowledged by a master whose successor still had the item). */
  listDuplicates: number;
}

/** Reads back every write acknowledged in the window (or, with `full`, in the whole run). Call with the load paused. */
async function checkAcked(load: Load, read: Reader, full: boolean, faultStart = 0): Promise<CheckResult> {
  const when = (at: number | undefined) => (at === undefined || faultStart === 0 ? '' : `, acknowledged at ${at - faultStart >= 0 ? '+' : ''}${at - faultStart} ms from the fault's start`);
  const res: CheckResult = { checked: 0, lost: 0, unreadable: 0, examples: [], listUnaccounted: 0, listUncertainPops: 0, listLost: 0, listDuplicates: 0 };
  const example = (s: string) => res.examples.length < 6 && res.examples.push(s);
  let batch: Array<{ key: string; args: string[]; expect: string; at?: number }> = [];
  const flush = async () => {
    if (batch.length === 0) return;
    const replies = await read(batch.map((b) => b.args));
    replies.forEach((r, i) => {
      const b = batch[i]!;
      res.checked++;
      if (r instanceof ReplyError) {
        res.unreadable++;
        example(`${b.key}: could not be read (${r.message})`);
      } else if (r !== b.expect) {
        res.lost++;
        example(`${b.key}: ${JSON.stringify(r)} (acknowledged ${JSON.stringify(b.expect)}${when(b.at)})`);
      }
    });
    batch = [];
  };
  for (const t of [...load.strings, ...load.hashes, ...load.pipelined, ...load.txKeys]) {
    if (full) {
      for (const seq of t.all()) {
        batch.push(t.check(seq));
        if (batch.length >= 20_000) await flush();
      }
    } else {
      for (let i = 0; i < t.window.length; i++) {
        batch.push({ ...t.check(t.window[i]!), at: t.windowAt[i]! });
        if (batch.length >= 20_000) await flush();
      }
      t.window = [];
      t.windowAt = [];
    }
  }
  await flush();

  const mono = load.monotonic.filter((m) => m.maxAcked >= 0);
  const values = await read(mono.map((m) => ['GET', m.key]));
  mono.forEach((m, i) => {
    res.checked++;
    const r = values[i];
    if (r instanceof ReplyError) {
      res.unreadable++;
      example(`${m.key}: could not be read (${r.message})`);
    } else if (!(Number(r) >= m.maxAcked)) {
      res.lost++;
      example(`${m.key}: ${JSON.stringify(r)}, below the acknowledged ${m.maxAcked}${when(m.maxAckedAt)}`);
    }
  });

  const lists = await read(load.lists.map((l) => ['LRANGE', l.key, '0', '-1']));
  load.lists.forEach((l, i) => {
    const r = lists[i];
    if (r instanceof ReplyError || !Array.isArray(r)) {
      res.unreadable++;
      example(`${l.key}: could not be read (${String(r)})`);
      return;
    }
    const inList = new Set(r.map(String));
    res.checked += l.pending.size;
    const gone = [...l.pending].filter((v) => !inList.has(v));
    // A BLPOP that failed after it was sent may have popped one item whose reply never came back.
    const lost = Math.max(0, gone.length - l.uncertainPops);
    res.listUnaccounted += gone.length;
    res.listUncertainPops += l.uncertainPops;
    res.listDuplicates += l.windowDuplicates;
    res.listLost += lost;
    res.lost += lost;
    if (lost > 0) example(`${l.key}: ${gone.length} acknowledged pushes neither popped nor in the list (${l.uncertainPops} BLPOPs failed after sending), e.g. ${gone.slice(0, 3).join(' ')}`);
    for (const v of gone) l.pending.delete(v);
  });
  return res;
}

// ------------------------------------------------------------------ rows

interface Row {
  mode: Mode;
  n: number;
  fault: string;
  detail: string;
  start: number;
  durationMs: number;
  recovery: string;
  recoveryMs: number | undefined;
  neverRecovered: string[];
  failures: Map<string, number>;
  failuresByType: Map<string, number>;
  failuresBefore: Map<string, number>;
  calls: number;
  overDeadline: number;
  overDeadlineExamples: string[];
  check: CheckResult;
  snap: Snapshot;
  published: number;
  received: number;
  resubscribes: number;
  notes: string[];
  poolErrors: Map<string, number>;
  gaps: string;
  failed?: string;
}
const rows: Row[] = [];

interface ModeSummary {
  mode: Mode;
  seed: number;
  calls: number;
  finalCheck: CheckResult | undefined;
  published: number;
  received: number;
  resubscribes: number;
  listPushed: number;
  listPopped: number;
  listDuplicates: number;
  closeMs: number | undefined;
  closeProblems: string[];
  error?: string;
}
const summaries: ModeSummary[] = [];

const classes = (m: Map<string, number>) =>
  [...m].sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${int(v)}`).join(', ') || 'none';

function recoveryText(w: Window): { text: string; ms: number | undefined; never: string[] } {
  const r = w.recovery();
  const never = r.never.map(String);
  if (never.length) return { text: `never: ${never.join(', ')}`, ms: undefined, never };
  if (r.ms === undefined) return { text: `0 (no gap > ${GAP_THRESHOLD_MS} ms)`, ms: 0, never };
  return { text: `${int(r.ms)} ms (${r.worst})`, ms: r.ms, never };
}

function printRow(r: Row): void {
  const lost = `${int(r.check.lost)} of ${int(r.check.checked)}`;
  say(
    `[${r.mode} #${r.n} ${rel(r.start)}] ${r.fault}: ${r.detail}\n` +
      `    fault lasted ${int(r.durationMs)} ms; recovery ${r.recovery}; ${int(r.calls)} calls; failures: ${classes(r.failures)}\n` +
      `    acked writes lost ${lost}${r.check.unreadable ? ` (${r.check.unreadable} unreadable)` : ''}; lists: ${r.check.listUnaccounted} unaccounted / ${r.check.listUncertainPops} BLPOPs failed after sending / ${r.check.listDuplicates} popped twice; ` +
      `pub/sub ${int(r.received)} of ${int(r.published)} received, ${r.resubscribes} resubscribes\n` +
      `    ${r.gaps}\n` +
      `    RSS ${r.snap.rssMb.toFixed(0)} MB (heap ${r.snap.heapMb.toFixed(0)} MB); active resources ${r.snap.handles}; event-loop delay p99 ${r.snap.eldP99Ms.toFixed(1)} ms (max ${r.snap.eldMaxMs.toFixed(0)} ms)` +
      (r.failuresByType.size ? `\n    by worker: ${classes(r.failuresByType)}` : '') +
      (r.failuresBefore.size ? `\n    failures BEFORE the fault started: ${classes(r.failuresBefore)}` : '') +
      (r.overDeadline ? `\n    ${r.overDeadline} calls settled more than 1.5 s past their deadline, e.g. ${r.overDeadlineExamples.join('; ')}` : '') +
      (r.poolErrors.size ? `\n    pool error events: ${classes(r.poolErrors)}` : '') +
      (r.notes.length ? `\n    ${r.notes.join('\n    ')}` : '') +
      (r.check.examples.length ? `\n    lost/unreadable e.g.: ${r.check.examples.join('; ')}` : '') +
      (r.failed ? `\n    FAULT STEP FAILED: ${r.failed}` : ''),
  );
}

// ------------------------------------------------------------------ a mode

const POOL = {
  commandTimeout: 5000,
  socketTimeout: 2000,
  connectTimeout: 1000,
  pingInterval: 1000,
  closeTimeout: 2000,
  pool: { max: 20 },
} as const;
const SENTINEL_DOWN_AFTER = 1000;
const CLUSTER_NODE_TIMEOUT = 2000;

interface ModeSetup<C extends FaultContext> {
  mode: Mode;
  faults: Fault<C>[];
  load: Load;
  ctx: C;
  settle: () => Promise<string[]>;
  read: Reader;
  /** Notes about the pool to add to the window just closed (redirect counts, …). */
  windowNotes?: () => string[];
}

async function runFaults<C extends FaultContext>(s: ModeSetup<C>, budgetMs: number, rng: Rng): Promise<void> {
  const { load, ctx } = s;
  const deadline = Date.now() + budgetMs;
  let schedule: Fault<C>[] = [];
  let n = 0;
  load.start();
  say(`  load: ${Object.entries(WORKERS).map(([k, v]) => `${v} ${k}`).join(', ')} workers; warming up...`);
  await sleep(3000);
  while (Date.now() < deadline) {
    if (schedule.length === 0) schedule = rng.shuffle(s.faults);
    const fault = schedule.shift()!;
    n++;
    const w = load.window;
    await sleep(rng.int(2000, 5000)); // steady load before the fault
    let detail = '';
    let failed: string | undefined;
    try {
      detail = await fault.run(ctx);
    } catch (err) {
      if (stopping.signal.aborted) throw err;
      failed = (err as Error)?.message ?? String(err);
      detail = '(see below)';
    }
    if (w.faultStart === 0) w.startFault();
    w.endFault();
    const notes = await s.settle();
    // Every call made before the fault was lifted has settled, and every worker type that
    // touched the fault succeeded again afterwards (or give up after 30 s).
    const since = w.faultEnd;
    const until = Date.now() + 30_000;
    while ((load.oldestInFlight() <= since || w.notRecoveredSince(since).length > 0) && Date.now() < until) await sleep(100);
    const stuck = w.notRecoveredSince(since);
    if (stuck.length) notes.push(`no success 30 s after the fault was lifted and the topology settled: ${stuck.join(', ')}`);
    if (load.oldestInFlight() <= since) notes.push(`a call made before the fault was lifted was still in flight 30 s later (started ${int(since - load.oldestInFlight())} ms before)`);
    await sleep(rng.int(1000, 3000));
    const snap = snapshot();
    const inFlight = await load.pause();
    if (inFlight > 0) notes.push(`${inFlight} calls still in flight 20 s after the load was paused`);
    await sleep(300); // pub/sub messages on their way
    const check = await checkAcked(load, s.read, false, w.faultStart);
    const done = load.nextWindow();
    notes.push(...(s.windowNotes?.() ?? []));
    eld.reset();
    load.unpause();
    const rec = recoveryText(done);
    const row: Row = {
      mode: s.mode,
      n,
      fault: fault.name,
      detail,
      start: done.faultStart,
      durationMs: done.faultEnd - done.faultStart,
      recovery: rec.text,
      recoveryMs: rec.ms,
      neverRecovered: rec.never,
      failures: done.failures,
      failuresByType: done.failuresByType,
      failuresBefore: done.failuresBefore,
      calls: done.calls,
      overDeadline: done.overDeadline,
      overDeadlineExamples: done.overDeadlineExamples,
      check,
      snap,
      published: done.published,
      received: done.received,
      resubscribes: done.resubscribes,
      notes: [...done.notes, ...notes],
      poolErrors: done.poolErrors,
      gaps: done.describeGaps(),
      ...(failed !== undefined ? { failed } : {}),
    };
    rows.push(row);
    printRow(row);
  }
}

/** After the faults: a full re-check of every acknowledged write, then the load stops. */
async function finishLoad(load: Load, read: Reader, summary: ModeSummary): Promise<void> {
  const inFlight = await load.pause();
  if (inFlight > 0) summary.closeProblems.push(`${inFlight} calls still in flight 20 s after the final pause`);
  const t0 = Date.now();
  summary.finalCheck = await checkAcked(load, read, true);
  say(`  final re-check of every acknowledged write: ${int(summary.finalCheck.lost)} lost of ${int(summary.finalCheck.checked)} (${int(Date.now() - t0)} ms)` +
    (summary.finalCheck.examples.length ? `; e.g. ${summary.finalCheck.examples.join('; ')}` : ''));
  if (!(await load.stop())) summary.closeProblems.push('workers did not stop within 20 s');
  summary.calls = load.totals.calls;
  summary.published = load.totals.published;
  summary.received = load.totals.received;
  summary.resubscribes = load.totals.resubscribes;
  for (const l of load.lists) {
    summary.listPushed += l.pushedAcked;
    summary.listPopped += l.popped;
    summary.listDuplicates += l.duplicates;
  }
}

/** pool.close() in time, and afterwards no client connection left open through any proxy. */
async function closePool(pool: SentinelPool | ClusterPool, px: ProxySet, summary: ModeSummary): Promise<void> {
  const r = await withTimeout(pool.close(), 15_000);
  summary.closeMs = r.ms;
  if (!r.ok) summary.closeProblems.push(`pool.close() failed: ${(r.error as Error)?.message ?? String(r.error)}`);
  try {
    await waitFor(() => px.proxies.every((p) => p.stats.open === 0), 'every client connection to close', 5000);
  } catch {
    const open = px.proxies.filter((p) => p.stats.open > 0).map((p) => `${p.name}: ${p.stats.open}`);
    summary.closeProblems.push(`connections still open 5 s after pool.close(): ${open.join(', ')}`);
  }
}

function emptySummary(mode: Mode, seed: number): ModeSummary {
  return { mode, seed, calls: 0, finalCheck: undefined, published: 0, received: 0, resubscribes: 0, listPushed: 0, listPopped: 0, listDuplicates: 0, closeMs: undefined, closeProblems: [] };
}

function baseContext(rng: Rng, load: () => Load): FaultContext {
  return {
    rng,
    get load() {
      return load();
    },
    start: (affects) => load().window.startFault(affects),
    end: () => load().window.endFault(),
    sleep,
    window: () => load().window,
  };
}

/** `--only TEXT`: the faults whose name contains TEXT (to repeat one sequence for its figures). */
let onlyFaults: string | undefined;
function selected<F extends { name: string }>(faults: F[]): F[] {
  if (onlyFaults === undefined) return faults;
  const picked = faults.filter((f) => f.name.includes(onlyFaults!));
  if (picked.length === 0) throw new Error(`--only ${JSON.stringify(onlyFaults)} matches none of: ${faults.map((f) => f.name).join('; ')}`);
  return picked;
}

async function runSentinel(budgetMs: number, seed: number): Promise<void> {
  const rng = new Rng(seed);
  const summary = emptySummary('sentinel', seed);
  summaries.push(summary);
  say(`\n=== Sentinel: 1 master, 2 replicas, 3 sentinels (down-after ${SENTINEL_DOWN_AFTER} ms), a fault proxy in front of each; ${(budgetMs / 60000).toFixed(1)} min of faults, stream seed ${seed}`);
  const topo = await startWithRetry('the Sentinel topology', () => startSentinel({ downAfterMs: SENTINEL_DOWN_AFTER, failoverTimeoutMs: 5000 }));
  const unTopo = onCleanup('sentinel topology', () => topo.stop());
  const px = await proxySentinel(topo);
  const unPx = onCleanup('sentinel proxies', () => px.close());
  const pool = await SentinelPool.create(topo.masterName, px.sentinelAddresses, { natMap: px.natMap, ...POOL, pollInterval: 2000 });
  const unPool = onCleanup('sentinel pool', () => pool.close());
  say(`  master ${fmt(topo.master.address)} (pool: ${fmt(pool.master())}), replicas ${topo.replicas.map((r) => fmt(r.address)).join(', ')}, sentinels ${topo.sentinels.map((s) => fmt(s.address)).join(', ')}`);
  const load = new Load(pool, { prefix: 'soak:s:', cluster: false, commandTimeout: POOL.commandTimeout });
  const unLoad = onCleanup('sentinel load', () => load.stop(5000));
  const since = () => (load.window.faultStart ? `+${int(Date.now() - load.window.faultStart)} ms` : 'before the fault');
  pool.on('failover', (e) => load.window.notes.push(`failover event ${fmt(e.from)} -> ${fmt(e.to)} by ${e.detectedBy} at ${since()}`));
  pool.on('failover-start', (e) => load.window.notes.push(`failover-start (${e.event}) at ${since()}`));
  pool.on('failover-abort', (e) => load.window.notes.push(`failover-abort (${e.reason}) at ${since()}`));
  pool.on('error', (e) => bumpMap(load.window.poolErrors, errorClass(e)));
  const ctx: SentinelContext = { ...baseContext(rng, () => load), topo, px, pool, downAfterMs: SENTINEL_DOWN_AFTER };
  const read = sentinelReader(topo);
  await driveThenClose(summary, load, read, () => runFaults({ mode: 'sentinel', faults: selected(SENTINEL_FAULTS), load, ctx, settle: () => settleSentinel(ctx), read }, budgetMs, rng), [
    [unLoad, async () => {}], [unPool, () => closePool(pool, px, summary)], [unPx, () => px.close()], [unTopo, () => topo.stop()],
  ]);
}

async function runCluster(budgetMs: number, seed: number): Promise<void> {
  const rng = new Rng(seed);
  const summary = emptySummary('cluster', seed);
  summaries.push(summary);
  say(`\n=== Cluster: 3 masters, 3 replicas (node timeout ${CLUSTER_NODE_TIMEOUT} ms), a fault proxy in front of each; ${(budgetMs / 60000).toFixed(1)} min of faults, stream seed ${seed}`);
  const topo = await startWithRetry('the cluster', () => startCluster({ masters: 3, replicasPerMaster: 1, nodeTimeoutMs: CLUSTER_NODE_TIMEOUT }));
  const unTopo = onCleanup('cluster topology', () => topo.stop());
  const px = await proxyCluster(topo);
  const unPx = onCleanup('cluster proxies', () => px.close());
  const pool = await ClusterPool.create(px.seeds, { natMap: px.natMap, ...POOL });
  const unPool = onCleanup('cluster pool', () => pool.close());
  say(`  nodes ${topo.nodes.map((n) => `:${n.port}`).join(' ')}; pool sees ${pool.nodes().map((n) => `${n.port}(${n.role})`).join(' ')}`);
  const load = new Load(pool, { prefix: 'soak:c:', cluster: true, commandTimeout: POOL.commandTimeout });
  const unLoad = onCleanup('cluster load', () => load.stop(5000));
  pool.on('error', (e) => bumpMap(load.window.poolErrors, errorClass(e)));
  pool.on('node-error', (e) => bumpMap(load.window.poolErrors, `node-error ${errorClass(e.error)}`));
  const since = () => (load.window.faultStart ? `+${int(Date.now() - load.window.faultStart)} ms` : 'before the fault');
  pool.on('topology', (e) => {
    if (load.window.notes.length < 12) {
      load.window.notes.push(`topology event at ${since()}: ${e.movedSlots} slots moved${e.added.length ? `, added ${e.added.join(' ')}` : ''}${e.removed.length ? `, removed ${e.removed.join(' ')}` : ''}`);
    }
  });
  let lastRedirects: ClusterStats['redirects'] = { ...pool.stats().redirects };
  const windowNotes = () => {
    const now = pool.stats().redirects;
    const d = Object.entries(now).map(([k, v]) => [k, v - lastRedirects[k as keyof typeof now]] as const).filter(([, v]) => v > 0);
    lastRedirects = { ...now };
    return d.length ? [`redirects followed: ${d.map(([k, v]) => `${k} ${int(v)}`).join(', ')}`] : [];
  };
  const ctx: ClusterContext = { ...baseContext(rng, () => load), topo, px, pool, nodeTimeoutMs: CLUSTER_NODE_TIMEOUT };
  const read = clusterReader(topo);
  await driveThenClose(summary, load, read, () => runFaults({ mode: 'cluster', faults: selected(CLUSTER_FAULTS), load, ctx, settle: () => settleCluster(ctx, 3), read, windowNotes }, budgetMs, rng), [
    [unLoad, async () => {}], [unPool, () => closePool(pool, px, summary)], [unPx, () => px.close()], [unTopo, () => topo.stop()],
  ]);
}

/**
 * Runs one mode's faults and final read-back (a failure is recorded, not thrown, unless the
 * soak is being stopped), then closes what the mode opened, in order, taking each step off the
 * emergency cleanup list once it is done.
 */
async function driveThenClose(summary: ModeSummary, load: Load, read: Reader, drive: () => Promise<void>, closing: Array<[unregister: () => void, close: () => Promise<unknown>]>): Promise<void> {
  try {
    await drive();
    await finishLoad(load, read, summary);
  } catch (err) {
    if (stopping.signal.aborted) throw err;
    summary.error = (err as Error)?.stack ?? String(err);
    say(`  ${summary.mode} run failed: ${summary.error}`);
    await load.stop(5000);
  }
  for (const [unregister, close] of closing) {
    await close();
    unregister();
  }
  reportClose(summary);
}

/**
 * Starts a topology, again (up to 3 times) when start-up fails: with other test runs on the
 * machine a free port can be taken between pick and bind (the harness stops what it started).
 */
async function startWithRetry<T>(what: string, start: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (err) {
      if (attempt >= 3 || stopping.signal.aborted) throw err;
      say(`  ${what} failed to start (attempt ${attempt}): ${String((err as Error)?.message ?? err).split('\n')[0]}; retrying`);
      await sleep(1000);
    }
  }
}

function reportClose(s: ModeSummary): void {
  say(`  ${s.mode}: pool.close() took ${s.closeMs ?? '?'} ms${s.closeProblems.length ? `; PROBLEMS: ${s.closeProblems.join('; ')}` : '; every connection closed'}`);
}

function bumpMap(m: Map<string, number>, k: string): void {
  m.set(k, (m.get(k) ?? 0) + 1);
}

// ------------------------------------------------------------------ report

function table(): string {
  const lines = [
    '| # | mode | fault | start | lasted | recovery | failures by class | acked writes lost | RSS MB | active handles | ELD p99 ms |',
    '|--:|---|---|--:|--:|---|---|--:|--:|--:|--:|',
  ];
  rows.forEach((r, i) => {
    lines.push(
      `| ${i + 1} | ${r.mode} | ${r.fault}${r.failed ? ' (step failed)' : ''} | ${rel(r.start)} | ${(r.durationMs / 1000).toFixed(1)} s | ${r.recovery} | ${classes(r.failures)} | ${int(r.check.lost)} of ${int(r.check.checked)} | ${r.snap.rssMb.toFixed(0)} | ${r.snap.handles} | ${r.snap.eldP99Ms.toFixed(1)} |`,
    );
  });
  const all = new Map<string, number>();
  for (const r of rows) for (const [k, v] of r.failures) all.set(k, (all.get(k) ?? 0) + v);
  const lost = rows.reduce((n, r) => n + r.check.lost, 0);
  const checked = rows.reduce((n, r) => n + r.check.checked, 0);
  const rss = rows.map((r) => r.snap.rssMb);
  const handles = rows.map((r) => r.snap.handles);
  const eldP = rows.map((r) => r.snap.eldP99Ms);
  const recs = rows.map((r) => r.recoveryMs).filter((x): x is number => x !== undefined);
  if (rows.length) {
    lines.push(
      `| | **total** | **${rows.length} faults** | | | max ${int(Math.max(0, ...recs))} ms | ${classes(all)} | **${int(lost)} of ${int(checked)}** | ${Math.min(...rss).toFixed(0)}–${Math.max(...rss).toFixed(0)} | ${Math.min(...handles)}–${Math.max(...handles)} | max ${Math.max(...eldP).toFixed(1)} |`,
    );
  }
  return lines.join('\n');
}

// ------------------------------------------------------------------ main

async function main(): Promise<void> {
  const { minutes, seed, modes, only } = parseArgs(process.argv.slice(2));
  onlyFaults = only;
  const baseline = process.getActiveResourcesInfo();
  eld.enable();
  const budget = (minutes * 60_000) / modes.length;
  say(`soak: seed ${seed}, ${minutes} min, modes ${modes.join(' then ')} (${(budget / 60000).toFixed(1)} min of faults each, one after the other)`);
  say(`replay: npm run soak -- --minutes ${minutes} --seed ${seed} --mode ${modes.length === 2 ? 'both' : modes[0]}`);
  say(`pool options: ${JSON.stringify(POOL)}; Sentinel pollInterval 2000`);
  const progress = setInterval(() => {
    const s = snapshot();
    say(`  ... ${rel(Date.now())} RSS ${s.rssMb.toFixed(0)} MB, active resources ${s.handles}, ELD p99 ${s.eldP99Ms.toFixed(1)} ms`);
  }, 30_000);
  const unProgress = onCleanup('progress timer', async () => clearInterval(progress));
  for (const mode of modes) {
    const s = deriveSeed(seed, mode);
    if (mode === 'sentinel') await runSentinel(budget, s);
    else await runCluster(budget, s);
  }
  clearInterval(progress);
  unProgress();
  eld.disable();

  // Everything the run opened should be closed now.
  await new Promise((r) => setTimeout(r, 500));
  const after = process.getActiveResourcesInfo();
  const base = resourceHistogram(baseline);
  const extra = [...resourceHistogram(after)].map(([k, v]) => [k, v - (base.get(k) ?? 0)] as const).filter(([, v]) => v > 0);
  const leaked = extra.reduce((n, [, v]) => n + v, 0);

  say(`\n## Soak results (seed ${seed}, ${minutes} min, ${modes.join(' then ')})\n`);
  say(table());
  say('');
  const problems: string[] = [];
  for (const s of summaries) {
    const fc = s.finalCheck;
    say(
      `- ${s.mode}: ${int(s.calls)} calls; final re-check of every acknowledged write: ${fc ? `${int(fc.lost)} lost of ${int(fc.checked)}` : 'not run'}; ` +
        `lists ${int(s.listPushed)} acknowledged pushes, ${int(s.listPopped)} pops (${s.listDuplicates} duplicates); ` +
        `pub/sub ${int(s.received)} of ${int(s.published)} acknowledged publishes received (${s.published ? ((100 * s.received) / s.published).toFixed(2) : '0'}%), ${s.resubscribes} resubscribes; ` +
        `pool.close() ${s.closeMs ?? '?'} ms${s.closeProblems.length ? ` (${s.closeProblems.join('; ')})` : ', every connection closed'}`,
    );
    if (s.error) problems.push(`${s.mode}: run failed: ${s.error.split('\n')[0]}`);
    if (fc && fc.lost > 0) problems.push(`${s.mode}: ${fc.lost} acknowledged writes missing in the final re-check`);
    if (fc && fc.unreadable > 0) problems.push(`${s.mode}: ${fc.unreadable} acknowledged writes unreadable in the final re-check`);
    problems.push(...s.closeProblems.map((p) => `${s.mode}: ${p}`));
  }
  const lostRows = rows.filter((r) => r.check.lost > 0);
  if (lostRows.length) problems.push(`acknowledged writes lost at ${lostRows.map((r) => `${r.mode} #${r.n} ${r.fault} (${r.check.lost})`).join(', ')}`);
  const never = rows.filter((r) => r.neverRecovered.length || r.notes.some((n) => n.startsWith('no success')));
  if (never.length) problems.push(`not recovered: ${never.map((r) => `${r.mode} #${r.n} ${r.fault}`).join(', ')}`);
  say(`- active resources: ${baseline.length} at start, ${after.length} after everything closed${leaked ? ` (left open: ${extra.map(([k, v]) => `${k} x${v}`).join(', ')})` : ''}`);
  if (leaked > 0) problems.push(`${leaked} active resources left open after close: ${extra.map(([k, v]) => `${k} x${v}`).join(', ')}`);
  if (problems.length) {
    say(`\nFAILED:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    process.exitCode = 1;
  } else {
    say('\nOK: no acknowledged write lost, every fault recovered, everything closed.');
  }
}

main().then(
  () => {
    // Anything still holding the loop open is a leak, reported above; do not hang on it.
    setTimeout(() => process.exit(process.exitCode ?? 0), 200).unref();
  },
  (err) => {
    if (shuttingDown) return;
    say(`soak failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    void shutdown(1, 'error');
  },
);


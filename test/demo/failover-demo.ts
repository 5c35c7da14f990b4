/**
 * The failover demo: `npm run demo` (needs redis-server and redis-sentinel on PATH).
 *
 * 1. Starts a local Sentinel topology (1 master, 2 replicas, 3 sentinels) with the test helper.
 * 2. Runs a steady write load through a SentinelPool: WORKERS async workers, each sending
 *    idempotent `SET demo:<n> <n>` for a unique n and awaiting it before the next one.
 *    Every acknowledged key is recorded with its ack time.
 * 3. Shows a live one-line progress (ops/s, errors, current master).
 * 4. Fault 1: `SENTINEL FAILOVER` (a planned switch). Fault 2, a few seconds later: SIGKILL of
 *    the NEW master (a crash).
 * 5. Prints every `failover` event with the time from its fault to the first acknowledged
 *    write after it, counts the acknowledged writes the final master lacks (per phase), and
 *    writes `failover-timeline.svg` (acknowledged writes / s and failed commands per 100 ms, faults and events marked).
 *
 * Everything is stopped at the end, on an error and on Ctrl-C.
 * Environment: DEMO_WORKERS (default 50), DEMO_SVG (output path, default ./failover-timeline.svg).
 */
import { writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { SentinelPool, StandalonePool, type FailoverEvent } from '../../src/index.js';
import type { NodeAddress } from '../../src/types.js';
import { sendCommand } from '../support/mini-client.js';
import { decodeReply, encodeCommand } from '../support/resp-wire.js';
import { findMissing } from '../support/missing-keys.js';
import { startSentinel, type SentinelTopology } from '../support/topology.js';
import { lineChart, type Marker } from './svg.js';
import { bumpBucket, errorKind, onInterrupt, Progress, sumBefore } from './demo-kit.js';

const WORKERS = Number(process.env.DEMO_WORKERS ?? 50);
const SVG_PATH = path.resolve(process.env.DEMO_SVG ?? 'failover-timeline.svg');
const WARMUP_MS = 3000;
const AFTER_SWITCH_MS = 4000;
const AFTER_RECOVERY_MS = 4000;
const BUCKET_MS = 100;

const fmtAddr = (a: NodeAddress) => `${a.host}:${a.port}`;
const sameAddr = (a: NodeAddress, b: NodeAddress) => a.port === b.port && a.host === b.host;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const int = (n: number) => Math.round(n).toLocaleString('en-US');

// ------------------------------------------------------------------------------- state

let topo: SentinelTopology | undefined;
let pool: SentinelPool | undefined;
let t0 = Date.now();
const rel = (at: number) => at - t0;
const secs = (at: number) => (rel(at) / 1000).toFixed(2);

/** Acknowledged writes: key number and ack time (epoch ms), in ack order. */
const ackN: number[] = [];
const ackAt: number[] = [];
const opsPerBucket: number[] = [];
const errPerBucket: number[] = [];
const errorKinds = new Map<string, { count: number; first: number; last: number; example: string }>();
let errors = 0;
let stopLoad = false;

interface Fault { kind: 'SENTINEL FAILOVER' | 'SIGKILL'; at: number; target: NodeAddress }
const faults: Fault[] = [];
const failovers: FailoverEvent[] = [];
const fenceStarts: { at: number; event: string }[] = [];
const fenceAborts: { at: number; reason: string }[] = [];
const switchMasters: { at: number; payload: string }[] = [];
const sentinelDowns: { at: number; address: NodeAddress; message: string }[] = [];
const poolErrorEvents = new Map<string, { count: number; first: number; example: string }>();

function bump(arr: number[], at: number): void {
  bumpBucket(arr, Math.floor(rel(at) / BUCKET_MS));
}

// ------------------------------------------------------------------------------- output

function progressLine(): string {
  const s = pool?.stats();
  const master = pool ? fmtAddr(pool.master()) : '-';
  const gate = s?.gate === 'held' ? ` [held, ${s.queued} queued]` : '';
  return `t=${secs(Date.now()).padStart(6)}s  ${int(opsLastSecond()).padStart(7)} ops/s  errors ${int(errors)}  acked ${int(ackN.length)}  master ${master}${gate}`;
}

const progress = new Progress(progressLine);
const say = (line: string): void => progress.say(line);

function opsLastSecond(): number {
  return sumBefore(opsPerBucket, Math.floor(rel(Date.now()) / BUCKET_MS), 10);
}

// ------------------------------------------------------------------------------- load

async function worker(): Promise<void> {
  const w = pool!.with({ idempotent: true });
  let n = 0;
  while (!stopLoad) {
    n = nextKey++;
    try {
      await w.call('SET', `demo:${n}`, String(n));
      const at = Date.now();
      ackN.push(n);
      ackAt.push(at);
      bump(opsPerBucket, at);
    } catch (err) {
      if (stopLoad) return; // the pool closing under us (Ctrl-C, error): not a failure of the run
      const at = Date.now();
      errors++;
      bump(errPerBucket, at);
      const kind = errorKind(err);
      const e = errorKinds.get(kind);
      if (e) {
        e.count++;
        e.last = at;
      } else {
        errorKinds.set(kind, { count: 1, first: at, last: at, example: (err as Error)?.message ?? String(err) });
        say(`  ! first ${kind} at t=${secs(at)}s: ${(err as Error)?.message ?? err}`);
      }
      await sleep(10); // no hot loop if the pool rejects at once
    }
  }
}
let nextKey = 0;

// ------------------------------------------------------------------------------- +switch-master

/** Subscribes to `+switch-master` on one sentinel with a raw socket (independent of the pool). */
function watchSwitchMaster(address: NodeAddress): () => void {
  const sock = net.connect({ host: address.host, port: address.port });
  let buf = Buffer.alloc(0);
  sock.on('connect', () => sock.write(encodeCommand(['SUBSCRIBE', '+switch-master'])));
  sock.on('data', (chunk) => {
    buf = Buffer.concat([buf, chunk]);
    let pos = 0;
    for (;;) {
      const r = decodeReply(buf, pos);
      if (!r) break;
      pos = r.next;
      const v = r.value;
      if (Array.isArray(v) && v[0] === 'message') switchMasters.push({ at: Date.now(), payload: String(v[2]) });
    }
    buf = buf.subarray(pos);
  });
  sock.on('error', () => {});
  return () => sock.destroy();
}

// ------------------------------------------------------------------------------- helpers

function waitForPoolFailover(count: number, timeoutMs: number): Promise<FailoverEvent | undefined> {
  return new Promise((resolve) => {
    const check = () => {
      if (failovers.length >= count) {
        clearInterval(timer);
        clearTimeout(giveUp);
        resolve(failovers[count - 1]);
      }
    };
    const timer = setInterval(check, 10);
    const giveUp = setTimeout(() => {
      clearInterval(timer);
      resolve(undefined);
    }, timeoutMs);
    check();
  });
}

/** Index of the first ack at or after `at` (ackAt is sorted). */
function firstAckAtOrAfter(at: number): number {
  let lo = 0;
  let hi = ackAt.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (ackAt[mid]! < at) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Longest gap between consecutive acks in [from, to]. */
function longestGap(from: number, to: number): { ms: number; start: number } {
  let best = { ms: 0, start: from };
  let prev = from;
  for (let i = firstAckAtOrAfter(from); i < ackAt.length && ackAt[i]! <= to; i++) {
    if (ackAt[i]! - prev > best.ms) best = { ms: ackAt[i]! - prev, start: prev };
    prev = ackAt[i]!;
  }
  return best;
}

/**
 * Acked key numbers that `master` lacks, through a StandalonePool: pipelined multi-key EXISTS
 * over groups of keys, then one EXISTS per key in the groups that came up short.
 */
async function missingOn(master: NodeAddress): Promise<Set<number>> {
  const check = await StandalonePool.create(master);
  try {
    return await findMissing(ackN, 'demo:', async (cmds) => {
      const p = check.pipeline();
      for (const c of cmds) p.call(c[0]!, ...c.slice(1));
      return (await p.exec()).map((r) => {
        if (r instanceof Error) throw r;
        return Number(r);
      });
    });
  } finally {
    await check.close();
  }
}

// ------------------------------------------------------------------------------- cleanup

let cleaning: Promise<void> | undefined;
function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    stopLoad = true;
    await pool?.close().catch(() => {});
    await topo?.stop().catch(() => {});
  })();
  return cleaning;
}

onInterrupt('the topology', cleanup, progress);

// ------------------------------------------------------------------------------- main

async function main(): Promise<void> {
  const started = Date.now();
  say(`Starting a Sentinel topology (1 master, 2 replicas, 3 sentinels; down-after 1000 ms, failover-timeout 5000 ms)...`);
  topo = await startSentinel({ downAfterMs: 1000, failoverTimeoutMs: 5000 });
  const upAt = Date.now();
  const first = topo.master.address;
  say(`  up in ${upAt - started} ms: master ${fmtAddr(first)}, replicas ${topo.replicas.map((r) => fmtAddr(r.address)).join(', ')}, sentinels ${topo.sentinelAddresses.map(fmtAddr).join(', ')}`);

  pool = await SentinelPool.create(topo.masterName, topo.sentinelAddresses);
  pool.on('failover', (e) => {
    failovers.push(e);
    say(`  * failover event at t=${secs(e.at)}s: ${fmtAddr(e.from)} -> ${fmtAddr(e.to)} (detectedBy ${e.detectedBy})`);
  });
  pool.on('failover-start', (i) => {
    fenceStarts.push({ at: i.at, event: i.event });
    say(`  * failover-start at t=${secs(i.at)}s (${i.event}): writes to ${fmtAddr(i.master)} held`);
  });
  pool.on('failover-abort', (i) => {
    fenceAborts.push({ at: i.at, reason: i.reason });
    say(`  * failover-abort at t=${secs(i.at)}s: ${i.reason}`);
  });
  pool.on('sentinel-down', (i) => sentinelDowns.push({ at: Date.now(), address: i.address, message: i.error.message }));
  pool.on('error', (err) => {
    const kind = errorKind(err);
    const e = poolErrorEvents.get(kind);
    if (e) e.count++;
    else poolErrorEvents.set(kind, { count: 1, first: Date.now(), example: err.message });
  });
  const unwatch = topo.sentinelAddresses.map(watchSwitchMaster);
  say(`SentinelPool connected to ${fmtAddr(pool.master())}. Load: ${WORKERS} workers of idempotent SETs of unique keys.\n`);

  t0 = Date.now();
  const stopProgress = progress.start();
  const workers = Array.from({ length: WORKERS }, () => worker());
  let stoppedProgress = false;
  try {
    await sleep(WARMUP_MS);

    // Fault 1: a planned failover.
    const from1 = await topo.currentMaster();
    let at = Date.now();
    faults.push({ kind: 'SENTINEL FAILOVER', at, target: from1 });
    say(`>>> t=${secs(at)}s SENTINEL FAILOVER ${topo.masterName} (master ${fmtAddr(from1)})`);
    await sendCommand(topo.sentinelAddresses[0]!, ['SENTINEL', 'FAILOVER', topo.masterName]);
    const to1 = await topo.waitForNewMaster(from1, 20_000);
    say(`    sentinels agree on ${fmtAddr(to1)} at t=${secs(Date.now())}s`);
    if (!(await waitForPoolFailover(1, 10_000))) say('    (no failover event from the pool within 10 s!)');
    await sleep(AFTER_SWITCH_MS);

    // Fault 2: crash the new master.
    const from2 = await topo.currentMaster();
    const victim = topo.handleFor(from2);
    if (!victim) throw new Error(`no handle for the current master ${fmtAddr(from2)}`);
    at = Date.now();
    faults.push({ kind: 'SIGKILL', at, target: from2 });
    say(`>>> t=${secs(at)}s SIGKILL the master ${fmtAddr(from2)}`);
    await victim.kill('SIGKILL');
    const to2 = await topo.waitForNewMaster(from2, 30_000);
    say(`    sentinels agree on ${fmtAddr(to2)} at t=${secs(Date.now())}s`);
    if (!(await waitForPoolFailover(2, 15_000))) say('    (no second failover event from the pool within 15 s!)');
    await sleep(AFTER_RECOVERY_MS);

    stopLoad = true;
    const loadEnd = Date.now();
    await Promise.all(workers);
    stopProgress();
    stoppedProgress = true;
    unwatch.forEach((u) => u());

    // ---------------------------------------------------------------- report
    const final = await topo.currentMaster();
    const poolMaster = pool.master();
    say(`\nFinal master ${fmtAddr(final)}${sameAddr(final, poolMaster) ? '' : ` (the pool says ${fmtAddr(poolMaster)}!)`}.`);
    say(`Total acknowledged writes ${int(ackN.length)}, failed commands ${int(errors)}${errorKinds.size ? ':' : '.'}`);
    for (const [kind, e] of errorKinds) {
      say(`  ${kind} x${int(e.count)} (t=${secs(e.first)}s..${secs(e.last)}s): ${e.example}`);
    }

    say('\nFailover events:');
    failovers.forEach((e, i) => {
      const fault = [...faults].reverse().find((f) => f.at <= e.at);
      const base = fault?.at ?? e.at;
      const k = firstAckAtOrAfter(e.at);
      const firstWrite = k < ackAt.length ? ackAt[k]! : undefined;
      const fence = fenceStarts.find((f) => f.at >= base && f.at <= e.at);
      const sw = switchMasters.find((s) => s.at >= base);
      const gap = longestGap(base - 1000, e.at + 2000);
      say(
        `  #${i + 1} after ${fault?.kind ?? '?'}: ${fmtAddr(e.from)} -> ${fmtAddr(e.to)}, detectedBy ${e.detectedBy}; ` +
          `event +${e.at - base} ms after the fault, first successful write after it +${firstWrite !== undefined ? firstWrite - base : '?'} ms` +
          (fence ? `; failover-start (${fence.event}) at +${fence.at - base} ms` : '') +
          (sw ? `; sentinels published +switch-master at +${sw.at - base} ms` : '') +
          `; longest pause between acks ${gap.ms} ms`,
      );
    });
    if (fenceAborts.length) say(`  failover-abort events: ${fenceAborts.map((a) => `t=${secs(a.at)}s ${a.reason}`).join('; ')}`);

    const checkStart = Date.now();
    const missing = await missingOn(final);
    const checkMs = Date.now() - checkStart;
    const [f1, f2] = faults;
    const phases = [
      { name: 'acked before the SENTINEL FAILOVER', from: -Infinity, to: f1!.at },
      { name: 'acked between the SENTINEL FAILOVER and the SIGKILL', from: f1!.at, to: f2!.at },
      { name: 'acked after the SIGKILL', from: f2!.at, to: Infinity },
    ];
    say(`\nAcknowledged writes the final master ${fmtAddr(final)} lacks: ${int(missing.size)} of ${int(ackN.length)} (checked in ${checkMs} ms)`);
    for (const ph of phases) {
      let acked = 0;
      let lost = 0;
      let firstLost = Infinity;
      let lastLost = -Infinity;
      for (let i = 0; i < ackN.length; i++) {
        const a = ackAt[i]!;
        if (a < ph.from || a >= ph.to) continue;
        acked++;
        if (missing.has(ackN[i]!)) {
          lost++;
          firstLost = Math.min(firstLost, a);
          lastLost = Math.max(lastLost, a);
        }
      }
      const where = lost && ph.to !== Infinity ? ` (acked ${firstLost - ph.to} ms to ${lastLost - ph.to} ms before the next fault)` : lost ? ` (acked t=${secs(firstLost)}s..${secs(lastLost)}s)` : '';
      say(`  ${ph.name}: ${int(lost)} of ${int(acked)} missing${where}`);
    }
    if (f2) {
      say(
        '  (Redis replicates asynchronously: writes the killed master acknowledged but had not yet sent to a replica die with it, ' +
          'so some loss at a SIGKILL is inherent; none here means the replica had caught up.)',
      );
    }
    if (sentinelDowns.length || poolErrorEvents.size) {
      say(`\nBackground events of the pool (informational): ${sentinelDowns.length} sentinel-down`);
      for (const [kind, e] of poolErrorEvents) say(`  'error' ${kind} x${e.count} (first at t=${secs(e.first)}s): ${e.example}`);
    }

    // ---------------------------------------------------------------- SVG
    const nb = Math.max(opsPerBucket.length, errPerBucket.length);
    const opsPts: [number, number][] = [];
    const errPts: [number, number][] = [];
    for (let i = 0; i < nb; i++) {
      opsPts.push([(i * BUCKET_MS) / 1000, (opsPerBucket[i] ?? 0) * (1000 / BUCKET_MS)]);
      errPts.push([(i * BUCKET_MS) / 1000, errPerBucket[i] ?? 0]);
    }
    const tsec = (a: number) => rel(a) / 1000;
    const markers: Marker[] = [];
    for (const f of faults) markers.push({ x: tsec(f.at), label: f.kind === 'SIGKILL' ? `SIGKILL :${f.target.port}` : 'SENTINEL FAILOVER', color: '#d62728' });
    for (const s of fenceStarts) markers.push({ x: tsec(s.at), label: `failover-start`, color: '#ff7f0e', dash: '4 3' });
    for (const s of switchMasters.filter((s, i, all) => i === all.findIndex((o) => o.payload === s.payload))) {
      markers.push({ x: tsec(s.at), label: '+switch-master', color: '#7f7f7f', dash: '2 3' });
    }
    for (const e of failovers) markers.push({ x: tsec(e.at), label: `failover -> :${e.to.port} (${e.detectedBy})`, color: '#2ca02c' });
    for (const a of fenceAborts) markers.push({ x: tsec(a.at), label: 'failover-abort', color: '#9467bd', dash: '4 3' });
    const svg = lineChart({
      title: 'redis-ha-pool SentinelPool under a SENTINEL FAILOVER and a SIGKILL of the master',
      subtitle: `${WORKERS} workers of idempotent SETs; ${int(ackN.length)} acked, ${int(errors)} failed, ${int(missing.size)} acked writes missing on the final master; ${BUCKET_MS} ms buckets`,
      xLabel: 'seconds since the load started',
      xMin: 0,
      xMax: Math.ceil(tsec(loadEnd)),
      series: [
        { name: 'acknowledged writes / s', color: '#1f77b4', points: opsPts, step: true, fillOpacity: 0.12 },
        { name: `failed commands per ${BUCKET_MS} ms`, color: '#d62728', points: errPts, axis: 'right', step: true },
      ],
      markers,
    });
    writeFileSync(SVG_PATH, svg);
    say(`\nTimeline written to ${SVG_PATH}`);
    say(`Done in ${((Date.now() - started) / 1000).toFixed(1)} s (topology start-up ${((upAt - started) / 1000).toFixed(1)} s, load ${((loadEnd - t0) / 1000).toFixed(1)} s).`);
  } finally {
    stopLoad = true;
    if (!stoppedProgress) stopProgress();
    unwatch.forEach((u) => u());
    await Promise.allSettled(workers);
  }
}

main()
  .then(
    async () => {
      await cleanup();
      process.exit(0);
    },
    async (err) => {
      progress.breakLine();
      process.stderr.write(`\nDemo failed: ${(err as Error)?.stack ?? err}\n`);
      await cleanup();
      process.exit(1);
    },
  );

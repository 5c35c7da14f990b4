/**
 * The cluster demo: `npm run demo:cluster` (needs redis-server and redis-cli on PATH).
 *
 * 1. Starts a local Redis Cluster (3 masters, 3 replicas, cluster-node-timeout 2000 ms) with
 *    the test helper, and a ClusterPool on it.
 * 2. Runs a steady write load: WORKERS async workers sending idempotent `SET` of unique keys
 *    spread over every slot, plus MIG_WORKERS writing keys of the one slot that migrates.
 * 3. Step 1: a live migration of that slot (SETSLOT IMPORTING/MIGRATING, MIGRATE in batches,
 *    SETSLOT NODE), as a resharding tool does it. Step 2: `CLUSTER FAILOVER` on a replica (a
 *    planned switch of a whole shard). Step 3: SIGKILL of a master (its replica takes over).
 * 4. Prints every step with the time from its start to the first write on the moved slots
 *    acknowledged by their new owner, the longest pause between acknowledged writes on those
 *    slots, the redirects and topology changes the pool saw, and the failed commands by class;
 *    writes `cluster-timeline.svg` (acknowledged writes / s and failed commands per 100 ms,
 *    faults and first topology / MOVED events marked).
 *
 * Which node acknowledged a write comes from the pool's own `redis-ha-pool:command` tracing
 * channel (a worker tags its writes with the slot through an AsyncLocalStorage the `start`
 * subscriber reads), the redirects and topology changes from `redis-ha-pool:redirect` and
 * `redis-ha-pool:topology`: the demo reads the same diagnostics an APM agent would.
 *
 * Everything is stopped at the end, on an error and on Ctrl-C.
 * Environment: DEMO_WORKERS (default 40), DEMO_SVG (output path, default ./cluster-timeline.svg).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import dc from 'node:diagnostics_channel';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { ClusterPool, DIAGNOSTICS_CHANNELS, keySlot, type CommandTraceContext, type RedirectDiagnostic, type TopologyDiagnostic } from '../../src/index.js';
import type { NodeAddress } from '../../src/types.js';
import { sendCommand } from '../support/mini-client.js';
import { startCluster, type ClusterTopology, type ServerHandle } from '../support/topology.js';
import { lineChart, type Marker } from './svg.js';
import { bumpBucket, errorKind, onInterrupt, Progress, sumBefore } from './demo-kit.js';

const WORKERS = Number(process.env.DEMO_WORKERS ?? 40);
const MIG_WORKERS = 5;
const SVG_PATH = path.resolve(process.env.DEMO_SVG ?? 'cluster-timeline.svg');
const NODE_TIMEOUT_MS = 2000;
const WARMUP_MS = 3000;
const SETTLE_MS = 3000;
const BUCKET_MS = 100;
const MIG_TAG = '{demo-mig}';
const MIG_SLOT = keySlot(MIG_TAG);

const fmtAddr = (a: NodeAddress) => `${a.host}:${a.port}`;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const int = (n: number) => Math.round(n).toLocaleString('en-US');

// ------------------------------------------------------------------------------- state

let topo: ClusterTopology | undefined;
let pool: ClusterPool | undefined;
let t0 = Date.now();
const rel = (at: number) => at - t0;
const secs = (at: number) => (rel(at) / 1000).toFixed(2);

const opsPerBucket: number[] = [];
const errPerBucket: number[] = [];
let acked = 0;
let errors = 0;
let stopLoad = false;
const errorLog: { at: number; kind: string; message: string }[] = [];
/** Acknowledged writes: slot, the node that acknowledged it, when. */
const acks: { slot: number; port: number; at: number }[] = [];
const redirects: (RedirectDiagnostic & { at: number })[] = [];
const topologyChanges: (TopologyDiagnostic & { at: number })[] = [];

interface Step {
  name: string;
  short: string;
  at: number;
  /** When the step's commands were done (the handover complete, the failover confirmed). */
  done: number;
  /** Slots that changed owner, and the owner before and after. */
  slots: (slot: number) => boolean;
  from: NodeAddress;
  to: NodeAddress;
}
const steps: Step[] = [];

function bump(arr: number[], at: number): void {
  bumpBucket(arr, Math.floor(rel(at) / BUCKET_MS));
}

// ------------------------------------------------------------------------------- diagnostics

/** The slot a worker's write is for, read by the tracing channel's `start` subscriber. */
const writeSlot = new AsyncLocalStorage<number>();
const slotOfTrace = new WeakMap<CommandTraceContext, number>();
const traceHandlers = {
  start(ctx: CommandTraceContext) {
    const slot = writeSlot.getStore();
    if (slot !== undefined) slotOfTrace.set(ctx, slot);
  },
  end() {},
  asyncStart() {},
  error() {},
  asyncEnd(ctx: CommandTraceContext) {
    const slot = slotOfTrace.get(ctx);
    if (slot !== undefined && ctx.error === undefined) acks.push({ slot, port: ctx.address.port, at: Date.now() });
  },
};
const onRedirect = (m: unknown) => void redirects.push({ ...(m as RedirectDiagnostic), at: Date.now() });
const onTopology = (m: unknown) => {
  const c = m as TopologyDiagnostic;
  topologyChanges.push({ ...c, at: Date.now() });
  say(`  * topology at t=${secs(Date.now())}s: ${c.movedSlots} slots moved${c.added.length ? `, added ${c.added.join(' ')}` : ''}${c.removed.length ? `, removed ${c.removed.join(' ')}` : ''}`);
};
const commandChannel = dc.tracingChannel<object, CommandTraceContext>(DIAGNOSTICS_CHANNELS.command);
function subscribe(): () => void {
  commandChannel.subscribe(traceHandlers);
  dc.subscribe(DIAGNOSTICS_CHANNELS.redirect, onRedirect);
  dc.subscribe(DIAGNOSTICS_CHANNELS.topology, onTopology);
  return () => {
    commandChannel.unsubscribe(traceHandlers);
    dc.unsubscribe(DIAGNOSTICS_CHANNELS.redirect, onRedirect);
    dc.unsubscribe(DIAGNOSTICS_CHANNELS.topology, onTopology);
  };
}

// ------------------------------------------------------------------------------- output

function progressLine(): string {
  const r = pool?.stats().redirects;
  return `t=${secs(Date.now()).padStart(6)}s  ${int(opsLastSecond()).padStart(7)} ops/s  errors ${int(errors)}  acked ${int(acked)}  moved ${r?.moved ?? 0} ask ${r?.ask ?? 0} tryagain ${r?.tryagain ?? 0} clusterdown ${r?.clusterdown ?? 0} conn-retries ${r?.connection ?? 0}`;
}

const progress = new Progress(progressLine);
const say = (line: string): void => progress.say(line);

function opsLastSecond(): number {
  return sumBefore(opsPerBucket, Math.floor(rel(Date.now()) / BUCKET_MS), 10);
}

// ------------------------------------------------------------------------------- load

let nextKey = 0;
async function worker(keyOf: (n: number) => string): Promise<void> {
  const w = pool!.with({ idempotent: true });
  while (!stopLoad) {
    const n = nextKey++;
    const key = keyOf(n);
    try {
      await writeSlot.run(keySlot(key), () => w.call('SET', key, String(n)));
      acked++;
      bump(opsPerBucket, Date.now());
    } catch (err) {
      if (stopLoad) return; // the pool closing under us: not a failure of the run
      const at = Date.now();
      errors++;
      bump(errPerBucket, at);
      const kind = errorKind(err);
      if (!errorLog.some((e) => e.kind === kind)) say(`  ! first ${kind} at t=${secs(at)}s: ${(err as Error)?.message ?? err}`);
      errorLog.push({ at, kind, message: (err as Error)?.message ?? String(err) });
      await sleep(10); // no hot loop if the pool rejects at once
    }
  }
}

// ------------------------------------------------------------------------------- cluster helpers

/** Slot ranges per master port, from CLUSTER SLOTS on a live node. */
async function slotOwners(): Promise<Map<number, Array<[number, number]>>> {
  const node = topo!.nodes.find((n) => n.isAlive() && !n.isPaused())!;
  const reply = (await sendCommand(node.address, ['CLUSTER', 'SLOTS'])) as unknown as Array<[number, number, [string, number]]>;
  const owners = new Map<number, Array<[number, number]>>();
  for (const [start, end, [, port]] of reply) {
    const list = owners.get(Number(port)) ?? [];
    list.push([Number(start), Number(end)]);
    owners.set(Number(port), list);
  }
  return owners;
}

const inRanges = (ranges: Array<[number, number]>) => (slot: number) => ranges.some(([a, b]) => slot >= a && slot <= b);

async function replicaOf(master: ServerHandle): Promise<ServerHandle> {
  const id = await master.cli('CLUSTER', 'MYID');
  for (const r of await topo!.replicas()) {
    const info = await r.cli('CLUSTER', 'NODES');
    const me = info.split('\n').find((l) => l.includes('myself'));
    if (me?.split(' ')[3] === id) return r;
  }
  throw new Error(`no replica of ${fmtAddr(master.address)}`);
}

async function waitRole(node: ServerHandle, role: 'master', timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  while ((await node.cli('ROLE')).split('\n')[0] !== role) {
    if (Date.now() > until) throw new Error(`${fmtAddr(node.address)} did not become ${role} within ${timeoutMs} ms`);
    await sleep(50);
  }
}

async function migrateSlot(slot: number, source: ServerHandle, target: ServerHandle): Promise<number> {
  const sourceId = await source.cli('CLUSTER', 'MYID');
  const targetId = await target.cli('CLUSTER', 'MYID');
  await target.cli('CLUSTER', 'SETSLOT', String(slot), 'IMPORTING', sourceId);
  await source.cli('CLUSTER', 'SETSLOT', String(slot), 'MIGRATING', targetId);
  let moved = 0;
  for (;;) {
    const keys = (await source.cli('CLUSTER', 'GETKEYSINSLOT', String(slot), '200')).split('\n').filter(Boolean);
    if (keys.length === 0) break;
    await source.cli('MIGRATE', target.host, String(target.port), '', '0', '5000', 'KEYS', ...keys);
    moved += keys.length;
    await sleep(20); // a resharding tool moves batches one after another, under load
  }
  await target.cli('CLUSTER', 'SETSLOT', String(slot), 'NODE', targetId);
  await source.cli('CLUSTER', 'SETSLOT', String(slot), 'NODE', targetId);
  for (const m of await topo!.masters()) {
    if (m.port !== source.port && m.port !== target.port) await m.cli('CLUSTER', 'SETSLOT', String(slot), 'NODE', targetId);
  }
  return moved;
}

// ------------------------------------------------------------------------------- report

function stepReport(s: Step, end: number): string[] {
  const mine = acks.filter((a) => s.slots(a.slot) && a.at >= s.at - 1000 && a.at <= end);
  const firstNew = mine.find((a) => a.at >= s.at && a.port === s.to.port);
  let gap = { ms: 0, start: s.at };
  let prev = s.at;
  for (const a of mine) {
    if (a.at < s.at) continue;
    if (a.at - prev > gap.ms) gap = { ms: a.at - prev, start: prev };
    prev = a.at;
  }
  const moved = redirects.filter((r) => r.at >= s.at && r.at <= end && r.kind === 'moved' && s.slots(r.slot));
  const asks = redirects.filter((r) => r.at >= s.at && r.at <= end && r.kind === 'ask' && s.slots(r.slot));
  const topoCh = topologyChanges.filter((c) => c.at >= s.at && c.at <= end);
  const errs = new Map<string, { n: number; example: string }>();
  for (const e of errorLog) {
    if (e.at < s.at || e.at > end) continue;
    const x = errs.get(e.kind);
    if (x) x.n++;
    else errs.set(e.kind, { n: 1, example: e.message });
  }
  const lines = [
    `  ${s.name}: ${fmtAddr(s.from)} -> ${fmtAddr(s.to)}; commands done +${s.done - s.at} ms`,
    `    first write on the moved slots acknowledged by ${fmtAddr(s.to)}: ${firstNew ? `+${firstNew.at - s.at} ms` : 'none!'}; ` +
      `longest pause between acknowledged writes on those slots ${gap.ms} ms (from +${gap.start - s.at} ms)`,
    `    pool saw: ${moved.length} MOVED${moved[0] ? ` (first +${moved[0].at - s.at} ms)` : ''}, ${asks.length} ASK${asks[0] ? ` (first +${asks[0].at - s.at} ms)` : ''}, ` +
      `${topoCh.length} topology change${topoCh.length === 1 ? '' : 's'}${topoCh[0] ? ` (first +${topoCh[0].at - s.at} ms, ${topoCh.reduce((n, c) => n + c.movedSlots, 0)} slots)` : ''}`,
    `    failed commands: ${errs.size === 0 ? 'none' : [...errs].map(([k, v]) => `${k} x${v.n}`).join(', ')}`,
  ];
  for (const [k, v] of errs) lines.push(`      ${k}: ${v.example}`);
  return lines;
}

// ------------------------------------------------------------------------------- cleanup

let unsubscribe: (() => void) | undefined;
let cleaning: Promise<void> | undefined;
function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    stopLoad = true;
    unsubscribe?.();
    await pool?.close().catch(() => {});
    await topo?.stop().catch(() => {});
  })();
  return cleaning;
}

onInterrupt('the cluster', cleanup, progress);

// ------------------------------------------------------------------------------- main

async function main(): Promise<void> {
  const started = Date.now();
  say(`Starting a Redis Cluster (3 masters, 3 replicas; cluster-node-timeout ${NODE_TIMEOUT_MS} ms)...`);
  topo = await startCluster({ masters: 3, replicasPerMaster: 1, nodeTimeoutMs: NODE_TIMEOUT_MS });
  const upAt = Date.now();
  const masters = await topo.masters();
  say(`  up in ${upAt - started} ms: masters ${masters.map((m) => fmtAddr(m.address)).join(', ')}, replicas ${(await topo.replicas()).map((r) => fmtAddr(r.address)).join(', ')}`);

  pool = await ClusterPool.create(topo.seeds);
  pool.on('error', () => {}); // informational; failures reach the workers as rejections
  unsubscribe = subscribe();
  say(`ClusterPool connected. Load: ${WORKERS} workers of idempotent SETs of unique keys over all slots, ${MIG_WORKERS} more on slot ${MIG_SLOT} (${MIG_TAG}).\n`);

  t0 = Date.now();
  const stopProgress = progress.start();
  const workers = [
    ...Array.from({ length: WORKERS }, () => worker((n) => `demo:${n}`)),
    ...Array.from({ length: MIG_WORKERS }, () => worker((n) => `${MIG_TAG}:${n}`)),
  ];
  let stoppedProgress = false;
  try {
    await sleep(WARMUP_MS);

    // Step 1: a live migration of one slot.
    const source = await topo.nodeForSlot(MIG_SLOT);
    const target = (await topo.masters()).find((m) => m.port !== source.port)!;
    let at = Date.now();
    say(`>>> t=${secs(at)}s step 1: live migration of slot ${MIG_SLOT} from ${fmtAddr(source.address)} to ${fmtAddr(target.address)}`);
    const keys = await migrateSlot(MIG_SLOT, source, target);
    let done = Date.now();
    say(`    ${int(keys)} keys migrated, slot handed over at t=${secs(done)}s`);
    steps.push({ name: `live migration of slot ${MIG_SLOT}`, short: `migrate slot ${MIG_SLOT}`, at, done, slots: (s) => s === MIG_SLOT, from: source.address, to: target.address });
    await sleep(SETTLE_MS);

    // Step 2: CLUSTER FAILOVER on the replica of a master (not the one that just imported the slot).
    const owners = await slotOwners();
    const planned = (await topo.masters()).find((m) => m.port !== target.port)!;
    const promoted = await replicaOf(planned);
    const plannedSlots = inRanges(owners.get(planned.port) ?? []);
    at = Date.now();
    say(`>>> t=${secs(at)}s step 2: CLUSTER FAILOVER on ${fmtAddr(promoted.address)} (replica of ${fmtAddr(planned.address)})`);
    await promoted.cli('CLUSTER', 'FAILOVER');
    await waitRole(promoted, 'master', 20_000);
    await topo.waitForClusterOk(20_000);
    done = Date.now();
    say(`    ${fmtAddr(promoted.address)} is master, cluster ok at t=${secs(done)}s`);
    steps.push({ name: 'CLUSTER FAILOVER', short: `CLUSTER FAILOVER :${promoted.port}`, at, done, slots: plannedSlots, from: planned.address, to: promoted.address });
    await sleep(SETTLE_MS);

    // Step 3: SIGKILL a master; its replica takes over after cluster-node-timeout.
    const owners2 = await slotOwners();
    const victim = (await topo.masters()).find((m) => m.port !== promoted.port && m.port !== target.port) ?? (await topo.masters())[0]!;
    const heir = await replicaOf(victim);
    const victimSlots = inRanges(owners2.get(victim.port) ?? []);
    at = Date.now();
    say(`>>> t=${secs(at)}s step 3: SIGKILL the master ${fmtAddr(victim.address)} (replica ${fmtAddr(heir.address)})`);
    await victim.kill('SIGKILL');
    await waitRole(heir, 'master', 30_000);
    await topo.waitForClusterOk(30_000);
    done = Date.now();
    say(`    ${fmtAddr(heir.address)} is master, cluster ok at t=${secs(done)}s`);
    steps.push({ name: `SIGKILL of master ${fmtAddr(victim.address)}`, short: `SIGKILL :${victim.port}`, at, done, slots: victimSlots, from: victim.address, to: heir.address });
    await sleep(SETTLE_MS);

    stopLoad = true;
    const loadEnd = Date.now();
    await Promise.all(workers);
    stopProgress();
    stoppedProgress = true;

    // ---------------------------------------------------------------- report
    const kinds = new Map<string, number>();
    for (const e of errorLog) kinds.set(e.kind, (kinds.get(e.kind) ?? 0) + 1);
    say(`\nTotal acknowledged writes ${int(acked)}, failed commands ${int(errors)}${kinds.size ? ': ' + [...kinds].map(([k, n]) => `${k} x${int(n)}`).join(', ') : ''}.`);
    const r = pool.stats().redirects;
    say(`Redirects followed: ${r.moved} MOVED, ${r.ask} ASK, ${r.tryagain} TRYAGAIN, ${r.clusterdown} CLUSTERDOWN, ${r.connection} retries after a connection error; ${topologyChanges.length} topology changes.`);
    say('\nSteps (times from the start of each step):');
    steps.forEach((s, i) => {
      for (const line of stepReport(s, steps[i + 1]?.at ?? loadEnd)) say(line);
    });

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
    steps.forEach((s, i) => {
      const end = steps[i + 1]?.at ?? loadEnd;
      markers.push({ x: tsec(s.at), label: s.short, color: '#d62728' });
      const firstMoved = redirects.find((m) => m.kind === 'moved' && m.at >= s.at && m.at <= end && s.slots(m.slot));
      if (firstMoved) markers.push({ x: tsec(firstMoved.at), label: 'first MOVED', color: '#ff7f0e', dash: '4 3' });
      const firstTopo = topologyChanges.find((c) => c.at >= s.at && c.at <= end);
      if (firstTopo) markers.push({ x: tsec(firstTopo.at), label: `topology (${firstTopo.movedSlots} slots)`, color: '#7f7f7f', dash: '2 3' });
      const firstNew = acks.find((a) => a.at >= s.at && a.port === s.to.port && s.slots(a.slot));
      if (firstNew) markers.push({ x: tsec(firstNew.at), label: `first ack by :${s.to.port}`, color: '#2ca02c' });
    });
    const svg = lineChart({
      title: 'redis-ha-pool ClusterPool under a live slot migration, a CLUSTER FAILOVER and a SIGKILL of a master',
      subtitle: `${WORKERS + MIG_WORKERS} workers of idempotent SETs; ${int(acked)} acked, ${int(errors)} failed; ${r.moved} MOVED, ${r.ask} ASK; ${BUCKET_MS} ms buckets`,
      xLabel: 'seconds since the load started',
      xMin: 0,
      xMax: Math.ceil(tsec(loadEnd)),
      height: 560,
      series: [
        { name: 'acknowledged writes / s', color: '#1f77b4', points: opsPts, step: true, fillOpacity: 0.12 },
        { name: `failed commands per ${BUCKET_MS} ms`, color: '#d62728', points: errPts, axis: 'right', step: true },
      ],
      markers,
    });
    writeFileSync(SVG_PATH, svg);
    say(`\nTimeline written to ${SVG_PATH}`);
    say(`Done in ${((Date.now() - started) / 1000).toFixed(1)} s (cluster start-up ${((upAt - started) / 1000).toFixed(1)} s, load ${((loadEnd - t0) / 1000).toFixed(1)} s).`);
  } finally {
    stopLoad = true;
    if (!stoppedProgress) stopProgress();
    await Promise.allSettled(workers);
  }
}

main().then(
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

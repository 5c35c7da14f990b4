/**
 * The fleet benchmark's run (issue 29), shared by `npm run bench:fleet` (fleet.ts) and the
 * smoke test (test/integration/fleet-smoke.test.ts): a real cluster started here and stopped
 * by PID, N forked client processes (fleet-child.ts) under steady load, the faults in order,
 * and per fault what the fleet did to the cluster and what the fleet saw.
 *
 * Per fault:
 * - T0 is when the fault is made; the promotion is when the shard's replica first answers
 *   ROLE master (polled every 10 ms; for a migration, when the last SETSLOT NODE returned).
 * - Slot-map requests (CLUSTER SLOTS/SHARDS/NODES) and new connections per node per second,
 *   from `INFO commandstats` / `INFO stats` sampled once a second, from T0 to the window's end.
 * - "Serves": per process, the end of its first successful write to a moved slot after the
 *   promotion (a probe SET every 20 ms); the fleet's figure is the slowest process's.
 * - Failed calls by error class and p99 latency of the load, over the phase.
 * Acknowledged writes are read back on the final cluster once every fault is over.
 */
import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { keySlot } from '../../src/index.js';
import type { NodeAddress } from '../../src/types.js';
import { replicaOf, waitKnownAsReplica } from '../support/cluster-ops.js';
import { ReplyError } from '../support/resp-wire.js';
import { FaultProxy } from '../support/fault-proxy.js';
import { startCluster, waitFor, type ClusterTopology, type ServerHandle } from '../support/topology.js';
import { countLost, NodeSampler, RawConn, slotOwners, waitPromoted } from './fleet-nodes.js';
import { percentile } from './lib.js';

export type FleetClient = 'ha' | 'ioredis' | 'node-redis';
export type FleetFault = 'kill' | 'failover' | 'migrate' | 'blackhole';

export interface FleetConfig {
  client: FleetClient;
  procs: number;
  masters: number;
  faults: FleetFault[];
  /** Calls per second per process. */
  rate: number;
  /** How long each fault's phase lasts after the promotion. */
  windowMs: number;
  /** cluster-node-timeout. */
  nodeTimeoutMs: number;
  /** Slots moved by the migration fault. */
  migrateSlots: number;
  /** Steady load before each fault, once every process has acknowledged writes (default 3000). */
  warmupMs?: number;
  log?: (line: string) => void;
  /** Reuse a running cluster (the caller stops it); else one is started and stopped here. */
  topology?: ClusterTopology;
}

export interface FaultResult {
  fault: FleetFault;
  client: FleetClient;
  /** ms from T0 to the promotion. */
  promotionMs: number;
  /** Slowest process: ms from the promotion to its first served write on a moved slot (-1: a process never served). */
  servedAfterPromotionMs: number;
  /** Processes that never served a moved slot within the phase. */
  notServed: number;
  slotMap: { peakPerNode: number; peakNode: string; peakNodeRole: string; total: number; maxNodeTotal: number };
  conns: { peakPerNode: number; peakNode: string; total: number };
  failures: Record<string, number>;
  ops: number;
  p99Ms: number;
  maxMs: number;
  /** Most clients connected to one node just before the fault (the harness's sampler counts as one). */
  clientsPerNode: number;
}

export interface FleetResult {
  config: Omit<FleetConfig, 'log' | 'topology'>;
  faults: FaultResult[];
  lost: number;
  checked: number;
  lostExamples: string[];
}

const here = path.dirname(fileURLToPath(import.meta.url));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const addr = (n: ServerHandle | NodeAddress) => `${n.host}:${n.port}`;

interface Child {
  proc: ChildProcess;
  messages: Array<Record<string, unknown>>;
  waiters: Array<{ type: string; resolve: (m: Record<string, unknown>) => void }>;
}

function spawnChild(i: number, env: Record<string, string>): Child {
  const proc = fork(path.join(here, 'fleet-child.ts'), [], {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, ...env, FLEET_PROC: String(i) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const child: Child = { proc, messages: [], waiters: [] };
  proc.on('message', (m: Record<string, unknown>) => {
    const w = child.waiters.findIndex((x) => x.type === m.type);
    if (w >= 0) child.waiters.splice(w, 1)[0]!.resolve(m);
    else child.messages.push(m);
  });
  return child;
}

function nextMessage(c: Child, type: string, timeoutMs: number): Promise<Record<string, unknown>> {
  const i = c.messages.findIndex((m) => m.type === type || m.type === 'failed');
  if (i >= 0) {
    const m = c.messages.splice(i, 1)[0]!;
    return m.type === 'failed' ? Promise.reject(new Error(String(m.error))) : Promise.resolve(m);
  }
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`process ${c.proc.pid}: no '${type}' within ${timeoutMs} ms`)), timeoutMs);
    const onExit = (code: number | null) => reject(new Error(`process ${c.proc.pid} exited (${code}) before '${type}'`));
    c.proc.once('exit', onExit);
    c.waiters.push({ type, resolve: (m) => { clearTimeout(t); c.proc.off('exit', onExit); resolve(m); } });
    c.waiters.push({ type: 'failed', resolve: (m) => { clearTimeout(t); reject(new Error(String(m.error))); } });
  });
}

/** Asks every process for its status (acknowledged writes; whether it served a moved slot after `since`). */
function statuses(children: Child[], since: number): Promise<Array<Record<string, unknown>>> {
  return Promise.all(children.map((c) => {
    c.proc.send({ type: 'status', since });
    return nextMessage(c, 'status', 30_000);
  }));
}

/** A hash tag whose slot is one of `slots` (probe keys `{tag}:p<proc>` stay in it). */
function tagsIn(slots: ReadonlySet<number>, count: number): string[] {
  const out: string[] = [];
  for (let i = 0; out.length < count && i < 10_000_000; i++) {
    if (slots.has(keySlot(`fleet-${i}`))) out.push(`{fleet-${i}}`);
  }
  return out;
}

/** Current masters serving slots, in slot order, with their slots. */
async function mastersWithSlots(topo: ClusterTopology): Promise<Array<{ node: ServerHandle; slots: Set<number> }>> {
  const live = (await topo.masters())[0]!;
  const owners = await slotOwners(live.address);
  const by = new Map<string, Set<number>>();
  owners.forEach((o, slot) => {
    if (!by.has(o)) by.set(o, new Set());
    by.get(o)!.add(slot);
  });
  return [...by].map(([a, slots]) => {
    const [host, port] = a.split(':');
    return { node: topo.handleFor({ host: host!, port: Number(port) })!, slots };
  });
}

export async function runFleet(cfg: FleetConfig): Promise<FleetResult> {
  const log = cfg.log ?? (() => {});
  const topo = cfg.topology ?? (await startCluster({ masters: cfg.masters, replicasPerMaster: 1, nodeTimeoutMs: cfg.nodeTimeoutMs }));
  const children: Child[] = [];
  let proxy: FaultProxy | undefined;
  const sampler = new NodeSampler(topo.nodes.map((n) => n.address));
  try {
    const initial = await mastersWithSlots(topo);
    // The black-hole target sits behind a proxy from the start: only the fleet's traffic to it
    // goes through it (the cluster bus and replication stay direct, as a client-side network
    // fault would leave them), and the node itself is paused at the fault so the cluster
    // fails it over.
    const bh = cfg.faults.includes('blackhole') ? initial[initial.length - 1]! : undefined;
    const nat: Record<string, string> = {};
    if (bh) {
      proxy = await FaultProxy.start(bh.node.address, { name: 'blackhole' });
      nat[addr(bh.node)] = addr(proxy.address);
    }
    const seeds = topo.nodes.filter((n) => !bh || n.port !== bh.node.port).slice(0, 3).map(addr);
    sampler.start();
    log(`[fleet] ${cfg.client}: ${cfg.procs} processes, ${cfg.masters} masters, ${cfg.rate} calls/s each`);
    for (let i = 0; i < cfg.procs; i++) {
      children.push(spawnChild(i, { FLEET_CLIENT: cfg.client, FLEET_RATE: String(cfg.rate), FLEET_SEEDS: JSON.stringify(seeds), FLEET_NAT: JSON.stringify(nat) }));
    }
    await Promise.all(children.map((c) => nextMessage(c, 'ready', 180_000)));
    log('[fleet] every process is connected and loading');
    await waitFor(async () => (await statuses(children, 0)).every((st) => (st.acked as number) > 0), 'every process to acknowledge writes', 60_000);
    const used = new Set<number>(bh ? [bh.node.port] : []);
    const results: FaultResult[] = [];
    for (const fault of cfg.faults) {
      const shards = (await mastersWithSlots(topo)).filter((s) => !used.has(s.node.port));
      const victim = fault === 'blackhole' ? bh! : shards[0]!;
      used.add(victim.node.port);
      let moved = victim.slots;
      let migrateTarget: ServerHandle | undefined;
      if (fault === 'migrate') {
        migrateTarget = shards[1]!.node;
        used.add(migrateTarget.port);
        moved = new Set([...victim.slots].slice(0, cfg.migrateSlots));
      }
      const replica = fault === 'migrate' ? undefined : await replicaOf(topo, victim.node);
      if (fault === 'failover') await prepareFailover(topo, replica!);
      const probeKeys = tagsIn(moved, 3);
      await Promise.all(children.map(async (c) => {
        c.proc.send({ type: 'phase', name: fault, probeKeys });
        await nextMessage(c, 'phase-started', 30_000);
      }));
      // Steady state (connections made, the load running) before the fault.
      await sleep(cfg.warmupMs ?? 3000);
      const t0 = Date.now();
      log(`[fleet] ${fault} on ${addr(victim.node)} (${moved.size} slots)`);
      let promoted: number;
      if (fault === 'kill') {
        await victim.node.kill('SIGKILL');
        promoted = await waitPromoted(replica!.address, 60_000);
      } else if (fault === 'failover') {
        await replica!.cli('CLUSTER', 'FAILOVER');
        promoted = await waitPromoted(replica!.address, 60_000);
      } else if (fault === 'migrate') {
        await migrateSlots(topo, [...moved], victim.node, migrateTarget!);
        promoted = Date.now();
      } else {
        proxy!.blackhole();
        victim.node.pause();
        promoted = await waitPromoted(replica!.address, 60_000);
      }
      log(`[fleet] promotion after ${promoted - t0} ms`);
      // The window measures what the fleet does after the promotion; it lasts at least until
      // every process has served a moved slot (a smoke test asks for no more than that).
      await Promise.all([
        sleep(cfg.windowMs),
        // A client that never serves them (seen with node-redis) is reported as such, not waited for.
        waitFor(async () => (await statuses(children, promoted)).every((st) => st.served === true), 'every process to serve the moved slots', 30_000)
          .catch(() => log('[fleet] not every process served the moved slots within 30 s')),
      ]);
      const end = Date.now();
      const phases = await Promise.all(children.map(async (c) => {
        c.proc.send({ type: 'end-phase' });
        return nextMessage(c, 'phase', 30_000);
      }));
      const special = new Map<string, string>([[addr(victim.node), 'failed master']]);
      if (replica) special.set(addr(replica), 'promoted replica');
      if (migrateTarget) special.set(addr(migrateTarget), 'migration target');
      results.push(summarize(fault, cfg.client, t0, promoted, end, phases, sampler, special));
      log(`[fleet] ${JSON.stringify(results[results.length - 1])}`);
      // Back to a whole cluster before the next fault.
      if (fault === 'kill') await victim.node.restart();
      if (fault === 'blackhole') {
        victim.node.resume();
        await proxy!.heal();
      }
      await topo.waitForClusterOk(120_000);
    }
    const acked = new Map<number, number[]>();
    await Promise.all(children.map(async (c, i) => {
      c.proc.send({ type: 'finish' });
      const m = await nextMessage(c, 'finished', 60_000);
      acked.set(i, m.acked as number[]);
    }));
    const live = (await topo.masters())[0]!;
    const check = await countLost(live.address, acked);
    log(`[fleet] ${check.checked} acknowledged writes read back, ${check.lost} lost`);
    const { log: _l, topology: _t, ...config } = cfg;
    return { config, faults: results, lost: check.lost, checked: check.checked, lostExamples: check.examples };
  } finally {
    sampler.stop();
    for (const c of children) if (c.proc.exitCode === null) c.proc.kill('SIGKILL');
    await proxy?.close();
    if (!cfg.topology) await topo.stop();
  }
}

/** A manual failover needs the replica in sync and known as one by every master. */
async function prepareFailover(topo: ClusterTopology, replica: ServerHandle): Promise<void> {
  await waitFor(async () => /master_link_status:up/.test(await replica.cli('INFO', 'replication')), 'the replica to be in sync', 30_000);
  await waitKnownAsReplica(topo, replica);
}

/**
 * IMPORTING/MIGRATING for every slot, then per slot its keys (MIGRATE) and SETSLOT NODE on
 * every master, over raw connections: redis-cli would open a connection per step, and those
 * would count among the "new connections" the benchmark measures.
 */
async function migrateSlots(topo: ClusterTopology, slots: number[], source: ServerHandle, target: ServerHandle): Promise<void> {
  const masters = await topo.masters();
  const conns = new Map<number, RawConn>();
  const on = async (n: ServerHandle) => {
    let c = conns.get(n.port);
    if (!c) conns.set(n.port, (c = await RawConn.open(n.address, 2000)));
    return c;
  };
  const ask = async (n: ServerHandle, cmd: (string | number)[]) => {
    const r = await (await on(n)).ask(cmd, 10_000);
    if (r instanceof ReplyError) throw new Error(`${cmd.join(' ')} on ${addr(n)}: ${r.message}`);
    return r;
  };
  try {
    const sourceId = String(await ask(source, ['CLUSTER', 'MYID']));
    const targetId = String(await ask(target, ['CLUSTER', 'MYID']));
    for (const slot of slots) {
      await ask(target, ['CLUSTER', 'SETSLOT', slot, 'IMPORTING', sourceId]);
      await ask(source, ['CLUSTER', 'SETSLOT', slot, 'MIGRATING', targetId]);
    }
    for (const slot of slots) {
      for (;;) {
        const keys = (await ask(source, ['CLUSTER', 'GETKEYSINSLOT', slot, 1000])) as string[];
        if (!keys.length) break;
        await ask(source, ['MIGRATE', target.host, target.port, '', 0, 5000, 'KEYS', ...keys]);
      }
      await ask(target, ['CLUSTER', 'SETSLOT', slot, 'NODE', targetId]);
      await ask(source, ['CLUSTER', 'SETSLOT', slot, 'NODE', targetId]);
      for (const m of masters) if (m.port !== source.port && m.port !== target.port) await ask(m, ['CLUSTER', 'SETSLOT', slot, 'NODE', targetId]);
    }
  } finally {
    for (const c of conns.values()) c.close();
  }
}

function summarize(fault: FleetFault, client: FleetClient, t0: number, promoted: number, end: number, phases: Array<Record<string, unknown>>, sampler: NodeSampler, special: ReadonlyMap<string, string>): FaultResult {
  const failures: Record<string, number> = {};
  const latencies: number[] = [];
  let ops = 0;
  let slowest = 0;
  let notServed = 0;
  for (const p of phases) {
    for (const [k, v] of Object.entries(p.failures as Record<string, number>)) failures[k] = (failures[k] ?? 0) + v;
    for (const x of p.latencies as number[]) latencies.push(x);
    ops += p.ops as number;
    const served = (p.probes as Array<[number, number, number]>).filter(([, e, ok]) => ok && e >= promoted).map(([, e]) => e);
    if (!served.length) notServed++;
    else slowest = Math.max(slowest, Math.min(...served) - promoted);
  }
  latencies.sort((a, b) => a - b);
  const role = (key: string) => special.get(key) ?? 'other';
  const sm = sampler.rates('slotMap', t0 - 1000, end);
  const cn = sampler.rates('conns', t0 - 1000, end);
  const top = (m: Map<string, { peak: number; total: number }>) => [...m].sort((a, b) => b[1].peak - a[1].peak)[0] ?? ['', { peak: 0, total: 0 }];
  const [smNode, smTop] = top(sm);
  const [cnNode, cnTop] = top(cn);
  return {
    fault,
    client,
    promotionMs: promoted - t0,
    servedAfterPromotionMs: notServed ? -1 : slowest,
    notServed,
    slotMap: { peakPerNode: smTop.peak, peakNode: smNode, peakNodeRole: role(smNode), total: [...sm.values()].reduce((n, x) => n + x.total, 0), maxNodeTotal: Math.max(0, ...[...sm.values()].map((x) => x.total)) },
    conns: { peakPerNode: cnTop.peak, peakNode: cnNode, total: [...cn.values()].reduce((n, x) => n + x.total, 0) },
    failures,
    ops,
    p99Ms: Math.round(percentile(latencies, 99) * 10) / 10,
    maxMs: Math.round((latencies[latencies.length - 1] ?? 0) * 10) / 10,
    clientsPerNode: sampler.maxClients(t0),
  };
}

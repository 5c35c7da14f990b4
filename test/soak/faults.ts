/**
 * The soak's faults, one list per mode, and the checks that the topology has settled after
 * each. Process faults act on the real nodes (by PID through the topology handles); network
 * faults act on the fault proxies the pool reaches the nodes through, so they hit the client
 * alone (replication, sentinel monitoring and the cluster bus go direct).
 */
import { keySlot, type ClusterPool, type SentinelPool } from '../../src/index.js';
import type { NodeAddress } from '../../src/types.js';
import type { ProxySet } from '../support/fault-proxy.js';
import { parseInfo, sendCommand, sendCommands } from '../support/mini-client.js';
import type { RespValue } from '../support/resp-wire.js';
import { fmt, sameAddr, waitSettled } from '../support/sentinel-helpers.js';
import type { ClusterTopology, SentinelTopology, ServerHandle } from '../support/topology-types.js';
import { waitFor } from '../support/wait.js';
import type { Load, Window } from './load.js';

// ------------------------------------------------------------------ seeded randomness

/** mulberry32: small, fast, and the same sequence for the same seed on every machine. */
export class Rng {
  private s: number;
  constructor(seed: number) {
    this.s = seed >>> 0;
  }
  next(): number {
    let t = (this.s = (this.s + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  /** An integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
  pick<T>(xs: readonly T[]): T {
    if (xs.length === 0) throw new Error('pick from an empty list');
    return xs[Math.floor(this.next() * xs.length)]!;
  }
  shuffle<T>(xs: readonly T[]): T[] {
    const a = [...xs];
    for (let i = a.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1));
      [a[i], a[j]] = [a[j]!, a[i]!];
    }
    return a;
  }
}

/** A per-mode stream derived from the run's seed, so `--mode sentinel --seed S` replays the Sentinel half of `--seed S`. */
export function deriveSeed(seed: number, label: string): number {
  let h = seed >>> 0;
  for (const ch of label) h = Math.imul(h ^ ch.charCodeAt(0), 0x01000193) >>> 0;
  return h;
}

// ------------------------------------------------------------------ contexts

export interface FaultContext {
  rng: Rng;
  load: Load;
  /** Marks the fault's start in the current window (call right before the fault is applied). */
  start(affects?: (slots: readonly number[] | undefined) => boolean): void;
  /** Marks when the fault was lifted or completed. */
  end(): void;
  /** Sleeps, unless the run is being stopped (then rejects). */
  sleep(ms: number): Promise<void>;
  window(): Window;
}

export interface SentinelContext extends FaultContext {
  topo: SentinelTopology;
  px: ProxySet & { sentinelAddresses: NodeAddress[] };
  pool: SentinelPool;
  downAfterMs: number;
}

export interface ClusterContext extends FaultContext {
  topo: ClusterTopology;
  px: ProxySet & { seeds: NodeAddress[] };
  pool: ClusterPool;
  nodeTimeoutMs: number;
}

export interface Fault<C> {
  name: string;
  /** Applies the fault, lifts it, and returns what it did (targets, durations). */
  run(c: C): Promise<string>;
}

const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/**
 * Marks the fault's start, applies it, keeps it for `ms`, and lifts it even when the run is
 * being stopped; then marks its end.
 */
async function hold(c: FaultContext, ms: number, apply: () => unknown, lift: () => unknown, affects?: (slots: readonly number[] | undefined) => boolean): Promise<void> {
  c.start(affects);
  await apply();
  try {
    await c.sleep(ms);
  } finally {
    await lift();
  }
  c.end();
}

// ------------------------------------------------------------------ sentinel

async function currentMasterHandle(c: SentinelContext): Promise<{ addr: NodeAddress; node: ServerHandle }> {
  const addr = await c.topo.currentMaster();
  const node = c.topo.handleFor(addr);
  if (!node) throw new Error(`no handle for the master ${fmt(addr)}`);
  return { addr, node };
}

const liveSentinels = (c: SentinelContext) => c.topo.sentinels.filter((s) => s.isAlive() && !s.isPaused());

export const SENTINEL_FAULTS: Fault<SentinelContext>[] = [
  {
    name: 'SENTINEL FAILOVER',
    async run(c) {
      const { addr } = await currentMasterHandle(c);
      const s = c.rng.pick(liveSentinels(c));
      c.start();
      await sendCommand(s.address, ['SENTINEL', 'FAILOVER', c.topo.masterName], { timeoutMs: 5000 });
      const to = await c.topo.waitForNewMaster(addr, 30_000);
      c.end();
      return `${fmt(addr)} -> ${fmt(to)} (asked sentinel :${s.port})`;
    },
  },
  {
    name: 'SIGKILL master',
    async run(c) {
      const { addr, node } = await currentMasterHandle(c);
      const downFor = c.rng.int(1000, 4000);
      c.start();
      await node.kill('SIGKILL');
      const to = await c.topo.waitForNewMaster(addr, 45_000);
      c.end();
      // Restarted only once the sentinels promoted a replica: it comes back empty (no
      // persistence), and the sentinels turn it into a replica of the new master.
      await c.sleep(downFor);
      await node.restart();
      return `killed ${fmt(addr)}; new master ${fmt(to)} after ${secs(c.window().faultEnd - c.window().faultStart)}; restarted ${secs(downFor)} later`;
    },
  },
  {
    name: 'SIGSTOP master',
    async run(c) {
      const { addr, node } = await currentMasterHandle(c);
      const d = c.rng.int(c.downAfterMs + 2000, c.downAfterMs + 5000);
      await hold(c, d, () => node.pause(), () => node.resume());
      return `SIGSTOP ${fmt(addr)} for ${secs(d)} (down-after ${c.downAfterMs} ms), then SIGCONT`;
    },
  },
  {
    name: 'master black-holed',
    async run(c) {
      const { addr } = await currentMasterHandle(c);
      const proxy = c.px.of(addr);
      const d = c.rng.int(3000, 6000);
      await hold(c, d, () => proxy.blackhole(), () => proxy.heal());
      return `proxy of ${fmt(addr)} black-holed for ${secs(d)} (the sentinels still see it)`;
    },
  },
  {
    name: 'all sentinels black-holed',
    async run(c) {
      const d = c.rng.int(5000, 10000);
      const proxies = c.topo.sentinels.map((s) => c.px.of(s));
      await hold(c, d, () => { for (const p of proxies) p.blackhole(); }, () => Promise.all(proxies.map((p) => p.heal())));
      return `${proxies.length} sentinel proxies black-holed for ${secs(d)}`;
    },
  },
  {
    name: '+200 ms latency on master',
    async run(c) {
      const { addr } = await currentMasterHandle(c);
      const proxy = c.px.of(addr);
      const d = c.rng.int(5000, 10000);
      await hold(c, d, () => proxy.delay(200, 20), () => proxy.heal());
      return `proxy of ${fmt(addr)}: +200 ms (+0..20 ms jitter) each way for ${secs(d)}`;
    },
  },
  {
    // The sequence of issue 18: the failover is led by a sentinel whose loop the pool has lost.
    name: 'SIGKILL a sentinel, then SENTINEL FAILOVER through it',
    async run(c) {
      const { addr } = await currentMasterHandle(c);
      const s = c.rng.pick(liveSentinels(c));
      const d = c.rng.int(1000, 3000);
      c.start();
      await s.kill('SIGKILL');
      await c.sleep(d);
      await s.restart();
      await waitFor(async () => (await sendCommand(s.address, ['PING']).catch(() => '')) === 'PONG', `sentinel :${s.port} to answer PING`, 20_000, 5);
      // A just-restarted sentinel may not know a good replica yet (NOGOODSLAVE): ask until it accepts.
      await waitFor(
        async () => (await sendCommand(s.address, ['SENTINEL', 'FAILOVER', c.topo.masterName], { timeoutMs: 2000 }).catch(() => '')) === 'OK',
        `sentinel :${s.port} to accept SENTINEL FAILOVER`, 30_000, 20,
      );
      const to = await c.topo.waitForNewMaster(addr, 30_000);
      c.end();
      return `sentinel :${s.port} killed, restarted after ${secs(d)} and asked for SENTINEL FAILOVER at once: ${fmt(addr)} -> ${fmt(to)}`;
    },
  },
  {
    name: 'SIGKILL a sentinel',
    async run(c) {
      const s = c.rng.pick(liveSentinels(c));
      const d = c.rng.int(3000, 8000);
      await hold(c, d, () => s.kill('SIGKILL'), () => s.restart());
      return `sentinel :${s.port} killed, restarted after ${secs(d)}`;
    },
  },
];

/**
 * The Sentinel topology is calm again (one master every sentinel names, two linked replicas),
 * the pool writes to that master, and its sentinel loops are connected. Returns notes for
 * whatever did not come back in time (the pool's part is not fatal: it is a finding).
 */
export async function settleSentinel(c: SentinelContext): Promise<string[]> {
  const notes: string[] = [];
  const master = await waitSettled(c.topo, c.topo.replicas.length, 90_000);
  const want = c.px.toProxy(master);
  try {
    await waitFor(() => sameAddr(c.pool.master(), want), `the pool to write to ${fmt(want)}`, 20_000);
  } catch {
    notes.push(`pool still names ${fmt(c.pool.master())} 20 s after the topology settled on ${fmt(master)} (proxy ${fmt(want)})`);
  }
  try {
    await waitFor(() => c.pool.stats().sentinels.every((s) => s.connected), 'every sentinel loop to be connected', 20_000);
  } catch {
    const down = c.pool.stats().sentinels.filter((s) => !s.connected).map((s) => fmt(s.address));
    notes.push(`sentinel loops still down 20 s after settling: ${down.join(', ')}`);
  }
  return notes;
}

// ------------------------------------------------------------------ cluster

/** Slot owners (real master ports) as one node sees them. */
export async function clusterSlotOwners(topo: ClusterTopology): Promise<Int32Array> {
  const owners = new Int32Array(16384).fill(-1);
  let lastError: unknown;
  for (const n of topo.nodes.filter((x) => x.isAlive() && !x.isPaused())) {
    try {
      const slots = (await sendCommand(n.address, ['CLUSTER', 'SLOTS'], { timeoutMs: 2000 })) as RespValue[][];
      for (const r of slots) {
        const port = Number((r[2] as RespValue[])[1]);
        for (let s = Number(r[0]); s <= Number(r[1]); s++) owners[s] = port;
      }
      return owners;
    } catch (err) {
      lastError = err;
    }
  }
  throw new Error(`no cluster node answered CLUSTER SLOTS: ${String(lastError)}`);
}

function slotsOf(owners: Int32Array, port: number): number[] {
  const out: number[] = [];
  for (let s = 0; s < owners.length; s++) if (owners[s] === port) out.push(s);
  return out;
}

function affectsSlots(slots: readonly number[]): (s: readonly number[] | undefined) => boolean {
  const flags = new Uint8Array(16384);
  for (const s of slots) flags[s] = 1;
  return (ks) => ks !== undefined && ks.some((k) => flags[k] === 1);
}

async function pickMaster(c: ClusterContext): Promise<{ node: ServerHandle; slots: number[] }> {
  const masters = await c.topo.masters();
  const node = c.rng.pick(masters);
  const owners = await clusterSlotOwners(c.topo);
  return { node, slots: slotsOf(owners, node.port) };
}

async function nodeId(n: ServerHandle): Promise<string> {
  return String(await sendCommand(n.address, ['CLUSTER', 'MYID'], { timeoutMs: 2000 }));
}

const ranges = (slots: readonly number[]) => {
  if (slots.length === 0) return 'none';
  const parts: string[] = [];
  let a = slots[0]!;
  let b = a;
  for (const s of slots.slice(1)) {
    if (s === b + 1) b = s;
    else {
      parts.push(a === b ? `${a}` : `${a}-${b}`);
      a = b = s;
    }
  }
  parts.push(a === b ? `${a}` : `${a}-${b}`);
  return parts.join(',');
};

export const CLUSTER_FAULTS: Fault<ClusterContext>[] = [
  {
    name: 'CLUSTER FAILOVER',
    async run(c) {
      const replica = c.rng.pick(await c.topo.replicas());
      const info = parseInfo(String(await sendCommand(replica.address, ['INFO', 'replication'])));
      const masterPort = Number(info.get('master_port'));
      const owners = await clusterSlotOwners(c.topo);
      const slots = slotsOf(owners, masterPort);
      c.start(affectsSlots(slots));
      await sendCommand(replica.address, ['CLUSTER', 'FAILOVER'], { timeoutMs: 5000 });
      await waitFor(
        async () => {
          const role = (await sendCommand(replica.address, ['ROLE'])) as RespValue[];
          return role[0] === 'master';
        },
        `replica :${replica.port} to become master`,
        30_000,
      );
      c.end();
      return `replica :${replica.port} took over from :${masterPort} (slots ${ranges(slots)})`;
    },
  },
  {
    name: 'SIGKILL master',
    async run(c) {
      const { node, slots } = await pickMaster(c);
      const downFor = c.rng.int(1000, 4000);
      c.start(affectsSlots(slots));
      await node.kill('SIGKILL');
      await c.topo.waitForClusterOk(60_000);
      c.end();
      // Restarted once a replica took over: it comes back empty and rejoins as a replica.
      await c.sleep(downFor);
      await node.restart();
      return `killed :${node.port} (slots ${ranges(slots)}); cluster ok after ${secs(c.window().faultEnd - c.window().faultStart)}; restarted ${secs(downFor)} later`;
    },
  },
  {
    name: 'SIGSTOP master',
    async run(c) {
      const { node, slots } = await pickMaster(c);
      const d = c.rng.int(c.nodeTimeoutMs + 2000, c.nodeTimeoutMs + 5000);
      await hold(c, d, () => node.pause(), () => node.resume(), affectsSlots(slots));
      return `SIGSTOP :${node.port} (slots ${ranges(slots)}) for ${secs(d)} (node timeout ${c.nodeTimeoutMs} ms), then SIGCONT`;
    },
  },
  {
    name: 'master black-holed',
    async run(c) {
      const { node, slots } = await pickMaster(c);
      const proxy = c.px.of(node);
      const d = c.rng.int(3000, 6000);
      await hold(c, d, () => proxy.blackhole(), () => proxy.heal(), affectsSlots(slots));
      return `proxy of :${node.port} (slots ${ranges(slots)}) black-holed for ${secs(d)}`;
    },
  },
  {
    name: '+200 ms latency on a master',
    async run(c) {
      const { node, slots } = await pickMaster(c);
      const proxy = c.px.of(node);
      const d = c.rng.int(5000, 10000);
      await hold(c, d, () => proxy.delay(200, 20), () => proxy.heal(), affectsSlots(slots));
      return `proxy of :${node.port} (slots ${ranges(slots)}): +200 ms (+0..20 ms jitter) each way for ${secs(d)}`;
    },
  },
  {
    name: 'live slot migration',
    async run(c) {
      const masters = await c.topo.masters();
      const src = c.rng.pick(masters);
      const dst = c.rng.pick(masters.filter((m) => m.port !== src.port));
      const owners = await clusterSlotOwners(c.topo);
      const own = slotsOf(owners, src.port);
      // Slots the load writes all the time (counters, overwritten keys, lists, transaction tags), plus random ones.
      const hot = [...new Set([...c.load.hotKeys(), ...c.load.txTags.map((t) => `{${t}}`)].map((k) => keySlot(k)))].filter((s) => owners[s] === src.port);
      const want = c.rng.int(2, 4);
      const chosen = new Set(c.rng.shuffle(hot).slice(0, Math.min(2, want)));
      while (chosen.size < want && chosen.size < own.length) chosen.add(c.rng.pick(own));
      const slots = [...chosen].sort((a, b) => a - b);
      const [srcId, dstId] = await Promise.all([nodeId(src), nodeId(dst)]);
      let moved = 0;
      c.start(affectsSlots(slots));
      for (const slot of slots) {
        const s = String(slot);
        await sendCommand(dst.address, ['CLUSTER', 'SETSLOT', s, 'IMPORTING', srcId]);
        await sendCommand(src.address, ['CLUSTER', 'SETSLOT', s, 'MIGRATING', dstId]);
        for (;;) {
          const keys = (await sendCommand(src.address, ['CLUSTER', 'GETKEYSINSLOT', s, '200'], { timeoutMs: 5000 })) as string[];
          if (keys.length === 0) break;
          await sendCommand(src.address, ['MIGRATE', dst.host, String(dst.port), '', '0', '5000', 'KEYS', ...keys], { timeoutMs: 10_000 });
          moved += keys.length;
        }
        await sendCommand(dst.address, ['CLUSTER', 'SETSLOT', s, 'NODE', dstId]);
        await sendCommand(src.address, ['CLUSTER', 'SETSLOT', s, 'NODE', dstId]);
        for (const m of masters) if (m.port !== src.port && m.port !== dst.port) await sendCommand(m.address, ['CLUSTER', 'SETSLOT', s, 'NODE', dstId]);
      }
      c.end();
      return `slots ${slots.join(',')} (${slots.filter((s) => hot.includes(s)).length} hot) :${src.port} -> :${dst.port}, ${moved} keys moved`;
    },
  },
];

/**
 * The cluster is calm again: ok everywhere with every slot on a live master, three masters
 * with a linked replica each, and the pool's map covers every slot with the same masters.
 */
export async function settleCluster(c: ClusterContext, masters: number): Promise<string[]> {
  const notes: string[] = [];
  await c.topo.waitForClusterOk(90_000);
  await waitFor(
    async () => {
      const live = c.topo.nodes.filter((n) => n.isAlive() && !n.isPaused());
      if (live.length !== c.topo.nodes.length) throw new Error('a node is down');
      const infos = await Promise.all(live.map(async (n) => parseInfo(String(await sendCommand(n.address, ['INFO', 'replication'])))));
      const ms = infos.filter((i) => i.get('role') === 'master');
      if (ms.length !== masters) throw new Error(`${ms.length} masters`);
      for (const i of infos) if (i.get('role') === 'slave' && i.get('master_link_status') !== 'up') throw new Error('a replica link is down');
      for (const m of ms) if (Number(m.get('connected_slaves')) < 1) throw new Error('a master has no replica');
      return true;
    },
    'every master to have a linked replica',
    90_000,
    200,
  );
  await c.topo.waitForClusterOk(30_000);
  try {
    await waitFor(
      () => {
        const st = c.pool.stats();
        if (st.coveredSlots !== 16384) throw new Error(`the pool's map covers ${st.coveredSlots} slots`);
        if (st.masters !== masters) throw new Error(`the pool's map has ${st.masters} masters serving slots`);
        return true;
      },
      "the pool's slot map to cover every slot with the cluster's masters",
      20_000,
      200,
    );
  } catch (err) {
    notes.push(`pool map incomplete 20 s after the cluster settled: ${(err as Error).message}`);
  }
  // Informational: does the pool still list as master a node that is a replica now?
  const real = new Set((await c.topo.masters()).map((m) => m.port));
  const stale = c.pool
    .nodes()
    .filter((n) => n.role === 'master' && !real.has(c.px.toReal(n).port))
    .map((n) => `:${c.px.toReal(n).port}`);
  if (stale.length) notes.push(`pool.nodes() still lists ${stale.join(', ')} as master (a replica now) after the cluster settled`);
  return notes;
}

/** Pipelined commands against one node, in chunks; error replies come back as values. */
export async function queryChunked(node: NodeAddress, cmds: readonly string[][], chunk = 5000): Promise<RespValue[]> {
  const out: RespValue[] = [];
  for (let i = 0; i < cmds.length; i += chunk) out.push(...(await sendCommands(node, cmds.slice(i, i + chunk), { timeoutMs: 30_000 })));
  return out;
}

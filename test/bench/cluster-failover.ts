/**
 * CLUSTER FAILOVER under load, by cluster size (issue 9, deliverable 4): how soon writes to
 * the moved slots resume, and whether the other shards notice.
 *
 *   npm run bench:cluster-failover
 *   BENCH_MASTERS=3 BENCH_ROUNDS=10 npm run bench:cluster-failover
 *
 * For each N in BENCH_MASTERS (default 3,30): a cluster of N masters and N replicas from the
 * test helper, one `ClusterPool` with default options, BENCH_IN_FLIGHT writers (default 50)
 * each sending SET of a fresh key (`fo:<writer>:<n>`, so every acknowledged write can be
 * checked at the end). Then BENCH_ROUNDS times, each on the shard failed over longest ago
 * (a master votes for a replica of the same master only once per two node timeouts):
 *
 * 1. Every master knows the replica as one (CLUSTER NODES), then 1.5 s of steady load.
 * 2. `CLUSTER FAILOVER` on the shard's replica (time `cmd`). Two more harness connections ask
 *    the replica and the old master for ROLE every BENCH_POLL_MS (default 2) ms: the first
 *    "master" from the replica is the promotion (`promo`), the first "slave" from the old
 *    master its demotion (from then on it answers its held writes with MOVED).
 * 3. Load goes on until 1.5 s after the promotion.
 *
 * Per round: when writes resumed (the first acknowledged write on the moved slots after the
 * promotion: the old master holds every write from the failover's start until its demotion,
 * so none is acknowledged in between), relative to `cmd` and to `promo`, and the longest gap
 * before it; p99 of the writes to the other shards started in the second before `cmd` and
 * from `cmd` to 200 ms after the resumption, beside the same for a raw PING control run in a
 * separate process (how much slower the servers themselves answer) and the longest timer lag
 * of this process (how long the client itself was busy or descheduled); the pool's retries
 * (MOVED, CLUSTERDOWN/READONLY, connection, TRYAGAIN) and refreshes; the first MOVED and the
 * first `topology` event relative to the promotion; failed writes. At the end every
 * acknowledged write is read back from the master that owns its slot by a harness connection
 * (never the client under test): "lost" must be 0. BENCH_DIAG=1 prints per-round gaps, the
 * slowest writes and the MOVED timeline.
 *
 * Environment: BENCH_MASTERS, BENCH_ROUNDS (default 5), BENCH_IN_FLIGHT (50), BENCH_POLL_MS
 * (2), BENCH_NODE_TIMEOUT (cluster-node-timeout; default 2000 below 10 masters, 15000 from 10:
 * a 60-process cluster on 2 cores must not fail a node over by itself). A round whose failover
 * the servers do not complete within 8 s is reported and left out.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import os from 'node:os';
import { ClusterPool, keySlot } from '../../src/index.js';
import type { NodeAddress } from '../../src/types.js';
import { sendCommands } from '../support/mini-client.js';
import { decodeReply, encodeCommand, ReplyError, type RespValue } from '../support/resp-wire.js';
import { startCluster, waitFor, type ClusterTopology, type ServerHandle } from '../support/topology.js';
import { envInt, fmtMs, installCleanupHandlers, markdownTable, median, percentile, systemInfo } from './lib.js';

const MASTERS = (process.env.BENCH_MASTERS ?? '3,30').split(',').map(Number);
const ROUNDS = envInt('BENCH_ROUNDS', 5);
const IN_FLIGHT = envInt('BENCH_IN_FLIGHT', 50);
const POLL_MS = envInt('BENCH_POLL_MS', 2);
/** cluster-node-timeout: short where the machine can take it (a master votes for a replica of the same master only once per 2 node timeouts). */
const nodeTimeout = (n: number) => envInt('BENCH_NODE_TIMEOUT', n >= 10 ? 15_000 : 2000);
const BEFORE_MS = 1500;
const AFTER_MS = 1500;

const now = () => performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A persistent harness connection: one command at a time. */
class Probe {
  private buf = Buffer.alloc(0);
  private waiting: ((v: RespValue) => void) | undefined;
  private constructor(private readonly sock: net.Socket) {
    sock.setNoDelay(true);
    sock.on('data', (d) => {
      this.buf = this.buf.length ? Buffer.concat([this.buf, d]) : d;
      const r = decodeReply(this.buf);
      if (!r) return;
      this.buf = this.buf.subarray(r.next);
      const w = this.waiting;
      this.waiting = undefined;
      w?.(r.value);
    });
    sock.on('error', () => undefined);
  }
  static open(a: NodeAddress): Promise<Probe> {
    return new Promise((resolve, reject) => {
      const s = net.connect(a.port, a.host, () => resolve(new Probe(s)));
      s.once('error', reject);
    });
  }
  ask(args: (string | number)[]): Promise<RespValue> {
    return new Promise((resolve) => {
      this.waiting = resolve;
      this.sock.write(encodeCommand(args));
    });
  }
  close(): void {
    this.sock.destroy();
  }
}

/**
 * A control beside the client under test: a separate Node process that sends PING to a few
 * masters, one at a time each, every 2 ms, over raw sockets, and reports each round trip
 * (epoch ms, rtt). When the servers themselves answer slower during a failover (60 processes
 * on 2 cores all taking a new configuration), this shows it without any client in between.
 */
class PingControl {
  private out = '';
  private readonly child: ChildProcess;
  private constructor(ports: number[]) {
    const script = `
      const net = require('node:net');
      const samples = [];
      const now = () => performance.timeOrigin + performance.now();
      for (const port of process.argv.slice(1).map(Number)) {
        const s = net.connect(port, '127.0.0.1');
        s.setNoDelay(true);
        let t0 = 0;
        const ping = () => { t0 = now(); s.write('PING\\r\\n'); };
        s.on('connect', ping);
        s.on('data', () => { const t = now(); samples.push(t0, t - t0); setTimeout(ping, 2); });
        s.on('error', () => {});
      }
      process.stdin.on('end', () => { process.stdout.write(JSON.stringify(samples)); process.exit(0); });
      process.stdin.resume();
    `;
    this.child = spawn(process.execPath, ['-e', script, ...ports.map(String)], { stdio: ['pipe', 'pipe', 'inherit'] });
    this.child.stdout!.on('data', (d: Buffer) => (this.out += d.toString()));
    process.once('exit', () => this.child.kill('SIGKILL'));
  }
  static start(ports: number[]): PingControl {
    return new PingControl(ports);
  }
  /** Stops it; resolves with [epoch ms, rtt ms] pairs. */
  async stop(): Promise<Array<[number, number]>> {
    const done = new Promise<void>((r) => this.child.once('exit', () => r()));
    this.child.stdin!.end();
    await done;
    const flat = JSON.parse(this.out || '[]') as number[];
    const pairs: Array<[number, number]> = [];
    for (let i = 0; i + 1 < flat.length; i += 2) pairs.push([flat[i]!, flat[i + 1]!]);
    return pairs;
  }
}

/** p99 of the control's round trips that started in [from, to) (performance.now() times of this process). */
function controlP99(samples: ReadonlyArray<[number, number]>, from: number, to: number): number {
  const a = performance.timeOrigin + from;
  const b = performance.timeOrigin + to;
  const rtts = samples.filter(([t]) => t >= a && t < b).map(([, r]) => r).sort((x, y) => x - y);
  return percentile(rtts, 99);
}

/**
 * How late this process's timers fire (every 2 ms): a client busy with a burst of work of its
 * own (MOVED replies, a refresh) delays every other command by as much.
 */
class LagSampler {
  readonly at: number[] = [];
  readonly lag: number[] = [];
  private timer: NodeJS.Timeout | undefined;
  start(): void {
    let expected = now() + 2;
    const tick = () => {
      const t = now();
      this.at.push(t);
      this.lag.push(Math.max(0, t - expected));
      expected = t + 2;
      this.timer = setTimeout(tick, 2);
    };
    this.timer = setTimeout(tick, 2);
  }
  stop(): void {
    clearTimeout(this.timer);
  }
  /** The longest delay in [from, to). */
  max(from: number, to: number): number {
    let m = 0;
    for (let i = this.at.length - 1; i >= 0 && this.at[i]! >= from; i--) if (this.at[i]! < to) m = Math.max(m, this.lag[i]!);
    return m;
  }
}

/** Owner port of every slot, from one node's CLUSTER SLOTS. */
async function slotOwners(a: NodeAddress): Promise<Int32Array> {
  const [reply] = await sendCommands(a, [['CLUSTER', 'SLOTS']], { timeoutMs: 10_000 });
  const owners = new Int32Array(16384);
  for (const e of reply as RespValue[][]) owners.fill(Number((e[2] as RespValue[])[1]), Number(e[0]), Number(e[1]) + 1);
  return owners;
}

/**
 * Every acknowledged write: slot, start and end, in preallocated typed arrays (a log of
 * millions of small objects would cost the load GC pauses of its own). Keys and values follow
 * from writer and sequence number, so the read-back needs only the failed ones.
 */
class Log {
  private cap = 1 << 21;
  slot = new Int32Array(this.cap);
  start = new Float64Array(this.cap);
  end = new Float64Array(this.cap);
  length = 0;
  /** Per writer: the next sequence number, and the ones that failed (may or may not have run). */
  next: number[] = [];
  failedSeqs: Array<Set<number>> = [];
  failures: Array<{ at: number; slot: number; error: string }> = [];
  push(slot: number, start: number, end: number): void {
    if (this.length === this.cap) {
      // Keep the newest half: the windows looked at are the last few seconds.
      const half = this.cap >> 1;
      this.slot.copyWithin(0, half);
      this.start.copyWithin(0, half);
      this.end.copyWithin(0, half);
      this.length = half;
    }
    const i = this.length++;
    this.slot[i] = slot;
    this.start[i] = start;
    this.end[i] = end;
  }
}

const keyOf = (w: number, i: number) => `fo:${w}:${i}`;
const valueOf = (i: number) => `${'v'.repeat(32)}${i}`;

interface RoundResult {
  masters: number;
  round: number;
  shard: string;
  promoMs: number;
  demotedMs: number;
  gapMs: number;
  fromCmd: number;
  fromPromo: number;
  p99Before: number;
  p99During: number;
  duringN: number;
  controlBefore: number;
  controlDuring: number;
  lagBefore: number;
  lagDuring: number;
  firstMoved: number;
  firstTopology: number;
  /** When the pool's first connection to the promoted replica was up. */
  laneConnected: number;
  retries: string;
  refreshes: number;
  failed: number;
}

const results: RoundResult[] = [];
const verdicts: string[] = [];

function p99Of(log: Log, from: number, to: number, skip: Set<number>): { p99: number; n: number } {
  const lat: number[] = [];
  for (let i = log.length - 1; i >= 0; i--) {
    const s = log.start[i]!;
    if (s < from - 60_000) break;
    if (s >= from && s < to && !skip.has(log.slot[i]!)) lat.push(log.end[i]! - s);
  }
  lat.sort((a, b) => a - b);
  return { p99: percentile(lat, 99), n: lat.length };
}

async function linkedReplicaOf(topo: ClusterTopology, masterPort: number): Promise<ServerHandle | undefined> {
  for (const r of await topo.replicas()) {
    const [role] = (await sendCommands(r.address, [['ROLE']], { timeoutMs: 5000 })) as RespValue[][];
    if (!role) continue;
    if (Number(role[2]) === masterPort && role[3] === 'connected') return r;
  }
  return undefined;
}

/**
 * Waits until every master lists `replica` as a replica of `master` (CLUSTER NODES): the
 * masters vote only for a replica they know as such, and in a fresh 60-node cluster that
 * news takes a few gossip rounds.
 */
async function waitVotersKnow(topo: ClusterTopology, replica: ServerHandle, masterPort: number): Promise<void> {
  const id = async (port: number) => String((await sendCommands({ host: '127.0.0.1', port }, [['CLUSTER', 'MYID']], { timeoutMs: 5000 }))[0]);
  const [rid, mid] = await Promise.all([id(replica.port), id(masterPort)]);
  await waitFor(
    async () => {
      for (const m of await topo.masters()) {
        const [nodes] = await sendCommands(m.address, [['CLUSTER', 'NODES']], { timeoutMs: 5000 });
        const line = String(nodes).split('\n').find((l) => l.startsWith(rid));
        if (!line || line.split(' ')[3] !== mid) return false;
      }
      return true;
    },
    `every master to know :${replica.port} as a replica of :${masterPort}`,
    60_000,
    200,
  );
}

async function benchN(n: number): Promise<void> {
  process.stderr.write(`[bench] starting ${n} masters + ${n} replicas (load ${os.loadavg()[0]!.toFixed(2)})...\n`);
  const timeout = nodeTimeout(n);
  const topo = await startCluster({ masters: n, replicasPerMaster: 1, nodeTimeoutMs: timeout });
  const log = new Log();
  let pool: ClusterPool | undefined;
  let stop = false;
  let writers: Promise<void> | undefined;
  try {
    await topo.waitForClusterOk(120_000);
    pool = await ClusterPool.create(topo.seeds);
    const p = pool;
    const moved: Array<{ at: number; slot: number; from: number; to: number }> = [];
    const topologyAt: number[] = [];
    p.on('moved', (m) => moved.push({ at: now(), slot: m.slot, from: m.from.port, to: m.to.port }));
    p.on('topology', () => topologyAt.push(now()));
    const connects: Array<{ at: number; port: number }> = [];
    p.on('connect', (c) => connects.push({ at: now(), port: c.address.port }));
    p.on('error', () => undefined);
    writers = Promise.all(
      Array.from({ length: IN_FLIGHT }, async (_, w) => {
        log.next[w] = 0;
        log.failedSeqs[w] = new Set();
        for (let i = 0; !stop; i++) {
          const key = keyOf(w, i);
          const slot = keySlot(key);
          log.next[w] = i + 1;
          const t0 = now();
          try {
            await p.set(key, valueOf(i));
            log.push(slot, t0, now());
          } catch (err) {
            log.failedSeqs[w]!.add(i);
            log.failures.push({ at: now(), slot, error: `${(err as Error).name}: ${(err as Error).message}` });
          }
        }
      }),
    ).then(() => undefined);

    const lag = new LagSampler();
    lag.start();
    // When each node last took part in a failover: the masters refuse to vote twice for a
    // replica of the same master within 2 node timeouts, so a shard waits that long.
    const lastFailover = new Map<number, number>();
    for (let round = 0; round < ROUNDS; round++) {
      await topo.waitForClusterOk(60_000);
      const owners = await slotOwners(topo.seeds[0]!);
      const all = [...new Set(owners)];
      const since = (port: number) => now() - (lastFailover.get(port) ?? -Infinity);
      const masterPort = all.sort((a, b) => since(b) - since(a))[0]!;
      await sleep(Math.max(0, 2 * timeout + 2000 - since(masterPort)));
      const replica = await waitFor(() => linkedReplicaOf(topo, masterPort), `a linked replica of :${masterPort}`, 60_000);
      await waitVotersKnow(topo, replica, masterPort);
      const movedSlots = new Set<number>();
      for (let s = 0; s < 16384; s++) if (owners[s] === masterPort) movedSlots.add(s);

      const control = PingControl.start(all.filter((port) => port !== masterPort).slice(0, 5));
      await sleep(BEFORE_MS);
      const st0 = p.stats();
      const failed0 = log.failures.length;
      const moved0 = moved.length;
      const topo0 = topologyAt.length;
      const cmdProbe = await Probe.open(replica.address);
      const rolePoller = await Probe.open(replica.address);
      // The old master answers ROLE while its writes are paused: when it says slave, it has
      // taken the new configuration and answers the paused writes with MOVED.
      const oldPoller = await Probe.open({ host: '127.0.0.1', port: masterPort });
      /** Polls ROLE until it is `want`; the time of the first such reply. */
      const pollRole = async (probe: Probe, want: string, from: number): Promise<number> => {
        // A manual failover that gets no majority gives up after 5 s (CLUSTER_MF_TIMEOUT).
        while (now() < from + 8000) {
          const role = (await probe.ask(['ROLE'])) as RespValue[];
          if (role[0] === want) return now();
          await sleep(POLL_MS);
        }
        return NaN;
      };
      const tCmd = now();
      const reply = await cmdProbe.ask(['CLUSTER', 'FAILOVER']);
      if (reply instanceof ReplyError) throw new Error(`CLUSTER FAILOVER on :${replica.port}: ${reply.message}`);
      const [tPromo, tDemoted] = await Promise.all([pollRole(rolePoller, 'master', tCmd), pollRole(oldPoller, 'slave', tCmd)]);
      cmdProbe.close();
      rolePoller.close();
      oldPoller.close();
      lastFailover.set(masterPort, now());
      lastFailover.set(replica.port, now());
      if (!Number.isFinite(tPromo) || !Number.isFinite(tDemoted) || tDemoted - tPromo > 1000) {
        for (const port of [masterPort, replica.port]) {
          const [nodes] = await sendCommands({ host: '127.0.0.1', port }, [['CLUSTER', 'NODES']], { timeoutMs: 5000 }).catch((e: Error) => [e.message]);
          process.stderr.write(`[diag] :${port} CLUSTER NODES\n${String(nodes)}\n${topo.handleFor({ host: '127.0.0.1', port })?.logTail(12)}\n`);
        }
      }
      if (!Number.isFinite(tPromo)) {
        await control.stop();
        verdicts.push(`N=${n} round ${round + 1}: :${replica.port} was not promoted within 8 s (the server's failover did not complete; round left out)`);
        process.stderr.write(`[bench] ${verdicts[verdicts.length - 1]}\n`);
        await sleep(AFTER_MS);
        continue;
      }
      await sleep(Math.max(0, tPromo + AFTER_MS - now()));
      const st1 = p.stats();
      const pings = await control.stop();

      // Writes resume with the first acknowledgement on the moved slots after the promotion
      // (the old master holds its writes from the failover's start until it is demoted, so
      // none is acknowledged in between); the gap is the longest stretch without one before it.
      const acks: number[] = [];
      for (let i = log.length - 1; i >= 0; i--) {
        const e = log.end[i]!;
        if (e < tCmd - 500) break;
        if (movedSlots.has(log.slot[i]!) && e >= tCmd) acks.push(e);
      }
      acks.sort((a, b) => a - b);
      const resumed = acks.find((t) => t >= tPromo) ?? NaN;
      let gap = 0;
      let prev = tCmd;
      for (const t of acks) {
        if (t > resumed) break;
        gap = Math.max(gap, t - prev);
        prev = t;
      }
      if (process.env.BENCH_DIAG) {
        const gaps: Array<[number, number]> = [];
        let q = tCmd;
        for (const a of acks) {
          if (a - q > 20) gaps.push([q - tPromo, a - q]);
          q = a;
        }
        const slow: Array<[number, number, number]> = [];
        for (let i = log.length - 1; i >= 0 && log.start[i]! > tCmd - 2000; i--) {
          if (movedSlots.has(log.slot[i]!) && log.end[i]! - log.start[i]! > 30) slow.push([log.start[i]! - tPromo, log.end[i]! - tPromo, log.slot[i]!]);
        }
        slow.sort((a, b) => b[1] - b[0] - (a[1] - a[0]));
        const mv = moved.slice(moved0).map((m) => `${(m.at - tPromo).toFixed(0)}:${m.slot}:${m.from}->${m.to}`);
        process.stderr.write(
          `[diag] gaps>20ms (start from promo, length): ${gaps.map(([a, b]) => `${a.toFixed(0)}+${b.toFixed(0)}`).join(' ')}\n` +
            `[diag] slowest writes on moved slots (start..end from promo, slot): ${slow.slice(0, 5).map(([a, b, sl]) => `${a.toFixed(0)}..${b.toFixed(0)} #${sl}`).join(' ')}\n` +
            `[diag] MOVED (${mv.length}) first: ${mv.slice(0, 6).join(' ')} ... last: ${mv.slice(-4).join(' ')}\n` +
            `[diag] topology events from promo: ${topologyAt.slice(topo0).map((t) => (t - tPromo).toFixed(0)).join(' ')}\n`,
        );
      }
      const before = p99Of(log, tCmd - 1000, tCmd, movedSlots);
      const windowEnd = Math.max(resumed, tPromo) + 200;
      const during = p99Of(log, tCmd, windowEnd, movedSlots);
      const lagBefore = lag.max(tCmd - 1000, tCmd);
      const lagDuring = lag.max(tCmd, windowEnd);
      const controlBefore = controlP99(pings, tCmd - 1000, tCmd);
      const controlDuring = controlP99(pings, tCmd, windowEnd);
      const firstMoved = moved.slice(moved0).find((m) => movedSlots.has(m.slot));
      const r = st1.redirects;
      const q = st0.redirects;
      const res: RoundResult = {
        masters: n,
        round: round + 1,
        shard: `:${masterPort} -> :${replica.port}`,
        promoMs: tPromo - tCmd,
        demotedMs: tDemoted - tPromo,
        gapMs: gap,
        fromCmd: resumed - tCmd,
        fromPromo: resumed - tPromo,
        p99Before: before.p99,
        p99During: during.p99,
        duringN: during.n,
        controlBefore,
        controlDuring,
        lagBefore,
        lagDuring,
        firstMoved: firstMoved ? firstMoved.at - tPromo : NaN,
        firstTopology: topologyAt.length > topo0 ? topologyAt[topo0]! - tPromo : NaN,
        laneConnected: (connects.find((c) => c.port === replica.port && c.at >= tCmd)?.at ?? NaN) - tPromo,
        retries: `M ${r.moved - q.moved} / CD ${r.clusterdown - q.clusterdown} / C ${r.connection - q.connection} / TA ${r.tryagain - q.tryagain}`,
        refreshes: st1.refreshes - st0.refreshes,
        failed: log.failures.length - failed0,
      };
      results.push(res);
      process.stderr.write(
        `  N=${n} #${res.round} ${res.shard}: promoted +${fmtMs(res.promoMs)} ms, old master demoted ${fmtMs(res.demotedMs)} after, resumed +${fmtMs(res.fromCmd)} from cmd / ${fmtMs(res.fromPromo)} from promo ` +
          `(gap ${fmtMs(gap)}); other shards p99 ${fmtMs(before.p99)} -> ${fmtMs(during.p99)} ms (${during.n}), control PING p99 ${fmtMs(controlBefore)} -> ${fmtMs(controlDuring)}, client timer lag max ${fmtMs(lagBefore)} -> ${fmtMs(lagDuring)}; first MOVED ${fmtMs(res.firstMoved)}, ` +
          `topology ${fmtMs(res.firstTopology)}, lane to the new master up ${fmtMs(res.laneConnected)} from promo; ${res.retries}; ${res.refreshes} refreshes; ${res.failed} failed\n`,
      );
    }
    stop = true;
    lag.stop();
    await writers;
    writers = undefined;

    // Every acknowledged write must be on the master that owns its slot now.
    await topo.waitForClusterOk(60_000);
    const owners = await slotOwners(topo.seeds[0]!);
    const byOwner = new Map<number, Array<[string, string]>>();
    let acked = 0;
    for (let w = 0; w < IN_FLIGHT; w++) {
      for (let i = 0; i < log.next[w]!; i++) {
        if (log.failedSeqs[w]!.has(i)) continue;
        acked++;
        const key = keyOf(w, i);
        const port = owners[keySlot(key)]!;
        let list = byOwner.get(port);
        if (!list) byOwner.set(port, (list = []));
        list.push([key, valueOf(i)]);
      }
    }
    let lost = 0;
    for (const [port, entries] of byOwner) {
      for (let j = 0; j < entries.length; j += 5000) {
        const chunk = entries.slice(j, j + 5000);
        const replies = await sendCommands({ host: '127.0.0.1', port }, chunk.map(([k]) => ['GET', k]), { timeoutMs: 30_000 });
        chunk.forEach(([, v], k) => {
          if (replies[k] !== v) lost++;
        });
      }
    }
    const kinds = new Map<string, number>();
    for (const f of log.failures) kinds.set(f.error.slice(0, 120), (kinds.get(f.error.slice(0, 120)) ?? 0) + 1);
    verdicts.push(
      `N=${n}: ${acked.toLocaleString('en-US')} acknowledged writes, ${lost} lost; ${log.failures.length} failed` +
        (kinds.size ? ` (${[...kinds].map(([k, c]) => `${c}x ${k}`).join('; ')})` : ''),
    );
    process.stderr.write(`[bench] ${verdicts[verdicts.length - 1]}\n`);
  } finally {
    stop = true;
    await writers?.catch(() => undefined);
    await pool?.close();
    await topo.stop();
  }
}

async function main(): Promise<void> {
  installCleanupHandlers();
  const sys = systemInfo();
  const started = new Date();
  const load0 = os.loadavg().map((l) => l.toFixed(2)).join(' ');
  for (const n of MASTERS) await benchN(n);
  console.log(`\n## CLUSTER FAILOVER under load (${IN_FLIGHT} writers, ClusterPool defaults)\n`);
  console.log(`node ${sys.node}, ${sys.cpu}, ${sys.cores} cores; started ${started.toISOString()}; load average ${load0} at start, ${os.loadavg().map((l) => l.toFixed(2)).join(' ')} at end\n`);
  console.log(
    markdownTable(
      ['masters', '#', 'shard', 'promoted after cmd ms', 'old master demoted after promo ms', 'write gap ms', 'resumed after cmd ms', 'resumed after promo ms', 'first MOVED after promo ms', 'lane to new master up after promo ms', 'topology event after promo ms', 'other shards p99 before -> during ms', 'control PING p99 before -> during ms', 'client timer lag max before -> during ms', 'retries', 'refreshes', 'failed'],
      results.map((r) => [
        String(r.masters), String(r.round), r.shard, fmtMs(r.promoMs), fmtMs(r.demotedMs), fmtMs(r.gapMs), fmtMs(r.fromCmd), fmtMs(r.fromPromo),
        fmtMs(r.firstMoved), fmtMs(r.laneConnected), fmtMs(r.firstTopology), `${fmtMs(r.p99Before)} -> ${fmtMs(r.p99During)} (${r.duringN})`, `${fmtMs(r.controlBefore)} -> ${fmtMs(r.controlDuring)}`, `${fmtMs(r.lagBefore)} -> ${fmtMs(r.lagDuring)}`, r.retries, String(r.refreshes), String(r.failed),
      ]),
      ['right', 'right', 'left', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'left', 'right', 'right'],
    ),
  );
  console.log('');
  const sizes = [...new Set(results.map((r) => r.masters))];
  console.log(
    markdownTable(
      ['masters', 'rounds', 'resumed after promo ms: median / max', 'resumed after cmd ms: median / max', 'other shards p99 during / before: median, max', 'control PING p99 during / before: median, max'],
      sizes.map((n) => {
        const rs = results.filter((r) => r.masters === n);
        const fp = rs.map((r) => r.fromPromo);
        const fc = rs.map((r) => r.fromCmd);
        const ratios = rs.map((r) => r.p99During / r.p99Before);
        const control = rs.map((r) => r.controlDuring / r.controlBefore);
        return [
          String(n), String(rs.length), `${fmtMs(median(fp))} / ${fmtMs(Math.max(...fp))}`, `${fmtMs(median(fc))} / ${fmtMs(Math.max(...fc))}`,
          `${median(ratios).toFixed(2)}x, ${Math.max(...ratios).toFixed(2)}x`, `${median(control).toFixed(2)}x, ${Math.max(...control).toFixed(2)}x`,
        ];
      }),
      ['right', 'right', 'right', 'right', 'right', 'right'],
    ),
  );
  console.log(`\n${verdicts.map((v) => `- ${v}`).join('\n')}\n`);
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);

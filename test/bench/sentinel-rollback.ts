/**
 * Promotions Sentinel does not keep, and one it does, by client: acknowledged writes lost and
 * how soon each client writes on the master the sentinels settle on.
 *
 *   npm run bench:sentinel-rollback
 *
 * Environment:
 *   BENCH_ROUNDS     rounds per scenario (default 3)
 *   BENCH_SCENARIOS  comma list: kept, paused-leader, killed-leader, other-promoted (default all)
 *   BENCH_ONLY       comma list of clients: majority, promotion, ioredis, node-redis (default all)
 *   BENCH_WRITERS    writers per client (default 10; each pauses 1 ms after an acknowledgement)
 *   BENCH_JSON       write the raw results to this file
 *
 * Every round starts a fresh topology (1 master, 2 replicas, 3 sentinels, quorum 2, down-after
 * 1000 ms, failover-timeout 10000 ms) and runs every client in it at once, each on keys of its
 * own, so all of them see the same fault. `SENTINEL FAILOVER` goes to one sentinel (the
 * leader); the moment a replica is promoted (an idle connection to it is killed by the
 * promotion's `CLIENT KILL TYPE normal`), the scenario acts:
 *
 *   kept            nothing: the failover completes (the reference case);
 *   paused-leader   the leader is paused (SIGSTOP), resumed 20 s later: the others never hear of
 *                   the promotion, keep the old master and turn the replica back;
 *   killed-leader   the leader is killed (SIGKILL), restarted 20 s later: the same;
 *   other-promoted  the leader is paused, the other replica made preferred (replica-priority 1)
 *                   and the old master killed: the others run a failover of their own to it.
 *
 * Measured by the harness, never through a client under test: sentinel messages from raw
 * subscribers, each promotion from the killed connection, every acknowledged key looked up on the
 * final master. "Fault → first write on the settled master": the first acknowledgement, after the
 * promotion and after the final master became one, of a key the final master holds (a write the
 * old master took after the promotion is not there), in ms after `SENTINEL FAILOVER`. "Longest
 * gap": the longest time without such a kept acknowledgement, from the fault on (the outage a
 * writer sees). "Majority → first write" (kept only): from the moment two of the three sentinels
 * name the new master (the leader from its `+promoted-slave`, the others from `+switch-master`).
 */
import { writeFileSync } from 'node:fs';
import net from 'node:net';
import { sendCommand } from '../support/mini-client.js';
import { onPromotion } from '../support/promotion-hook.js';
import { decodeReply, encodeCommand } from '../support/resp-wire.js';
import { missingOn, sameAddr, waitSettled, type Ack } from '../support/sentinel-helpers.js';
import { startSentinel, waitFor, type NodeAddress, type SentinelTopology, type ServerHandle } from '../support/topology.js';
import { envInt, envList, fmtInt, markdownTable, median, systemInfo } from './lib.js';
import { CLIENTS, errorKind, haClient, within, type ClientSpec, type LoadClient } from './sentinel-clients.js';

const ROUNDS = envInt('BENCH_ROUNDS', 3);
const WRITERS = envInt('BENCH_WRITERS', 10);
const ONLY = envList('BENCH_ONLY');
const SCENARIOS = envList('BENCH_SCENARIOS');
const SILENT_MS = 20_000;
const log = (s: string) => process.stderr.write(s + '\n');
const fmt = (a: NodeAddress) => `${a.host}:${a.port}`;

type Scenario = 'kept' | 'paused-leader' | 'killed-leader' | 'other-promoted';
const ALL: Scenario[] = ['kept', 'paused-leader', 'killed-leader', 'other-promoted'];
const LABEL: Record<Scenario, string> = {
  kept: 'SENTINEL FAILOVER, kept',
  'paused-leader': 'leader paused after promoting (20 s)',
  'killed-leader': 'leader killed after promoting',
  'other-promoted': 'old master killed, leader stopped, other replica promoted',
};

const SPECS: ClientSpec[] = [
  haClient('majority', "redis-ha-pool, failoverCommit 'majority' (default)"),
  haClient('promotion', "redis-ha-pool, failoverCommit 'promotion'", { failoverCommit: 'promotion' }),
  ...CLIENTS.filter((c) => c.id !== 'ha'),
];

interface Outcome {
  scenario: Scenario;
  round: number;
  client: string;
  acked: number;
  lost: number;
  failed: number;
  failedKinds: Record<string, number>;
  /** ms after the fault. */
  firstOnSettledMs: number | undefined;
  longestGapMs: number;
  majorityToFirstMs: number | undefined;
  /** This pool only: from the majority to its failover event (its own part of the above). */
  majorityToSwitchMs: number | undefined;
  settledOnOld: boolean;
  notes: string[];
}

/** When each sentinel first named `to`: the leader by `+promoted-slave`, the others by `+switch-master`. */
function watchAdoption(sentinels: readonly NodeAddress[], masterName: string): { namedAt: Map<string, number>; stop(): void } {
  const namedAt = new Map<string, number>();
  const socks = sentinels.map((a) => {
    const s = net.connect(a.port, a.host);
    let buf = Buffer.alloc(0);
    s.on('connect', () => s.write(encodeCommand(['SUBSCRIBE', '+promoted-slave', '+switch-master'])));
    s.on('data', (chunk) => {
      const at = Date.now();
      buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
      let pos = 0;
      for (let r = decodeReply(buf, pos); r; r = decodeReply(buf, pos)) {
        pos = r.next;
        const v = r.value;
        if (!Array.isArray(v) || v[0] !== 'message') continue;
        const payload = String(v[2]);
        const ours = v[1] === '+switch-master' ? payload.startsWith(`${masterName} `) : payload.includes(`@ ${masterName} `);
        if (ours && !namedAt.has(fmt(a))) namedAt.set(fmt(a), at);
      }
      buf = buf.subarray(pos);
    });
    s.on('error', () => {});
    return s;
  });
  return { namedAt, stop: () => socks.forEach((s) => s.destroy()) };
}

interface Running {
  spec: ClientSpec;
  client: LoadClient;
  acks: Ack[];
  failedKinds: Map<string, number>;
  failed: number;
  stop(): Promise<void>;
}

async function startLoad(spec: ClientSpec, topo: SentinelTopology, round: number): Promise<Running> {
  const client = await spec.open(topo);
  const acks: Ack[] = [];
  const failedKinds = new Map<string, number>();
  let stopped = false;
  const run: Running = { spec, client, acks, failedKinds, failed: 0, stop: async () => {} };
  const loops = Array.from({ length: WRITERS }, async (_, w) => {
    for (let seq = 0; !stopped; seq++) {
      const key = `rb:${spec.id}:${round}:${w}:${seq}`;
      try {
        await client.set(key, String(seq));
        acks.push({ key, value: String(seq), at: Date.now() });
        await new Promise((r) => setTimeout(r, 1));
      } catch (err) {
        if (stopped) return;
        run.failed++;
        failedKinds.set(errorKind(err), (failedKinds.get(errorKind(err)) ?? 0) + 1);
        await new Promise((r) => setTimeout(r, 10));
      }
    }
  });
  run.stop = async () => {
    stopped = true;
    if (!(await within(Promise.all(loops), 10_000))) log(`   ${spec.id}: writers still pending 10 s after the stop`);
    await within(client.close().catch(() => {}), 5000);
  };
  return run;
}

async function runRound(scenario: Scenario, round: number, specs: ClientSpec[]): Promise<Outcome[]> {
  const topo = await startSentinel({ replicas: 2, sentinels: 3, quorum: 2, downAfterMs: 1000, failoverTimeoutMs: 10_000 });
  const adoption = watchAdoption(topo.sentinelAddresses, topo.masterName);
  const runs: Running[] = [];
  try {
    for (const spec of specs) runs.push(await startLoad(spec, topo, round));
    await waitFor(() => runs.every((r) => r.acks.length >= 2000), 'every client writing', 30_000);
    const from = topo.master.address;
    const leader: ServerHandle = topo.sentinels[round % 3]!;
    const silence = scenario === 'paused-leader' || scenario === 'other-promoted' ? () => leader.pause() : scenario === 'killed-leader' ? () => void leader.kill('SIGKILL') : () => {};
    const hook = await onPromotion(topo.replicas.map((r) => r.address), silence);
    const faultAt = Date.now();
    await waitFor(async () => (await sendCommand(leader.address, ['SENTINEL', 'FAILOVER', topo.masterName], { timeoutMs: 2000 }).catch(() => '')) === 'OK', 'SENTINEL FAILOVER accepted', 30_000, 20);
    const fired = await within(hook.fired, 30_000);
    hook.stop();
    if (!fired) throw new Error('no promotion within 30 s');
    const promotedAt = fired.at;
    // The other replica's own promotion, when the other sentinels run a failover of their own.
    let second: Awaited<ReturnType<typeof onPromotion>> | undefined;
    if (scenario === 'other-promoted') {
      const other = topo.replicas.find((r) => !sameAddr(r.address, fired.replica))!;
      second = await onPromotion([other.address], () => {});
      await other.cli('CONFIG', 'SET', 'replica-priority', '1');
      await topo.master.kill('SIGKILL');
    }
    if (scenario !== 'kept') {
      await new Promise((r) => setTimeout(r, Math.max(0, promotedAt + SILENT_MS - Date.now())));
      if (leader.isPaused()) leader.resume();
      if (!leader.isAlive()) await leader.restart();
    }
    for (const n of topo.dataNodes) if (!n.isAlive()) await n.restart();
    const final = await waitSettled(topo, 2, 120_000);
    const settledAt = Date.now();
    await waitFor(() => Date.now() - settledAt >= 1000, 'a second of writes after the topology settled', 5000, 100);
    await Promise.all(runs.map((r) => r.stop()));
    const secondAt = second ? (await within(second.fired, 0))?.at : undefined;
    second?.stop();
    // Kept writes on the settled master start after the promotion, and after it became master.
    const settledFrom = sameAddr(final, from) ? promotedAt : sameAddr(final, fired.replica) ? promotedAt : secondAt ?? promotedAt;
    // The moment a majority (2 of 3) named the new master.
    const named = [...adoption.namedAt.values()].sort((a, b) => a - b);
    const majorityAt = scenario === 'kept' && named.length >= 2 ? named[1] : undefined;
    const out: Outcome[] = [];
    for (const r of runs) {
      const missing = new Set((await missingOn(final, r.acks)).map((a) => a.key));
      const firstKept = r.acks.find((a) => a.at >= settledFrom && !missing.has(a.key));
      let longestGapMs = 0;
      let prev = faultAt;
      for (const a of r.acks) {
        if (a.at < faultAt || missing.has(a.key)) continue;
        longestGapMs = Math.max(longestGapMs, a.at - prev);
        prev = a.at;
      }
      const firstAfterMajority = majorityAt === undefined ? undefined : r.acks.find((a) => a.at >= majorityAt && !missing.has(a.key));
      out.push({
        scenario, round, client: r.spec.label, acked: r.acks.length, lost: missing.size, failed: r.failed,
        failedKinds: Object.fromEntries(r.failedKinds),
        firstOnSettledMs: firstKept ? firstKept.at - faultAt : undefined,
        longestGapMs,
        majorityToFirstMs: firstAfterMajority && majorityAt !== undefined ? firstAfterMajority.at - majorityAt : undefined,
        majorityToSwitchMs: majorityAt !== undefined && r.client.switchedAt?.() !== undefined ? r.client.switchedAt()! - majorityAt : undefined,
        settledOnOld: sameAddr(final, from),
        notes: [`fault at 0, promotion +${promotedAt - faultAt} ms${majorityAt !== undefined ? `, majority +${majorityAt - faultAt} ms` : ''}; final ${fmt(final)}${sameAddr(final, from) ? ' (the old master)' : ''}`, ...r.client.notes()],
      });
    }
    return out;
  } finally {
    adoption.stop();
    await Promise.all(runs.map((r) => r.stop().catch(() => {})));
    for (const s of topo.sentinels) if (s.isPaused()) s.resume();
    await topo.stop();
  }
}

function report(all: Outcome[], specs: ClientSpec[], scenarios: Scenario[]): string {
  const rows: string[][] = [];
  for (const scenario of scenarios) {
    for (const spec of specs) {
      const os = all.filter((o) => o.scenario === scenario && o.client === spec.label);
      if (os.length === 0) continue;
      const firsts = os.map((o) => o.firstOnSettledMs).filter((x): x is number => x !== undefined);
      const gaps = os.map((o) => o.longestGapMs);
      const majority = os.map((o) => o.majorityToFirstMs).filter((x): x is number => x !== undefined);
      const toSwitch = os.map((o) => o.majorityToSwitchMs).filter((x): x is number => x !== undefined);
      rows.push([
        LABEL[scenario], spec.label,
        `${fmtInt(os.reduce((s, o) => s + o.lost, 0))} (${os.map((o) => fmtInt(o.lost)).join(', ')})`,
        firsts.length ? `${fmtInt(median(firsts))} ms (${firsts.map(fmtInt).join(', ')})` : 'never',
        `${fmtInt(median(gaps))} ms (${gaps.map(fmtInt).join(', ')})`,
        scenario === 'kept' ? (majority.length ? `${fmtInt(median(majority))} ms (${majority.map(fmtInt).join(', ')})` : 'never') : '-',
        scenario === 'kept' && toSwitch.length ? `${toSwitch.map((x) => fmtInt(x)).join(', ')} ms` : '-',
        fmtInt(os.reduce((s, o) => s + o.failed, 0)),
      ]);
    }
  }
  return markdownTable(
    ['scenario', 'client', 'acknowledged writes lost (per round)', 'fault → first write on the settled master, median (per round)', 'longest gap in kept writes', 'majority names it → first write', 'majority → failover event', 'failed calls'],
    rows, ['left', 'left', 'right', 'right', 'right', 'right', 'right', 'right'],
  );
}

async function main(): Promise<void> {
  const specs = SPECS.filter((s) => !ONLY || ONLY.has(s.id));
  const scenarios = ALL.filter((s) => !SCENARIOS || SCENARIOS.has(s));
  if (specs.length === 0 || scenarios.length === 0) throw new TypeError('BENCH_ONLY / BENCH_SCENARIOS select nothing');
  const sys = systemInfo();
  const all: Outcome[] = [];
  const started = Date.now();
  for (const scenario of scenarios) {
    for (let round = 0; round < ROUNDS; round++) {
      log(`== ${LABEL[scenario]}, round ${round + 1}/${ROUNDS}`);
      const out = await runRound(scenario, round, specs);
      for (const o of out) log(`   ${o.client}: ${fmtInt(o.acked)} acked, ${fmtInt(o.lost)} lost, ${o.failed} failed; fault → first on settled ${o.firstOnSettledMs ?? '-'} ms, longest gap ${o.longestGapMs} ms${o.majorityToFirstMs !== undefined ? `, majority → first ${o.majorityToFirstMs} ms` : ''}${o.majorityToSwitchMs !== undefined ? `, majority → event ${o.majorityToSwitchMs} ms` : ''}; ${o.notes[0]}`);
      all.push(...out);
    }
  }
  process.stdout.write(
    `\n## Promotions Sentinel does (not) keep: ${WRITERS} writers per client, all clients in the same round\n\n` +
      `1 master, 2 replicas, 3 sentinels (quorum 2, down-after 1000 ms, failover-timeout 10000 ms), a fresh topology per round; ` +
      `${sys.cpu} x${sys.cores}, Node ${sys.node}. ${ROUNDS} rounds per scenario, ${((Date.now() - started) / 1000).toFixed(0)} s in all.\n\n` +
      report(all, specs, scenarios) + '\n',
  );
  if (process.env.BENCH_JSON) writeFileSync(process.env.BENCH_JSON, JSON.stringify({ system: sys, results: all }, null, 2));
}

main().then(
  () => process.exit(0),
  (err) => {
    log(`[bench] failed: ${(err as Error)?.stack ?? err}`);
    process.exit(1);
  },
);

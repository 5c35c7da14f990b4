/**
 * Sentinel failover benchmark: redis-ha-pool SentinelPool vs ioredis 6 vs node-redis 6.3
 * (sentinel mode), in the same run.
 *
 *   npx tsx test/bench/sentinel.ts
 *
 * Environment:
 *   BENCH_ONLY       comma list of clients: ha, ioredis, node-redis (default all)
 *   BENCH_SCENARIOS  comma list: failover, sigkill, restart-leader (default all)
 *   BENCH_WORKERS    concurrent writers (default 50)
 *   BENCH_JSON       write the raw results to this file as JSON
 *
 * Every client gets a FRESH topology (1 master, 2 replicas, 3 sentinels; down-after 1000 ms,
 * failover-timeout 5000 ms) per scenario, so an earlier fault never interferes:
 *
 *   A  `SENTINEL FAILOVER <name>` sent to the first sentinel, under load;
 *   B  SIGKILL of the master, under load;
 *   C  a sentinel SIGKILLed, restarted 2 s later and asked for `SENTINEL FAILOVER` as soon as it
 *      answers PING: the failover is led by a sentinel the client lost (issue 18).
 *
 * Load: BENCH_WORKERS async writers, each sending `SET b:<n> <n>` for a unique n and awaiting
 * it before the next (marked idempotent for our pool; default options for the peers). Every
 * acknowledged key is recorded with its ack time; every failure is counted by kind, and the
 * writer pauses 10 ms after a failure so that a client that rejects at once cannot spin.
 *
 * Independent of the clients under test (raw sockets, the harness's own RESP code):
 *  - a subscriber on every sentinel records when `+switch-master` (and the other failover
 *    steps) were first published;
 *  - the promotion of the new master ("MASTER MODE enabled") and the demotion of the old one
 *    ("REPLICAOF ... enabled"; in A the old master stays writable for ~10 s) are read from the
 *    nodes' own logs, stamped to the ms; a poller asking every data node ROLE every 25 ms is the
 *    fallback, and tells the load loop online when the old master was demoted;
 *  - after the run, every acknowledged key is checked on the final master (pipelined EXISTS).
 *
 * "First write on the new master" = the earliest ack, at or after the new master's promotion,
 * of a key the final master holds: a write the old master acked after the promotion is not on
 * the new master, and one acked before it is not ours to count. When the client went on
 * writing to the old master after the promotion, only kept acks after its first lost one count
 * (a key acked just after the promotion may be an old-master write that replicated in time).
 * It may precede `+switch-master` (a negative "after +switch-master" figure): our pool switches
 * on `+promoted-slave`, once the promoted replica answers ROLE as master.
 *
 * The load runs until the client has been writing to the new master for a while: at least
 * 6 s after `+switch-master`, 3 s after the old master's demotion (A) and with the last acked
 * key present on the new master, or 30 s after the fault at most.
 */
import { writeFileSync } from 'node:fs';
import net from 'node:net';
import type { NodeAddress } from '../../src/types.js';
import { sendCommand, sendCommands } from '../support/mini-client.js';
import { decodeReply, encodeCommand, ReplyError } from '../support/resp-wire.js';
import { findMissing } from '../support/missing-keys.js';
import { startSentinel, type SentinelTopology } from '../support/topology.js';
import { envInt, envList, fmtInt, markdownTable, systemInfo } from './lib.js';
import { CLIENTS, errorKind, within, type LoadClient, type ClientSpec } from './sentinel-clients.js';

const WORKERS = envInt('BENCH_WORKERS', 50);
const ONLY = envList('BENCH_ONLY');
const SCENARIOS = envList('BENCH_SCENARIOS');
const WARMUP_MS = 2000;
const MIN_AFTER_SWITCH_MS = 6000;
const MIN_AFTER_DEMOTION_MS = 3000;
const MAX_AFTER_FAULT_MS = 30_000;
const ERROR_PAUSE_MS = 10;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const fmtAddr = (a: NodeAddress) => `${a.host}:${a.port}`;
const sameAddr = (a: NodeAddress, b: NodeAddress) => a.port === b.port && a.host === b.host;
const log = (s: string) => process.stderr.write(s + '\n');

// ------------------------------------------------------------------------------------ clients

// ------------------------------------------------------------------------------------ observers

interface SentinelMessage {
  at: number;
  channel: string;
  payload: string;
}

const CHANNELS = ['+switch-master', '+try-failover', '+selected-slave', '+promoted-slave', '+convert-to-slave', '+odown', '+failover-end'];

/** Raw subscribers on every sentinel. */
function watchSentinels(addresses: readonly NodeAddress[]): { messages: SentinelMessage[]; stop(): void } {
  const messages: SentinelMessage[] = [];
  const sockets = addresses.map((a) => {
    const sock = net.connect({ host: a.host, port: a.port });
    let buf = Buffer.alloc(0);
    sock.setNoDelay(true);
    sock.on('connect', () => sock.write(encodeCommand(['SUBSCRIBE', ...CHANNELS])));
    sock.on('data', (chunk) => {
      const at = Date.now();
      buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
      let pos = 0;
      for (;;) {
        const r = decodeReply(buf, pos);
        if (!r) break;
        pos = r.next;
        const v = r.value;
        if (Array.isArray(v) && v[0] === 'message') messages.push({ at, channel: String(v[1]), payload: String(v[2]) });
      }
      buf = buf.subarray(pos);
    });
    sock.on('error', () => {});
    return sock;
  });
  return { messages, stop: () => sockets.forEach((s) => s.destroy()) };
}

interface RoleChange {
  at: number;
  node: NodeAddress;
  role: string;
}

/** Asks every live data node ROLE every 25 ms and records each change. */
function pollRoles(topo: SentinelTopology): { changes: RoleChange[]; stop(): Promise<void> } {
  const changes: RoleChange[] = [];
  const last = new Map<string, string>();
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      await Promise.all(
        topo.dataNodes
          .filter((n) => n.isAlive())
          .map(async (n) => {
            try {
              const r = await sendCommand(n.address, ['ROLE'], { timeoutMs: 300 });
              const role = Array.isArray(r) ? String(r[0]) : String(r);
              const at = Date.now();
              if (last.get(fmtAddr(n.address)) !== role) {
                last.set(fmtAddr(n.address), role);
                changes.push({ at, node: n.address, role });
              }
            } catch {
              // a killed or busy node: no information
            }
          }),
      );
      await sleep(25);
    }
  })();
  return {
    changes,
    stop: async () => {
      stopped = true;
      await loop;
    },
  };
}

/**
 * When a data node logged a line matching `what` at or after `since` (epoch ms): redis-server
 * stamps its log lines with ms precision (`pid:M 29 Nov 2026 19:18:55.074 * MASTER MODE enabled`),
 * in local time, on this machine's clock.
 */
function loggedAt(topo: SentinelTopology, node: NodeAddress, what: RegExp, since: number): number | undefined {
  const text = topo.handleFor(node)?.logTail(100_000) ?? '';
  for (const line of text.split('\n')) {
    const m = /^\d+:[A-Z] (\d{1,2} \w{3} \d{4} \d{2}:\d{2}:\d{2}\.\d{3}) . (.*)$/.exec(line);
    if (!m || !what.test(m[2]!)) continue;
    const at = Date.parse(m[1]!);
    if (Number.isFinite(at) && at >= since) return at;
  }
  return undefined;
}

/** Acked keys (by number) that `master` lacks, counted over raw sockets (never through a client under test). */
async function missingKeys(master: NodeAddress, keys: readonly number[]): Promise<Set<number>> {
  return findMissing(keys, 'b:', async (cmds) => {
    const replies = await sendCommands(master, cmds, { timeoutMs: 30_000 });
    return replies.map((r) => {
      if (r instanceof ReplyError) throw r;
      return Number(r);
    });
  });
}

// ------------------------------------------------------------------------------------ one run

type Scenario = 'failover' | 'sigkill' | 'restart-leader';
const SCENARIO_LABEL: Record<Scenario, string> = {
  failover: 'A: SENTINEL FAILOVER',
  sigkill: 'B: SIGKILL master',
  'restart-leader': 'C: sentinel SIGKILLed, restarted 2 s later, SENTINEL FAILOVER through it',
};
/** Scenarios that leave the old master running (it is demoted by the sentinels later). */
const oldMasterLives = (s: Scenario) => s !== 'sigkill';

interface RunResult {
  scenario: Scenario;
  client: string;
  ok: boolean;
  failure?: string;
  totalAcked: number;
  ackedAfterFault: number;
  failed: number;
  failedKinds: Record<string, { count: number; firstMs: number; lastMs: number }>;
  lost: number;
  lostBeforeFault: number;
  /** Acked between the fault and the promotion, and lost. */
  lostBeforePromotion: number;
  /** Acked at or after the promotion, and lost (acked by the old master while another one was master). */
  lostAfterPromotion: number;
  /** ms after the fault (undefined = never seen). */
  tryFailoverMs?: number;
  promotedMs?: number;
  /** The same seen by the ROLE poller (for comparison; coarser). */
  promotedPolledMs?: number;
  switchMasterMs?: number;
  oldDemotedMs?: number;
  firstOnNewMs?: number;
  /** First ack after +switch-master, whatever node took it. */
  firstAckAfterSwitchMs?: number;
  longestGapMs: number;
  loadAfterFaultMs: number;
  stuckAtEnd: number;
  background: Record<string, number>;
  notes: string[];
}

let currentTopo: SentinelTopology | undefined;

async function runOne(spec: ClientSpec, scenario: Scenario): Promise<RunResult> {
  const res: RunResult = {
    scenario, client: spec.label, ok: false, totalAcked: 0, ackedAfterFault: 0, failed: 0, failedKinds: {}, lost: 0,
    lostBeforeFault: 0, lostBeforePromotion: 0, lostAfterPromotion: 0, longestGapMs: 0, loadAfterFaultMs: 0, stuckAtEnd: 0, background: {}, notes: [],
  };
  const topo = await startSentinel({ downAfterMs: 1000, failoverTimeoutMs: 5000 });
  currentTopo = topo;
  const watch = watchSentinels(topo.sentinelAddresses);
  const roles = pollRoles(topo);
  let client: LoadClient | undefined;
  let stop = false;
  const workers: Promise<void>[] = [];
  try {
    client = await spec.open(topo);
    const c = client;
    const ackN: number[] = [];
    const ackAt: number[] = [];
    const kinds = new Map<string, { count: number; first: number; last: number }>();
    let seq = 0;
    let pending = 0;
    const worker = async () => {
      while (!stop) {
        const n = seq++;
        pending++;
        try {
          await c.set(`b:${n}`, String(n));
          ackN.push(n);
          ackAt.push(Date.now());
        } catch (err) {
          if (stop) {
            // rejected by our own close() after the load stopped (only when a command hung)
            res.notes.push(`after the load stopped: ${errorKind(err)}`);
            return;
          }
          const at = Date.now();
          res.failed++;
          const k = errorKind(err);
          const e = kinds.get(k);
          if (e) {
            e.count++;
            e.last = at;
          } else kinds.set(k, { count: 1, first: at, last: at });
          await sleep(ERROR_PAUSE_MS);
        } finally {
          pending--;
        }
      }
    };
    for (let i = 0; i < WORKERS; i++) workers.push(worker());
    await sleep(WARMUP_MS);
    if (ackN.length === 0) throw new Error(`no write succeeded during the ${WARMUP_MS} ms warm-up`);

    // ---- the fault
    const from = topo.master.address;
    const faultAt = Date.now();
    if (scenario === 'failover') {
      await sendCommand(topo.sentinelAddresses[0]!, ['SENTINEL', 'FAILOVER', topo.masterName]);
    } else if (scenario === 'restart-leader') {
      // The leader is a sentinel the client has lost: killed, back 2 s later, asked at once.
      const leader = topo.sentinels[0]!;
      await leader.kill('SIGKILL');
      await sleep(2000);
      await leader.restart();
      for (let t = Date.now(); (await sendCommand(leader.address, ['PING']).catch(() => '')) !== 'PONG'; ) {
        if (Date.now() - t > 20_000) throw new Error('the restarted sentinel did not answer PING within 20 s');
        await sleep(5);
      }
      for (let t = Date.now(); (await sendCommand(leader.address, ['SENTINEL', 'FAILOVER', topo.masterName], { timeoutMs: 2000 }).catch(() => '')) !== 'OK'; ) {
        if (Date.now() - t > 30_000) throw new Error('the restarted sentinel did not accept SENTINEL FAILOVER within 30 s');
        await sleep(20);
      }
    } else {
      await topo.master.kill('SIGKILL');
    }
    const newMaster = await topo.waitForNewMaster(from, 30_000);
    const sinceFault = (at: number | undefined) => (at === undefined ? undefined : at - faultAt);
    const firstMsg = (channel: string) => watch.messages.find((m) => m.channel === channel && m.at >= faultAt)?.at;
    const promotedAt = () => roles.changes.find((r) => r.at >= faultAt && sameAddr(r.node, newMaster) && r.role === 'master')?.at;
    const demotedAt = () => roles.changes.find((r) => r.at >= faultAt && sameAddr(r.node, from) && r.role === 'slave')?.at;

    // ---- keep the load on until the client has settled on the new master (or the cap)
    for (;;) {
      await sleep(100);
      const now = Date.now();
      if (now - faultAt >= MAX_AFTER_FAULT_MS) {
        res.notes.push(`load stopped at the ${MAX_AFTER_FAULT_MS / 1000} s cap`);
        break;
      }
      const sw = firstMsg('+switch-master');
      if (sw === undefined || now < sw + MIN_AFTER_SWITCH_MS) continue;
      if (oldMasterLives(scenario)) {
        const d = demotedAt();
        if (d === undefined || now < d + MIN_AFTER_DEMOTION_MS) continue;
      }
      const lastAt = ackAt[ackAt.length - 1];
      if (lastAt === undefined || now - lastAt > 500) continue;
      try {
        if (Number(await sendCommand(newMaster, ['EXISTS', `b:${ackN[ackN.length - 1]}`], { timeoutMs: 500 })) === 1) break;
      } catch {
        // ask again
      }
    }
    const loadEnd = Date.now();
    res.loadAfterFaultMs = loadEnd - faultAt;
    stop = true;
    const drained = await within(Promise.all(workers), 10_000);
    if (!drained) {
      res.stuckAtEnd = pending;
      res.notes.push(`${pending} commands still pending 10 s after the load stopped`);
    }
    await within(c.close().catch(() => {}), 5000);
    client = undefined;
    await within(Promise.all(workers), 5000);
    await roles.stop();
    watch.stop();

    // ---- verify on the final master
    const final = await topo.currentMaster();
    if (!sameAddr(final, newMaster)) res.notes.push(`the sentinels moved on again: final master ${fmtAddr(final)}, new master was ${fmtAddr(newMaster)}`);
    const role = await sendCommand(final, ['ROLE']);
    if (!Array.isArray(role) || role[0] !== 'master') throw new Error(`final master ${fmtAddr(final)} says ROLE ${JSON.stringify(role)}`);
    const missing = await missingKeys(final, ackN);

    // Promotion and demotion times: from the nodes' own logs (ms precision), else the ROLE poller.
    const pLog = loggedAt(topo, newMaster, /^MASTER MODE enabled/, faultAt - 5);
    const dLog = oldMasterLives(scenario) ? loggedAt(topo, from, /^REPLICAOF .* enabled/, faultAt - 5) : undefined;
    const pAt = pLog ?? promotedAt();
    const dAt = dLog ?? demotedAt();
    if (pLog === undefined) res.notes.push('promotion time from the ROLE poller (no "MASTER MODE enabled" log line found)');
    res.promotedPolledMs = sinceFault(promotedAt());
    const swAt = firstMsg('+switch-master');
    res.totalAcked = ackN.length;
    res.lost = missing.size;
    res.tryFailoverMs = sinceFault(firstMsg('+try-failover'));
    res.promotedMs = sinceFault(pAt);
    res.switchMasterMs = sinceFault(swAt);
    res.oldDemotedMs = sinceFault(dAt);
    const threshold = pAt ?? swAt ?? faultAt;
    // A key acked just after the promotion may still be an old-master write that replicated in
    // time. When the client went on writing to the old master after the promotion (its first
    // such write is the first lost ack after it), its first write on the new master is the
    // first kept ack after that one; replies on one connection come back in order.
    // (Indexes, not times: acks are recorded in the order the replies were processed, and
    // several share a millisecond.)
    let onNewFrom = 0;
    while (onNewFrom < ackN.length && ackAt[onNewFrom]! < threshold) onNewFrom++;
    for (let i = onNewFrom; i < ackN.length; i++) {
      if (missing.has(ackN[i]!)) {
        onNewFrom = i + 1;
        break;
      }
    }
    let gapPrev = faultAt;
    let interleaved = 0;
    for (let i = 0; i < ackN.length; i++) {
      const at = ackAt[i]!;
      const gone = missing.has(ackN[i]!);
      if (at < faultAt) {
        if (gone) res.lostBeforeFault++;
        continue;
      }
      res.ackedAfterFault++;
      if (at - gapPrev > res.longestGapMs) res.longestGapMs = at - gapPrev;
      gapPrev = at;
      if (gone) {
        if (at >= threshold) res.lostAfterPromotion++;
        else res.lostBeforePromotion++;
      }
      if (res.firstOnNewMs === undefined && i >= onNewFrom && !gone) res.firstOnNewMs = at - faultAt;
      if (res.firstOnNewMs !== undefined && gone) interleaved++;
      if (res.firstAckAfterSwitchMs === undefined && swAt !== undefined && at >= swAt) res.firstAckAfterSwitchMs = at - faultAt;
    }
    if (interleaved) res.notes.push(`${fmtInt(interleaved)} lost acks came after the first write on the new master (writes interleaved between the two masters)`);
    for (const [k, e] of kinds) res.failedKinds[k] = { count: e.count, firstMs: e.first - faultAt, lastMs: e.last - faultAt };
    res.background = Object.fromEntries(c.background);
    res.notes.push(...c.notes().map((n) => n.replace(/ at (\d{13})$/, (_, at) => ` at +${Number(at) - faultAt} ms`)));
    res.ok = true;
    return res;
  } catch (err) {
    res.failure = (err as Error)?.stack ?? String(err);
    return res;
  } finally {
    stop = true;
    if (client) await within(client.close().catch(() => {}), 5000);
    await within(Promise.all(workers), 5000);
    await roles.stop();
    watch.stop();
    await topo.stop();
    currentTopo = undefined;
  }
}

// ------------------------------------------------------------------------------------ report

const ms = (n: number | undefined) => (n === undefined ? 'never' : `${fmtInt(n)} ms`);
const signedMs = (n: number | undefined) => (n === undefined ? '-' : `${n > 0 ? '+' : n < 0 ? '−' : ''}${fmtInt(Math.abs(n))} ms`);

function report(results: RunResult[]): string {
  const out: string[] = [];
  out.push(
    markdownTable(
      ['scenario', 'client', 'fault → first write on new master', '+switch-master → first write on new master', 'failed commands', 'acked writes lost', 'total acked'],
      results.map((r) =>
        r.ok
          ? [
              SCENARIO_LABEL[r.scenario],
              r.client,
              ms(r.firstOnNewMs),
              r.firstOnNewMs !== undefined && r.switchMasterMs !== undefined ? signedMs(r.firstOnNewMs - r.switchMasterMs) : '-',
              fmtInt(r.failed),
              `${fmtInt(r.lost)}${r.lost ? ` (${(r.lost / Math.max(1, r.totalAcked) * 100).toFixed(1)}%)` : ''}`,
              fmtInt(r.totalAcked),
            ]
          : [SCENARIO_LABEL[r.scenario], r.client, 'RUN FAILED', '-', '-', '-', '-'],
      ),
      ['left', 'left', 'right', 'right', 'right', 'right', 'right'],
    ),
  );
  out.push('');
  out.push(
    'Timings of each run in ms after the fault: sentinel messages from raw subscribers on every sentinel (earliest); ' +
      'promotion ("MASTER MODE enabled") and demotion ("REPLICAOF ... enabled") from the nodes\' logs; acks as the load loop saw them.',
  );
  out.push('');
  out.push(
    markdownTable(
      ['scenario', 'client', '+try-failover', 'replica promoted', '+switch-master', 'old master demoted', 'first ack after +switch-master', 'longest ack gap', 'lost acked: before fault / fault→promotion / after promotion', 'load after fault'],
      results.filter((r) => r.ok).map((r) => [
        SCENARIO_LABEL[r.scenario],
        r.client,
        ms(r.tryFailoverMs),
        ms(r.promotedMs),
        ms(r.switchMasterMs),
        r.scenario === 'sigkill' ? 'killed' : ms(r.oldDemotedMs),
        ms(r.firstAckAfterSwitchMs),
        ms(r.longestGapMs),
        `${fmtInt(r.lostBeforeFault)} / ${fmtInt(r.lostBeforePromotion)} / ${fmtInt(r.lostAfterPromotion)}`,
        `${(r.loadAfterFaultMs / 1000).toFixed(1)} s`,
      ]),
      ['left', 'left', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right'],
    ),
  );
  out.push('');
  out.push('Failed commands by kind (time range in ms after the fault), background error events, notes:');
  for (const r of results) {
    out.push(`- ${SCENARIO_LABEL[r.scenario]} / ${r.client}:${r.ok ? '' : ` RUN FAILED: ${r.failure}`}`);
    const kinds = Object.entries(r.failedKinds).sort((a, b) => b[1].count - a[1].count);
    if (r.ok && kinds.length === 0) out.push('  - failed commands: none');
    for (const [k, e] of kinds) out.push(`  - failed ${fmtInt(e.count)} × ${k} (${e.firstMs}..${e.lastMs} ms)`);
    const bg = Object.entries(r.background).sort((a, b) => b[1] - a[1]);
    if (bg.length) out.push(`  - background 'error' events: ${bg.map(([k, n]) => `${n} × ${k}`).join('; ')}`);
    for (const n of r.notes) out.push(`  - ${n}`);
  }
  return out.join('\n');
}

// ------------------------------------------------------------------------------------ main

for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.on(sig, () => {
    log(`\n[bench] ${sig}: stopping the topology`);
    const hard = setTimeout(() => process.exit(130), 5000);
    hard.unref();
    void (currentTopo?.stop() ?? Promise.resolve()).finally(() => process.exit(sig === 'SIGINT' ? 130 : 143));
  });
}

async function main(): Promise<void> {
  const clients = CLIENTS.filter((c) => !ONLY || ONLY.has(c.id));
  const scenarios = (['failover', 'sigkill', 'restart-leader'] as const).filter((s) => !SCENARIOS || SCENARIOS.has(s));
  if (clients.length === 0 || scenarios.length === 0) throw new TypeError('BENCH_ONLY / BENCH_SCENARIOS select nothing');
  const sys = systemInfo();
  log(`Sentinel failover bench: ${WORKERS} writers, ${clients.map((c) => c.id).join(', ')}; ${sys.cpu} x${sys.cores}, ${sys.node}`);
  const results: RunResult[] = [];
  const started = Date.now();
  for (const scenario of scenarios) {
    for (const spec of clients) {
      const t = Date.now();
      log(`\n== ${SCENARIO_LABEL[scenario]} / ${spec.label}`);
      const r = await runOne(spec, scenario);
      results.push(r);
      if (!r.ok) log(`   RUN FAILED: ${r.failure}`);
      else {
        log(
          `   acked ${fmtInt(r.totalAcked)}, failed ${fmtInt(r.failed)}, lost ${fmtInt(r.lost)}; +switch-master at ${ms(r.switchMasterMs)}, ` +
            `promoted at ${ms(r.promotedMs)}, first write on new master at ${ms(r.firstOnNewMs)} (run ${((Date.now() - t) / 1000).toFixed(1)} s)`,
        );
      }
    }
  }
  const redisVersion = await (async () => {
    try {
      const { execFileSync } = await import('node:child_process');
      return execFileSync('redis-server', ['--version']).toString().trim();
    } catch {
      return 'redis-server ?';
    }
  })();
  const text = report(results);
  process.stdout.write(
    `\n## Sentinel failover: ${WORKERS} concurrent writers of unique-key SETs\n\n` +
      `${redisVersion.split(' ').slice(0, 3).join(' ')}; 1 master, 2 replicas, 3 sentinels (quorum 2, down-after 1000 ms, failover-timeout 5000 ms); ` +
      `a fresh topology per client per scenario; ${sys.cpu} x${sys.cores}, Node ${sys.node}. Total ${((Date.now() - started) / 1000).toFixed(0)} s.\n\n` +
      text +
      '\n',
  );
  if (process.env.BENCH_JSON) writeFileSync(process.env.BENCH_JSON, JSON.stringify({ system: sys, results }, null, 2));
}

main().then(
  () => process.exit(0),
  async (err) => {
    log(`[bench] failed: ${(err as Error)?.stack ?? err}`);
    await currentTopo?.stop().catch(() => {});
    process.exit(1);
  },
);

/**
 * Helpers shared by the SentinelPool integration tests: an event recorder, a write load that
 * records every acknowledgement, a settle check for the topology after a failover, a fake
 * sentinel, and reads straight from a node through the harness's own RESP client (never
 * through the library under test).
 */
import type net from 'node:net';
import { RedisError, type FailoverEvent, type SentinelPool } from '../../src/index.js';
import type { NodeAddress } from '../../src/types.js';
import { startFakeServer, resp, type FakeServer } from './fake-server.js';
import { pairsToMap, parseInfo, sendCommand, sendCommands } from './mini-client.js';
import { ReplyError, type RespValue } from './resp-wire.js';
import type { SentinelTopology } from './topology-types.js';
import { waitFor } from './wait.js';

export const fmt = (a: NodeAddress): string => `${a.host}:${a.port}`;
export const sameAddr = (a: NodeAddress, b: NodeAddress): boolean => a.port === b.port && (a.host === b.host || [a.host, b.host].every((h) => h === '127.0.0.1' || h === 'localhost'));

// ------------------------------------------------------------------ events

export interface Recorded<T> {
  at: number;
  info: T;
}

/** Every event a SentinelPool emits, with the time it arrived. */
export class EventLog {
  readonly failover: Recorded<FailoverEvent>[] = [];
  readonly failoverStart: Recorded<{ master: NodeAddress; event: string }>[] = [];
  readonly failoverAbort: Recorded<{ master: NodeAddress; reason: string }>[] = [];
  readonly up: Recorded<{ address: NodeAddress; reconnected: boolean }>[] = [];
  readonly down: Recorded<{ address: NodeAddress; error: Error }>[] = [];
  readonly polling: Recorded<{ address: NodeAddress; error: Error }>[] = [];
  readonly reconnect: Recorded<{ address: NodeAddress; delay: number; attempt: number }>[] = [];
  readonly errors: Recorded<Error>[] = [];
  /** Called synchronously inside the `failover` listener (to snapshot counters at that instant). */
  onFailover: ((e: FailoverEvent) => void) | undefined;

  constructor(pool: SentinelPool) {
    const now = Date.now;
    pool.on('failover', (e) => {
      this.failover.push({ at: now(), info: e });
      this.onFailover?.(e);
    });
    pool.on('failover-start', (e) => this.failoverStart.push({ at: now(), info: e }));
    pool.on('failover-abort', (e) => this.failoverAbort.push({ at: now(), info: e }));
    pool.on('sentinel-up', (e) => this.up.push({ at: now(), info: e }));
    pool.on('sentinel-down', (e) => this.down.push({ at: now(), info: e }));
    pool.on('sentinel-polling', (e) => this.polling.push({ at: now(), info: e }));
    pool.on('sentinel-reconnect', (e) => this.reconnect.push({ at: now(), info: e }));
    pool.on('error', (e) => this.errors.push({ at: now(), info: e }));
  }

  /** One line per failover event, for the test log. */
  describeFailovers(): string {
    return this.failover.map((f) => `${fmt(f.info.from)} -> ${fmt(f.info.to)} by ${f.info.detectedBy}`).join('; ') || '(none)';
  }
}

// ------------------------------------------------------------------ write load

export interface Ack {
  key: string;
  value: string;
  /** Epoch ms when the reply was delivered to the caller. */
  at: number;
}

export interface Failure {
  key: string;
  error: unknown;
  at: number;
}

export interface WriteLoad {
  readonly acks: Ack[];
  readonly failures: Failure[];
  /** Stops every writer after its current command and waits for them. */
  stop(): Promise<void>;
  /** Resolves once at least `n` more writes have been acknowledged. */
  waitForAcks(n: number, what: string, timeoutMs?: number): Promise<void>;
}

/**
 * `writers` concurrent loops, each SETting a key of its own per write (`<prefix>:<w>:<seq>`)
 * through `set`, recording every acknowledgement and failure. A writer that fails waits a few
 * ms before its next write so a broken pool cannot turn the load into a tight loop.
 */
export function startWrites(set: (key: string, value: string) => Promise<unknown>, writers: number, prefix: string): WriteLoad {
  const acks: Ack[] = [];
  const failures: Failure[] = [];
  let stopped = false;
  const loops = Array.from({ length: writers }, async (_, w) => {
    for (let seq = 0; !stopped; seq++) {
      const key = `${prefix}:${w}:${seq}`;
      const value = `v${seq}`;
      try {
        await set(key, value);
        acks.push({ key, value, at: Date.now() });
      } catch (error) {
        failures.push({ key, error, at: Date.now() });
        await new Promise((r) => setTimeout(r, 5));
      }
    }
  });
  return {
    acks,
    failures,
    async stop() {
      stopped = true;
      await Promise.all(loops);
    },
    async waitForAcks(n, what, timeoutMs = 20_000) {
      const target = acks.length + n;
      await waitFor(() => acks.length >= target, what, timeoutMs);
    },
  };
}

/** True when the error (or any cause in its chain) is a READONLY reply. */
export function isReadonly(err: unknown): boolean {
  for (let e = err as { code?: unknown; message?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 10; e = e.cause as typeof e, depth++) {
    if (e instanceof RedisError && e.code === 'READONLY') return true;
    if (typeof e.message === 'string' && /^READONLY\b/.test(e.message)) return true;
  }
  return false;
}

// ------------------------------------------------------------------ reading nodes directly

/**
 * Reads `acks` from `node` with pipelined GETs (chunks of `chunk`) through the harness's own
 * client, and returns the acknowledged writes the node does not hold (missing or another value).
 */
export async function missingOn(node: NodeAddress, acks: readonly Ack[], chunk = 2000): Promise<Ack[]> {
  const missing: Ack[] = [];
  for (let i = 0; i < acks.length; i += chunk) {
    const part = acks.slice(i, i + chunk);
    const replies = await sendCommands(node, part.map((a) => ['GET', a.key]), { timeoutMs: 10_000 });
    replies.forEach((r, j) => {
      if (r instanceof ReplyError) throw r;
      if (r !== part[j]!.value) missing.push(part[j]!);
    });
  }
  return missing;
}

/** `INFO commandstats` of a node: command -> calls. */
export async function commandCalls(node: NodeAddress): Promise<Map<string, number>> {
  const info = parseInfo(String(await sendCommand(node, ['INFO', 'commandstats'])));
  const out = new Map<string, number>();
  for (const [k, v] of info) {
    const m = /^cmdstat_(.+)$/.exec(k);
    const calls = /calls=(\d+)/.exec(v);
    if (m && calls) out.set(m[1]!, Number(calls[1]));
  }
  return out;
}

/** Lines of CLIENT LIST as field maps. */
export async function clientList(node: NodeAddress): Promise<Array<Map<string, string>>> {
  const text = String(await sendCommand(node, ['CLIENT', 'LIST']));
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => new Map(l.trim().split(' ').map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)] as [string, string])));
}

/** ROLE of a node ('master' | 'slave' | 'sentinel'). */
export async function roleOf(node: NodeAddress): Promise<string> {
  const r = await sendCommand(node, ['ROLE']);
  return Array.isArray(r) ? String(r[0]) : String(r);
}

/**
 * Waits until the Sentinel topology is calm again after a failover: every responsive sentinel
 * names the same master, which says ROLE master, and lists `replicas` replicas, each flagged
 * plain `slave` with master-link-status ok, and each of those says ROLE slave of that master
 * with its link up. Returns the master.
 */
export async function waitSettled(topo: SentinelTopology, replicas: number, timeoutMs = 45_000): Promise<NodeAddress> {
  return waitFor(
    async () => {
      const sentinels = topo.sentinels.filter((s) => s.isAlive() && !s.isPaused());
      let master: NodeAddress | undefined;
      for (const s of sentinels) {
        const [addr, reps] = await sendCommands(s.address, [
          ['SENTINEL', 'GET-MASTER-ADDR-BY-NAME', topo.masterName],
          ['SENTINEL', 'REPLICAS', topo.masterName],
        ]);
        const a = { host: String((addr as RespValue[])[0]), port: Number((addr as RespValue[])[1]) };
        if (master && !sameAddr(master, a)) throw new Error(`sentinels disagree: ${fmt(master)} vs ${fmt(a)}`);
        master = a;
        const ok = (reps as RespValue[]).map(pairsToMap).filter((r) => r.get('flags') === 'slave' && r.get('master-link-status') === 'ok');
        if (ok.length !== replicas) throw new Error(`sentinel ${fmt(s.address)} sees ${ok.length} healthy replicas of ${fmt(a)}, want ${replicas}`);
        for (const r of ok) {
          const ra = { host: r.get('ip')!, port: Number(r.get('port')) };
          const info = parseInfo(String(await sendCommand(ra, ['INFO', 'replication'])));
          if (info.get('role') !== 'slave' || Number(info.get('master_port')) !== a.port || info.get('master_link_status') !== 'up') {
            throw new Error(`replica ${fmt(ra)}: role=${info.get('role')} master_port=${info.get('master_port')} link=${info.get('master_link_status')}`);
          }
        }
      }
      if (!master) throw new Error('no responsive sentinel');
      if ((await roleOf(master)) !== 'master') throw new Error(`${fmt(master)} is not a master yet`);
      return master;
    },
    `the sentinel topology to settle (one master, ${replicas} linked replicas, every sentinel agreeing)`,
    timeoutMs,
    200,
  );
}

// ------------------------------------------------------------------ a scripted sentinel

export interface FakeSentinel {
  server: FakeServer;
  address: NodeAddress;
  /** Sockets that subscribed. */
  readonly subscribers: number;
  /** Publishes a message on `channel` to every subscriber. */
  publish(channel: string, payload: string): void;
  close(): Promise<void>;
}

/**
 * A sentinel that answers SUBSCRIBE with one confirmation per channel (and then publishes
 * what the test tells it to), `SENTINEL get-master-addr-by-name` with `masterAnswer()`,
 * `SENTINEL sentinels` / `replicas` with an empty array, and PING.
 */
export async function startFakeSentinel(masterAnswer: () => NodeAddress | null): Promise<FakeSentinel> {
  const subs = new Set<net.Socket>();
  const server = await startFakeServer((cmd, socket) => {
    const name = cmd[0]!.toUpperCase();
    if (name === 'SUBSCRIBE') {
      subs.add(socket);
      socket.once('close', () => subs.delete(socket));
      return cmd.slice(1).map((ch, i) => resp.array([resp.bulk('subscribe'), resp.bulk(ch), resp.int(i + 1)])).join('');
    }
    if (name === 'PING') return resp.simple('PONG');
    if (name === 'SENTINEL') {
      const sub = (cmd[1] ?? '').toLowerCase();
      if (sub === 'get-master-addr-by-name') {
        const a = masterAnswer();
        return a ? resp.bulks([a.host, String(a.port)]) : resp.array(null);
      }
      if (sub === 'sentinels' || sub === 'replicas' || sub === 'slaves') return resp.array([]);
    }
    return resp.error(`ERR unknown command '${cmd[0]}' in the fake sentinel`);
  });
  return {
    server,
    address: server.address,
    get subscribers() {
      return subs.size;
    },
    publish(channel, payload) {
      const frame = resp.array([resp.bulk('message'), resp.bulk(channel), resp.bulk(payload)]);
      for (const s of subs) if (!s.destroyed) s.write(frame);
    },
    close: () => server.close(),
  };
}

// ------------------------------------------------------------------ failover scenarios

/** Pauses 1 ms after each acknowledgement: thousands of writes a second per writer, a data set small enough to resync quickly. */
export const paced = <T>(p: Promise<T>): Promise<T> => p.then((v) => new Promise<T>((r) => setTimeout(() => r(v), 1)));

/** Runs SENTINEL FAILOVER through `sentinel` until it accepts (a just-restarted sentinel may not know a good replica yet). */
export async function failoverThrough(topo: SentinelTopology, sentinel: NodeAddress): Promise<void> {
  await waitFor(async () => {
    try {
      return (await sendCommand(sentinel, ['SENTINEL', 'FAILOVER', topo.masterName], { timeoutMs: 2000 })) === 'OK';
    } catch {
      return false;
    }
  }, `SENTINEL FAILOVER to be accepted by ${fmt(sentinel)}`, 30_000, 20);
}

/** After a test that paused or killed sentinels: every sentinel running and answering again. */
export async function reviveSentinels(topo: SentinelTopology | undefined): Promise<void> {
  for (const s of topo?.sentinels ?? []) {
    if (s.isPaused()) s.resume();
    if (!s.isAlive()) await s.restart();
  }
}

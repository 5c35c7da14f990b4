/**
 * The harness side of the fleet benchmark that talks to the servers directly (never through a
 * client under test): persistent raw connections that sample every node's `INFO commandstats`
 * and `INFO stats` once a second, ROLE polling for the promotion time, and the read-back of
 * acknowledged writes on the final cluster.
 */
import net from 'node:net';
import { keySlot } from '../../src/index.js';
import type { NodeAddress } from '../../src/types.js';
import { decodeReply, encodeCommand, ReplyError, type RespValue } from '../support/resp-wire.js';

/** A persistent raw RESP connection: pipelined asks, replies in order, each with a deadline. */
export class RawConn {
  private buf = Buffer.alloc(0);
  private readonly waiting: Array<{ resolve: (v: RespValue) => void; reject: (e: Error) => void }> = [];
  private dead = false;

  private constructor(private readonly sock: net.Socket) {
    sock.setNoDelay(true);
    sock.on('data', (d) => {
      this.buf = this.buf.length ? Buffer.concat([this.buf, d]) : d;
      for (;;) {
        const r = decodeReply(this.buf);
        if (!r) break;
        this.buf = this.buf.subarray(r.next);
        this.waiting.shift()?.resolve(r.value);
      }
    });
    const fail = () => {
      this.dead = true;
      for (const w of this.waiting.splice(0)) w.reject(new Error('connection closed'));
    };
    sock.on('error', fail);
    sock.on('close', fail);
  }

  get alive(): boolean {
    return !this.dead;
  }

  static open(a: NodeAddress, timeoutMs = 1000): Promise<RawConn> {
    return new Promise((resolve, reject) => {
      const s = net.connect(a.port, a.host);
      const t = setTimeout(() => {
        s.destroy();
        reject(new Error(`connect ${a.host}:${a.port} timed out`));
      }, timeoutMs);
      s.once('connect', () => {
        clearTimeout(t);
        resolve(new RawConn(s));
      });
      s.once('error', (e) => {
        clearTimeout(t);
        reject(e);
      });
    });
  }

  /** Sends every command in one write; resolves with the replies in order (error replies as ReplyError values). */
  askMany(cmds: readonly (readonly (string | number)[])[], timeoutMs = 1000): Promise<RespValue[]> {
    if (this.dead) return Promise.reject(new Error('connection closed'));
    const replies = cmds.map(() => new Promise<RespValue>((resolve, reject) => this.waiting.push({ resolve, reject })));
    this.sock.write(Buffer.concat(cmds.map((c) => encodeCommand(c))));
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        // A reply that is late would be matched to the next ask: the connection is unusable.
        this.close();
        reject(new Error('reply timed out'));
      }, timeoutMs);
    });
    return Promise.race([Promise.all(replies), deadline]).finally(() => clearTimeout(timer));
  }

  async ask(cmd: readonly (string | number)[], timeoutMs = 1000): Promise<RespValue> {
    return (await this.askMany([cmd], timeoutMs))[0]!;
  }

  close(): void {
    this.dead = true;
    this.sock.destroy();
  }
}

/** Slot-map requests (CLUSTER SLOTS, SHARDS, NODES) a node has answered, from `INFO commandstats`. */
export function slotMapCalls(info: string): number {
  let n = 0;
  for (const m of info.matchAll(/^cmdstat_cluster\|(slots|shards|nodes):calls=(\d+)/gm)) n += Number(m[2]);
  return n;
}

/** `total_connections_received` from `INFO stats`. */
export function connectionsReceived(info: string): number {
  return Number(/^total_connections_received:(\d+)/m.exec(info)?.[1] ?? 0);
}

/** One sample of one node: when, slot-map requests and connections received so far, clients connected now. */
export interface NodeSample {
  at: number;
  slotMap: number;
  conns: number;
  clients: number;
}

/**
 * Samples every node once a second on its own connection. A node that does not answer
 * (killed, paused) is skipped for that second and reconnected later; a counter that went
 * down (a restarted node) starts over from its new value.
 */
export class NodeSampler {
  readonly samples = new Map<string, NodeSample[]>();
  private readonly conns = new Map<string, RawConn | undefined>();
  private timer: NodeJS.Timeout | undefined;
  private busy = new Set<string>();

  constructor(private readonly nodes: readonly NodeAddress[]) {
    for (const n of nodes) this.samples.set(`${n.host}:${n.port}`, []);
  }

  start(): void {
    const tick = () => {
      for (const n of this.nodes) void this.sample(n);
    };
    tick();
    this.timer = setInterval(tick, 1000);
  }

  private async sample(n: NodeAddress): Promise<void> {
    const key = `${n.host}:${n.port}`;
    if (this.busy.has(key)) return;
    this.busy.add(key);
    try {
      let c = this.conns.get(key);
      if (!c?.alive) {
        c = await RawConn.open(n, 500);
        this.conns.set(key, c);
      }
      const at = Date.now();
      const [cmd, stats, clients] = await c.askMany([['INFO', 'commandstats'], ['INFO', 'stats'], ['INFO', 'clients']], 800);
      const connected = Number(/^connected_clients:(\d+)/m.exec(String(clients))?.[1] ?? 0);
      this.samples.get(key)!.push({ at, slotMap: slotMapCalls(String(cmd)), conns: connectionsReceived(String(stats)), clients: connected });
    } catch {
      // Down or paused this second.
    } finally {
      this.busy.delete(key);
    }
  }

  /** The most clients connected to one node in its last sample before `at` (the sampler's own connection included). */
  maxClients(at: number): number {
    let most = 0;
    for (const list of this.samples.values()) {
      const last = [...list].reverse().find((x) => x.at <= at);
      if (last) most = Math.max(most, last.clients);
    }
    return most;
  }

  stop(): void {
    clearInterval(this.timer);
    for (const c of this.conns.values()) c?.close();
  }

  /**
   * Per node, the requests per second within [from, to): the peak one-second difference and
   * the total, for one counter.
   */
  rates(field: 'slotMap' | 'conns', from: number, to: number): Map<string, { peak: number; total: number }> {
    const out = new Map<string, { peak: number; total: number }>();
    for (const [key, list] of this.samples) {
      let peak = 0;
      let total = 0;
      for (let i = 1; i < list.length; i++) {
        const a = list[i - 1]!;
        const b = list[i]!;
        if (b.at < from || a.at >= to) continue;
        const d = b[field] >= a[field] ? b[field] - a[field] : b[field];
        // Per second even when a sample was skipped (a gap of two seconds counts half per second).
        const perSecond = d / Math.max(1, Math.round((b.at - a.at) / 1000));
        peak = Math.max(peak, perSecond);
        total += d;
      }
      out.set(key, { peak: Math.round(peak), total });
    }
    return out;
  }
}

/** Waits (polling every 10 ms) until `a` answers ROLE master; resolves with the time it did. */
export async function waitPromoted(a: NodeAddress, deadlineMs: number): Promise<number> {
  const end = Date.now() + deadlineMs;
  let c: RawConn | undefined;
  try {
    while (Date.now() < end) {
      try {
        c ??= await RawConn.open(a, 500);
        const role = (await c.ask(['ROLE'], 500)) as RespValue[];
        if (role[0] === 'master') return Date.now();
      } catch {
        c?.close();
        c = undefined;
      }
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error(`${a.host}:${a.port} was not promoted within ${deadlineMs} ms`);
  } finally {
    c?.close();
  }
}

/** Owner (`host:port`) of every slot, from one node's CLUSTER SLOTS. */
export async function slotOwners(a: NodeAddress): Promise<string[]> {
  const c = await RawConn.open(a, 2000);
  try {
    const reply = (await c.ask(['CLUSTER', 'SLOTS'], 5000)) as RespValue[][];
    const owners: string[] = new Array(16384).fill('');
    for (const e of reply) {
      const m = e[2] as RespValue[];
      owners.fill(`${String(m[0])}:${Number(m[1])}`, Number(e[0]), Number(e[1]) + 1);
    }
    return owners;
  } finally {
    c.close();
  }
}

/**
 * Reads every acknowledged write (`f:<proc>:<seq>` = seq) back from the master that owns its
 * slot now; returns how many are missing or hold another value, with a few examples.
 */
export async function countLost(any: NodeAddress, acked: ReadonlyMap<number, readonly number[]>): Promise<{ checked: number; lost: number; examples: string[] }> {
  const owners = await slotOwners(any);
  const byOwner = new Map<string, Array<[string, number]>>();
  for (const [proc, seqs] of acked) {
    for (const seq of seqs) {
      const key = `f:${proc}:${seq}`;
      const owner = owners[keySlot(key)]!;
      let list = byOwner.get(owner);
      if (!list) byOwner.set(owner, (list = []));
      list.push([key, seq]);
    }
  }
  let checked = 0;
  let lost = 0;
  const examples: string[] = [];
  await Promise.all([...byOwner].map(async ([owner, list]) => {
    const [host, port] = owner.split(':');
    const c = await RawConn.open({ host: host!, port: Number(port) }, 2000);
    try {
      for (let i = 0; i < list.length; i += 2000) {
        const chunk = list.slice(i, i + 2000);
        const replies = await c.askMany(chunk.map(([k]) => ['GET', k]), 30_000);
        chunk.forEach(([k, seq], j) => {
          checked++;
          const r = replies[j];
          if (r instanceof ReplyError || r === null || String(r) !== String(seq)) {
            lost++;
            if (examples.length < 5) examples.push(`${k} on ${owner}: ${r instanceof ReplyError ? r.message : String(r)}`);
          }
        });
      }
    } finally {
      c.close();
    }
  }));
  return { checked, lost, examples };
}

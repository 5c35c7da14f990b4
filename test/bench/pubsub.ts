/**
 * Pub/sub beside the peers, same server, same run:
 *
 *   npm run bench:pubsub
 *
 * - delivery: messages/s one subscriber receives from one channel, and from 100 channels
 *   (fan-in), while a raw publisher pipelines PUBLISH as fast as the server takes it;
 * - resubscribe: the server cuts every subscriber (CLIENT KILL TYPE pubsub) while a publisher
 *   sends 1,000 sequenced messages/s; per client, the time from the cut to the first message
 *   received again, and how many messages it missed.
 *
 * - Sentinel failover: the same with `SENTINEL FAILOVER` instead of a cut, each client in its
 *   Sentinel mode, the publisher a SentinelPool (it moves to the new master at the switch);
 *   the time from the failover command to the first message published on the new master that
 *   the client receives.
 *
 * Environment: BENCH_MESSAGES (default 200000), BENCH_ROUNDS (default 3; medians are shown).
 */
import net from 'node:net';
import { Redis } from 'ioredis';
import { createClient, createSentinel } from 'redis';
import { SentinelPool, StandalonePool } from '../../src/index.js';
import { waitSettled } from '../support/sentinel-helpers.js';
import { startSentinel, startStandalone, type SentinelTopology } from '../support/topology.js';
import { envInt, fmtInt, installCleanupHandlers, markdownTable, median, systemInfo } from './lib.js';

const MESSAGES = envInt('BENCH_MESSAGES', 200_000);
const ROUNDS = envInt('BENCH_ROUNDS', 3);
const PAYLOAD = 'p'.repeat(64);

interface Subscriber {
  label: string;
  subscribe(channels: string[], onMessage: (channel: string, message: string) => void): Promise<void>;
  close(): Promise<void>;
}

async function ours(port: number): Promise<Subscriber> {
  const pool = await StandalonePool.create({ host: '127.0.0.1', port });
  return {
    label: 'redis-ha-pool (pool.subscribe)',
    async subscribe(channels, onMessage) {
      await pool.subscribe(channels, (m, c) => onMessage(c, m as string));
    },
    close: () => pool.close(),
  };
}

async function ioredis(port: number): Promise<Subscriber> {
  const client = new Redis({ host: '127.0.0.1', port, lazyConnect: true });
  await client.connect();
  return {
    label: 'ioredis 6 (autoResubscribe)',
    async subscribe(channels, onMessage) {
      client.on('message', (c: string, m: string) => onMessage(c, m));
      await client.subscribe(...channels);
    },
    async close() {
      client.disconnect();
    },
  };
}

async function nodeRedis(port: number): Promise<Subscriber> {
  const client = createClient({ socket: { host: '127.0.0.1', port } });
  client.on('error', () => {});
  await client.connect();
  return {
    label: 'node-redis 6.3',
    async subscribe(channels, onMessage) {
      await client.subscribe(channels, (m: string, c: string) => onMessage(c, m));
    },
    async close() {
      await client.close();
    },
  };
}

/** A publisher on its own socket: pipelines PUBLISH in chunks and counts the replies. */
function rawPublisher(port: number): Promise<{ publish(channels: string[], count: number, payload: (i: number) => string): Promise<void>; close(): void }> {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1');
    sock.setNoDelay(true);
    let pending = 0;
    let waiter: (() => void) | undefined;
    let tail = '';
    sock.on('data', (d) => {
      const text = tail + d.toString('latin1');
      let n = 0;
      let i = 0;
      for (;;) {
        const j = text.indexOf('\r\n', i);
        if (j === -1) break;
        n++;
        i = j + 2;
      }
      tail = text.slice(i);
      pending -= n;
      waiter?.();
    });
    sock.once('error', reject);
    sock.once('connect', () => resolve({
      async publish(channels, count, payload) {
        const CHUNK = 500;
        for (let start = 0; start < count; start += CHUNK) {
          let out = '';
          const end = Math.min(count, start + CHUNK);
          for (let i = start; i < end; i++) {
            const c = channels[i % channels.length]!;
            const p = payload(i);
            out += `*3\r\n$7\r\nPUBLISH\r\n$${Buffer.byteLength(c)}\r\n${c}\r\n$${Buffer.byteLength(p)}\r\n${p}\r\n`;
          }
          // Keep at most a few chunks in flight so the server's output buffers stay bounded.
          if (pending > CHUNK * 4) await new Promise<void>((r) => { waiter = () => { if (pending <= CHUNK) { waiter = undefined; r(); } }; });
          pending += end - start;
          sock.write(out);
        }
        if (pending > 0) await new Promise<void>((r) => { waiter = () => { if (pending <= 0) { waiter = undefined; r(); } }; });
      },
      close: () => sock.destroy(),
    }));
  });
}

async function delivery(port: number, make: (port: number) => Promise<Subscriber>, channels: string[]): Promise<{ label: string; rate: number }> {
  const sub = await make(port);
  let got = 0;
  let done!: () => void;
  const all = new Promise<void>((r) => (done = r));
  await sub.subscribe(channels, () => {
    if (++got === MESSAGES) done();
  });
  const pub = await rawPublisher(port);
  const t0 = process.hrtime.bigint();
  await pub.publish(channels, MESSAGES, () => PAYLOAD);
  await all;
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  pub.close();
  await sub.close();
  return { label: sub.label, rate: MESSAGES / secs };
}

async function resubscribe(port: number, makers: Array<(port: number) => Promise<Subscriber>>, kill: () => Promise<void>): Promise<Array<{ label: string; ms: number; missed: number }>> {
  const subs = await Promise.all(makers.map((m) => m(port)));
  const state = subs.map(() => ({ last: -1, after: -1, firstAt: 0, seen: new Set<number>() }));
  await Promise.all(subs.map((s, i) => s.subscribe(['resub-ch'], (_c, m) => {
    const seq = Number(m);
    const st = state[i]!;
    st.seen.add(seq);
    if (st.after === -1 || st.firstAt !== 0) return;
    st.firstAt = Date.now();
  })));
  const pub = await rawPublisher(port);
  let seq = 0;
  let stop = false;
  const publishing = (async () => {
    while (!stop) {
      await pub.publish(['resub-ch'], 1, () => String(seq++));
      await new Promise((r) => setTimeout(r, 1));
    }
  })();
  await new Promise((r) => setTimeout(r, 300));
  const killedAt = Date.now();
  const seqAtKill = seq;
  for (const st of state) st.after = seqAtKill;
  await kill();
  const deadline = Date.now() + 20_000;
  while (state.some((s) => s.firstAt === 0) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  stop = true;
  await publishing;
  const end = seq;
  pub.close();
  await Promise.all(subs.map((s) => s.close()));
  return subs.map((s, i) => {
    const st = state[i]!;
    let missed = 0;
    for (let q = seqAtKill; q < end; q++) if (!st.seen.has(q)) missed++;
    return { label: s.label, ms: st.firstAt === 0 ? NaN : st.firstAt - killedAt, missed };
  });
}

interface FailoverSubscriber {
  label: string;
  close(): Promise<void>;
}

/** Subscribes each client in its Sentinel mode; `onMessage(i, seq)` per message. */
async function sentinelSubscribers(topo: SentinelTopology, onMessage: (i: number, seq: number) => void): Promise<FailoverSubscriber[]> {
  const sentinels = topo.sentinelAddresses.map((a) => ({ host: a.host, port: a.port }));
  const ourPool = await SentinelPool.create(topo.masterName, topo.sentinelAddresses);
  await ourPool.subscribe('fo-ch', (m) => onMessage(0, Number(m)));
  const io = new Redis({ sentinels, name: topo.masterName, lazyConnect: true });
  await io.connect();
  io.on('message', (_c: string, m: string) => onMessage(1, Number(m)));
  await io.subscribe('fo-ch');
  const nr = createSentinel({ name: topo.masterName, sentinelRootNodes: sentinels });
  nr.on('error', () => {});
  await nr.connect();
  await nr.subscribe('fo-ch', (m: string) => onMessage(2, Number(m)));
  return [
    { label: 'redis-ha-pool (SentinelPool)', close: () => ourPool.close() },
    { label: 'ioredis 6 (sentinels)', close: async () => { io.disconnect(); } },
    { label: 'node-redis 6.3 (createSentinel)', close: async () => { await nr.close(); } },
  ];
}

async function sentinelFailoverRound(topo: SentinelTopology): Promise<Array<{ label: string; ms: number; missed: number }>> {
  await waitSettled(topo, 2);
  const seen = [new Set<number>(), new Set<number>(), new Set<number>()];
  const firstAt = [0, 0, 0];
  let switchSeq = Infinity;
  const subs = await sentinelSubscribers(topo, (i, seq) => {
    seen[i]!.add(seq);
    if (firstAt[i] === 0 && seq >= switchSeq) firstAt[i] = Date.now();
  });
  const publisher = await SentinelPool.create(topo.masterName, topo.sentinelAddresses, { commandTimeout: 20_000, queueTimeout: 20_000 });
  let seq = 0;
  let stop = false;
  publisher.once('failover', () => { switchSeq = seq; });
  const publishing = (async () => {
    while (!stop) {
      await publisher.publish('fo-ch', String(seq++)).catch(() => {});
      await new Promise((r) => setTimeout(r, 1));
    }
  })();
  await new Promise((r) => setTimeout(r, 500));
  const at = Date.now();
  const seqAtCommand = seq;
  await topo.sentinels[0]!.cli('SENTINEL', 'FAILOVER', topo.masterName);
  const deadline = Date.now() + 30_000;
  while (firstAt.some((t) => t === 0) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  stop = true;
  await publishing;
  const end = seq;
  await publisher.close();
  await Promise.all(subs.map((s) => s.close()));
  return subs.map((s, i) => {
    let missed = 0;
    for (let q = seqAtCommand; q < end; q++) if (!seen[i]!.has(q)) missed++;
    return { label: s.label, ms: firstAt[i] === 0 ? Infinity : firstAt[i]! - at, missed };
  });
}

async function main(): Promise<void> {
  installCleanupHandlers();
  const info = systemInfo();
  const topo = await startStandalone();
  const port = topo.address.port;
  const makers = [ours, ioredis, nodeRedis];
  const hundred = Array.from({ length: 100 }, (_, i) => `fan:${i}`);
  try {
    const rows: string[][] = [];
    for (const make of makers) {
      const one: number[] = [];
      const many: number[] = [];
      let label = '';
      for (let r = 0; r < ROUNDS; r++) {
        const a = await delivery(port, make, ['bench-ch']);
        label = a.label;
        one.push(a.rate);
        many.push((await delivery(port, make, hundred)).rate);
      }
      rows.push([label, fmtInt(median(one)), fmtInt(median(many))]);
    }
    const resub: Map<string, { ms: number[]; missed: number[] }> = new Map();
    for (let r = 0; r < ROUNDS; r++) {
      const res = await resubscribe(port, makers, async () => { await topo.server.cli('CLIENT', 'KILL', 'TYPE', 'pubsub'); });
      for (const x of res) {
        const e = resub.get(x.label) ?? { ms: [], missed: [] };
        e.ms.push(x.ms);
        e.missed.push(x.missed);
        resub.set(x.label, e);
      }
    }
    console.log(`\n${info.cpu}, ${info.cores} cores, Node ${info.node}; ${fmtInt(MESSAGES)} messages of ${PAYLOAD.length} bytes, median of ${ROUNDS} rounds\n`);
    console.log(markdownTable(['subscriber', 'msg/s, 1 channel', 'msg/s, 100 channels (fan-in)'], rows, ['left', 'right', 'right']));
    console.log('\nAfter CLIENT KILL TYPE pubsub, publisher at ~1,000 msg/s (medians):\n');
    console.log(markdownTable(['subscriber', 'first message again after (ms)', 'messages missed'],
      [...resub].map(([label, e]) => [label, median(e.ms).toFixed(0), String(median(e.missed))]), ['left', 'right', 'right']));
  } finally {
    await topo.stop();
  }
  const stopo = await startSentinel({ replicas: 2, downAfterMs: 1000, failoverTimeoutMs: 5000 });
  try {
    const fo: Map<string, { ms: number[]; missed: number[] }> = new Map();
    for (let r = 0; r < ROUNDS; r++) {
      for (const x of await sentinelFailoverRound(stopo)) {
        const e = fo.get(x.label) ?? { ms: [], missed: [] };
        e.ms.push(x.ms);
        e.missed.push(x.missed);
        fo.set(x.label, e);
      }
    }
    console.log('\nSENTINEL FAILOVER, publisher (a SentinelPool) at ~1,000 msg/s (medians; "none" = no message from the new master within 30 s):\n');
    console.log(markdownTable(['subscriber', 'first message from the new master after (ms)', 'messages missed'],
      [...fo].map(([label, e]) => [label, Number.isFinite(median(e.ms)) ? median(e.ms).toFixed(0) : 'none', String(median(e.missed))]), ['left', 'right', 'right']));
  } finally {
    await stopo.stop();
  }
}

await main();

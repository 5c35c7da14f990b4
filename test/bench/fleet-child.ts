/**
 * One process of the fleet benchmark (fleet.ts forks it with an IPC channel): one cluster
 * client with default options (this project's ClusterPool, ioredis Cluster or node-redis
 * createCluster, by FLEET_CLIENT), a steady open-loop load, and a probe of the slots a fault
 * moves.
 *
 * Load: every 10 ms, `FLEET_RATE / 100` calls, half `SET f:<proc>:<seq> <seq>` (unique keys
 * over every slot, so every acknowledged write can be checked on the final cluster), half
 * `GET` of a key written earlier. Open loop, as a service's request handlers are: calls do not
 * wait for each other, so an outage shows as failures and latency, not as a slower load.
 *
 * Messages from the parent: `{ type: 'phase', name, probeKeys }` opens a measurement phase
 * (failures by error class, latencies) and starts probing `probeKeys` (one SET every 20 ms
 * on each, in turn); `{ type: 'end-phase' }` answers with the phase's figures;
 * `{ type: 'finish' }` stops the load, waits for the calls in flight, closes the client and
 * answers with the acknowledged sequence numbers.
 */
import { Cluster } from 'ioredis';
import { createCluster } from 'redis';
import { ClusterPool } from '../../src/index.js';

type Send = (cmd: 'SET' | 'GET', key: string, value?: string) => Promise<unknown>;

const PROC = Number(process.env.FLEET_PROC ?? 0);
const KIND = process.env.FLEET_CLIENT ?? 'ha';
const RATE = Number(process.env.FLEET_RATE ?? 300);
const SEEDS = JSON.parse(process.env.FLEET_SEEDS ?? '[]') as string[];
/** Announced address -> proxy address, for the node the black-hole fault targets. */
const NAT = JSON.parse(process.env.FLEET_NAT ?? '{}') as Record<string, string>;

const now = () => Date.now();
/** FLEET_DIAG=1: what the client saw, on stderr, with epoch ms. */
const DIAG = process.env.FLEET_DIAG === '1';
const diag = (line: string) => {
  if (DIAG) process.stderr.write(`[p${PROC} ${now()}] ${line}\n`);
};

async function connect(): Promise<{ send: Send; close: () => Promise<void> }> {
  if (KIND === 'ha') {
    const pool = await ClusterPool.create(SEEDS, Object.keys(NAT).length ? { natMap: NAT } : {});
    pool.on('error', () => {});
    pool.on('node-error', (e) => diag(`node-error ${e.address.port} ${e.error.constructor.name} ${e.error.message.slice(0, 120)}`));
    if (DIAG) {
      pool.on('moved', (e) => diag(`moved ${e.slot} ${e.from.port}->${e.to.port}`));
      pool.on('topology', (e) => diag(`topology moved ${e.movedSlots} slots`));
    }
    return {
      send: (cmd, key, value) => (cmd === 'SET' ? pool.call('SET', key, value!) : pool.call('GET', key)),
      close: () => pool.close(),
    };
  }
  if (KIND === 'ioredis') {
    const natMap: Record<string, { host: string; port: number }> = {};
    for (const [k, v] of Object.entries(NAT)) natMap[k] = { host: v.split(':')[0]!, port: Number(v.split(':')[1]) };
    const c = new Cluster(SEEDS.map((s) => ({ host: s.split(':')[0]!, port: Number(s.split(':')[1]) })), Object.keys(natMap).length ? { natMap } : {});
    c.on('error', () => {});
    await new Promise<void>((resolve, reject) => {
      c.once('ready', () => resolve());
      c.once('end', () => reject(new Error('ioredis cluster ended before ready')));
    });
    return {
      send: (cmd, key, value) => (cmd === 'SET' ? c.set(key, value!) : c.get(key)),
      close: async () => {
        c.disconnect();
      },
    };
  }
  const c = createCluster({
    rootNodes: SEEDS.map((s) => ({ url: `redis://${s}` })),
    ...(Object.keys(NAT).length
      ? { nodeAddressMap: (a: string) => { const m = NAT[a]; return m ? { host: m.split(':')[0]!, port: Number(m.split(':')[1]) } : undefined; } }
      : {}),
  } as Parameters<typeof createCluster>[0]);
  c.on('error', () => {});
  await c.connect();
  return {
    send: (cmd, key, value) => (cmd === 'SET' ? c.set(key, value!) : c.get(key)),
    close: async () => {
      await c.close().catch(() => c.destroy());
    },
  };
}

/** The error class of a failed call, with the reply's first word for server errors. */
function errorClass(err: unknown): string {
  const e = err as Error & { code?: unknown };
  const name = e?.constructor?.name ?? 'Error';
  const m = /^([A-Z]{3,})\b/.exec(e?.message ?? '');
  if (typeof e?.code === 'string' && /^[A-Z]+$/.test(e.code)) return `${name}:${e.code}`;
  return m ? `${name}:${m[1]}` : name;
}

interface Phase {
  name: string;
  failures: Record<string, number>;
  latencies: number[];
  ops: number;
  /** Probe calls: [start, end, ok]. */
  probes: Array<[number, number, 0 | 1]>;
}

async function main(): Promise<void> {
  const client = await connect();
  const acked: number[] = [];
  let seq = 0;
  let inFlight = 0;
  let phase: Phase = { name: 'warmup', failures: {}, latencies: [], ops: 0, probes: [] };
  let probeKeys: string[] = [];
  let stopping = false;

  const call = (cmd: 'SET' | 'GET', key: string, value: string | undefined, onOk?: () => void): void => {
    const p = phase;
    const t0 = performance.now();
    inFlight++;
    client.send(cmd, key, value).then(
      () => {
        p.latencies.push(performance.now() - t0);
        p.ops++;
        onOk?.();
      },
      (err) => {
        p.latencies.push(performance.now() - t0);
        p.ops++;
        const c = errorClass(err);
        p.failures[c] = (p.failures[c] ?? 0) + 1;
      },
    ).finally(() => inFlight--);
  };

  const perTick = Math.max(1, Math.round(RATE / 100));
  let opCount = 0;
  const load = setInterval(() => {
    for (let i = 0; i < perTick; i++) {
      // Every other call a write (by call count, not by key count: any rate keeps the half/half mix).
      if (seq === 0 || opCount++ % 2 === 0) {
        const n = seq++;
        call('SET', `f:${PROC}:${n}`, String(n), () => acked.push(n));
      } else {
        const n = Math.floor(Math.random() * seq);
        call('GET', `f:${PROC}:${n}`, undefined);
      }
    }
  }, 10);

  // Probe: one SET at a time per key, every 20 ms, so each process's first success on the moved
  // slots after a fault is seen within 20 ms.
  let probeTurn = 0;
  const probe = setInterval(() => {
    if (!probeKeys.length || stopping) return;
    const key = probeKeys[probeTurn++ % probeKeys.length]!;
    const p = phase;
    const t0 = now();
    inFlight++;
    client.send('SET', key, String(t0)).then(
      () => {
        p.probes.push([t0, now(), 1]);
        if (now() - t0 > 200) diag(`probe ok after ${now() - t0} ms`);
      },
      (err) => {
        p.probes.push([t0, now(), 0]);
        diag(`probe failed after ${now() - t0} ms: ${errorClass(err)} ${(err as Error).message.slice(0, 120)}`);
      },
    ).finally(() => inFlight--);
  }, 20);

  process.on('message', (m: { type: string; name?: string; probeKeys?: string[] }) => {
    if (m.type === 'phase') {
      phase = { name: m.name!, failures: {}, latencies: [], ops: 0, probes: [] };
      probeKeys = (m.probeKeys ?? []).map((k) => `${k}:p${PROC}`);
      process.send!({ type: 'phase-started', at: now() });
    } else if (m.type === 'end-phase') {
      const p = phase;
      probeKeys = [];
      phase = { name: 'between', failures: {}, latencies: [], ops: 0, probes: [] };
      process.send!({ type: 'phase', name: p.name, failures: p.failures, latencies: p.latencies.map((x) => Math.round(x * 100) / 100), ops: p.ops, probes: p.probes });
    } else if (m.type === 'status') {
      // For the parent's waits: writes acknowledged so far, and whether a probe of this phase succeeded after `since`.
      const since = (m as { since?: number }).since ?? Infinity;
      process.send!({ type: 'status', acked: acked.length, served: phase.probes.some(([, e, ok]) => ok === 1 && e >= since) });
    } else if (m.type === 'finish') {
      stopping = true;
      clearInterval(load);
      clearInterval(probe);
      void (async () => {
        const deadline = now() + 30_000;
        while (inFlight > 0 && now() < deadline) await new Promise((r) => setTimeout(r, 20));
        await client.close().catch(() => {});
        process.send!({ type: 'finished', acked, written: seq }, () => process.exit(0));
      })();
    }
  });
  process.send!({ type: 'ready' });
}

main().catch((err) => {
  process.send?.({ type: 'failed', error: String((err as Error)?.stack ?? err) });
  process.exit(1);
});

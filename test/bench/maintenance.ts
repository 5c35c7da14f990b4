/**
 * Maintenance notifications, redis-ha-pool beside node-redis, on the same scenarios: a real
 * redis-server behind two MaintProxy endpoints (test/support/maint-proxy.ts), which accept the
 * opt-in and inject the pushes while every command runs on the real server.
 *
 *   npx tsx test/bench/maintenance.ts
 *
 * - MOVING (time_s 3) under 20 concurrent writers, the new endpoint taking 200 ms to connect
 *   (BENCH_CONNECT_DELAY_MS): SETs acknowledged vs executed on the server (INFO commandstats),
 *   failures, the old endpoint's connections cut at its deadline, and the SET latency before and
 *   during the hand-over (the pause a command sees).
 * - MIGRATING then MIGRATED around DEBUG SLEEP 0.5 with a 200 ms command timeout.
 */
import { createClient } from 'redis';
import { StandalonePool } from '../../src/index.js';
import { MaintProxy } from '../support/maint-proxy.js';
import { startStandalone, type StandaloneTopology } from '../support/topology.js';

interface Client {
  set(key: string, value: string): Promise<unknown>;
  sleep(seconds: string): Promise<unknown>;
  close(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** How long a new connection to the new endpoint takes to open (BENCH_CONNECT_DELAY_MS, default 200). */
const CONNECT_DELAY_MS = Number(process.env.BENCH_CONNECT_DELAY_MS ?? 200);

async function ours(address: { host: string; port: number }, commandTimeout: number): Promise<Client> {
  const pool = await StandalonePool.create(address, { protocol: 3, commandTimeout, maintRelaxedTimeout: 5000, pool: { lanes: 1 } });
  return { set: (k, v) => pool.set(k, v), sleep: (s) => pool.call('DEBUG', 'SLEEP', s), close: () => pool.close() };
}

async function nodeRedis(address: { host: string; port: number }, commandTimeout: number): Promise<Client> {
  const client = createClient({
    socket: { host: address.host, port: address.port, reconnectStrategy: 50 },
    RESP: 3,
    maintNotifications: 'auto',
    maintRelaxedCommandTimeout: 5000,
    maintRelaxedSocketTimeout: 5000,
    commandOptions: { timeout: commandTimeout },
  });
  client.on('error', () => {});
  await client.connect();
  return { set: (k, v) => client.set(k, v), sleep: (s) => client.sendCommand(['DEBUG', 'SLEEP', s], { timeout: commandTimeout }), close: () => client.close() };
}

async function setCalls(topo: StandaloneTopology): Promise<number> {
  const m = /cmdstat_set:calls=(\d+)/.exec(await topo.server.cli('INFO', 'commandstats'));
  return m ? Number(m[1]) : 0;
}

function stats(l: number[]): string {
  const s = [...l].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? 0;
  return `n ${s.length}, p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${s.at(-1) ?? 0} ms`;
}

async function moving(topo: StandaloneTopology, name: string, make: typeof ours): Promise<void> {
  const a = await MaintProxy.start(topo.address);
  // Reaching the new endpoint takes a while (a farther node, a TLS handshake).
  const b = await MaintProxy.start(topo.address, { connectDelayMs: CONNECT_DELAY_MS });
  const client = await make(a.address, 5000);
  await topo.server.cli('CONFIG', 'RESETSTAT');
  let acked = 0;
  const failures = new Map<string, number>();
  const samples: Array<[number, number]> = [];
  let running = true;
  const writers = Promise.all(Array.from({ length: 20 }, async (_, w) => {
    for (let i = 0; running; i++) {
      const t = Date.now();
      try {
        await client.set(`bm:${name}:${w}:${i}`, String(i));
        acked++;
        samples.push([t, Date.now() - t]);
      } catch (e) {
        const k = (e as Error).name || 'Error';
        failures.set(k, (failures.get(k) ?? 0) + 1);
      }
    }
  }));
  await sleep(1000);
  const at = Date.now();
  const got = a.inject(['MOVING', 1, 3, `${b.address.host}:${b.address.port}`]);
  const cut = a.expireAfter(3000);
  await sleep(4000);
  running = false;
  await writers;
  const executed = await setCalls(topo);
  const lastOld = Math.max(...a.connections.map((c) => (c.closedAt ?? Date.now()) - at));
  console.log(`${name}: MOVING to ${got} connection(s): ${acked} SETs acknowledged, ${executed} executed on the server, failed ${JSON.stringify(Object.fromEntries(failures))}, ` +
    `old connections cut by the endpoint at time_s: ${await cut}, last one closed ${lastOld} ms after the notice, connections through the new endpoint: ${b.connections.length}`);
  console.log(`  SET latency 1 s before: ${stats(samples.filter(([t]) => t >= at - 1000 && t < at).map(([, l]) => l))}`);
  console.log(`  SET latency in the 500 ms after the notice: ${stats(samples.filter(([t]) => t >= at && t < at + 500).map(([, l]) => l))}`);
  await client.close();
  await a.close();
  await b.close();
}

async function migrating(topo: StandaloneTopology, name: string, make: typeof ours): Promise<void> {
  const p = await MaintProxy.start(topo.address);
  const client = await make(p.address, 200);
  const outcome = async () => client.sleep('0.5').then(() => 'OK', (e: Error) => e.name);
  const before = await outcome();
  await sleep(500);
  p.inject(['MIGRATING', 1, 1, ['1']]);
  await sleep(50);
  const during = await outcome();
  p.inject(['MIGRATED', 2, ['1']]);
  await sleep(50);
  const after = await outcome();
  await sleep(500);
  console.log(`${name}: DEBUG SLEEP 0.5 with a 200 ms timeout: before ${before}, during MIGRATING ${during}, after MIGRATED ${after}`);
  await client.close();
  await p.close();
}

const topo = await startStandalone();
try {
  for (const [name, make] of [['redis-ha-pool', ours], ['node-redis', nodeRedis]] as const) {
    await moving(topo, name, make);
    await migrating(topo, name, make);
  }
} finally {
  await topo.stop();
}

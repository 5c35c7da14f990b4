import { ClusterPool, keySlot } from '../src/index.js';
import { startCluster, waitFor } from '../test/support/topology.js';
const topo = await startCluster({ nodeTimeoutMs: 2000 });
const pool = await ClusterPool.create(topo.seeds, { commandTimeout: 10_000 });
pool.on('error', (e) => console.log('pool error', (e as Error).message));
pool.on('topology', (c) => console.log(Date.now() - t0, 'topology', JSON.stringify(c).slice(0, 300)));
let t0 = Date.now();
const slots = (await pool.call('CLUSTER', 'SLOTS')) as any[];
const victimPort = Number(slots[0][2][1]);
const victim = topo.handleFor({ host: '127.0.0.1', port: victimPort })!;
const key = Array.from({ length: 1000 }, (_, i) => `k${i}`).find((k) => keySlot(k) >= slots[0][0] && keySlot(k) <= slots[0][1])!;
let replica: any;
for (const r of await topo.replicas()) { const role = (await r.cli('ROLE')).split('\n'); if (role[2] === String(victimPort)) replica = r; }
console.log('victim', victimPort, 'replica', replica.port, 'key', key);
// load
let stop = false; let ok = 0; let fails = 0; let lastErr = '';
const view = pool.with({ idempotent: true });
const workers = Array.from({ length: 20 }, async (_, w) => { for (let i = 0; !stop; i++) { try { await view.set(`kill:${w}:${i % 50}`, String(i)); ok++; } catch (e) { fails++; lastErr = (e as Error).message; await new Promise((r) => setTimeout(r, 5)); } } });
await waitFor(() => ok > 300, 'load');
t0 = Date.now();
await victim.kill('SIGKILL');
for (let s = 0; s < 6; s++) {
  await new Promise((r) => setTimeout(r, 1000));
  const role = (await replica.cli('ROLE')).split('\n')[0];
  let r = '';
  try { r = String(await pool.with({ timeout: 500 }).set(key, 'x')); } catch (e) { r = 'ERR ' + (e as Error).message.slice(0, 150); }
  console.log(Date.now() - t0, 'replica role', role, 'ok', ok, 'fails', fails, 'set', r, 'nodes', pool.nodes().map((n) => `${n.port}:${n.role}:${n.health}`).join(' '));
}
console.log('last err', lastErr);
const { sendCommand } = await import('../test/support/mini-client.js');
for (const n of topo.nodes.filter((n) => n.isAlive())) console.log(n.port, JSON.stringify(await sendCommand(n.address, ['CLUSTER', 'SHARDS'])));
stop = true; await Promise.all(workers);
await pool.close(); await topo.stop();

import { ClusterPool, keySlot } from '../../src/index.js';
import { replicaOf, waitKnownAsReplica } from '../support/cluster-ops.js';
import { startCluster, waitFor } from '../support/topology.js';
import { slotOwners, waitPromoted } from './fleet-nodes.js';
const topo = await startCluster({ masters: 3, nodeTimeoutMs: 2000 });
try {
  const pool = await ClusterPool.create(topo.seeds.slice(0, 3));
  const t = () => Date.now();
  pool.on('moved', (e) => console.log(t(), 'moved', e.slot, e.to.port));
  pool.on('node-error', (e) => console.log(t(), 'node-error', e.address.port, e.error.message.slice(0, 100)));
  pool.on('topology', (e) => console.log(t(), 'topology', JSON.stringify(e).slice(0, 200)));
  const masters = await topo.masters();
  const victim = masters[0]!;
  const replica = await replicaOf(topo, victim);
  await waitFor(async () => /master_link_status:up/.test(await replica.cli('INFO', 'replication')), 'sync', 30000);
  await waitKnownAsReplica(topo, replica);
  const owners = await slotOwners(victim.address);
  let key = '';
  for (let i = 0; ; i++) { if (owners[keySlot(`k${i}`)] === `${victim.host}:${victim.port}`) { key = `k${i}`; break; } }
  let stop = false;
  const loop = async () => { while (!stop) { const t0 = t(); try { await pool.set(key, 'v'); const d = t() - t0; if (d > 30) console.log(t(), 'slow ok', d); } catch (e) { console.log(t(), 'err', (e as Error).constructor.name, (e as Error).message.slice(0, 150)); } await new Promise((r) => setTimeout(r, 10)); } };
  const l = loop();
  await new Promise((r) => setTimeout(r, 500));
  const t0 = t();
  console.log(t0, 'FAILOVER');
  await replica.cli('CLUSTER', 'FAILOVER');
  const p = await waitPromoted(replica.address, 30000);
  console.log(p, 'promoted', p - t0);
  await new Promise((r) => setTimeout(r, 3000));
  stop = true; await l;
  console.log(JSON.stringify(pool.stats().redirects));
  await pool.close();
} finally { await topo.stop(); }

/**
 * Cluster operations tests share: a whole-slot live migration, a shard's replica, and a manual
 * failover that is asked again when the replica was still catching up.
 */
import type { ClusterTopology, ServerHandle } from './topology-types.js';
import { waitFor } from './wait.js';

/** Moves `slot` with its keys from `source` to `target` (IMPORTING/MIGRATING, MIGRATE, SETSLOT NODE on every master). */
export async function migrateSlot(topo: ClusterTopology, slot: number, source: ServerHandle, target: ServerHandle): Promise<void> {
  const sourceId = await source.cli('CLUSTER', 'MYID');
  const targetId = await target.cli('CLUSTER', 'MYID');
  await target.cli('CLUSTER', 'SETSLOT', String(slot), 'IMPORTING', sourceId);
  await source.cli('CLUSTER', 'SETSLOT', String(slot), 'MIGRATING', targetId);
  await finishMigration(topo, slot, source, target, targetId);
}

/**
 * The second half of a migration already IMPORTING/MIGRATING: MIGRATE whatever keys the source
 * still holds, then SETSLOT NODE on the target, the source and every other master.
 */
export async function finishMigration(topo: ClusterTopology, slot: number, source: ServerHandle, target: ServerHandle, targetId: string): Promise<void> {
  for (;;) {
    const left = (await source.cli('CLUSTER', 'GETKEYSINSLOT', String(slot), '1000')).split('\n').filter(Boolean);
    if (left.length === 0) break;
    await source.cli('MIGRATE', target.host, String(target.port), '', '0', '5000', 'KEYS', ...left);
  }
  await target.cli('CLUSTER', 'SETSLOT', String(slot), 'NODE', targetId);
  await source.cli('CLUSTER', 'SETSLOT', String(slot), 'NODE', targetId);
  for (const m of await topo.masters()) {
    if (m.port !== source.port && m.port !== target.port) await m.cli('CLUSTER', 'SETSLOT', String(slot), 'NODE', targetId);
  }
}

/** The replica of `master` (by ROLE). */
export async function replicaOf(topo: ClusterTopology, master: ServerHandle): Promise<ServerHandle> {
  for (const r of await topo.replicas()) {
    const role = (await r.cli('ROLE')).split('\n');
    if (Number(role[2]) === master.port) return r;
  }
  throw new Error(`no replica of ${master.port}`);
}

/**
 * Waits until every master lists `replica` as a replica in CLUSTER NODES. Gossip lags behind
 * cluster_state:ok in a young cluster, and until then masters deny a manual failover their
 * votes (it times out after 5 s, with writes paused on the old master meanwhile).
 */
export async function waitKnownAsReplica(topo: ClusterTopology, replica: ServerHandle): Promise<void> {
  const id = await replica.cli('CLUSTER', 'MYID');
  await waitFor(async () => {
    for (const m of await topo.masters()) {
      const line = (await m.cli('CLUSTER', 'NODES')).split('\n').find((l) => l.startsWith(id));
      if (!line || !line.split(' ')[2]!.split(',').includes('slave')) return false;
    }
    return true;
  }, `every master to know ${replica.host}:${replica.port} as a replica`, 20_000);
}

/**
 * CLUSTER FAILOVER on `replica`, once its replication link is up and every master knows it as a
 * replica, asked again if a manual failover timed out anyway.
 */
export async function failoverTo(topo: ClusterTopology, replica: ServerHandle): Promise<void> {
  await waitFor(async () => /master_link_status:up/.test(await replica.cli('INFO', 'replication')), 'the replica to be in sync', 30_000);
  await waitKnownAsReplica(topo, replica);
  await waitFor(async () => {
    if (/^master/.test(await replica.cli('ROLE'))) return true;
    await replica.cli('CLUSTER', 'FAILOVER');
    return waitFor(async () => /^master/.test(await replica.cli('ROLE')), 'the replica to become master', 8_000).catch(() => false);
  }, 'a manual failover to succeed', 40_000, 100);
}

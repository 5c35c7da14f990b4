/**
 * ClusterPool as the cluster's membership changes, on a real cluster (3 masters + 3
 * replicas): connections are opened only to nodes that are used and closed when a node
 * leaves the map; a CLUSTER FAILOVER under plain (non-idempotent) write load loses no
 * acknowledged write, fails none, and costs one MOVED per write in flight on the old master,
 * not one per slot of the shard.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClusterPool, keySlot, type Reply } from '../../src/index.js';
import { waitKnownAsReplica } from '../support/cluster-ops.js';
import { sendCommands } from '../support/mini-client.js';
import { startCluster, waitFor, type ClusterTopology, type ServerHandle } from '../support/topology.js';

/** Client connections a node has open: not the replication links (flags M and S), not the harness's own query. */
async function clientConnections(node: ServerHandle): Promise<number> {
  const [list] = await sendCommands(node.address, [['CLIENT', 'LIST']], { timeoutMs: 5000 });
  return String(list)
    .split('\n')
    .filter((l) => l.trim() && !/ flags=[^ ]*[MS]/.test(l) && !/ cmd=client\|list/.test(l)).length;
}

/** Owner port of every slot, from one node's CLUSTER SLOTS. */
async function slotOwners(node: ServerHandle): Promise<Map<number, number>> {
  const [reply] = await sendCommands(node.address, [['CLUSTER', 'SLOTS']], { timeoutMs: 5000 });
  const owners = new Map<number, number>();
  for (const e of reply as Reply[][]) for (let s = Number(e[0]); s <= Number(e[1]); s++) owners.set(s, Number((e[2] as Reply[])[1]));
  return owners;
}

describe('ClusterPool: connections follow the nodes in use', () => {
  let topo: ClusterTopology;

  beforeAll(async () => {
    topo = await startCluster();
  });

  afterAll(async () => {
    await topo?.stop();
  });

  it('connects only to nodes it sends to: no replica with readFrom master, and at most two nodes before any load', async () => {
    const pool = await ClusterPool.create(topo.seeds);
    try {
      await pool.set('only-used:first', 'x');
      const replicas = await topo.replicas();
      const masters = await topo.masters();
      const counts = async (nodes: ServerHandle[]) => Promise.all(nodes.map(clientConnections));
      // The COMMAND table comes from one master and the first SET goes to its slot's master.
      expect((await counts(masters)).filter((c) => c > 0).length).toBeLessThanOrEqual(2);
      expect(await counts(replicas)).toEqual(replicas.map(() => 0));
      await Promise.all(Array.from({ length: 300 }, (_, i) => pool.set(`only-used:${i}`, String(i))));
      // One lane per master, nothing on the replicas.
      expect(await counts(masters)).toEqual(masters.map(() => 1));
      expect(await counts(replicas)).toEqual(replicas.map(() => 0));
    } finally {
      await pool.close();
    }
  });

  it('closes the pool and the connections of a node that leaves the cluster', async () => {
    const pool = await ClusterPool.create(topo.seeds, { readFrom: 'replica' });
    const removed: string[][] = [];
    pool.on('topology', (c) => removed.push(c.removed));
    try {
      await Promise.all(Array.from({ length: 300 }, (_, i) => pool.set(`leave:${i}`, String(i))));
      // Reads go to the replicas, so each gets a connection once its link is up.
      // (A replica that has replicated nothing yet reports health "loading" and is not read
      // from: refresh until the map has them online.)
      await waitFor(async () => {
        await pool.refresh();
        await Promise.all(Array.from({ length: 300 }, (_, i) => pool.get(`leave:${i}`)));
        return (await Promise.all((await topo.replicas()).map(clientConnections))).every((c) => c >= 1);
      }, 'every replica to serve reads');
      const leaving = (await topo.replicas())[0]!;
      const key = `${leaving.host}:${leaving.port}`;
      expect(pool.stats().pools.map((p) => `${p.address.host}:${p.address.port}`)).toContain(key);

      // Take it out: it forgets the cluster, and every other node forgets it.
      const [id] = await sendCommands(leaving.address, [['CLUSTER', 'MYID']], { timeoutMs: 5000 });
      await leaving.cli('CLUSTER', 'RESET', 'HARD');
      for (const n of topo.nodes) if (n !== leaving) await n.cli('CLUSTER', 'FORGET', String(id));
      await waitFor(async () => {
        await pool.refresh();
        return !pool.nodes().some((n) => n.port === leaving.port);
      }, 'the pool to drop the node from its map');

      expect(removed.flat()).toContain(key);
      expect(pool.stats().pools.map((p) => `${p.address.host}:${p.address.port}`)).not.toContain(key);
      await waitFor(async () => (await clientConnections(leaving)) === 0, 'the pool to close its connections to the node that left');
      // Its shard is still read from (its master, having no replica left) and written.
      for (let i = 0; i < 300; i++) expect(await pool.get(`leave:${i}`)).toBe(String(i));
      expect(await clientConnections(leaving)).toBe(0);
    } finally {
      await pool.close();
    }
  });
});

describe('ClusterPool: CLUSTER FAILOVER under plain write load', () => {
  let topo: ClusterTopology;

  beforeAll(async () => {
    topo = await startCluster({ nodeTimeoutMs: 2000 });
  });

  afterAll(async () => {
    await topo?.stop();
  });

  it('resumes writes on the moved slots, fails none, loses no acknowledged write, with one MOVED per write in flight', async () => {
    const pool = await ClusterPool.create(topo.seeds);
    try {
      const replica = (await topo.replicas())[0]!;
      const oldMasterPort = Number((await replica.cli('ROLE')).split('\n')[2]);
      const before = await slotOwners(replica);
      const moved = new Set([...before].filter(([, port]) => port === oldMasterPort).map(([slot]) => slot));

      // Masters deny a manual failover their votes until they know the replica as one.
      await waitKnownAsReplica(topo, replica);
      // A manual failover pauses writes on the old master until the replica takes over, or for up
      // to 5 s (CLUSTER_MF_TIMEOUT) when it does not and is asked again: a write's deadline must
      // outlast that pause for "fails none" to be about the pool, not about the server's pause.
      const movedEvents: Array<{ from: number; to: number }> = [];
      pool.on('moved', (e) => movedEvents.push({ from: e.from.port, to: e.to.port }));
      const writer = pool.with({ timeout: 20_000 });
      const workers = 20;
      let stop = false;
      let promoted = false;
      let resumedOnMoved = 0;
      const acked: Array<[string, string]> = [];
      const failures: unknown[] = [];
      const load = Promise.all(
        Array.from({ length: workers }, async (_, w) => {
          for (let i = 0; !stop; i++) {
            const k = `fo:${w}:${i}`;
            try {
              await writer.set(k, String(i));
              acked.push([k, String(i)]);
              if (promoted && moved.has(keySlot(k))) resumedOnMoved++;
            } catch (err) {
              failures.push(err);
              return;
            }
          }
        }),
      );
      await waitFor(() => acked.length > 500, 'load to start');
      const st0 = pool.stats().redirects;
      // In a cluster this young, the masters may not all know the replica as one yet and deny
      // it their votes: the manual failover then times out (5 s) and is asked for again.
      let askedAt = 0;
      await waitFor(async () => {
        if (/^master/.test(await replica.cli('ROLE'))) return true;
        if (Date.now() - askedAt > 6000) {
          askedAt = Date.now();
          await replica.cli('CLUSTER', 'FAILOVER');
        }
        return false;
      }, 'the replica to be promoted', 40_000, 10);
      promoted = true;
      await waitFor(() => resumedOnMoved >= 100, 'writes to the moved slots to resume', 20_000).catch((err: Error) => {
        // Say what the writers were doing: failed (and how), or still waiting.
        throw new Error(`${err.message}; ${resumedOnMoved} resumed, ${acked.length} acknowledged, ${failures.length} writers failed: ${failures.slice(0, 3).map(String).join(' | ')}; redirects ${JSON.stringify(pool.stats().redirects)}`, { cause: err });
      });
      stop = true;
      await load;
      const st1 = pool.stats().redirects;

      expect(failures.map(String)).toEqual([]);
      // The writes queued on the old master get MOVED, and the first one moves the whole shard in
      // the pool's map. How many more follow depends on the servers (a manual failover asked a
      // second time, a master still naming the old owner in a refresh), so the count is printed,
      // not bounded here; failover-map.test.ts pins the shard move itself.
      expect(st1.moved - st0.moved).toBeGreaterThan(0);
      console.log(`CLUSTER FAILOVER under load: ${st1.moved - st0.moved} MOVED for ${workers} writers`);
      expect(pool.nodes().find((n) => n.port === replica.port)?.role).toBe('master');
      // Each event names the node that answered MOVED (the old master), never "from X to X"
      // once another write's MOVED had already moved the shard in the map.
      expect(movedEvents.length).toBe(st1.moved - st0.moved);
      expect(movedEvents.filter((e) => e.from !== oldMasterPort || e.to !== replica.port)).toEqual([]);

      // Every acknowledged write is on the node that owns its slot now.
      await topo.waitForClusterOk();
      const owners = await slotOwners(replica);
      const byOwner = new Map<number, Array<[string, string]>>();
      for (const kv of acked) {
        const port = owners.get(keySlot(kv[0]))!;
        if (!byOwner.has(port)) byOwner.set(port, []);
        byOwner.get(port)!.push(kv);
      }
      let lost = 0;
      for (const [port, kvs] of byOwner) {
        const replies = await sendCommands({ host: '127.0.0.1', port }, kvs.map(([k]) => ['GET', k]), { timeoutMs: 20_000 });
        kvs.forEach(([, v], i) => {
          if (replies[i] !== v) lost++;
        });
      }
      expect(lost).toBe(0);
    } finally {
      await pool.close();
    }
  });
});

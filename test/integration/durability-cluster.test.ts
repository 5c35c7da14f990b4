/**
 * Durable acknowledgements on a real cluster (3 masters, 1 replica each): a master SIGKILLed
 * under load while its replica lags (paused, its replication link cut on the master) loses no
 * acknowledged write for its slots; the writes of the lag window are refused instead. Each
 * node's lane flush gets its own WAIT, so the other shards keep confirming meanwhile.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClusterPool, ConnectionError, DurabilityError, TimeoutError, UncertainWriteError, keySlot } from '../../src/index.js';
import type { NodeAddress } from '../../src/types.js';
import { sendCommand } from '../support/mini-client.js';
import { missingOn, startWrites, type Ack } from '../support/sentinel-helpers.js';
import { startCluster, waitFor, type ClusterTopology } from '../support/topology.js';

let topo: ClusterTopology;

beforeAll(async () => {
  topo = await startCluster({ nodeTimeoutMs: 1000 });
});

afterAll(async () => {
  await topo?.stop();
});

/** Slot -> owner, from one node's CLUSTER SLOTS (read with the harness's own client). */
async function owners(from: NodeAddress): Promise<(slot: number) => NodeAddress> {
  const slots = (await sendCommand(from, ['CLUSTER', 'SLOTS'])) as unknown as Array<[number, number, [string, number]]>;
  return (slot) => {
    const e = slots.find(([a, b]) => slot >= a && slot <= b);
    if (!e) throw new Error(`no owner for slot ${slot}`);
    return { host: String(e[2][0]), port: Number(e[2][1]) };
  };
}

/** Acknowledged writes missing on the node that owns their slot now. */
async function lostOn(seed: NodeAddress, acks: readonly Ack[]): Promise<Ack[]> {
  const ownerOf = await owners(seed);
  const byNode = new Map<string, { node: NodeAddress; acks: Ack[] }>();
  for (const a of acks) {
    const n = ownerOf(keySlot(a.key));
    const k = `${n.host}:${n.port}`;
    if (!byNode.has(k)) byNode.set(k, { node: n, acks: [] });
    byNode.get(k)!.acks.push(a);
  }
  const lost: Ack[] = [];
  for (const { node, acks: list } of byNode.values()) lost.push(...(await missingOn(node, list)));
  return lost;
}

describe('durability on a cluster', () => {
  it('SIGKILL of a master whose replica lags: zero acknowledged writes lost for its slots, the unconfirmed ones refused', async () => {
    const pool = await ClusterPool.create(topo.seeds, { durability: { replicas: 1, timeout: 500 }, commandTimeout: 20_000 });
    try {
      const masters = await topo.masters();
      const victim = masters[masters.length - 1]!;
      const replica = await waitFor(async () => {
        for (const r of await topo.replicas()) {
          const role = (await r.cli('ROLE')).split('\n');
          if (role[2] === String(victim.port) && role[3] === 'connected') return r;
        }
        return undefined;
      }, "the victim's replica to be linked");
      const ownerBefore = await owners(victim.address);
      const onVictim = (key: string) => ownerBefore(keySlot(key)).port === victim.port;

      const load = startWrites((k, v) => pool.set(k, v), 20, 'dur-cluster');
      await load.waitForAcks(500, 'writes before the fault');
      replica.pause();
      await victim.cli('CLIENT', 'KILL', 'TYPE', 'replica');
      const lagAt = Date.now();
      // Writes to the victim's slots are now refused; the other shards go on confirming.
      await waitFor(() => load.failures.filter((f) => f.at >= lagAt && f.error instanceof DurabilityError).length >= 20, 'writes to the lagging shard to be refused');
      const acksInLag = load.acks.length;
      await load.waitForAcks(200, 'writes to the other shards during the lag');
      await victim.kill('SIGKILL');
      const killedAt = Date.now();
      replica.resume();
      await waitFor(async () => /^master/.test(await replica.cli('ROLE')), 'the replica to be promoted', 30_000);
      await topo.waitForClusterOk(30_000);
      // The promoted replica has no replica of its own yet: bring the victim back as one, and
      // writes to those slots are confirmed again.
      await victim.restart();
      const back = Date.now();
      await waitFor(() => load.acks.some((a) => a.at > back && onVictim(a.key)), "confirmed writes to the victim's slots again", 30_000);
      await load.stop();

      const lost = await lostOn(replica.address, load.acks);
      const victimAcks = load.acks.filter((a) => onVictim(a.key));
      const refused = load.failures.filter((f) => f.error instanceof DurabilityError);
      console.log(
        `[durability, cluster crash] ${load.acks.length} acknowledged (${victimAcks.length} on the victim's slots, ${load.acks.length - acksInLag} after the lag began), ` +
          `${load.failures.length} failed (${refused.length} DurabilityError); acknowledged writes missing: ${lost.length}; stats ${JSON.stringify(pool.stats().durability)}`,
      );
      expect(lost.map((a) => a.key).slice(0, 10)).toEqual([]);
      expect(victimAcks.some((a) => a.at < lagAt)).toBe(true);
      expect(victimAcks.some((a) => a.at > back)).toBe(true);
      // No write to the victim's slots was acknowledged while its replica lagged, and the refused
      // ones of the lag window did not survive the crash: the fault bit.
      expect(victimAcks.filter((a) => a.at > lagAt + 50 && a.at < killedAt)).toEqual([]);
      const refusedInLag = refused.filter((f) => f.at >= lagAt && f.at <= killedAt);
      expect(refusedInLag.every((f) => onVictim(f.key))).toBe(true);
      const refusedLost = await lostOn(replica.address, refusedInLag.map((f) => ({ key: f.key, value: `v${f.key.split(':').pop()}`, at: f.at })));
      expect(refusedLost.length).toBeGreaterThan(0);
      for (const f of load.failures) {
        const e = f.error;
        expect(e instanceof DurabilityError || e instanceof UncertainWriteError || e instanceof ConnectionError || e instanceof TimeoutError, String(e)).toBe(true);
      }
    } finally {
      await pool.close();
    }
  });
});

/**
 * A standalone master with `n` replicas (plain redis-server processes joined with REPLICAOF),
 * for the durability tests and benchmark: no sentinels, so nothing promotes or reconfigures
 * anything behind the test's back.
 */
import { parseInfo, sendCommand } from './mini-client.js';
import { startStandalone, waitFor, type StandaloneTopology } from './topology.js';

export interface Replicated {
  master: StandaloneTopology;
  replicas: StandaloneTopology[];
  /** Waits until the master lists `n` replicas whose links are up and in sync (lag 0 or 1 s). */
  waitLinked(n?: number): Promise<void>;
  stop(): Promise<void>;
}

export async function startReplicated(n: number): Promise<Replicated> {
  const master = await startStandalone();
  const replicas: StandaloneTopology[] = [];
  const stop = async () => {
    for (const r of replicas) if (r.server.isPaused()) r.server.resume();
    await Promise.all([master.stop(), ...replicas.map((r) => r.stop())]);
  };
  try {
    for (let i = 0; i < n; i++) replicas.push(await startStandalone());
    for (const r of replicas) await r.server.cli('REPLICAOF', master.address.host, String(master.address.port));
    const waitLinked = async (want = n) => {
      await waitFor(async () => {
        const info = parseInfo(String(await sendCommand(master.address, ['INFO', 'replication'])));
        let online = 0;
        for (let i = 0; i < n; i++) if (/state=online/.test(info.get(`slave${i}`) ?? '')) online++;
        return online >= want;
      }, `${want} replicas of ${master.address.port} to be online`);
    };
    await waitLinked();
    return { master, replicas, waitLinked, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Calls of `command` (lower case) on a node so far, from INFO commandstats. */
export async function calls(address: { host: string; port: number }, command: string): Promise<number> {
  const text = String(await sendCommand(address, ['INFO', 'commandstats']));
  const m = new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(text);
  return m ? Number(m[1]) : 0;
}

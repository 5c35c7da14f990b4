/**
 * `PUBSUB NUMSUB` / `SHARDNUMSUB` over a whole cluster. Each node counts only the subscribers
 * connected to it, and the Socket.IO adapters count their servers with it; node-redis's own
 * cluster client answers them by summing over its `masters`, which this facade must not have
 * (connect-redis would then walk `masters` with `nodeClient()`). So the facade sums itself:
 * one lease per master (picked by a key in one of its slots), replies added per channel.
 */
import { traitsOf } from '../../commands/traits.js';
import { keySlot, type ClusterPool } from '../../index.js';
import type { Arg } from '../../index.js';

const keyFor = new Map<string, string>();

/** A key whose slot lies in [from, to] (small integers cover every slot; found once per range). */
function keyInRange(from: number, to: number): string {
  const id = `${from}-${to}`;
  let k = keyFor.get(id);
  if (k !== undefined) return k;
  for (let i = 0; ; i++) {
    const s = keySlot(String(i));
    if (s >= from && s <= to) {
      k = String(i);
      break;
    }
  }
  keyFor.set(id, k);
  return k;
}

/** True for the PUBSUB subcommands whose per-node counts must be summed over the cluster. */
export function isNumsub(args: readonly Arg[]): boolean {
  if (args.length < 2) return false;
  const name = traitsOf(args).name;
  return name === 'PUBSUB NUMSUB' || name === 'PUBSUB SHARDNUMSUB';
}

/** `PUBSUB NUMSUB|SHARDNUMSUB ch …` on every master, counts summed: `[ch, n, …]` as one node answers. */
export async function numsubEveryMaster(pool: ClusterPool, args: readonly Arg[]): Promise<Array<string | number>> {
  const slots = (await pool.call('CLUSTER', 'SLOTS')) as Array<[number, number, [string, number, ...unknown[]], ...unknown[]]>;
  const firstRange = new Map<string, [number, number]>();
  for (const [from, to, master] of slots) {
    const id = `${String(master[0])}:${String(master[1])}`;
    if (!firstRange.has(id)) firstRange.set(id, [Number(from), Number(to)]);
  }
  const [command, ...rest] = args;
  const replies = await Promise.all(
    [...firstRange.values()].map(([from, to]) => pool.use((lease) => lease.call<unknown[]>(String(command), ...rest), { key: keyInRange(from, to) })),
  );
  const out: Array<string | number> = [];
  for (let i = 0; i + 1 < (replies[0]?.length ?? 0); i += 2) {
    let n = 0;
    for (const r of replies) n += Number(r[i + 1]);
    out.push(String(replies[0]![i]), n);
  }
  return out;
}

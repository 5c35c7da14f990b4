/**
 * What BullMQ asks of a cluster client beyond routed commands: one reply per node for
 * `CLIENT LIST` (through `nodes()`), one `INFO`, and SCAN on the node that holds a queue's
 * keys. The pool reaches a given node only through a key of a slot that node serves, so
 * these find one from `CLUSTER SLOTS`.
 */
import { keySlot, type Reply } from '../../index.js';
import type { BullMQPool } from './types.js';

/** A key whose slot is in [from, to]: `{0}`, `{1}` … (about three tries for a third of the slots). */
function keyInRange(from: number, to: number): string {
  for (let i = 0; ; i++) {
    const k = `{${i}}`;
    const s = keySlot(k);
    if (s >= from && s <= to) return k;
  }
}

/** One key per master serving slots, in the order of `CLUSTER SLOTS` by address. */
export async function keysPerMaster(pool: BullMQPool): Promise<string[]> {
  const slots = (await pool.call<Reply[]>('CLUSTER', 'SLOTS')) ?? [];
  const byMaster = new Map<string, string>();
  for (const range of slots as Reply[][]) {
    const master = range[2] as Reply[];
    const id = `${String(master[0])}:${String(master[1])}`;
    if (!byMaster.has(id)) byMaster.set(id, keyInRange(Number(range[0]), Number(range[1])));
  }
  return [...byMaster.keys()].sort().map((id) => byMaster.get(id)!);
}

/** Runs `command` on the master of `key`'s slot (an exclusive connection, for one reply). */
export function onNodeOf(pool: BullMQPool, key: string, command: string, ...args: string[]): Promise<Reply> {
  return pool.use((lease) => lease.call(command, ...args), { key });
}

/**
 * The literal `{hash-tag}` at the start of a SCAN pattern's first `{…}` (BullMQ's queue
 * prefix in a cluster), or undefined when the pattern has none or globs inside it.
 */
export function hashTagOf(pattern: string): string | undefined {
  const open = pattern.indexOf('{');
  if (open < 0) return undefined;
  const close = pattern.indexOf('}', open + 1);
  if (close <= open + 1) return undefined;
  const tag = pattern.slice(open + 1, close);
  if (/[*?[\]\\]/.test(pattern.slice(0, close))) return undefined;
  return `{${tag}}`;
}

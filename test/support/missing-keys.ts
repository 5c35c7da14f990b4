/**
 * Which acknowledged keys a node lacks, without one round trip per key: multi-key EXISTS over
 * groups of keys, pipelined, then one EXISTS per key only in the groups that came up short.
 * `exists` sends a batch of commands however the caller wants (raw sockets, a pool pipeline)
 * and returns the integer replies in order.
 */
export async function findMissing(
  ids: readonly number[],
  prefix: string,
  exists: (commands: string[][]) => Promise<number[]>,
  options: { group?: number; perBatch?: number } = {},
): Promise<Set<number>> {
  const group = options.group ?? 1000;
  const perBatch = options.perBatch ?? 50;
  const missing = new Set<number>();
  const groups: number[][] = [];
  for (let i = 0; i < ids.length; i += group) groups.push(ids.slice(i, i + group));
  for (let g = 0; g < groups.length; g += perBatch) {
    const batch = groups.slice(g, g + perBatch);
    const counts = await exists(batch.map((ks) => ['EXISTS', ...ks.map((n) => `${prefix}${n}`)]));
    for (let j = 0; j < batch.length; j++) {
      const ks = batch[j]!;
      if (counts[j] === ks.length) continue;
      const each = await exists(ks.map((n) => ['EXISTS', `${prefix}${n}`]));
      each.forEach((c, k) => c === 0 && missing.add(ks[k]!));
    }
  }
  return missing;
}

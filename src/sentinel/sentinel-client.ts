import { Connection } from '../connection/connection.js';
import type { ResolvedConnectionOptions } from '../connection/options.js';
import { RedisError } from '../errors.js';
import type { NodeAddress, Reply } from '../types.js';

/** A record of SENTINEL REPLICAS / SENTINELS: RESP2 flat arrays or RESP3 maps become plain objects. */
export function toFields(r: Reply): Record<string, string> {
  const out: Record<string, string> = {};
  if (r instanceof Map) for (const [k, v] of r) out[String(k)] = String(v);
  else if (Array.isArray(r)) for (let i = 0; i + 1 < r.length; i += 2) out[String(r[i])] = String(r[i + 1]);
  return out;
}

/** `SENTINEL get-master-addr-by-name` reply -> address, or null when the name is unknown. */
export function parseMasterAddr(r: Reply): NodeAddress | null {
  if (r === null || !Array.isArray(r) || r.length < 2) return null;
  const port = Number(r[1]);
  if (!Number.isInteger(port) || port <= 0 || port > 65535) return null;
  return { host: String(r[0]), port };
}

/**
 * `SENTINEL MASTER <name>` reply -> the address it names and the `config-epoch` of that
 * configuration (undefined when absent), or null when the record has no usable address.
 */
export function parseMasterRecord(r: Reply): { address: NodeAddress; epoch: number | undefined; sentinels: number | undefined } | null {
  const f = toFields(r);
  const port = Number(f['port']);
  if (!f['ip'] || !Number.isInteger(port) || port <= 0 || port > 65535) return null;
  const epoch = f['config-epoch'] === undefined ? undefined : Number(f['config-epoch']);
  // The sentinels watching this master as this one knows them (itself and the others it heard).
  const others = f['num-other-sentinels'] === undefined ? NaN : Number(f['num-other-sentinels']);
  return { address: { host: f['ip'], port }, epoch: Number.isFinite(epoch) ? epoch : undefined, sentinels: Number.isInteger(others) && others >= 0 ? others + 1 : undefined };
}

/**
 * Replicas worth serving reads: not flagged down or disconnected, link to master up. With
 * `anyLink`, the link to the master may be down (a replica resyncing is still one to watch).
 */
export function healthyReplicas(reply: Reply, anyLink = false): NodeAddress[] {
  if (!Array.isArray(reply)) return [];
  const out: NodeAddress[] = [];
  for (const item of reply) {
    const f = toFields(item);
    const flags = (f['flags'] ?? '').split(',');
    if (flags.some((x) => x === 's_down' || x === 'o_down' || x === 'disconnected')) continue;
    if (!anyLink && f['master-link-status'] !== undefined && f['master-link-status'] !== 'ok') continue;
    const port = Number(f['port']);
    if (!f['ip'] || !Number.isInteger(port)) continue;
    out.push({ host: f['ip'], port });
  }
  return out;
}

/**
 * From `SENTINEL master <name>` and `SENTINEL replicas <name>`: undefined when no failover of
 * the master is in progress, else the replica flagged `promoted` (once the leader chose one).
 */
export function failoverState(master: Reply, replicas: Reply): { candidate: NodeAddress | undefined } | undefined {
  if (master === null || master === undefined) return undefined;
  const flags = (toFields(master)['flags'] ?? '').split(',');
  if (!flags.includes('failover_in_progress')) return undefined;
  let candidate: NodeAddress | undefined;
  if (Array.isArray(replicas)) {
    for (const r of replicas) {
      const f = toFields(r);
      const port = Number(f['port']);
      if ((f['flags'] ?? '').split(',').includes('promoted') && f['ip'] && Number.isInteger(port)) candidate = { host: f['ip'], port };
    }
  }
  return { candidate };
}

/** `SENTINEL sentinels <name>` -> their addresses. */
export function parseSentinels(reply: Reply): Array<NodeAddress & { id?: string }> {
  if (!Array.isArray(reply)) return [];
  const out: Array<NodeAddress & { id?: string }> = [];
  for (const item of reply) {
    const f = toFields(item);
    const port = Number(f['port']);
    if (f['ip'] && Number.isInteger(port)) out.push({ host: f['ip'], port, ...(f['runid'] ? { id: f['runid'] } : {}) });
  }
  return out;
}

/** The role a node reports with ROLE: 'master', 'slave' or 'sentinel'. */
export function parseRole(r: Reply): string | undefined {
  return Array.isArray(r) && r.length > 0 ? String(r[0]) : undefined;
}

/** Opens a short-lived connection, runs one command, closes. */
export async function oneShot(address: NodeAddress, opts: ResolvedConnectionOptions, args: string[]): Promise<Reply> {
  const conn = await Connection.connect(address, opts);
  try {
    return await conn.ask(args);
  } finally {
    conn.destroy();
  }
}

/**
 * Opens a short-lived connection, sends every command in one write, closes. Each entry is the
 * reply or the error of its command (a refused one does not fail the others).
 */
export async function oneShotAll(address: NodeAddress, opts: ResolvedConnectionOptions, commands: string[][]): Promise<Array<Reply | Error>> {
  const conn = await Connection.connect(address, opts);
  try {
    return await Promise.all(commands.map((args) => conn.ask(args).catch((err: unknown) => (err instanceof Error ? err : new Error(String(err))))));
  } finally {
    conn.destroy();
  }
}

/** Asks a node for its ROLE. */
export async function roleOf(address: NodeAddress, opts: ResolvedConnectionOptions): Promise<string | undefined> {
  return parseRole(await oneShot(address, opts, ['ROLE']));
}

/** True when the error says the sentinel user may not run the command (ACL). */
export function isPermissionError(err: unknown): boolean {
  return err instanceof RedisError && (err.code === 'NOPERM' || /no permissions/i.test(err.message));
}

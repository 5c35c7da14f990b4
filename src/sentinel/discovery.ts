import type { ResolvedConnectionOptions } from '../connection/options.js';
import { AllSentinelsDownError, AuthenticationError, ConnectionError, MasterNotMonitoredError, RedisError } from '../errors.js';
import { formatAddress, type NodeAddress } from '../types.js';
import { decided } from './commitment.js';
import { isPermissionError, oneShot, oneShotAll, parseMasterAddr, parseMasterRecord, parseRole, parseSentinels, healthyReplicas, toFields } from './sentinel-client.js';

/** What discovery needs to know. */
export interface DiscoveryContext {
  masterName: string;
  /** Sentinels in the order to ask; the first that answers is moved to the front. */
  sentinels: NodeAddress[];
  /** Options for sentinel connections (their own credentials/TLS; timeouts = sentinelTimeout). */
  sentinelConn: ResolvedConnectionOptions;
  /** Options for the ROLE check on data nodes (data credentials; timeouts = sentinelTimeout). */
  dataConn: ResolvedConnectionOptions;
  /** Maps announced addresses to reachable ones. */
  natMap: (a: NodeAddress) => NodeAddress;
  /**
   * Sentinels (`host:port`) whose ACL refused `SENTINEL MASTER`: asked for the address only from
   * then on, so a minimal sentinel user costs one denial per sentinel, not one per re-check.
   */
  noMasterRecord?: Set<string>;
  /**
   * Each sentinel's run id (`SENTINEL MYID`, asked once per address; null when refused), so one
   * sentinel listed under two addresses (a host name and the IP it announces) is one voice.
   */
  sentinelIds?: Map<string, string | null>;
}

/** The master as the sentinels name it, before ROLE verification. */
export interface MasterAnswer {
  address: NodeAddress;
  sentinel: NodeAddress;
  /**
   * The `config-epoch` of the configuration the sentinel holds (`SENTINEL MASTER`), or
   * undefined when it could not be read (a sentinel user allowed only
   * `get-master-addr-by-name`).
   */
  epoch: number | undefined;
  /** How many sentinels watch the master as this one knows them (`num-other-sentinels` + 1); undefined without `SENTINEL MASTER`. */
  group?: number | undefined;
  /** The sentinel's run id, when it may say (`SENTINEL MYID`). */
  id?: string | undefined;
}

/** One answer per sentinel: a sentinel reached under two addresses (same run id) counts once. */
export function onePerSentinel(answers: readonly MasterAnswer[]): MasterAnswer[] {
  const seen = new Set<string>();
  return answers.filter((a) => {
    if (a.id === undefined) return true;
    if (seen.has(a.id)) return false;
    seen.add(a.id);
    return true;
  });
}

const same = (a: NodeAddress, b: NodeAddress) => a.host === b.host && a.port === b.port;

/** Every sentinel's answer to one poll, and how many sentinels there are. */
export interface SentinelPoll {
  /** One per sentinel that named a master, in the order of the list asked. */
  answers: MasterAnswer[];
  /** The sentinels a majority counts against, answering or not: see {@link knownSentinels}. */
  known: number;
}

/**
 * How many sentinels a majority counts against: the sentinels the pool knows (configured and
 * discovered, answering or not, each counted once: `listed`), or the larger group a sentinel
 * reports (`num-other-sentinels` + 1: it may know some the pool has not discovered yet).
 */
export function knownSentinels(answers: readonly MasterAnswer[], listed: number): number {
  let known = Math.max(listed, answers.length);
  for (const a of answers) if (a.group !== undefined && a.group > known) known = a.group;
  return known;
}

/**
 * Asks every sentinel at once for the master and its config epoch. It returns once every
 * sentinel has settled or one address is named by a majority of them (no other can then be),
 * so one silent sentinel costs nothing while the others agree. The sentinel with the newest
 * answer moves to the front of the list.
 *
 * Throws `MasterNotMonitoredError` when sentinels answered but none knows the name, and
 * `AllSentinelsDownError` (with each sentinel's error) when none could be reached.
 */
export async function pollSentinels(ctx: DiscoveryContext): Promise<SentinelPoll> {
  const list = [...ctx.sentinels];
  const errors: unknown[] = new Array(list.length);
  const answers: Array<MasterAnswer | undefined> = new Array(list.length);
  let answeredUnknown = 0;
  await new Promise<void>((resolve) => {
    let settled = 0;
    list.forEach((sentinel, i) => {
      askOne(sentinel, ctx).then(
        (a) => {
          if (a === null) {
            answeredUnknown++;
            errors[i] = new MasterNotMonitoredError(ctx.masterName, `Sentinel ${formatAddress(sentinel)} does not monitor a master named "${ctx.masterName}".`);
          } else {
            answers[i] = a;
          }
        },
        (err: unknown) => {
          errors[i] = err;
        },
      ).finally(() => {
        settled++;
        if (settled === list.length) return resolve();
        const got = onePerSentinel(answers.filter((a): a is MasterAnswer => a !== undefined));
        if (decided(got, knownSentinels(got, distinctSentinels(ctx)))) resolve();
      });
    });
  });
  const best = newestAnswer(answers);
  if (best) {
    // The sentinel that answered goes to the front: the next single-sentinel request asks it first.
    const i = ctx.sentinels.findIndex((s) => same(s, best.sentinel));
    if (i > 0) {
      ctx.sentinels.splice(i, 1);
      ctx.sentinels.unshift(best.sentinel);
    }
    const got = onePerSentinel(answers.filter((a): a is MasterAnswer => a !== undefined));
    return { answers: got, known: knownSentinels(got, distinctSentinels(ctx)) };
  }
  const failed = errors.filter((e) => e !== undefined);
  if (answeredUnknown > 0) {
    const known = await monitoredNames(list.filter((_, i) => errors[i] instanceof MasterNotMonitoredError), ctx);
    const which = known === undefined
      ? ''
      : known.length === 0 ? '; they monitor no master at all' : `; they monitor ${known.map((n) => `"${n}"`).join(', ')}`;
    const fix = known === undefined || known.length === 0
      ? 'Check the name against SENTINEL MASTERS, or add the master with SENTINEL MONITOR.'
      : 'Pass one of these names to SentinelPool.create(), or add the master with SENTINEL MONITOR.';
    throw new MasterNotMonitoredError(
      ctx.masterName,
      `No sentinel monitors a master named "${ctx.masterName}"${which} (${answeredUnknown} of ${list.length} answered; asked ${list.map(formatAddress).join(', ')}). ${fix}`,
      { cause: failed[failed.length - 1] },
    );
  }
  const down = new AllSentinelsDownError(failed, list, ctx.masterName);
  // Every sentinel refused our credentials: the same class as a refused data-node login.
  if (failed.every((e) => e instanceof AuthenticationError)) {
    throw new AuthenticationError(down.message, { cause: down, address: list[0] });
  }
  throw down;
}

/**
 * The master names the first of `sentinels` that answers `SENTINEL MASTERS` monitors, for the
 * error of an unknown name; undefined when none may run it (ACL) or none answers.
 */
async function monitoredNames(sentinels: NodeAddress[], ctx: DiscoveryContext): Promise<string[] | undefined> {
  for (const sentinel of sentinels) {
    try {
      const reply = await oneShot(sentinel, ctx.sentinelConn, ['SENTINEL', 'MASTERS']);
      if (!Array.isArray(reply)) continue;
      return reply.map((m) => toFields(m)['name']).filter((n): n is string => typeof n === 'string' && n !== '').sort();
    } catch {
      // refused (ACL) or gone: try the next, then say nothing of the names
    }
  }
  return undefined;
}

/**
 * The answer with the highest config epoch; one without an epoch counts as older than any with
 * one. Earlier entries win ties.
 *
 * Why not the first answer, as Redis's Sentinel client guidelines suggest: a sentinel that was
 * restarted, partitioned or paused during a failover goes on naming the old master for seconds,
 * and the old master goes on answering ROLE master until it is reconfigured. The first answer
 * can therefore move a pool back to a demoted master, where every write is later discarded.
 * The epoch says which view is newer; ROLE cannot.
 */
export function newestAnswer(answers: ReadonlyArray<MasterAnswer | undefined>): MasterAnswer | undefined {
  let best: MasterAnswer | undefined;
  for (const a of answers) {
    if (a === undefined) continue;
    if (best === undefined || (a.epoch ?? -1) > (best.epoch ?? -1)) best = a;
  }
  return best;
}

/**
 * One sentinel's view, in one round trip: the address from `get-master-addr-by-name` and the
 * config epoch from `SENTINEL MASTER`. The address must come from the former: while the
 * failover leader reconfigures the replicas, its master record already carries the new epoch
 * but still the old address (for seconds), and only `get-master-addr-by-name` names the
 * promoted replica. A sentinel user not allowed `SENTINEL MASTER` gives no epoch. Null: name unknown.
 */
async function askOne(sentinel: NodeAddress, ctx: DiscoveryContext): Promise<MasterAnswer | null> {
  const k = formatAddress(sentinel);
  const withRecord = !ctx.noMasterRecord?.has(k);
  const askId = ctx.sentinelIds?.get(k) === undefined;
  const replies = await oneShotAll(sentinel, ctx.sentinelConn, [
    ['SENTINEL', 'get-master-addr-by-name', ctx.masterName],
    ...(withRecord ? [['SENTINEL', 'MASTER', ctx.masterName]] : []),
    ...(askId ? [['SENTINEL', 'MYID']] : []),
  ]);
  const addrReply = replies[0];
  const masterReply = withRecord ? replies[1] : undefined;
  const idReply = askId ? replies[withRecord ? 2 : 1] : undefined;
  // Refused (ACL) or unknown: null, asked no more; the sentinel then counts by its address.
  if (askId) (ctx.sentinelIds ??= new Map()).set(k, typeof idReply === 'string' && idReply !== '' ? idReply : null);
  if (addrReply instanceof Error) throw addrReply;
  const addr = parseMasterAddr(addrReply!);
  if (addr === null) return null;
  if (masterReply instanceof Error && isPermissionError(masterReply)) (ctx.noMasterRecord ??= new Set()).add(k);
  const record = masterReply === undefined || masterReply instanceof Error ? null : parseMasterRecord(masterReply);
  return { address: ctx.natMap(addr), sentinel, epoch: record?.epoch, group: record?.sentinels, id: ctx.sentinelIds?.get(k) ?? undefined };
}

/** Why a sentinel's answer was not accepted. */
export class RoleMismatchError extends ConnectionError {
  /** `'RoleMismatchError'`, for logs and for checks that cannot use `instanceof` (two copies of the package). */
  override name = 'RoleMismatchError';
}

/**
 * Checks with ROLE that `address` is a master (a stale sentinel may name a replica).
 * Throws `RoleMismatchError` or the connection error.
 */
export async function verifyMaster(address: NodeAddress, opts: ResolvedConnectionOptions, expected: 'master' | 'slave' = 'master'): Promise<void> {
  const role = parseRole(await oneShot(address, opts, ['ROLE']));
  if (role !== expected) {
    throw new RoleMismatchError(`${formatAddress(address)} reports role ${role ?? 'unknown'}, not ${expected}; the sentinel's answer is stale.`, { address });
  }
}

/** Sentinels that also watch this master (`SENTINEL sentinels <name>`), not yet in the list. */
export async function discoverSentinels(ctx: DiscoveryContext, via: NodeAddress): Promise<NodeAddress[]> {
  const reply = await oneShot(via, ctx.sentinelConn, ['SENTINEL', 'sentinels', ctx.masterName]);
  const found = parseSentinels(reply).map(({ id, ...a }) => {
    const address = ctx.natMap(a);
    if (id) noteSentinelId(ctx, address, id);
    return address;
  });
  return found.filter((a) => !ctx.sentinels.some((s) => same(s, a)));
}

/** Remembers `address`'s run id (from `SENTINEL sentinels` or `+sentinel`), so it counts as that sentinel. */
export function noteSentinelId(ctx: DiscoveryContext, address: NodeAddress, id: string): void {
  (ctx.sentinelIds ??= new Map()).set(formatAddress(address), id);
}

/**
 * The sentinels the pool knows, each counted once: its configured and discovered addresses,
 * those with the same run id (a host name and the IP the sentinel announces) as one.
 */
export function distinctSentinels(ctx: DiscoveryContext): number {
  const seen = new Set<string>();
  for (const s of ctx.sentinels) seen.add(ctx.sentinelIds?.get(formatAddress(s)) ?? `@${formatAddress(s)}`);
  return seen.size;
}

/**
 * Replicas the sentinels list (`SENTINEL replicas <name>`): the healthy ones (serving reads), or
 * with `'reachable'` every one not flagged down, link to the master up or not (one of them may
 * be promoted, and an old master rejoining as a replica resyncs for a while).
 */
export async function discoverReplicas(ctx: DiscoveryContext, which: 'healthy' | 'reachable' = 'healthy'): Promise<NodeAddress[]> {
  let last: unknown;
  for (const sentinel of ctx.sentinels) {
    try {
      const reply = await oneShot(sentinel, ctx.sentinelConn, ['SENTINEL', 'replicas', ctx.masterName]);
      return healthyReplicas(reply, which === 'reachable').map(ctx.natMap);
    } catch (err) {
      last = err;
      if (err instanceof RedisError) break;
    }
  }
  throw last ?? new Error('no sentinel');
}

export { same as sameAddress };

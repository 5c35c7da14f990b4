import type { ResolvedConnectionOptions } from '../connection/options.js';
import { AllSentinelsDownError, AuthenticationError, ConnectionError, MasterNotMonitoredError, RedisError } from '../errors.js';
import { formatAddress, type NodeAddress } from '../types.js';
import { oneShot, parseMasterAddr, parseRole, parseSentinels, healthyReplicas } from './sentinel-client.js';

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
}

/** The master as the sentinels name it, before ROLE verification. */
export interface MasterAnswer {
  address: NodeAddress;
  sentinel: NodeAddress;
}

const same = (a: NodeAddress, b: NodeAddress) => a.host === b.host && a.port === b.port;

/**
 * Asks the sentinels in order (`SENTINEL get-master-addr-by-name`), as Redis's Sentinel
 * client guidelines say; the first that answers goes to the front of the list.
 * Throws `MasterNotMonitoredError` when sentinels answered but none knows the name, and
 * `AllSentinelsDownError` (with each sentinel's error) when none could be reached.
 */
export async function askSentinels(ctx: DiscoveryContext): Promise<MasterAnswer> {
  const errors: unknown[] = [];
  const tried: NodeAddress[] = [];
  let answeredUnknown = 0;
  for (const sentinel of [...ctx.sentinels]) {
    tried.push(sentinel);
    try {
      const reply = await oneShot(sentinel, ctx.sentinelConn, ['SENTINEL', 'get-master-addr-by-name', ctx.masterName]);
      const addr = parseMasterAddr(reply);
      if (addr === null) {
        answeredUnknown++;
        errors.push(new MasterNotMonitoredError(ctx.masterName, `Sentinel ${formatAddress(sentinel)} does not monitor a master named "${ctx.masterName}".`));
        continue;
      }
      const i = ctx.sentinels.findIndex((s) => same(s, sentinel));
      if (i > 0) {
        ctx.sentinels.splice(i, 1);
        ctx.sentinels.unshift(sentinel);
      }
      return { address: ctx.natMap(addr), sentinel };
    } catch (err) {
      errors.push(err);
    }
  }
  if (answeredUnknown > 0) {
    throw new MasterNotMonitoredError(
      ctx.masterName,
      `No sentinel monitors a master named "${ctx.masterName}" (${answeredUnknown} of ${tried.length} answered; asked ${tried.map(formatAddress).join(', ')}). Check the name against SENTINEL MASTERS.`,
      { cause: errors[errors.length - 1] },
    );
  }
  const down = new AllSentinelsDownError(errors, tried, ctx.masterName);
  // Every sentinel refused our credentials: the same class as a refused data-node login.
  if (errors.every((e) => e instanceof AuthenticationError)) {
    throw new AuthenticationError(down.message, { cause: down, address: tried[0] });
  }
  throw down;
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
  return parseSentinels(reply).map(ctx.natMap).filter((a) => !ctx.sentinels.some((s) => same(s, a)));
}

/** Replicas the sentinels consider healthy (`SENTINEL replicas <name>`). */
export async function discoverReplicas(ctx: DiscoveryContext): Promise<NodeAddress[]> {
  let last: unknown;
  for (const sentinel of ctx.sentinels) {
    try {
      const reply = await oneShot(sentinel, ctx.sentinelConn, ['SENTINEL', 'replicas', ctx.masterName]);
      return healthyReplicas(reply).map(ctx.natMap);
    } catch (err) {
      last = err;
      if (err instanceof RedisError) break;
    }
  }
  throw last ?? new Error('no sentinel');
}

export { same as sameAddress };

/**
 * Availability-zone affinity for reads: which node serves a read, given each candidate's zone
 * and health. Shared by Sentinel (`role: 'replica'`) and Cluster (`readFrom`), which feed it
 * their own candidates; the choice itself is pure so a table can test it.
 */

/** The zone-aware read strategies (valkey-glide's `AZAffinity` and `AZAffinityReplicasAndPrimary`). */
export type AzReadFrom = 'az-affinity' | 'az-affinity-replicas-and-primary';

/** The values of {@link AzReadFrom}, for option checks. */
export const AZ_READ_FROM: readonly AzReadFrom[] = ['az-affinity', 'az-affinity-replicas-and-primary'];

/** True for a zone-aware `readFrom`. */
export function isAzReadFrom(value: unknown): value is AzReadFrom {
  return AZ_READ_FROM.includes(value as AzReadFrom);
}

/** One node that could serve a read. */
export interface ReadCandidate<N> {
  node: N;
  /** The primary (master) of the data; every other candidate is one of its replicas. */
  primary: boolean;
  /** The zone the node reports; undefined when it reports none or is not known yet (then it counts as another zone). */
  zone: string | undefined;
  /** False for a node that is failing (connection refused, marked failed): never chosen, except a primary as the last resort. */
  healthy: boolean;
}

/** Why a node was chosen: the step of the order that picked it. */
export type ReadTier = 'same-zone-replica' | 'same-zone-primary' | 'replica' | 'primary';

/** The node chosen for a read, and the step that chose it. */
export interface ReadChoice<N> {
  node: N;
  tier: ReadTier;
  zone: string | undefined;
}

/**
 * The node for one read. `'az-affinity'`: a healthy replica in `clientAz`, else any healthy
 * replica, else the primary. `'az-affinity-replicas-and-primary'`: a healthy replica in
 * `clientAz`, else the primary if it is healthy and in `clientAz`, else any healthy replica,
 * else the primary. Within a step, candidates take turns by `turn` (round robin). Undefined only
 * when there is neither a healthy replica nor a primary among the candidates.
 */
export function chooseRead<N>(readFrom: AzReadFrom, clientAz: string, candidates: readonly ReadCandidate<N>[], turn = 0): ReadChoice<N> | undefined {
  const replicas = candidates.filter((c) => !c.primary && c.healthy);
  const local = replicas.filter((c) => c.zone === clientAz);
  if (local.length > 0) return pickOf(local, 'same-zone-replica', turn);
  const primary = candidates.find((c) => c.primary);
  if (readFrom === 'az-affinity-replicas-and-primary' && primary?.healthy && primary.zone === clientAz) return pickOf([primary], 'same-zone-primary', turn);
  if (replicas.length > 0) return pickOf(replicas, 'replica', turn);
  return primary ? pickOf([primary], 'primary', turn) : undefined;
}

function pickOf<N>(list: readonly ReadCandidate<N>[], tier: ReadTier, turn: number): ReadChoice<N> {
  const c = list[turn % list.length]!;
  return { node: c.node, tier, zone: c.zone };
}

/**
 * The unhealthy candidates in `clientAz` that the order would rank first if they answered (its
 * replicas, and its primary for `'az-affinity-replicas-and-primary'`): the caller tries to
 * reconnect them, so reads come back to the zone as soon as they answer again.
 */
export function worthWaking<N>(readFrom: AzReadFrom, clientAz: string, candidates: readonly ReadCandidate<N>[]): N[] {
  return candidates
    .filter((c) => !c.healthy && c.zone === clientAz && (!c.primary || readFrom === 'az-affinity-replicas-and-primary'))
    .map((c) => c.node);
}

/**
 * Checks `readFrom` / `clientAz` for a zone-aware read (TypeError naming the options):
 * `clientAz` is required with a zone-aware `readFrom`, and refused without one (it would do
 * nothing). `facade` names the pool in messages.
 */
export function checkAzOptions(readFrom: unknown, clientAz: unknown, facade: string): void {
  if (clientAz !== undefined && (typeof clientAz !== 'string' || clientAz.trim() === '')) {
    throw new TypeError(`Option clientAz of ${facade} must be a non-empty string (the availability zone this client runs in, e.g. 'use1-az1').`);
  }
  if (isAzReadFrom(readFrom) && clientAz === undefined) {
    throw new TypeError(`Option readFrom: '${readFrom}' of ${facade} needs option clientAz: the availability zone this client runs in (e.g. 'use1-az1'), compared with each node's availability_zone.`);
  }
  if (clientAz !== undefined && !isAzReadFrom(readFrom)) {
    throw new TypeError(`Option clientAz of ${facade} applies only with readFrom: 'az-affinity' or 'az-affinity-replicas-and-primary' (readFrom is ${readFrom === undefined ? 'not set' : JSON.stringify(readFrom)}).`);
  }
}

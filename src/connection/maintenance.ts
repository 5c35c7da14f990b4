/**
 * Maintenance notifications of Redis Software (8.0.2+) and Redis Cloud: RESP3 pushes a server
 * sends ahead of planned work to connections that opted in with `CLIENT MAINT_NOTIFICATIONS ON`.
 *
 *   MOVING <seq> <time_s> <host:port | null>     this endpoint moves: hand connections over
 *   MIGRATING <seq> <time_s> <shards>            a shard is about to pause (then MIGRATED <seq> <shards>)
 *   FAILING_OVER <seq> <time_s> <shards>         a shard fails over (then FAILED_OVER <seq> <shards>)
 *   SMIGRATING <seq> <slots>                     cluster API: slots start moving (then SMIGRATED)
 *   SMIGRATED <seq> [[src, dst, slots] …]        cluster API: slots moved; update the slot map
 *
 * Everything here is a pure decision (test/unit/maintenance.test.ts): what a push says, what it
 * does to a connection's timeouts, what a MOVING asks of a pool, which endpoint type to ask for.
 * The connection and the pools act on these answers (connection.ts, node-pool.ts, topology.ts).
 */
import net from 'node:net';
import type { NodeAddress, Reply } from '../types.js';

/** A maintenance notification type this library acts on. */
export type MaintenanceKind = 'MOVING' | 'MIGRATING' | 'MIGRATED' | 'FAILING_OVER' | 'FAILED_OVER' | 'SMIGRATING' | 'SMIGRATED';

/** Every {@link MaintenanceKind}. */
export const MAINT_KINDS: readonly MaintenanceKind[] = ['MOVING', 'MIGRATING', 'MIGRATED', 'FAILING_OVER', 'FAILED_OVER', 'SMIGRATING', 'SMIGRATED'];

/** `maintNotifications`: opt in where RESP3 is on and the server agrees (`auto`), insist (`enabled`), or never (`disabled`). */
export type MaintNotificationsMode = 'auto' | 'enabled' | 'disabled';

/** `maintEndpointType`: which form of the new address a MOVING carries (`none`: no address, reconnect to the same name). */
export type MaintEndpointType = 'internal-ip' | 'internal-fqdn' | 'external-ip' | 'external-fqdn' | 'none';

/** The values `maintEndpointType` accepts. */
export const MAINT_ENDPOINT_TYPES: readonly MaintEndpointType[] = ['internal-ip', 'internal-fqdn', 'external-ip', 'external-fqdn', 'none'];

/** Default of `maintRelaxedTimeout`, in ms. */
export const DEFAULT_RELAXED_TIMEOUT = 10_000;

/** The longest `time_s` taken at face value: a larger one is malformed (timers cap at ~24.8 days). */
const MAX_TIME_S = 86_400;

/** Inclusive range of hash slots. */
export type SlotRange = readonly [start: number, end: number];

/** One `[src, dst, slots]` entry of SMIGRATED, addresses already through `natMap`. */
export interface SlotMove {
  source: NodeAddress;
  target: NodeAddress;
  slots: SlotRange[];
}

/** A well-formed notification. Addresses are already through `natMap`. */
export type MaintNotice =
  | { kind: 'MOVING'; seq: number; timeS: number; target: NodeAddress | null }
  | { kind: 'MIGRATING' | 'FAILING_OVER'; seq: number; timeS: number }
  | { kind: 'MIGRATED' | 'FAILED_OVER'; seq: number }
  | { kind: 'SMIGRATING'; seq: number; slots: SlotRange[] }
  | { kind: 'SMIGRATED'; seq: number; moves: SlotMove[] };

/** What {@link parseMaintenance} made of a push: a notice, or why it is ignored. */
export type ParsedMaintenance = { ok: true; notice: MaintNotice } | { ok: false; kind: string; reason: string };

/**
 * What a connection reports to its owner for each notification push: the notice, or that it
 * was ignored (malformed or of an unknown type) and why.
 */
export type MaintenanceReport = { notice: MaintNotice; ignored?: undefined } | { notice?: undefined; ignored: { kind: string; reason: string } };

/**
 * The type word of a push that is a server notification rather than pub/sub or tracking
 * traffic (those are lower case: `message`, `invalidate` …), else undefined. Upper-case words
 * we do not know are notifications too: a newer server's, ignored and counted, never passed on
 * to pub/sub listeners.
 */
export function notificationType(push: readonly Reply[]): string | undefined {
  const head = push[0];
  // The first byte first: every push of pub/sub and tracking starts with a lower-case letter.
  const c = typeof head === 'string' ? head.charCodeAt(0) : Buffer.isBuffer(head) ? head[0] : undefined;
  if (c === undefined || c < 65 || c > 90) return undefined;
  const word = typeof head === 'string' ? head : (head as Buffer).toString('latin1');
  return /^[A-Z][A-Z0-9_]*$/.test(word) ? word : undefined;
}

/**
 * Reads one notification push (`[type, …]`, strings or Buffers). `mapAddress` is the pool's
 * `natMap`, applied to every address a MOVING or SMIGRATED names. Never throws.
 */
export function parseMaintenance(push: readonly Reply[], mapAddress: (a: NodeAddress) => NodeAddress = (a) => a): ParsedMaintenance {
  const kind = notificationType(push) ?? text(push[0]) ?? '?';
  const bad = (reason: string): ParsedMaintenance => ({ ok: false, kind, reason });
  if (!(MAINT_KINDS as readonly string[]).includes(kind)) return bad('unknown notification type');
  const seq = integer(push[1]);
  if (seq === undefined) return bad('the sequence number is not a non-negative integer');
  switch (kind as MaintenanceKind) {
    case 'MOVING': {
      const timeS = seconds(push[2]);
      if (timeS === undefined) return bad(`time_s is not a number of seconds from 0 to ${MAX_TIME_S}`);
      if (push.length < 4) return bad('the new endpoint (or null) is missing');
      const raw = push[3];
      const t = raw === null || text(raw) === 'null' ? null : address(raw);
      if (t === undefined) return bad('the new endpoint is not host:port or null');
      return { ok: true, notice: { kind: 'MOVING', seq, timeS, target: t === null ? null : mapAddress(t) } };
    }
    case 'MIGRATING':
    case 'FAILING_OVER': {
      const timeS = seconds(push[2]);
      if (timeS === undefined) return bad(`time_s is not a number of seconds from 0 to ${MAX_TIME_S}`);
      return { ok: true, notice: { kind: kind as 'MIGRATING' | 'FAILING_OVER', seq, timeS } };
    }
    case 'MIGRATED':
    case 'FAILED_OVER':
      return { ok: true, notice: { kind: kind as 'MIGRATED' | 'FAILED_OVER', seq } };
    case 'SMIGRATING': {
      const slots = push.length > 2 ? slotRanges(push.slice(2)) : [];
      if (slots === undefined) return bad('the slots are not a list of slots and ranges (0-16383)');
      return { ok: true, notice: { kind: 'SMIGRATING', seq, slots } };
    }
    case 'SMIGRATED': {
      const entries = push[2];
      if (!Array.isArray(entries) || entries.length === 0) return bad('the [source, target, slots] entries are missing');
      const moves: SlotMove[] = [];
      for (const e of entries) {
        if (!Array.isArray(e) || e.length !== 3) return bad('an entry is not [source, target, slots]');
        const source = address(e[0]);
        const target = address(e[1]);
        const slots = slotRanges([e[2]!]);
        if (!source || !target) return bad('an entry names an endpoint that is not host:port');
        if (!slots || slots.length === 0) return bad('an entry\'s slots are not a list of slots and ranges (0-16383)');
        moves.push({ source: mapAddress(source), target: mapAddress(target), slots });
      }
      return { ok: true, notice: { kind: 'SMIGRATED', seq, moves } };
    }
  }
}

// ------------------------------------------------------------------------- relaxed timeouts

/** What keeps a connection's timeouts relaxed: an open maintenance of each kind, counted. */
export type RelaxKind = 'MIGRATING' | 'FAILING_OVER' | 'SMIGRATING' | 'MOVING';

/** Open maintenances of one connection, per kind. */
export type RelaxCounts = Readonly<Record<RelaxKind, number>>;

/** No maintenance open. */
export const NOT_RELAXED: RelaxCounts = Object.freeze({ MIGRATING: 0, FAILING_OVER: 0, SMIGRATING: 0, MOVING: 0 });

/**
 * The counts after `notice` on one connection. A start notice opens one of its kind, an end
 * notice closes one of its kind, whatever its sequence number (the end carries a number of its
 * own); an end with none open changes nothing. A MOVING keeps the connection relaxed until it
 * closes (it is being handed over: its last replies may be slow).
 */
export function relaxStep(counts: RelaxCounts, notice: MaintNotice): RelaxCounts {
  const open = (k: RelaxKind) => ({ ...counts, [k]: counts[k] + 1 });
  const close = (k: RelaxKind) => (counts[k] > 0 ? { ...counts, [k]: counts[k] - 1 } : counts);
  switch (notice.kind) {
    case 'MIGRATING': return open('MIGRATING');
    case 'MIGRATED': return close('MIGRATING');
    case 'FAILING_OVER': return open('FAILING_OVER');
    case 'FAILED_OVER': return close('FAILING_OVER');
    case 'SMIGRATING': return open('SMIGRATING');
    case 'SMIGRATED': return close('SMIGRATING');
    case 'MOVING': return counts.MOVING > 0 ? counts : { ...counts, MOVING: 1 };
  }
}

/** Whether some maintenance is open. */
export function isRelaxed(counts: RelaxCounts): boolean {
  return counts.MIGRATING > 0 || counts.FAILING_OVER > 0 || counts.SMIGRATING > 0 || counts.MOVING > 0;
}

/**
 * A command's deadline (epoch ms, 0 = none) while relaxed: at least `relaxedMs` from `now`,
 * never earlier than it was, and still none when it had none.
 */
export function relaxedDeadline(deadline: number, now: number, relaxedMs: number): number {
  if (deadline === 0) return 0;
  const floor = now + relaxedMs;
  return deadline > floor ? deadline : floor;
}

/** The socket inactivity limit while relaxed: at least `relaxedMs`; 0 (off) stays off. */
export function relaxedIdleLimit(limit: number, relaxedMs: number): number {
  return limit === 0 || limit >= relaxedMs ? limit : relaxedMs;
}

/** One connection's relax state: the counts and the option, for the connection to consult. */
export class RelaxState {
  counts: RelaxCounts = NOT_RELAXED;
  relaxed = false;
  constructor(readonly relaxedMs: number) {}

  /** Applies a notice; true when it turned relaxation on. */
  apply(notice: MaintNotice): boolean {
    const was = this.relaxed;
    this.counts = relaxStep(this.counts, notice);
    this.relaxed = isRelaxed(this.counts);
    return this.relaxed && !was;
  }
}

// ------------------------------------------------------------------------------ MOVING plan

/** What a pool does about one MOVING received on one of its connections. */
export type MovingPlan =
  | { action: 'ignore'; reason: string }
  | {
      action: 'handoff';
      /** Where new connections go; null: the same address again (its name resolves anew). */
      target: NodeAddress | null;
      /** From receipt: when to start opening connections to the target. */
      startInMs: number;
      /** From receipt: when the connections still open to the old endpoint are closed. */
      closeInMs: number;
    };

/**
 * A MOVING on a connection: hand over at once to the new address (the old endpoint keeps
 * serving until `time_s` is up); with a null address, reconnect to the same name after half of
 * `time_s`, as the server asks. Old connections drain and close as soon as their replies are
 * in; whatever is still open is closed at 90 % of `time_s`, before the server cuts it.
 * Once per move: a MOVING on a connection already handed over, or a second null MOVING while
 * one waits, changes nothing (every connection of the endpoint gets its own copy).
 */
export function planMoving(notice: { timeS: number; target: NodeAddress | null }, state: { leaving: boolean; sameAddressPending: boolean }): MovingPlan {
  if (state.leaving) return { action: 'ignore', reason: 'this connection is already being handed over' };
  const ms = notice.timeS * 1000;
  const closeInMs = Math.floor(ms * 0.9);
  if (notice.target === null) {
    if (state.sameAddressPending) return { action: 'ignore', reason: 'a reconnect to the same address is already scheduled' };
    return { action: 'handoff', target: null, startInMs: Math.floor(ms / 2), closeInMs };
  }
  return { action: 'handoff', target: notice.target, startInMs: 0, closeInMs };
}

// ------------------------------------------------------------------------- endpoint type

/**
 * The endpoint type to ask for when `maintEndpointType` is not set, from how the connection
 * addressed the server: over TLS by name, a name (the certificate is checked against it);
 * otherwise an IP (no DNS lookup, which may still answer the old address, between MOVING and
 * the reconnect). Internal or external by the address actually reached (private, loopback,
 * link-local and shared ranges are internal).
 */
export function inferEndpointType(host: string, tls: boolean, remoteIp: string | undefined): Exclude<MaintEndpointType, 'none'> {
  const isIp = net.isIP(host) !== 0;
  const ip = isIp ? host : remoteIp;
  const internal = ip !== undefined && ip !== '' ? isPrivateIp(ip) : host === 'localhost';
  return `${internal ? 'internal' : 'external'}-${tls && !isIp ? 'fqdn' : 'ip'}`;
}

/** Loopback, private, link-local or carrier-grade NAT address (IPv4, IPv6, IPv4-mapped IPv6). */
export function isPrivateIp(ip: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  const v4 = mapped ? mapped[1]! : ip;
  if (net.isIPv4(v4)) {
    const [a, b] = v4.split('.').map(Number) as [number, number];
    return a === 10 || a === 127 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) || (a === 169 && b === 254) || (a === 100 && b >= 64 && b <= 127);
  }
  if (!net.isIPv6(ip)) return false;
  const lower = ip.toLowerCase();
  return lower === '::1' || /^f[cd]/.test(lower) || /^fe[89ab]/.test(lower);
}

// ------------------------------------------------------------------------------- counters

/** `stats().maintenance`: counts since the pool was created. */
export interface MaintenanceStats {
  /** Notifications received and acted on, every connection counted (each gets its own copy). */
  notifications: number;
  /** Notification pushes ignored: malformed, or of a type this library does not know. */
  ignored: number;
  /** Connections whose timeouts are relaxed right now (a maintenance is in progress). */
  relaxedNow: number;
  /** Hand-overs started by MOVING (one per move of an endpoint, however many connections it had). */
  handoffs: number;
  /** Slot map updates made by SMIGRATED (cluster), once per sequence number. */
  slotMapUpdates: number;
}

/** Counters of one pool; a child (one node's pool in a cluster) also counts into its parent. */
export class MaintCounters {
  notifications = 0;
  ignored = 0;
  handoffs = 0;
  slotMapUpdates = 0;
  constructor(private readonly parent?: MaintCounters) {}

  add(counter: 'notifications' | 'ignored' | 'handoffs' | 'slotMapUpdates'): void {
    this[counter]++;
    this.parent?.add(counter);
  }

  snapshot(relaxedNow: number): MaintenanceStats {
    return { notifications: this.notifications, ignored: this.ignored, relaxedNow, handoffs: this.handoffs, slotMapUpdates: this.slotMapUpdates };
  }
}

/** What the `maintenance` event and the `redis-ha-pool:maintenance` channel report of one notice. */
export interface MaintenanceEvent {
  /** The notification type. */
  kind: MaintenanceKind;
  /** Its sequence number. */
  seq: number;
  /** The node whose connection received it. */
  address: NodeAddress;
  /** MOVING, MIGRATING, FAILING_OVER: seconds until the server acts. */
  timeS?: number;
  /** MOVING: the endpoint's new address (through `natMap`), or null to reconnect to the same name. */
  target?: NodeAddress | null;
}

/** The event payload of a notice received from `address`. */
export function maintenanceEvent(notice: MaintNotice, address: NodeAddress): MaintenanceEvent {
  const ev: MaintenanceEvent = { kind: notice.kind, seq: notice.seq, address: { host: address.host, port: address.port } };
  if ('timeS' in notice) ev.timeS = notice.timeS;
  if (notice.kind === 'MOVING') ev.target = notice.target === null ? null : { host: notice.target.host, port: notice.target.port };
  return ev;
}

/**
 * Remembers the sequence numbers already applied (SMIGRATED reaches every connection of the
 * source node, and each copy must update the map once). Keeps the last `size` only.
 */
export class SeenSequences {
  private readonly seen = new Set<number>();
  constructor(private readonly size = 1024) {}

  /** True the first time `seq` is offered. */
  first(seq: number): boolean {
    if (this.seen.has(seq)) return false;
    this.seen.add(seq);
    if (this.seen.size > this.size) this.seen.delete(this.seen.values().next().value as number);
    return true;
  }
}

// -------------------------------------------------------------------------------- helpers

function text(v: Reply | undefined): string | undefined {
  if (typeof v === 'string') return v;
  if (Buffer.isBuffer(v)) return v.toString('utf8');
  if (typeof v === 'number' || typeof v === 'bigint') return String(v);
  return undefined;
}

function integer(v: Reply | undefined): number | undefined {
  const n = typeof v === 'number' ? v : typeof v === 'bigint' ? Number(v) : /^\d{1,15}$/.test(text(v) ?? '') ? Number(text(v)) : NaN;
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

function seconds(v: Reply | undefined): number | undefined {
  const t = text(v);
  const n = typeof v === 'number' ? v : t !== undefined && /^\d+(\.\d+)?$/.test(t) ? Number(t) : NaN;
  return Number.isFinite(n) && n >= 0 && n <= MAX_TIME_S ? n : undefined;
}

/** `host:port` or `[v6]:port`; undefined when it is neither. */
function address(v: Reply | undefined): NodeAddress | undefined {
  const t = text(v);
  if (t === undefined) return undefined;
  const m = /^\[([^\]]+)\]:(\d{1,5})$/.exec(t) ?? /^([^:\s[\]]+):(\d{1,5})$/.exec(t);
  if (!m) return undefined;
  const port = Number(m[2]);
  return port >= 1 && port <= 65535 ? { host: m[1]!, port } : undefined;
}

/** Slots as `"1,5-9"` strings, integers, or lists of those; undefined when any part is not a slot or range. */
function slotRanges(parts: readonly Reply[]): SlotRange[] | undefined {
  const out: SlotRange[] = [];
  const one = (v: Reply): boolean => {
    if (Array.isArray(v)) return v.every(one);
    if (typeof v === 'number') return push(v, v);
    const t = text(v);
    if (t === undefined) return false;
    for (const piece of t.split(',')) {
      const m = /^\s*(\d{1,5})(?:-(\d{1,5}))?\s*$/.exec(piece);
      if (!m || !push(Number(m[1]), Number(m[2] ?? m[1]))) return false;
    }
    return true;
  };
  const push = (a: number, b: number): boolean => {
    if (!Number.isInteger(a) || !Number.isInteger(b) || a < 0 || b > 16383 || a > b) return false;
    out.push([a, b]);
    return true;
  };
  return parts.every(one) ? out : undefined;
}

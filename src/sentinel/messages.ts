import type { NodeAddress } from '../types.js';

/**
 * What a sentinel pub/sub message means for the pool watching one master name. Sentinel
 * events are hints: every signal leads to asking the sentinels again and checking ROLE.
 */
export type SentinelSignal =
  /** The failover leader started working on our master: hold writes to the old master. */
  | { kind: 'failover-start'; event: string; master: NodeAddress; candidate?: NodeAddress }
  /** A replica of our master was promoted: it may become the master before `+switch-master`. */
  | { kind: 'promoted'; address: NodeAddress }
  /** `+switch-master`: the sentinels now name another master. */
  | { kind: 'switch'; from: NodeAddress; to: NodeAddress }
  /** The failover ended or was aborted: find out where the master is. */
  | { kind: 'failover-end'; aborted: boolean; event: string }
  /** Something about our master or its replicas changed (sdown, odown, convert-to-slave, reset). */
  | { kind: 'refresh'; event: string }
  /** A replica appeared or changed state (for replica reads). */
  | { kind: 'replicas'; event: string }
  /** Another sentinel for our master. */
  | { kind: 'sentinel'; address: NodeAddress; id: string }
  /** The other sentinels consider this sentinel down (`+sdown sentinel …`): if it led a failover, that failover is stuck. */
  | { kind: 'sentinel-down'; address: NodeAddress };

/** Channels a watcher subscribes to. */
export const SENTINEL_CHANNELS = [
  '+switch-master',
  '+try-failover',
  '+elected-leader',
  '+failover-state-select-slave',
  '+selected-slave',
  '+failover-state-send-slaveof-noone',
  '+failover-state-wait-promotion',
  '+promoted-slave',
  '+failover-state-reconf-slaves',
  '+failover-end',
  '+failover-end-for-timeout',
  '-failover-abort-not-elected',
  '-failover-abort-no-good-slave',
  '-failover-abort-slave-timeout',
  '+sdown',
  '-sdown',
  '+odown',
  '-odown',
  '+convert-to-slave',
  '+reset-master',
  '+slave',
  '+sentinel',
  '+role-change',
] as const;

const FENCE_START = new Set([
  '+try-failover', '+elected-leader', '+failover-state-select-slave', '+selected-slave',
  '+failover-state-send-slaveof-noone', '+failover-state-wait-promotion',
]);

interface InstanceDetails {
  type: string;
  name: string;
  address: NodeAddress;
  master: { name: string; address: NodeAddress } | undefined;
}

function port(s: string | undefined): number | undefined {
  const n = Number(s);
  return Number.isInteger(n) && n > 0 && n < 65536 ? n : undefined;
}

/** Parses `<type> <name> <ip> <port> [@ <master-name> <master-ip> <master-port>]`. */
export function parseInstanceDetails(payload: string): InstanceDetails | undefined {
  const t = payload.split(' ');
  const p = port(t[3]);
  if (t.length < 4 || p === undefined) return undefined;
  let master: InstanceDetails['master'];
  if (t[4] === '@') {
    const mp = port(t[7]);
    if (t.length < 8 || mp === undefined) return undefined;
    master = { name: t[5]!, address: { host: t[6]!, port: mp } };
  }
  return { type: t[0]!, name: t[1]!, address: { host: t[2]!, port: p }, master };
}

/**
 * Maps one sentinel message to a signal for `masterName`, or undefined when it is about
 * another master or carries nothing we act on. Pure, so it is tested without sockets.
 */
export function classifySentinelMessage(channel: string, payload: string, masterName: string): SentinelSignal | undefined {
  if (channel === '+switch-master') {
    const t = payload.split(' ');
    const fp = port(t[2]);
    const tp = port(t[4]);
    if (t.length !== 5 || t[0] !== masterName || fp === undefined || tp === undefined) return undefined;
    return { kind: 'switch', from: { host: t[1]!, port: fp }, to: { host: t[3]!, port: tp } };
  }
  const d = parseInstanceDetails(payload);
  if (!d) return undefined;
  const ours = d.type === 'master' ? d.name === masterName : d.master?.name === masterName;
  if (!ours) return undefined;
  if (FENCE_START.has(channel)) {
    if (d.type === 'master') return { kind: 'failover-start', event: channel, master: d.address };
    // Events about a slave name the replica chosen for promotion: it can be watched directly.
    return { kind: 'failover-start', event: channel, master: d.master!.address, candidate: d.address };
  }
  switch (channel) {
    case '+promoted-slave':
      return { kind: 'promoted', address: d.address };
    case '+failover-end':
    case '+failover-end-for-timeout':
      return { kind: 'failover-end', aborted: false, event: channel };
    case '-failover-abort-not-elected':
    case '-failover-abort-no-good-slave':
    case '-failover-abort-slave-timeout':
      return { kind: 'failover-end', aborted: true, event: channel };
    case '+sentinel':
      return { kind: 'sentinel', address: d.address, id: d.name };
    case '+slave':
      return { kind: 'replicas', event: channel };
    case '+role-change':
      // A node reporting a new role may be a replica turned master: always worth a look.
      return { kind: 'refresh', event: channel };
    case '+sdown':
      if (d.type === 'sentinel') return { kind: 'sentinel-down', address: d.address };
      return d.type === 'slave' ? { kind: 'replicas', event: channel } : { kind: 'refresh', event: channel };
    case '-sdown':
    case '+odown':
    case '-odown':
    case '+convert-to-slave':
    case '+reset-master':
    case '+failover-state-reconf-slaves':
      return d.type === 'slave' ? { kind: 'replicas', event: channel } : { kind: 'refresh', event: channel };
  }
  return undefined;
}

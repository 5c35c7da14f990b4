/**
 * Backend-independent topology logic: readiness checks and the topology
 * objects (`currentMaster`, `waitForNewMaster`, `waitForClusterOk`, ...).
 * Both the process and the container backends hand their nodes in as
 * `HarnessNode`s; every query goes over TCP to 127.0.0.1:<port>.
 */
import type { NodeAddress } from '../../src/types.js';
import { pairsToMap, parseInfo } from './mini-client.js';
import { ReplyError, type RespValue } from './resp-wire.js';
import type {
  ClusterTopology,
  SentinelTopology,
  ServerHandle,
  StandaloneTopology,
} from './topology-types.js';
import { waitFor } from './wait.js';

/** What the shared logic needs from a backend's node. */
export interface HarnessNode extends ServerHandle {
  /** One command through the harness's RESP client; an error reply rejects. */
  query(args: readonly (string | number)[], timeoutMs?: number): Promise<RespValue>;
  /** Pipelined commands; error replies come back as `ReplyError` values. */
  queryAll(commands: readonly (readonly (string | number)[])[], timeoutMs?: number): Promise<RespValue[]>;
  /** Resolves once the node answers PING. */
  waitReady(timeoutMs?: number): Promise<void>;
  /** The error with this node's log tail appended. */
  withLog(err: unknown): Error;
}

/** Defaults shared with the container backend. */
export const SENTINEL_DEFAULTS = {
  masterName: 'mymaster',
  replicas: 2,
  sentinels: 3,
  quorum: 2,
  downAfterMs: 1000,
  failoverTimeoutMs: 5000,
} as const;
export const CLUSTER_DEFAULTS = { masters: 3, replicasPerMaster: 1, nodeTimeoutMs: 2000 } as const;

export function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/**
 * The password the default user ends up with: the last `>password` of a
 * `user default ...` ACL line (reset by `nopass`/`resetpass`), else `fallback`
 * (requirepass).
 */
export function defaultUserPassword(acl: readonly string[] | undefined, fallback: string | undefined): string | undefined {
  let password = fallback;
  for (const line of acl ?? []) {
    const [directive, user, ...rules] = line.trim().split(/\s+/);
    if (directive !== 'user' || user !== 'default') continue;
    for (const rule of rules) {
      if (rule.startsWith('>')) password = rule.slice(1);
      else if (rule === 'nopass' || rule === 'resetpass' || rule === 'reset') password = undefined;
    }
  }
  return password;
}

export const CLUSTER_SLOTS = 16384;
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1']);

function sameHost(a: string, b: string): boolean {
  return a === b || (LOOPBACK.has(a) && LOOPBACK.has(b));
}

export function sameAddress(a: NodeAddress, b: NodeAddress): boolean {
  return a.port === b.port && sameHost(a.host, b.host);
}

export function findHandle<T extends ServerHandle>(nodes: readonly T[], a: NodeAddress): T | undefined {
  return nodes.find((n) => sameAddress(n.address, a));
}

/** Nodes that can answer right now: alive and not SIGSTOPped. */
export function responsive<T extends ServerHandle>(nodes: readonly T[]): T[] {
  return nodes.filter((n) => n.isAlive() && !n.isPaused());
}

function fmt(a: NodeAddress): string {
  return `${a.host}:${a.port}`;
}

function ensureOk(replies: RespValue[]): RespValue[] {
  const err = replies.find((r) => r instanceof ReplyError);
  if (err) throw err;
  return replies;
}

/** Runs a start-up step; on failure the error carries every node's log tail. */
export async function withLogs<T>(nodes: readonly HarnessNode[], step: Promise<T>): Promise<T> {
  try {
    return await step;
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    const logs = nodes.map((n) => `--- ${n.kind} ${fmt(n.address)} (${n.dir}) ---\n${n.logTail(15)}`).join('\n');
    throw new Error(`${message}\n${logs}`, { cause: err });
  }
}

// ---------------------------------------------------------------- readiness

export async function waitAllReady(nodes: readonly HarnessNode[], timeoutMs?: number): Promise<void> {
  await Promise.all(nodes.map((n) => n.waitReady(timeoutMs)));
}

export async function waitReplicasLinked(replicas: readonly HarnessNode[], timeoutMs = 20_000): Promise<void> {
  await Promise.all(
    replicas.map((r) =>
      waitFor(
        async () => {
          const info = parseInfo(String(await r.query(['INFO', 'replication'])));
          const role = info.get('role');
          const link = info.get('master_link_status');
          if (role !== 'slave' || link !== 'up') throw new Error(`role=${role} master_link_status=${link}`);
          return true;
        },
        `${r.kind} ${fmt(r.address)} to report master_link_status:up`,
        timeoutMs,
      ),
    ),
  );
}

/**
 * Every sentinel knows the master, all replicas (linked, per its last INFO)
 * and all other sentinels (connected).
 */
export async function waitSentinelsReady(
  sentinels: readonly HarnessNode[],
  masterName: string,
  master: NodeAddress,
  replicaCount: number,
  timeoutMs = 20_000,
): Promise<void> {
  await Promise.all(
    sentinels.map((s) =>
      waitFor(
        async () => {
          const [m, reps, sens] = ensureOk(
            await s.queryAll([
              ['SENTINEL', 'MASTER', masterName],
              ['SENTINEL', 'REPLICAS', masterName],
              ['SENTINEL', 'SENTINELS', masterName],
            ]),
          );
          const mm = pairsToMap(m!);
          const state = `flags=${mm.get('flags')} port=${mm.get('port')} num-slaves=${mm.get('num-slaves')} num-other-sentinels=${mm.get('num-other-sentinels')}`;
          if (
            mm.get('flags') !== 'master' ||
            Number(mm.get('port')) !== master.port ||
            Number(mm.get('num-slaves')) !== replicaCount ||
            Number(mm.get('num-other-sentinels')) !== sentinels.length - 1
          ) {
            throw new Error(state);
          }
          for (const r of (reps as RespValue[]).map(pairsToMap)) {
            if (r.get('flags') !== 'slave' || r.get('master-link-status') !== 'ok') {
              throw new Error(`replica ${r.get('name')} flags=${r.get('flags')} master-link-status=${r.get('master-link-status')}`);
            }
          }
          for (const o of (sens as RespValue[]).map(pairsToMap)) {
            if (o.get('flags') !== 'sentinel') throw new Error(`sentinel ${o.get('name')} flags=${o.get('flags')}`);
          }
          return true;
        },
        `sentinel ${fmt(s.address)} to know master '${masterName}' with ${replicaCount} replicas and ${sentinels.length - 1} other sentinels`,
        timeoutMs,
      ),
    ),
  );
}

// ---------------------------------------------------------------- standalone

export function makeStandaloneTopology(
  server: HarnessNode,
  password: string | undefined,
  stop: () => Promise<void>,
  tls = false,
): StandaloneTopology {
  const auth = password !== undefined ? `:${encodeURIComponent(password)}@` : '';
  return { server, address: server.address, url: `${tls ? 'rediss' : 'redis'}://${auth}${server.host}:${server.port}`, stop };
}

// ---------------------------------------------------------------- sentinel

function parseAddr(reply: RespValue): NodeAddress | undefined {
  if (!Array.isArray(reply) || reply.length < 2) return undefined;
  return { host: String(reply[0]), port: Number(reply[1]) };
}

export function makeSentinelTopology(init: {
  masterName: string;
  master: HarnessNode;
  replicas: HarnessNode[];
  sentinels: HarnessNode[];
  stop: () => Promise<void>;
}): SentinelTopology {
  const { masterName, master, replicas, sentinels } = init;
  const dataNodes = [master, ...replicas];
  const all: HarnessNode[] = [...dataNodes, ...sentinels];
  const askMaster = async (s: HarnessNode): Promise<NodeAddress> => {
    const addr = parseAddr(await s.query(['SENTINEL', 'GET-MASTER-ADDR-BY-NAME', masterName]));
    if (!addr) throw new Error(`sentinel ${fmt(s.address)} knows no master named '${masterName}'`);
    return addr;
  };
  return {
    masterName,
    master,
    replicas,
    sentinels,
    sentinelAddresses: sentinels.map((s) => s.address),
    dataNodes,
    async currentMaster() {
      let lastError: unknown = new Error('no sentinel is alive');
      for (const s of responsive(sentinels)) {
        try {
          return await askMaster(s);
        } catch (err) {
          lastError = err;
        }
      }
      throw lastError;
    },
    handleFor: (a) => findHandle(all, a),
    waitForNewMaster(from, timeoutMs = 30_000) {
      return waitFor(
        async () => {
          const asked = responsive(sentinels);
          if (asked.length === 0) throw new Error('no sentinel is alive');
          const views = await Promise.all(asked.map(askMaster));
          const first = views[0]!;
          const disagree = views.find((v) => !sameAddress(v, first));
          if (disagree) throw new Error(`sentinels disagree: ${views.map(fmt).join(', ')}`);
          if (sameAddress(first, from)) throw new Error(`sentinels still report ${fmt(from)}`);
          const node = findHandle(dataNodes, first);
          if (!node) throw new Error(`sentinels report unknown master ${fmt(first)}`);
          const role = await node.query(['ROLE']);
          if (!Array.isArray(role) || role[0] !== 'master') {
            throw new Error(`${fmt(first)} does not report role master yet (ROLE ${JSON.stringify(role)})`);
          }
          return first;
        },
        `sentinels to agree on a new master for '${masterName}' other than ${fmt(from)}`,
        timeoutMs,
      );
    },
    stop: init.stop,
  };
}

// ---------------------------------------------------------------- cluster

interface SlotRange {
  start: number;
  end: number;
  owner: string; // node id
}

function parseClusterSlots(reply: RespValue): SlotRange[] {
  if (!Array.isArray(reply)) throw new Error(`unexpected CLUSTER SLOTS reply ${JSON.stringify(reply)}`);
  return reply
    .map((entry) => {
      const e = entry as RespValue[];
      const masterEntry = e[2] as RespValue[];
      return { start: Number(e[0]), end: Number(e[1]), owner: String(masterEntry[2]) };
    })
    .sort((a, b) => a.start - b.start);
}

function rangesSignature(ranges: SlotRange[]): string {
  return ranges.map((r) => `${r.start}-${r.end}:${r.owner}`).join(',');
}

function coverage(ranges: SlotRange[]): number {
  return ranges.reduce((n, r) => n + (r.end - r.start + 1), 0);
}

interface ClusterNodeView {
  node: HarnessNode;
  info: Map<string, string>;
  ranges: SlotRange[];
}

async function clusterViews(nodes: readonly HarnessNode[]): Promise<ClusterNodeView[]> {
  const alive = responsive(nodes);
  if (alive.length === 0) throw new Error('no cluster node is alive');
  return Promise.all(
    alive.map(async (node) => {
      const [info, slots] = ensureOk(await node.queryAll([['CLUSTER', 'INFO'], ['CLUSTER', 'SLOTS']]));
      return { node, info: parseInfo(String(info)), ranges: parseClusterSlots(slots!) };
    }),
  );
}

/**
 * Throws unless every view says cluster_state:ok, all agree on all 16384 slot
 * owners and (when `byId` is given) every owner is one of our nodes and can
 * answer (alive, not paused): right after a master is killed its peers still
 * say "ok" until cluster-node-timeout has passed.
 */
function checkClusterOk(views: ClusterNodeView[], byId?: Map<string, HarnessNode>): void {
  for (const v of views) {
    const state = v.info.get('cluster_state');
    if (state !== 'ok') throw new Error(`${fmt(v.node.address)} cluster_state:${state}`);
  }
  const reference = rangesSignature(views[0]!.ranges);
  for (const v of views) {
    if (rangesSignature(v.ranges) !== reference) {
      throw new Error(`${fmt(v.node.address)} disagrees with ${fmt(views[0]!.node.address)} about slot owners`);
    }
    const covered = coverage(v.ranges);
    if (covered !== CLUSTER_SLOTS) throw new Error(`${fmt(v.node.address)} covers ${covered} slots`);
  }
  if (!byId) return;
  for (const r of views[0]!.ranges) {
    const owner = byId.get(r.owner);
    if (!owner) throw new Error(`slots ${r.start}-${r.end} are owned by unknown node ${r.owner}`);
    if (!owner.isAlive() || owner.isPaused()) {
      throw new Error(`slots ${r.start}-${r.end} are still owned by ${fmt(owner.address)}, which is ${owner.isAlive() ? 'paused' : 'not running'}`);
    }
  }
}

async function nodeIds(nodes: readonly HarnessNode[]): Promise<Map<string, HarnessNode>> {
  const ids = new Map<string, HarnessNode>();
  await Promise.all(nodes.map(async (n) => ids.set(String(await n.query(['CLUSTER', 'MYID'])), n)));
  return ids;
}

/**
 * After `redis-cli --cluster create`: cluster_state:ok and slot agreement
 * everywhere, every node knows every other node, the expected number of
 * masters, and every replica's replication link is up.
 */
export async function waitClusterFormed(
  nodes: readonly HarnessNode[],
  masters: number,
  timeoutMs = 30_000,
): Promise<void> {
  await waitFor(
    async () => {
      const views = await clusterViews(nodes);
      if (views.length !== nodes.length) throw new Error('a node is not alive');
      checkClusterOk(views);
      for (const v of views) {
        const known = Number(v.info.get('cluster_known_nodes'));
        if (known !== nodes.length) throw new Error(`${fmt(v.node.address)} knows ${known} nodes`);
      }
      const infos = await Promise.all(nodes.map(async (n) => parseInfo(String(await n.query(['INFO', 'replication'])))));
      const masterCount = infos.filter((i) => i.get('role') === 'master').length;
      if (masterCount !== masters) throw new Error(`${masterCount} masters, expected ${masters}`);
      const unlinked = infos.findIndex((i) => i.get('role') === 'slave' && (i.get('master_link_status') !== 'up' || i.get('master_sync_in_progress') !== '0'));
      if (unlinked >= 0) throw new Error(`replica ${fmt(nodes[unlinked]!.address)} master_link_status is not up (or its sync is in progress)`);
      // Every node lists every replica in CLUSTER SLOTS: a client's first map is then complete
      // (Redis 6.2 lists a replica there only once its master's gossip says it replicates).
      for (const n of nodes) {
        const listed = slotsNodeCount(await n.query(['CLUSTER', 'SLOTS']));
        if (listed !== nodes.length) throw new Error(`${fmt(n.address)} lists ${listed} of ${nodes.length} nodes in CLUSTER SLOTS`);
      }
      return true;
    },
    `the cluster to form (${nodes.length} nodes, ${masters} masters, cluster_state:ok everywhere, replicas synced and listed)`,
    timeoutMs,
  );
}

/** Distinct nodes (masters and replicas) a CLUSTER SLOTS reply names. */
function slotsNodeCount(reply: RespValue): number {
  const seen = new Set<string>();
  for (const range of Array.isArray(reply) ? reply : []) {
    if (!Array.isArray(range)) continue;
    for (const n of range.slice(2)) if (Array.isArray(n)) seen.add(`${String(n[0])}:${String(n[1])}`);
  }
  return seen.size;
}

export async function makeClusterTopology(nodes: HarnessNode[], stop: () => Promise<void>): Promise<ClusterTopology> {
  // Node ids survive restarts (nodes.conf), so this map stays valid.
  const byId = await nodeIds(nodes);
  const byRole = async (role: 'master' | 'slave'): Promise<ServerHandle[]> => {
    const alive = responsive(nodes);
    const roles = await Promise.all(alive.map(async (n) => (await n.query(['ROLE'])) as RespValue[]));
    return alive.filter((_, i) => roles[i]![0] === role);
  };
  return {
    nodes,
    seeds: nodes.map((n) => n.address),
    masters: () => byRole('master'),
    replicas: () => byRole('slave'),
    async nodeForSlot(slot) {
      if (!Number.isInteger(slot) || slot < 0 || slot >= CLUSTER_SLOTS) throw new RangeError(`invalid slot ${slot}`);
      const views = await clusterViews(nodes);
      const votes = new Map<string, number>();
      for (const v of views) {
        const owner = v.ranges.find((r) => r.start <= slot && slot <= r.end)?.owner;
        if (owner) votes.set(owner, (votes.get(owner) ?? 0) + 1);
      }
      const [winner] = [...votes.entries()].sort((a, b) => b[1] - a[1]);
      const node = winner && byId.get(winner[0]);
      if (!node) throw new Error(`no known node owns slot ${slot} (votes ${JSON.stringify([...votes])})`);
      return node;
    },
    handleFor: (a) => findHandle(nodes, a),
    async waitForClusterOk(timeoutMs = 20_000) {
      await waitFor(
        async () => {
          checkClusterOk(await clusterViews(nodes), byId);
          return true;
        },
        'every alive cluster node to report cluster_state:ok and agree on all slot owners',
        timeoutMs,
      );
    },
    stop,
  };
}

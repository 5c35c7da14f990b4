/**
 * A scripted cluster of many fake nodes, for sizes a 2-core machine cannot run as real
 * redis-server processes (100 masters + 100 replicas would be 200 processes).
 *
 * Every node is a {@link startFakeServer} on its own 127.0.0.1 port. Each answers what a
 * client needs to load the slot map and write: PING, CLUSTER SHARDS and CLUSTER SLOTS (the
 * same map from every node), COMMAND (the real reply of redis 7.0, from
 * test/fixtures/command-reply.json, so start-up reads as much as against a real cluster),
 * READONLY, and GET/SET (stored per node; MOVED to the owner for a slot it does not serve,
 * as a real node does). It is not a cluster: there is no bus, no failover, no replication.
 *
 * `setLayout()` changes the map every node serves (fewer masters: their slots go to the
 * others; fewer replicas: those nodes leave the map), so nodes leaving can be tested. The
 * listening sockets of nodes out of the map stay open (the client must stop using them).
 *
 * The bench runs it in a child process ({@link forkFakeCluster}), so the client's CPU and
 * memory are measured without the fake's; tests may use {@link startFakeCluster} in process.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { keySlot } from '../../src/cluster/slot.js';
import type { NodeAddress } from '../../src/types.js';
import { resp, startFakeServer, type FakeServer } from './fake-server.js';

const SLOTS = 16384;

export interface FakeClusterLayout {
  /** Masters serving slots (the first `masters` of the cluster's master nodes). */
  masters: number;
  /** Replicas listed per master (the first ones of each shard). */
  replicasPerMaster: number;
}

/** Per node: connections accepted so far and open now, and commands by name. */
export interface FakeNodeStats {
  port: number;
  inMap: boolean;
  role: 'master' | 'replica';
  accepted: number;
  open: number;
  commands: Record<string, number>;
}

export interface FakeCluster {
  /** Every master then every replica node, whether in the map or not. */
  nodes: NodeAddress[];
  /** Masters in the current map. */
  masters(): NodeAddress[];
  /** Serves a smaller (or the full) map from now on. */
  setLayout(layout: FakeClusterLayout): void;
  /** What every node saw. */
  stats(): FakeNodeStats[];
  close(): Promise<void>;
}

/** Encodes a JSON value of the fixture (strings, integers, arrays) as RESP2. */
function encodeJson(v: unknown): string {
  if (typeof v === 'string') return resp.bulk(v);
  if (typeof v === 'number') return resp.int(v);
  if (v === null) return resp.bulk(null);
  if (Array.isArray(v)) return resp.array(v.map(encodeJson));
  throw new TypeError(`unexpected fixture value ${JSON.stringify(v)}`);
}

let commandReply: string | undefined;
function commandTable(): string {
  if (commandReply) return commandReply;
  const file = path.join(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/command-reply.json');
  const fixture = JSON.parse(readFileSync(file, 'utf8')) as { resp2: unknown };
  return (commandReply = encodeJson(fixture.resp2));
}

const nodeId = (i: number) => i.toString(16).padStart(40, '0');

/**
 * Starts `masters * (1 + replicasPerMaster)` fake nodes serving a map of all of them; slots
 * are split into one contiguous range per master, as `redis-cli --cluster create` does.
 */
export async function startFakeCluster(size: FakeClusterLayout): Promise<FakeCluster> {
  const total = size.masters * (1 + size.replicasPerMaster);
  const ports: number[] = [];
  const opened: number[] = [];
  const accepted: number[] = [];
  const commands: Array<Record<string, number>> = [];
  const data: Array<Map<string, string>> = [];
  let layout: FakeClusterLayout = { ...size };
  // Derived from the layout: owner index per slot, the two cluster replies, membership.
  let owner = new Int32Array(SLOTS);
  let shardsReply = '';
  let slotsReply = '';
  let inMap = new Set<number>();

  const isMaster = (i: number) => i < size.masters;
  const replicaIndex = (m: number, r: number) => size.masters + m * size.replicasPerMaster + r;

  function rebuild(): void {
    const m = layout.masters;
    owner = new Int32Array(SLOTS);
    const ranges: Array<[number, number]> = [];
    for (let i = 0; i < m; i++) {
      const start = Math.floor((i * SLOTS) / m);
      const end = Math.floor(((i + 1) * SLOTS) / m) - 1;
      ranges.push([start, end]);
      owner.fill(i, start, end + 1);
    }
    inMap = new Set<number>();
    const shards: string[] = [];
    const slots: string[] = [];
    const describe = (i: number, role: string) =>
      resp.array([
        resp.bulk('id'), resp.bulk(nodeId(i)), resp.bulk('port'), resp.int(ports[i]!), resp.bulk('ip'), resp.bulk('127.0.0.1'),
        resp.bulk('endpoint'), resp.bulk('127.0.0.1'), resp.bulk('role'), resp.bulk(role), resp.bulk('replication-offset'), resp.int(0),
        resp.bulk('health'), resp.bulk('online'),
      ]);
    const slotNode = (i: number) => resp.array([resp.bulk('127.0.0.1'), resp.int(ports[i]!), resp.bulk(nodeId(i)), resp.array([])]);
    for (let i = 0; i < m; i++) {
      const reps = Array.from({ length: layout.replicasPerMaster }, (_, r) => replicaIndex(i, r));
      inMap.add(i);
      for (const r of reps) inMap.add(r);
      const [start, end] = ranges[i]!;
      shards.push(
        resp.array([
          resp.bulk('slots'), resp.array([resp.int(start), resp.int(end)]),
          resp.bulk('nodes'), resp.array([describe(i, 'master'), ...reps.map((r) => describe(r, 'replica'))]),
        ]),
      );
      slots.push(resp.array([resp.int(start), resp.int(end), slotNode(i), ...reps.map(slotNode)]));
    }
    shardsReply = resp.array(shards);
    slotsReply = resp.array(slots);
  }

  function handle(i: number, cmd: string[]): string {
    const name = cmd[0]!.toUpperCase();
    const sub = cmd[1]?.toUpperCase();
    const counted = sub && (name === 'CLUSTER' || name === 'CLIENT') ? `${name} ${sub}` : name;
    commands[i]![counted] = (commands[i]![counted] ?? 0) + 1;
    switch (name) {
      case 'PING': return resp.simple('PONG');
      case 'READONLY': case 'READWRITE': case 'ASKING': return resp.simple('OK');
      case 'CLIENT': return resp.simple('OK');
      case 'COMMAND': return commandTable();
      case 'CLUSTER':
        if (sub === 'SHARDS') return shardsReply;
        if (sub === 'SLOTS') return slotsReply;
        if (sub === 'MYID') return resp.bulk(nodeId(i));
        return resp.error(`ERR unknown subcommand '${cmd[1]}'`);
      case 'GET': case 'SET': {
        if (cmd.length < (name === 'SET' ? 3 : 2)) return resp.error(`ERR wrong number of arguments for '${cmd[0]}' command`);
        const slot = keySlot(cmd[1]!);
        const o = owner[slot]!;
        if (!inMap.has(o) || o !== i) return resp.error(`MOVED ${slot} 127.0.0.1:${ports[o]}`);
        if (name === 'GET') return resp.bulk(data[i]!.get(cmd[1]!) ?? null);
        data[i]!.set(cmd[1]!, cmd[2]!);
        return resp.simple('OK');
      }
      default:
        return resp.error(`ERR unknown command '${cmd[0]}', with args beginning with: `);
    }
  }

  const servers: FakeServer[] = [];
  try {
    for (let i = 0; i < total; i++) {
      commands.push({});
      data.push(new Map());
      accepted.push(0);
      opened.push(0);
      const idx = i;
      const seen = new WeakSet<net.Socket>();
      const server = await startFakeServer((cmd, socket) => {
        if (!seen.has(socket)) {
          seen.add(socket);
          opened[idx]!++;
          socket.once('close', () => opened[idx]!--);
        }
        return handle(idx, cmd);
      });
      // The fake server records every command; a benchmark sends millions.
      server.received.push = () => 0;
      servers.push(server);
      ports.push(server.port);
    }
  } catch (err) {
    await Promise.all(servers.map((s) => s.close()));
    throw err;
  }
  rebuild();

  return {
    nodes: ports.map((port) => ({ host: '127.0.0.1', port })),
    masters: () => Array.from({ length: layout.masters }, (_, i) => ({ host: '127.0.0.1', port: ports[i]! })),
    setLayout(l) {
      if (l.masters < 1 || l.masters > size.masters || l.replicasPerMaster < 0 || l.replicasPerMaster > size.replicasPerMaster) {
        throw new RangeError(`layout ${JSON.stringify(l)} does not fit the cluster ${JSON.stringify(size)}`);
      }
      layout = { ...l };
      rebuild();
    },
    stats: () =>
      servers.map((s, i) => ({
        port: ports[i]!,
        inMap: inMap.has(i),
        role: isMaster(i) ? 'master' : 'replica',
        accepted: s.connections,
        open: opened[i]!,
        commands: { ...commands[i]! },
      })),
    close: async () => {
      await Promise.all(servers.map((s) => s.close()));
    },
  };
}

// ------------------------------------------------------------------ in a child process

type Ask = { op: 'layout'; layout: FakeClusterLayout } | { op: 'stats' } | { op: 'close' };
type Request = Ask & { id: number };
type Response = { id: number; ok: true; value?: unknown } | { id: number; ok: false; error: string };

/**
 * {@link startFakeCluster} in a child process (same interface, async): the caller's CPU time
 * and heap then hold only the client under test. The child dies with its parent.
 */
export interface ForkedFakeCluster {
  nodes: NodeAddress[];
  pid: number;
  setLayout(layout: FakeClusterLayout): Promise<void>;
  stats(): Promise<FakeNodeStats[]>;
  close(): Promise<void>;
}

export async function forkFakeCluster(size: FakeClusterLayout): Promise<ForkedFakeCluster> {
  const file = fileURLToPath(import.meta.url);
  const child: ChildProcess = fork(file, ['--fake-cluster-child', JSON.stringify(size)], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exit = () => child.kill('SIGKILL');
  process.once('exit', exit);
  let next = 1;
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  child.on('message', (m: Response | { ready: NodeAddress[] }) => {
    if ('ready' in m) return;
    const p = pending.get(m.id);
    if (!p) return;
    pending.delete(m.id);
    if (m.ok) p.resolve(m.value);
    else p.reject(new Error(m.error));
  });
  child.once('exit', (code, signal) => {
    for (const p of pending.values()) p.reject(new Error(`fake cluster child exited (${code ?? signal})`));
    pending.clear();
  });
  const nodes = await new Promise<NodeAddress[]>((resolve, reject) => {
    const onMessage = (m: { ready?: NodeAddress[] }) => {
      if (m.ready) {
        child.off('message', onMessage);
        resolve(m.ready);
      }
    };
    child.on('message', onMessage);
    child.once('exit', (code, signal) => reject(new Error(`fake cluster child exited during start-up (${code ?? signal})`)));
  });
  const ask = (req: Ask) =>
    new Promise<unknown>((resolve, reject) => {
      const id = next++;
      pending.set(id, { resolve, reject });
      child.send({ ...req, id });
    });
  return {
    nodes,
    pid: child.pid!,
    setLayout: async (layout) => {
      await ask({ op: 'layout', layout });
    },
    stats: async () => (await ask({ op: 'stats' })) as FakeNodeStats[],
    close: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise<void>((r) => child.once('exit', () => r()));
      await ask({ op: 'close' }).catch(() => undefined);
      await exited;
      process.off('exit', exit);
    },
  };
}

async function childMain(size: FakeClusterLayout): Promise<void> {
  const cluster = await startFakeCluster(size);
  // The parent went away (killed, crashed): nobody will ask us to close.
  process.on('disconnect', () => process.exit(0));
  process.on('message', (req: Request) => {
    const reply = (r: Response) => process.send!(r);
    try {
      if (req.op === 'layout') {
        cluster.setLayout(req.layout);
        reply({ id: req.id, ok: true });
      } else if (req.op === 'stats') {
        reply({ id: req.id, ok: true, value: cluster.stats() });
      } else {
        void cluster.close().then(() => {
          reply({ id: req.id, ok: true });
          process.exit(0);
        });
      }
    } catch (err) {
      reply({ id: req.id, ok: false, error: (err as Error).message });
    }
  });
  process.send!({ ready: cluster.nodes });
}

if (process.argv[2] === '--fake-cluster-child' && process.send) {
  childMain(JSON.parse(process.argv[3]!) as FakeClusterLayout).catch((err) => {
    process.stderr.write(`fake cluster: ${(err as Error).stack}\n`);
    process.exit(1);
  });
}

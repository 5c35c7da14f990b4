import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readlinkSync } from 'node:fs';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resp, startFakeServer } from '../support/fake-server.js';
import { sendCommand } from '../support/mini-client.js';
import {
  freePort,
  startCluster,
  startSentinel,
  startStandalone,
  topologyBackend,
  waitFor,
  type ClusterTopology,
  type SentinelTopology,
  type StandaloneTopology,
} from '../support/topology.js';

function isRunning(pid: number | undefined): boolean {
  if (pid === undefined) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw err;
  }
}

describe('waitFor / freePort', () => {
  it('waitFor returns the first truthy value and names what timed out', async () => {
    let n = 0;
    await expect(waitFor(() => ++n >= 3 && n, 'n to reach 3', 1000, 1)).resolves.toBe(3);
    await expect(waitFor(() => false, 'the impossible', 100, 10)).rejects.toThrow(/waiting for the impossible/);
    await expect(
      waitFor(() => {
        throw new Error('boom');
      }, 'a throwing probe', 100, 10),
    ).rejects.toThrow(/last error: boom/);
  });

  it('freePort gives distinct bindable 127.0.0.1 ports', async () => {
    const [a, b] = await Promise.all([freePort(), freePort()]);
    expect(a).not.toBe(b);
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(a, '127.0.0.1', resolve));
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
});

function parentPid(pid: number): number {
  return Number(execFileSync('ps', ['-o', 'ppid=', '-p', String(pid)], { encoding: 'utf8' }).trim());
}

describe(`the ${topologyBackend()} backend (REDIS_TOPOLOGY)`, () => {
  const containers = topologyBackend() === 'containers';
  it(
    containers
      ? 'runs a node in a container of its own: not our child, another mount namespace, in a docker cgroup'
      : 'runs a node as a child process of this test process',
    async () => {
      const topo = await startStandalone();
      try {
        const pid = topo.server.pid;
        expect(isRunning(pid)).toBe(true);
        if (containers) {
          expect(parentPid(pid!)).not.toBe(process.pid);
          expect(readlinkSync(`/proc/${pid}/ns/mnt`)).not.toBe(readlinkSync('/proc/self/ns/mnt'));
          expect(readFileSync(`/proc/${pid}/cgroup`, 'utf8')).toMatch(/docker/);
        } else {
          expect(parentPid(pid!)).toBe(process.pid);
        }
        expect(await topo.server.cli('PING')).toBe('PONG');
      } finally {
        await topo.stop();
      }
    },
  );
});

describe('standalone', () => {
  let topo: StandaloneTopology;
  beforeAll(async () => {
    topo = await startStandalone({ password: 'pw', acl: ['user alice on >secret ~* &* +@all'] });
  });
  afterAll(() => topo?.stop());

  it('answers PING through cli() with the configured password', async () => {
    expect(await topo.server.cli('PING')).toBe('PONG');
    expect(await topo.server.cli('ACL', 'WHOAMI')).toBe('default');
    expect(topo.url).toBe(`redis://:pw@127.0.0.1:${topo.address.port}`);
    expect(topo.server.address).toEqual({ host: '127.0.0.1', port: topo.server.port });
    await expect(sendCommand(topo.address, ['ACL', 'WHOAMI'], { username: 'alice', password: 'secret' })).resolves.toBe('alice');
    await expect(topo.server.cli('NOSUCHCOMMAND')).rejects.toThrow(/unknown command/);
  });

  it('pause() stops answers until resume(); kill() and restart() keep the port', async () => {
    const s = topo.server;
    s.pause();
    await expect(sendCommand(s.address, ['PING'], { password: 'pw', timeoutMs: 200 })).rejects.toThrow(/no reply/);
    s.resume();
    await expect(sendCommand(s.address, ['PING'], { password: 'pw' })).resolves.toBe('PONG');

    const oldPid = s.pid;
    await s.kill();
    expect(s.isAlive()).toBe(false);
    expect(isRunning(oldPid)).toBe(false);
    await expect(s.cli('PING')).rejects.toThrow();
    await s.restart();
    expect(s.isAlive()).toBe(true);
    expect(s.pid).not.toBe(oldPid);
    expect(await s.cli('PING')).toBe('PONG');
    expect(s.logTail(200)).toMatch(/Ready to accept connections/);
  });

  it('stop() kills the process by pid and removes its directory', async () => {
    const { pid, dir } = topo.server;
    expect(isRunning(pid)).toBe(true);
    expect(existsSync(dir)).toBe(true);
    await topo.stop();
    expect(isRunning(pid)).toBe(false);
    expect(existsSync(dir)).toBe(false);
    await topo.stop(); // idempotent
  });
});

describe('sentinel', () => {
  let topo: SentinelTopology;
  beforeAll(async () => {
    topo = await startSentinel({
      masterPassword: 'masterpw',
      sentinelAcl: ['user nosub on >nosubpw ~* &* +@all -subscribe -psubscribe'],
    });
  });
  afterAll(() => topo?.stop());

  it('starts 1 master, 2 linked replicas and 3 sentinels that agree on the master', async () => {
    expect(topo.masterName).toBe('mymaster');
    expect(topo.replicas).toHaveLength(2);
    expect(topo.sentinels).toHaveLength(3);
    expect(topo.dataNodes).toEqual([topo.master, ...topo.replicas]);
    expect(topo.sentinelAddresses).toEqual(topo.sentinels.map((s) => s.address));
    expect(await topo.currentMaster()).toEqual(topo.master.address);
    for (const s of topo.sentinels) {
      expect(s.kind).toBe('sentinel');
      const reply = await s.cli('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', 'mymaster');
      expect(reply.split('\n')).toEqual(['127.0.0.1', String(topo.master.port)]);
    }
    for (const r of topo.replicas) expect(await r.cli('INFO', 'replication')).toMatch(/master_link_status:up/);
    expect(topo.handleFor({ host: 'localhost', port: topo.replicas[1]!.port })).toBe(topo.replicas[1]);
  });

  it('applies sentinelAcl: the extra user authenticates but may not SUBSCRIBE', async () => {
    const opts = { username: 'nosub', password: 'nosubpw' };
    const s = topo.sentinelAddresses[0]!;
    await expect(sendCommand(s, ['PING'], opts)).resolves.toBe('PONG');
    await expect(sendCommand(s, ['SUBSCRIBE', '+switch-master'], opts)).rejects.toThrow(/NOPERM/);
  });

  it('SENTINEL FAILOVER then waitForNewMaster returns another node, now a master', async () => {
    const from = await topo.currentMaster();
    expect(await topo.sentinels[0]!.cli('SENTINEL', 'FAILOVER', 'mymaster')).toBe('OK');
    const started = Date.now();
    const next = await topo.waitForNewMaster(from);
    console.log(`sentinel failover observed after ${Date.now() - started} ms`);
    expect(next).not.toEqual(from);
    const handle = topo.handleFor(next);
    expect(topo.replicas).toContain(handle);
    expect((await handle!.cli('ROLE')).split('\n')[0]).toBe('master');
  });
});

describe('sentinel with a password on the sentinels default user', () => {
  it('cli() and readiness authenticate as default', async () => {
    const topo = await startSentinel({ replicas: 1, sentinelAcl: ['user default on >sentinelpw ~* &* +@all'] });
    try {
      expect(await topo.sentinels[2]!.cli('ACL', 'WHOAMI')).toBe('default');
      await expect(sendCommand(topo.sentinelAddresses[0]!, ['PING'])).rejects.toThrow(/NOAUTH/);
      expect(await topo.currentMaster()).toEqual(topo.master.address);
    } finally {
      await topo.stop();
    }
  });
});

describe('cluster', () => {
  let topo: ClusterTopology;
  beforeAll(async () => {
    topo = await startCluster();
  });
  afterAll(() => topo?.stop());

  it('is ok on every node with all 16384 slots, 3 masters and 3 replicas', async () => {
    expect(topo.nodes).toHaveLength(6);
    expect(topo.seeds).toEqual(topo.nodes.map((n) => n.address));
    for (const n of topo.nodes) {
      const info = await n.cli('CLUSTER', 'INFO');
      expect(info).toMatch(/cluster_state:ok/);
      expect(info).toMatch(/cluster_slots_ok:16384/);
      expect(info).toMatch(/cluster_known_nodes:6/);
    }
    const masters = await topo.masters();
    const replicas = await topo.replicas();
    expect(masters).toHaveLength(3);
    expect(replicas).toHaveLength(3);
    expect(new Set([...masters, ...replicas]).size).toBe(6);
    await topo.waitForClusterOk();
  });

  it('nodeForSlot returns the master that serves the slot', async () => {
    const slot = Number(await topo.nodes[0]!.cli('CLUSTER', 'KEYSLOT', 'somekey'));
    const owner = await topo.nodeForSlot(slot);
    expect(await topo.masters()).toContain(owner);
    expect(await owner.cli('SET', 'somekey', 'v')).toBe('OK');
    expect(topo.handleFor(owner.address)).toBe(owner);
  });

  it('stop() leaves no process alive and removes the directories', async () => {
    const pids = topo.nodes.map((n) => n.pid);
    expect(pids.every(isRunning)).toBe(true);
    await topo.stop();
    expect(pids.filter(isRunning)).toEqual([]);
    expect(topo.nodes.filter((n) => existsSync(n.dir))).toEqual([]);
  });
});

describe('fake server', () => {
  it('answers scripted commands over a raw socket and records them', async () => {
    const fake = await startFakeServer((cmd) => {
      switch (cmd[0]!.toUpperCase()) {
        case 'PING':
          return resp.simple('PONG');
        case 'GET':
          return resp.bulk(`value-of-${cmd[1]}`);
        case 'HANG':
          return null;
        default:
          return resp.error(`ERR unknown '${cmd[0]}'`);
      }
    });
    try {
      const socket = net.connect(fake.port, '127.0.0.1');
      let data = '';
      socket.on('data', (chunk) => (data += chunk.toString()));
      await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
      // A multibulk command split across writes, an ignored one, an inline one, an unknown one.
      socket.write('*1\r\n$4\r\nPI');
      socket.write('NG\r\n*1\r\n$4\r\nHANG\r\nGET foo\r\n*1\r\n$3\r\nBAD\r\n');
      const expected = "+PONG\r\n$12\r\nvalue-of-foo\r\n-ERR unknown 'BAD'\r\n";
      await waitFor(() => data === expected, 'the scripted replies', 2000);
      expect(fake.received).toEqual([['PING'], ['HANG'], ['GET', 'foo'], ['BAD']]);
      expect(fake.connections).toBe(1);
      const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
      await fake.close();
      await closed; // close() destroyed the accepted socket
    } finally {
      await fake.close();
    }
  });

  it('resp helpers produce wire format', () => {
    expect(resp.int(42)).toBe(':42\r\n');
    expect(resp.bulk(null)).toBe('$-1\r\n');
    expect(resp.bulk('é')).toBe('$2\r\né\r\n');
    expect(resp.array([resp.bulk('a'), resp.int(1)])).toBe('*2\r\n$1\r\na\r\n:1\r\n');
    expect(resp.array(null)).toBe('*-1\r\n');
  });
});

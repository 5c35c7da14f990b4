/**
 * One redis-server / redis-sentinel in its own container (host network), as a `ServerHandle`.
 *
 * The node's host directory is bind-mounted at `/data`: its config (`<kind>.conf`), log
 * (`<kind>.log`) and, for a cluster node, `nodes.conf` live there, so they survive a
 * container restart and the harness reads the log as it does for a process. What the
 * process-level operations mean here:
 *
 * - `pid`: the host PID of redis in the container (the engine's `State.Pid`; redis is the
 *   container's only process), re-read after each (re)start.
 * - `kill(signal)`: `docker kill --signal`, then `docker wait`. A paused container is
 *   unpaused first unless the signal is SIGKILL (a frozen process acts on nothing else).
 * - `pause()`/`resume()`: `docker pause`/`docker unpause` (the cgroup freezer stops every
 *   process of the container, as SIGSTOP stops the one process of the process backend).
 *   Synchronous like the process backend's, so they run the `docker` CLI.
 * - `restart()`: `docker start` of the same container (same port, same `/data`).
 * - `cli()`: `docker exec <container> redis-cli ...`.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type Dockerode from 'dockerode';
import type { StartedTestContainer, WaitStrategy } from 'testcontainers';
import type { NodeAddress } from '../../src/types.js';
import { sendCommand, sendCommands } from './mini-client.js';
import { PortInUseError, type HarnessTls } from './process-node.js';
import type { HarnessNode } from './topology-ops.js';
import { StopWaiting, waitFor } from './wait.js';

type Testcontainers = typeof import('testcontainers');

/** Where the node's directory is mounted inside its container. */
export const DATA_DIR = '/data';
const STDOUT_LINES_KEPT = 200;

export interface ContainerNodeInit {
  kind: 'server' | 'sentinel';
  port: number;
  /** Host directory, mounted at `/data`. */
  dir: string;
  /** Config body, written to `<dir>/<kind>.conf` (paths in it are container paths under `/data`). */
  config: string;
  password: string | undefined;
  tls?: HarnessTls | undefined;
  /** Host files the config names (TLS certificates), mounted read-only at the same path. */
  readOnlyFiles?: readonly string[];
  image: string;
  /** Container name; unique, so a failed start can still be removed by name. */
  name: string;
  labels: Record<string, string>;
}

function tail(text: string, lines: number): string {
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}

/** The frames of a non-TTY `docker logs` body (8-byte headers) as text. */
function demux(body: Buffer): string {
  let out = '';
  for (let i = 0; i + 8 <= body.length; ) {
    const size = body.readUInt32BE(i + 4);
    out += body.subarray(i + 8, i + 8 + size).toString('utf8');
    i += 8 + size;
  }
  return out;
}

/**
 * Whether `pid` is still the container's process: it exists and (where /proc shows it) sits in
 * the container's cgroup, so a pid the kernel reused after the container ended does not count.
 */
function isContainerProcess(pid: number | undefined, containerId: string | undefined): boolean {
  if (pid === undefined || pid <= 0 || containerId === undefined) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  try {
    return readFileSync(`/proc/${pid}/cgroup`, 'utf8').includes(containerId);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ENOENT';
  }
}

/** Runs the `docker` CLI against the same engine as testcontainers (DOCKER_HOST). */
export function dockerCli(args: string[]): void {
  try {
    execFileSync('docker', args, { stdio: ['ignore', 'ignore', 'pipe'], timeout: 30_000 });
  } catch (err) {
    const stderr = (err as { stderr?: Buffer }).stderr?.toString().trim();
    throw new Error(`docker ${args.join(' ')} failed: ${stderr || (err as Error).message}`, { cause: err });
  }
}

/**
 * testcontainers' wait for a container on the host network: its mapped-port wait has no
 * ports to look at there, so this runs the same in-container check (`cat /proc/net/tcp*`,
 * `awk`, `grep`) for the node's port, and gives up at once when the container has exited.
 */
class PortListening implements WaitStrategy {
  private timeoutMs = 60_000;
  private timeoutSet = false;

  constructor(
    private readonly node: ContainerNode,
    private readonly tc: Testcontainers,
  ) {}

  async waitUntilReady(container: Dockerode.Container): Promise<void> {
    const client = await this.tc.getContainerRuntimeClient();
    const hex = this.node.port.toString(16).toUpperCase().padStart(4, '0');
    const check = `cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk '{print $2}' | grep -qi ':${hex}$'`;
    await waitFor(
      async () => {
        const state = (await container.inspect()).State;
        if (!state.Running) {
          const body = (await container.logs({ stdout: true, stderr: true, follow: false })) as unknown as Buffer;
          await this.node.exitedDuringStart(state.ExitCode, demux(body));
        }
        const r = await client.container.exec(container, ['/bin/sh', '-c', check], { log: false });
        return r.exitCode === 0;
      },
      `${this.node} to listen on its port`,
      this.timeoutMs,
    );
  }

  withStartupTimeout(ms: number): this {
    this.timeoutMs = ms;
    this.timeoutSet = true;
    return this;
  }

  isStartupTimeoutSet(): boolean {
    return this.timeoutSet;
  }

  getStartupTimeout(): number {
    return this.timeoutMs;
  }
}

export class ContainerNode implements HarnessNode {
  readonly host = '127.0.0.1';
  readonly port: number;
  readonly address: NodeAddress;
  readonly dir: string;
  readonly kind: 'server' | 'sentinel';
  readonly password: string | undefined;
  readonly tls: HarnessTls | undefined;
  readonly name: string;
  private readonly logFile: string;
  private started: StartedTestContainer | undefined;
  private docker: Dockerode.Container | undefined;
  private hostPid: number | undefined;
  private paused = false;
  private stdout: string[] = [];

  constructor(private readonly init: ContainerNodeInit) {
    this.kind = init.kind;
    this.port = init.port;
    this.address = { host: this.host, port: init.port };
    this.dir = init.dir;
    this.password = init.password;
    this.tls = init.tls;
    this.name = init.name;
    this.logFile = path.join(init.dir, `${init.kind}.log`);
    writeFileSync(path.join(init.dir, `${init.kind}.conf`), init.config);
  }

  get pid(): number | undefined {
    return this.hostPid;
  }

  /** The container's id once started. */
  get id(): string | undefined {
    return this.started?.getId();
  }

  toString(): string {
    return `${this.kind} 127.0.0.1:${this.port} (container ${this.name})`;
  }

  /** Creates and starts the container through testcontainers; resolves once the port is bound. */
  async start(tc: Testcontainers, docker: Dockerode): Promise<void> {
    const program = this.kind === 'sentinel' ? 'redis-sentinel' : 'redis-server';
    const container = new tc.GenericContainer(this.init.image)
      .withName(this.name)
      .withLabels(this.init.labels)
      .withNetworkMode('host')
      .withBindMounts([
        { source: this.dir, target: DATA_DIR, mode: 'rw' },
        ...(this.init.readOnlyFiles ?? []).map((f) => ({ source: f, target: f, mode: 'ro' as const })),
      ])
      .withWorkingDir(DATA_DIR)
      .withCommand([program, `${DATA_DIR}/${this.kind}.conf`])
      .withWaitStrategy(new PortListening(this, tc))
      .withStartupTimeout(60_000);
    this.started = await container.start();
    this.docker = docker.getContainer(this.started.getId());
    await this.afterStart(0);
  }

  private async afterStart(since: number): Promise<void> {
    this.paused = false;
    this.hostPid = (await this.docker!.inspect()).State.Pid || undefined;
    const stream = await this.started!.logs({ since });
    stream.on('data', (chunk: string | Buffer) => {
      for (const line of chunk.toString().split('\n')) if (line) this.stdout.push(line);
      if (this.stdout.length > STDOUT_LINES_KEPT) this.stdout.splice(0, this.stdout.length - STDOUT_LINES_KEPT);
    });
    stream.on('error', () => undefined);
  }

  /** Called by the wait strategy when the container exited before listening. */
  async exitedDuringStart(exitCode: number, output: string): Promise<never> {
    const log = this.logTail(200) + '\n' + output;
    if (/Address already in use/i.test(log)) throw new PortInUseError(`${this}: port in use`);
    throw new StopWaiting(`${this} exited during start-up (exit code ${exitCode})\n--- log tail ---\n${tail(log, 30)}\n---`);
  }

  isAlive(): boolean {
    return isContainerProcess(this.hostPid, this.started?.getId());
  }

  isPaused(): boolean {
    return this.paused && this.isAlive();
  }

  query(args: readonly (string | number)[], timeoutMs = 1000) {
    return sendCommand(this.address, args, { password: this.password, timeoutMs, tls: this.tls?.client ?? false });
  }

  queryAll(commands: readonly (readonly (string | number)[])[], timeoutMs = 1000) {
    return sendCommands(this.address, commands, { password: this.password, timeoutMs, tls: this.tls?.client ?? false });
  }

  async waitReady(timeoutMs = 30_000): Promise<void> {
    try {
      await waitFor(
        async () => {
          if (!this.isAlive()) throw new StopWaiting(`${this} is not running`);
          return (await this.query(['PING'], 500)) === 'PONG';
        },
        `${this} to answer PING`,
        timeoutMs,
      );
    } catch (err) {
      throw this.withLog(err);
    }
  }

  withLog(err: unknown): Error {
    const message = err instanceof Error ? err.message : String(err);
    return new Error(`${message}\n--- ${this} log tail (${this.dir}) ---\n${this.logTail(30)}\n---`, { cause: err });
  }

  /** Runs `argv` in the container (REDISCLI_AUTH set when the node has a password); rejects on a non-zero exit. */
  async exec(argv: string[]): Promise<string> {
    if (!this.started) throw new Error(`${this} was never started`);
    const env: Record<string, string> = this.password !== undefined ? { REDISCLI_AUTH: this.password } : {};
    let r;
    try {
      r = await this.started.exec(argv, { env });
    } catch (err) {
      throw new Error(`${argv.join(' ')} in ${this} failed: ${(err as Error).message}`, { cause: err });
    }
    if (r.exitCode !== 0) {
      throw new Error(`${argv.join(' ')} in ${this} failed: ${`${r.stdout}${r.stderr}`.trim() || `exit code ${r.exitCode}`}`);
    }
    return r.stdout;
  }

  async cli(...args: string[]): Promise<string> {
    const argv = ['redis-cli', '-h', this.host, '-p', String(this.port), ...(this.tls?.cliArgs ?? []), '-e', ...args];
    return (await this.exec(argv)).trim();
  }

  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    if (!this.docker || !this.isAlive()) return;
    if (this.paused && signal !== 'SIGKILL') this.resume();
    await this.docker.kill({ signal });
    await this.docker.wait();
    this.paused = false;
  }

  pause(): void {
    if (!this.isAlive()) throw new Error(`${this} is not running`);
    dockerCli(['pause', this.id!]);
    this.paused = true;
  }

  resume(): void {
    if (!this.isAlive()) throw new Error(`${this} is not running`);
    dockerCli(['unpause', this.id!]);
    this.paused = false;
  }

  async restart(): Promise<void> {
    await this.kill('SIGKILL');
    const since = Math.floor(Date.now() / 1000);
    await this.docker!.start();
    await this.afterStart(since);
    await this.waitReady();
  }

  logTail(lines = 40): string {
    const log = existsSync(this.logFile) ? tail(readFileSync(this.logFile, 'utf8'), lines) : '';
    const out = this.stdout.slice(-lines).join('\n');
    if (!out) return log;
    return `${log ? `${log}\n` : ''}[stdout/stderr]\n${out}`;
  }
}

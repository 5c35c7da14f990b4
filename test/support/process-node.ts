/**
 * A redis-server / redis-sentinel child process on 127.0.0.1, with its
 * config, log and captured stdout/stderr in its own directory.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { ConnectionOptions as TlsConnectionOptions } from 'node:tls';
import type { NodeAddress } from '../../src/types.js';
import { sendCommand, sendCommands } from './mini-client.js';
import type { RedisBinaries } from './redis-binaries.js';
import { trackChild, untrackChild } from './reaper.js';
import type { HarnessNode } from './topology-ops.js';
import { StopWaiting, waitFor } from './wait.js';

/** The node could not listen on its port (another process took it first). Ends a `waitFor` at once. */
export class PortInUseError extends StopWaiting {
  override readonly name = 'PortInUseError';
}

export interface ProcessNodeInit {
  kind: 'server' | 'sentinel';
  port: number;
  dir: string;
  /** Config file body; written once to `<dir>/<kind>.conf` (servers may rewrite it later). */
  config: string;
  /** Password of the default user, for `cli()` and the harness's own queries. */
  password: string | undefined;
  binaries: RedisBinaries;
  /** The node listens on TLS only: how the harness's own client and redis-cli reach it. */
  tls?: HarnessTls | undefined;
}

/** How the harness itself (mini-client, redis-cli) talks to a TLS-only node. */
export interface HarnessTls {
  /** Node TLS options for the mini-client. */
  client: TlsConnectionOptions;
  /** redis-cli arguments: `--tls --cacert … --cert … --key …` (and `--insecure` for a deliberately bad certificate). */
  cliArgs: readonly string[];
}

/** Renders `directive value` lines; values are passed through verbatim. */
export function renderConfig(lines: readonly (readonly [string, string] | string)[]): string {
  return lines.map((l) => (typeof l === 'string' ? l : `${l[0]} ${l[1]}`)).join('\n') + '\n';
}

/** Quotes a config value for redis.conf (sdssplitargs rules). */
export function confQuote(value: string): string {
  return `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;
}

function tail(file: string, lines: number): string {
  if (!existsSync(file)) return '';
  const text = readFileSync(file, 'utf8').trimEnd();
  return text.split('\n').slice(-lines).join('\n');
}

export class ProcessNode implements HarnessNode {
  readonly host = '127.0.0.1';
  readonly port: number;
  readonly address: NodeAddress;
  readonly dir: string;
  readonly kind: 'server' | 'sentinel';
  readonly configFile: string;
  readonly logFile: string;
  readonly stdoutFile: string;
  readonly password: string | undefined;
  /** Set when the node listens on TLS only. */
  readonly tls: HarnessTls | undefined;
  private readonly binaries: RedisBinaries;
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private lastPid: number | undefined;
  private paused = false;
  private spawnFailed = false;
  private spawnError: Error | undefined;

  constructor(init: ProcessNodeInit) {
    this.kind = init.kind;
    this.port = init.port;
    this.address = { host: this.host, port: this.port };
    this.dir = init.dir;
    this.password = init.password;
    this.tls = init.tls;
    this.binaries = init.binaries;
    this.configFile = path.join(this.dir, `${this.kind}.conf`);
    this.logFile = path.join(this.dir, `${this.kind}.log`);
    this.stdoutFile = path.join(this.dir, 'stdout.log');
    writeFileSync(this.configFile, init.config);
  }

  get pid(): number | undefined {
    return this.lastPid;
  }

  toString(): string {
    return `${this.kind} 127.0.0.1:${this.port}`;
  }

  isAlive(): boolean {
    const c = this.child;
    return c !== undefined && !this.spawnFailed && c.exitCode === null && c.signalCode === null;
  }

  isPaused(): boolean {
    return this.paused && this.isAlive();
  }

  /** Spawns the process (does not wait for readiness). */
  spawn(): void {
    if (this.isAlive()) throw new Error(`${this} is already running (pid ${this.lastPid})`);
    const b = this.binaries;
    const argv =
      this.kind === 'sentinel'
        ? [...b.sentinelCommand, this.configFile, ...b.sentinelExtraArgs]
        : [b.redisServer, this.configFile];
    // With setpriv the child is SIGKILLed by the kernel if this process dies
    // without running its exit handlers (e.g. the test runner SIGKILLs it).
    // setpriv execs redis in place, so the pid is redis's own.
    const [cmd, ...args] = b.setpriv ? [b.setpriv, '--pdeathsig', 'KILL', '--', ...argv] : argv;
    const out = openSync(this.stdoutFile, 'a');
    let child: ChildProcess;
    try {
      child = spawn(cmd!, args, { cwd: this.dir, stdio: ['ignore', out, out], detached: false });
    } finally {
      closeSync(out);
    }
    this.child = child;
    this.paused = false;
    this.spawnFailed = false;
    this.lastPid = child.pid;
    if (child.pid !== undefined) trackChild(child.pid);
    this.exited = new Promise<void>((resolve) => {
      const done = (): void => {
        if (child.pid !== undefined) untrackChild(child.pid);
        resolve();
      };
      child.once('exit', done);
      child.once('error', (err) => {
        // spawn failure: 'exit' may never come
        this.spawnFailed = true;
        this.spawnError = err;
        done();
      });
    });
    // A forgotten stop() must not keep the test worker alive; the reaper kills it at exit.
    child.unref();
  }

  /** Waits until the node answers PING; fails fast (with the log tail) if it exits. */
  async waitReady(timeoutMs = 20_000): Promise<void> {
    try {
      await waitFor(
        async () => {
          if (!this.isAlive()) {
            if (this.spawnError) throw new StopWaiting(`${this} could not be started: ${this.spawnError.message}`);
            if (/Address already in use/i.test(this.logTail(200))) throw new PortInUseError(`${this}: port in use`);
            throw new StopWaiting(`${this} exited during start-up (code ${this.child?.exitCode}, signal ${this.child?.signalCode})`);
          }
          return (await this.query(['PING'], 500)) === 'PONG';
        },
        `${this} to answer PING`,
        timeoutMs,
      );
    } catch (err) {
      if (err instanceof PortInUseError) throw err;
      throw this.withLog(err);
    }
  }

  /** Wraps an error with this node's log tail, for start-up diagnostics. */
  withLog(err: unknown): Error {
    const message = err instanceof Error ? err.message : String(err);
    return new Error(`${message}\n--- ${this} log tail (${this.dir}) ---\n${this.logTail(30)}\n---`, { cause: err });
  }

  /** A RESP command through the harness's own client (authenticated as default). */
  query(args: readonly (string | number)[], timeoutMs = 1000) {
    return sendCommand(this.address, args, { password: this.password, timeoutMs, tls: this.tls?.client ?? false });
  }

  /** Pipelined commands; error replies come back as `ReplyError` values. */
  queryAll(commands: readonly (readonly (string | number)[])[], timeoutMs = 1000) {
    return sendCommands(this.address, commands, { password: this.password, timeoutMs, tls: this.tls?.client ?? false });
  }

  cli(...args: string[]): Promise<string> {
    const env = { ...process.env };
    delete env.REDISCLI_AUTH;
    if (this.password !== undefined) env.REDISCLI_AUTH = this.password;
    const argv = ['-h', this.host, '-p', String(this.port), ...(this.tls?.cliArgs ?? []), '-e', ...args];
    return new Promise((resolve, reject) => {
      execFile(this.binaries.redisCli, argv, { env, timeout: 60_000, maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
        if (err) {
          const out = `${stdout}${stderr}`.trim();
          reject(new Error(`redis-cli ${args.join(' ')} against ${this} failed: ${out || err.message}`, { cause: err }));
        } else {
          resolve(stdout.trim());
        }
      });
    });
  }

  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const child = this.child;
    if (!child || !this.isAlive()) return;
    child.ref(); // keep the event loop alive until the exit is observed
    child.kill(signal);
    // A stopped process only acts on SIGTERM & co. once continued.
    if (this.paused && signal !== 'SIGKILL' && signal !== 'SIGSTOP') child.kill('SIGCONT');
    await this.exited;
    this.paused = false;
  }

  pause(): void {
    if (!this.isAlive()) throw new Error(`${this} is not running`);
    this.child!.kill('SIGSTOP');
    this.paused = true;
  }

  resume(): void {
    if (!this.isAlive()) throw new Error(`${this} is not running`);
    this.child!.kill('SIGCONT');
    this.paused = false;
  }

  async restart(): Promise<void> {
    await this.kill('SIGKILL');
    this.spawn();
    await this.waitReady();
  }

  logTail(lines = 40): string {
    const log = tail(this.logFile, lines);
    const out = tail(this.stdoutFile, lines);
    if (!out) return log;
    return `${log ? `${log}\n` : ''}[stdout/stderr]\n${out}`;
  }

  /** The promise that settles when the current process has exited. */
  whenExited(): Promise<void> {
    return this.exited;
  }
}

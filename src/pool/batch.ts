/** Pipelines and transactions: commands queued, then sent in one write on one connection. */
import type { Connection, SendOptions } from '../connection/connection.js';
import { installHelpers, type BatchCommands, type CommandSpec } from '../commands/helpers.js';
import type { KeyPrefixer } from '../commands/key-prefix.js';
import { ScriptDefinition, type Script } from '../commands/script.js';
import { builtinClassifier, carried, shownName, type CommandTraits } from '../commands/traits.js';
import { sendTraced } from '../diagnostics.js';
import { RedisError } from '../errors.js';
import type { Arg, Reply } from '../types.js';
import type { CallOptions, ResolvedCall } from './call-options.js';
import { settle } from './settle.js';
import { applyTransform, resolveCall, type BatchResult, type Dispatcher } from './call.js';

/**
 * Send options per command of a batch sent with `call`, by the command's traits: a write
 * carries the call's durability (the connection appends one WAIT to the flush, so the whole
 * batch costs one replication round trip); anything else, or `undefined` (MULTI, ASKING), does
 * not. The options are shared by the batch's commands, so they carry no traits of their own.
 */
export function batchSendOptions(call: ResolvedCall): (traits: CommandTraits | undefined) => SendOptions {
  const plain = call.durable === undefined && call.traits === undefined ? call : { ...call, durable: undefined, traits: undefined };
  if (call.durability === undefined) return () => plain;
  const durable = { ...plain, durable: call.durability };
  return (t) => (t !== undefined && t.durable ? durable : plain);
}

/**
 * A queue of commands sent together. Helpers and `call()` chain; `exec()` sends them.
 * In a pipeline one failing command does not fail the others: its entry is its error.
 */
export class Batch<R extends BatchResult | null = BatchResult | null> {
  private readonly cmds: Arg[][] = [];
  /** The traits of each queued command, worked out as it is queued. */
  private readonly traits: CommandTraits[] = [];
  private readonly specs: CommandSpec[] = [];
  private done = false;

  /** @internal */
  constructor(
    private readonly run: (cmds: Arg[][], call: ResolvedCall) => Promise<R>,
    private readonly dispatcher: Dispatcher,
    private readonly callOptions: CallOptions | undefined,
    private readonly transaction: boolean,
    private readonly open: () => void,
    private readonly keyPrefix: KeyPrefixer | undefined = undefined,
    /** A pool's batch: its connection goes back to other callers (a lease's batch is the lease's own). */
    private readonly shared = false,
  ) {}

  /** Number of queued commands. */
  get length(): number {
    return this.cmds.length;
  }

  /** Queues any command. */
  call(command: string, ...args: Arg[]): this {
    return this.queueSpec({ args: [command, ...args] });
  }

  /**
   * Queues a script made by `pool.script()` as EVAL with its source: an entry of a batch that
   * got NOSCRIPT could not be sent again without reordering the batch, so batches never send
   * EVALSHA (a script is cached by its first run either way).
   */
  runScript(script: Script, ...keysAndArgs: Arg[]): this {
    if (typeof script !== 'function' || typeof script.source !== 'string' || typeof script.keys !== 'number') {
      throw new TypeError('runScript(script, ...keysAndArgs) needs a script made by pool.script(source, { keys }).');
    }
    const def = new ScriptDefinition(script.source, script.keys, script.readOnly === true);
    return this.queueSpec(def.eval(def.check(keysAndArgs)));
  }

  /** @internal */
  queueSpec(spec: CommandSpec): this {
    if (this.done) throw new TypeError('This batch was already executed; create a new one.');
    const t = (this.dispatcher.classifier ?? builtinClassifier()).of(spec.args);
    if (t.kind === 'subscribe') throw new TypeError(`${String(spec.args[0])} cannot run in a ${this.transaction ? 'transaction' : 'pipeline'}; use pool.use(lease => lease.subscribe(...)).`);
    if (t.kind === 'connection-state' && this.shared) {
      throw new TypeError(`${shownName(spec.args)} changes the state of the connection it runs on, which a pool's ${this.transaction ? 'transaction' : 'pipeline'} shares with other callers; run it on a leased connection (pool.use(lease => …)).`);
    }
    this.cmds.push(this.keyPrefix ? this.keyPrefix.apply(spec.args, t) : spec.args);
    this.traits.push(t);
    this.specs.push(spec);
    return this;
  }

  /**
   * Sends every queued command in one write. Resolves to one entry per command, in order:
   * its (transformed) value, or the error it got. A transaction resolves to null when a
   * WATCHed key changed.
   */
  async exec(): Promise<R> {
    this.open();
    if (this.done) throw new TypeError('This batch was already executed; create a new one.');
    this.done = true;
    if (this.cmds.length === 0) return [] as BatchResult as R;
    const call = resolveCall(this.dispatcher, this.callOptions, undefined);
    call.batch = this.traits;
    const results = await this.run(this.cmds, call);
    if (results === null) return results;
    return results.map((r, i) => (r instanceof Error ? r : applyTransform(this.specs[i]!, r) as Reply)) as R;
  }
}
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
export interface Batch<R extends BatchResult | null = BatchResult | null> extends BatchCommands<Batch<R>> {}
installHelpers(Batch.prototype, 'queueSpec', false);

/**
 * Sends a batch on one connection in one write. For a transaction, wraps it in MULTI/EXEC
 * and maps EXEC's reply back to the commands (null when WATCH aborted it). `attempt` (1 for
 * the first send of this batch) is what diagnostics_channel reports.
 */
export async function runBatchOn(conn: Connection, cmds: Arg[][], call: ResolvedCall, transaction: boolean, attempt = 1): Promise<BatchResult | null> {
  const optsFor = batchSendOptions(call);
  const opts = optsFor(undefined);
  // Only durability tells the batch's commands apart.
  const traitsAt = (i: number) => (call.durability === undefined ? undefined : carried(call.batch?.[i], cmds[i]!));
  if (!transaction) return Promise.all(cmds.map((c, i) => settle(sendTraced(conn, c, optsFor(traitsAt(i)), attempt, cmds.length))));
  // A transaction's writes are applied by EXEC: it carries the WAIT.
  let execOpts = opts;
  for (let i = 0; i < cmds.length && execOpts === opts; i++) execOpts = optsFor(traitsAt(i));
  const n = cmds.length + 2;
  const all = await Promise.all([
    settle(sendTraced(conn, ['MULTI'], opts, attempt, n)),
    ...cmds.map((c) => settle(sendTraced(conn, c, opts, attempt, n))),
    settle(sendTraced(conn, ['EXEC'], execOpts, attempt, n)),
  ]);
  const multi = all[0];
  if (multi instanceof Error) throw multi;
  const exec = all[all.length - 1];
  if (exec instanceof Error) {
    const queued = all.slice(1, -1).find((r) => r instanceof Error);
    if (exec instanceof RedisError && exec.code === 'EXECABORT' && queued) {
      throw new RedisError(exec.message, { cause: queued, address: conn.address });
    }
    throw exec;
  }
  if (exec === null) return null;
  // A command failing inside EXEC is an element of EXEC's reply, not a reply of its own, so the
  // connection did not stamp it: name the node, as for any other command's error.
  return (exec as Reply[]).map((r) => {
    if (r instanceof RedisError && r.address === undefined) r.address = conn.address;
    return r as Reply | Error;
  });
}


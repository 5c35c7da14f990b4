/**
 * The WAITs of one connection: which durable writes each confirms, when the next one is
 * queued, and how its answer settles them (the decisions themselves are in durability.ts).
 *
 * A durable write is registered when it is queued. Before a flush, the writes registered since
 * the last WAIT get one (one per distinct `replicas`/`timeout`, normally one) unless a WAIT is
 * already in flight: the server runs nothing behind a WAIT until it answers, so a second one
 * would only queue behind the first and add its timeout to every later write while replicas
 * lag. Those writes get the next WAIT when the one in flight answers. A write's reply is held
 * until its WAIT answers; the connection's own timer still ends it at its deadline.
 */
import { DurabilityError, RedisError, UncertainWriteError } from '../errors.js';
import type { Arg, NodeAddress, Reply } from '../types.js';
import { clause } from './handshake.js';
import { needsConfirmation, shortMessage, waitOutcome, waitTimeout, type Durability, type DurabilityCounters, type WaitOutcome } from './durability.js';

/** What confirmations need of a connection's command. */
export interface DurableCommand {
  readonly name: string;
  readonly resolve: (v: Reply) => void;
  readonly reject: (e: Error) => void;
  readonly onAttributes: ((a: Map<Reply, Reply>) => void) | undefined;
  /** Deadline, epoch ms (0 = none). */
  readonly timer: number;
  durable: Durability | undefined;
  /** Its reply arrived and is held until its WAIT answers. */
  confirming: boolean;
  reply: Reply;
  attrs: Map<Reply, Reply> | undefined;
}

/** What confirmations need of the connection. */
export interface ConfirmationHost<C extends DurableCommand> {
  readonly label: string;
  readonly address: NodeAddress;
  isClosed(): boolean;
  settled(c: C): boolean;
  written(c: C): boolean;
  /** Marks `c` settled (it is about to be resolved or rejected). */
  settle(c: C): void;
  /** Queues a WAIT after what is queued now; `timeout` is its timeout argument. */
  queueWait(args: Arg[], timeout: number, onReply: (v: Reply) => void, onError: (e: Error) => void): void;
  /** Writes what is queued at the end of this turn. */
  flushSoon(): void;
  /** Reports a listener's exception outside the decoder. */
  rethrow(e: unknown): void;
}

interface Group<C> {
  readonly members: C[];
  readonly required: number;
  readonly timeout: number;
  readonly stats: DurabilityCounters | undefined;
  readonly queuedAt: number;
}

export class Confirmations<C extends DurableCommand> {
  /** Durable writes registered since the last WAIT was queued. */
  private unsealed: C[] = [];
  /** WAITs queued or written and not answered yet. */
  private groups: Group<C>[] = [];

  constructor(private readonly host: ConfirmationHost<C>) {}

  /** A durable write was queued. */
  add(c: C): void {
    this.unsealed.push(c);
  }

  /** Before a flush: the writes registered since the last WAIT get theirs, unless one is in flight. */
  beforeFlush(): void {
    if (this.unsealed.length > 0 && this.groups.length === 0) this.seal();
  }

  /** A MULTI is being queued: a WAIT queued after it would join the transaction, so it goes now. */
  beforeMulti(): void {
    if (this.unsealed.length > 0) this.seal();
  }

  /** A durable write's reply arrived: true when it is held for its WAIT (error replies and EXEC's null are not). */
  hold(c: C, value: Reply | Error, attrs: Map<Reply, Reply> | undefined): boolean {
    if (value instanceof RedisError || !needsConfirmation(c.name, value as Reply)) return false;
    c.confirming = true;
    c.reply = value as Reply;
    c.attrs = attrs;
    return true;
  }

  /** Every write whose reply is held, for the deadline check. */
  forEachHeld(fn: (c: C) => void): void {
    for (const g of this.groups) for (const c of g.members) if (c.confirming) fn(c);
    for (const c of this.unsealed) if (c.confirming) fn(c);
  }

  /** Unwritten commands were dropped: those written still get their WAIT (it confirms what reached the node). */
  dropUnsent(): void {
    if (this.unsealed.length > 0) this.unsealed = this.unsealed.filter((c) => this.host.written(c));
  }

  /**
   * The connection closed. Written WAITs fail through their own commands; held writes whose
   * WAIT was not sent yet fail here, as uncertain.
   */
  closed(why: string, error: Error | undefined): void {
    const held = this.unsealed.filter((c) => c.confirming && !this.host.settled(c));
    this.unsealed = [];
    for (const c of held) {
      this.host.settle(c);
      c.reject(new UncertainWriteError(`${c.name} ran on ${this.host.label}, but the connection closed before a WAIT confirmed its replication${why}; it may be on the master only, and was not re-sent.`, { cause: error, address: this.host.address }));
    }
    if (held.length > 0) held[0]!.durable!.stats?.lost(held.length, false);
  }

  private seal(): void {
    const cmds = this.unsealed;
    this.unsealed = [];
    const first = cmds[0]!.durable!;
    let mixed = false;
    for (const c of cmds) if (c.durable!.replicas !== first.replicas || c.durable!.timeout !== first.timeout) mixed = true;
    if (!mixed) return this.queueWait(cmds, first);
    const by = new Map<string, C[]>();
    for (const c of cmds) {
      const k = `${c.durable!.replicas}/${c.durable!.timeout}`;
      const list = by.get(k);
      if (list) list.push(c);
      else by.set(k, [c]);
    }
    for (const list of by.values()) this.queueWait(list, list[0]!.durable!);
  }

  private queueWait(cmds: C[], spec: Durability): void {
    const members = cmds.filter((c) => !this.host.settled(c));
    if (members.length === 0) return;
    const now = Date.now();
    let earliest = 0;
    for (const m of members) if (m.timer > 0 && (earliest === 0 || m.timer < earliest)) earliest = m.timer;
    const group: Group<C> = { members, required: spec.replicas, timeout: waitTimeout(spec.timeout, earliest, now), stats: spec.stats, queuedAt: now };
    this.groups.push(group);
    // No deadline of its own: every write it confirms keeps its own, and the server answers within `timeout`.
    this.host.queueWait(['WAIT', group.required, group.timeout], group.timeout, (v) => this.settleGroup(group, waitOutcome(v, group.required)), (e) => this.unanswered(group, e));
    spec.stats?.sent();
  }

  /** A WAIT is done: the durable writes registered while it was in flight get the next one. */
  private forget(group: Group<C>): void {
    const i = this.groups.indexOf(group);
    if (i !== -1) this.groups.splice(i, 1);
    if (this.groups.length === 0 && this.unsealed.length > 0 && !this.host.isClosed()) {
      this.seal();
      this.host.flushSoon();
    }
  }

  /** The WAIT answered: each write it covers resolves with its own reply, or fails with DurabilityError. */
  private settleGroup(group: Group<C>, outcome: WaitOutcome): void {
    this.forget(group);
    const { label, address } = this.host;
    let ok = 0;
    let bad = 0;
    for (const m of group.members) {
      if (this.host.settled(m) || !m.confirming) continue;
      this.host.settle(m);
      if (outcome.kind === 'confirmed') {
        ok++;
        if (m.attrs && m.onAttributes) {
          try {
            m.onAttributes(m.attrs);
          } catch (e) {
            this.host.rethrow(e);
          }
        }
        m.resolve(m.reply);
        continue;
      }
      bad++;
      m.reject(outcome.kind === 'short'
        ? new DurabilityError(shortMessage(m.name, label, outcome.replicas, group.required, group.timeout), { replicas: outcome.replicas, required: group.required, address })
        : new DurabilityError(
            `${m.name} ran on ${label}, but the WAIT confirming its replication failed there (${clause(outcome.error.message)}); it is on the master only and was not re-sent. ` +
              'WAIT must be allowed for this user (ACL +wait) and the node must be a master.',
            { replicas: 0, required: group.required, address, cause: outcome.error },
          ));
    }
    group.stats?.answer(Date.now() - group.queuedAt, ok, bad);
  }

  /** The WAIT got no count: an error reply is a failed WAIT; a lost connection leaves the writes uncertain. */
  private unanswered(group: Group<C>, err: Error): void {
    if (err instanceof RedisError) return this.settleGroup(group, { kind: 'failed', error: err });
    this.forget(group);
    // Report why the connection closed, not the WAIT's own "may have executed".
    const why = err instanceof UncertainWriteError && err.cause instanceof Error ? err.cause : err;
    let n = 0;
    for (const m of group.members) {
      if (this.host.settled(m)) continue;
      this.host.settle(m);
      n++;
      m.reject(new UncertainWriteError(
        `${m.name} ran on ${this.host.label}, but the connection closed before the WAIT confirming its replication answered (${clause(why.message)}); ` +
          'it may be on the master only, and was not re-sent.',
        { cause: why, address: this.host.address },
      ));
    }
    group.stats?.lost(n, false);
  }
}

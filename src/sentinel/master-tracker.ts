import { ConnectionError, AllSentinelsDownError } from '../errors.js';
import { backoffDelay, sleep } from '../pool/backoff.js';
import { Coalescer } from '../retry.js';
import { formatAddress, type NodeAddress } from '../types.js';
import { judgeCommitment } from './commitment.js';
import { FailoverHold } from './failover-hold.js';
import { newestAnswer, RoleMismatchError, sameAddress, type SentinelPoll } from './discovery.js';
import { blindWindow, epochAfterSwitch, judgeAnswer } from './master-view.js';
import type { SentinelSignal } from './messages.js';
import type { ResolvedSentinelOptions } from './options.js';
import type { DetectedBy, FailoverEvent } from './sentinel-host.js';

const key = formatAddress;

/** What the tracker reports of a switch: the pool's `failover` event. */
export type SwitchInfo = FailoverEvent;

/** The events the tracker emits through its pool. */
export interface TrackerEvents {
  'failover-start': { masterName: string; master: NodeAddress; event: string; at: number };
  'failover-abort': { masterName: string; master: NodeAddress; reason: string; at: number };
  error: Error;
}

/**
 * What the tracker needs of its pool: options, the master's node pool (target, swap), the gate
 * that holds commands, how to ask the sentinels and check a ROLE (real I/O in the pool, fakes
 * in the unit tests), and where switches and events go.
 */
export interface MasterTrackerDeps {
  readonly o: Pick<ResolvedSentinelOptions, 'masterName' | 'role' | 'failoverCommit' | 'fenceTimeout' | 'promotionCheckInterval' | 'queueTimeout' | 'natMap' | 'pool'>;
  readonly node: { readonly target: NodeAddress; swap(address: NodeAddress): void };
  readonly gate: { readonly isOpen: boolean; close(): void; open(): void };
  /** Every sentinel's answer (pollSentinels). */
  ask(): Promise<SentinelPoll>;
  /** Resolves when `address` answers ROLE as master (verifyMaster); rejects otherwise. */
  verify(address: NodeAddress): Promise<void>;
  isClosed(): boolean;
  emit<K extends keyof TrackerEvents>(event: K, payload: TrackerEvents[K]): void;
  /**
   * The pool now points at `info.to` (already swapped, gate open): move subscriptions, flush
   * the cache, announce it, reload replicas.
   */
  switched(info: SwitchInfo): void;
}

/**
 * The Sentinel master tracker: which node is the master, and when commands may reach it.
 *
 * Inputs are named triggers: sentinel signals (`onSignal`), a polled view (`onPolled`), a
 * replica's watch connection killed (`onReplicaLost`), READONLY or a lost connection
 * (`requestRefresh`), a command that waited `queueTimeout` (`onGateStall`). Outputs are the
 * gate (hold / open), the node's target (`swap`), and events. It holds writes while a failover
 * is announced (the write fence), switches only to a node that answers ROLE master, never back
 * to a configuration older than the one it follows (config epochs), and coalesces re-checks
 * through the one {@link Coalescer}: one resolution at a time, and a trigger that arrives
 * meanwhile runs one more.
 */
export class MasterTracker {
  /** The write fence and the promotions not committed yet. */
  private readonly hold: FailoverHold;
  /** Config epoch of the followed configuration (see MasterView). */
  private epoch: number | undefined;
  /** Replica -> when its watch connection was last killed (a promotion, if ROLE then says master). */
  private readonly lostAt = new Map<string, number>();
  /** Watch connections lost and not yet judged by ROLE: writes are held meanwhile. */
  private suspects = 0;
  /** When writes to the current master were first held for the switch under way. */
  private heldSince: number | undefined;
  private pin: { against: NodeAddress; until: number } | undefined;
  /** Re-checks, one at a time: each run is one resolution (see {@link check}). */
  private readonly checks = new Coalescer(() => this.check());
  /** The newest trigger: what the next resolution reports as having detected a switch. */
  private reason: DetectedBy = 'pubsub';
  /** Failed resolutions in a row while commands wait: the backoff before the next. */
  private attempt = 0;
  /** Ends the backoff wait when a trigger arrives. */
  private wake = new AbortController();
  private stallCheck: Promise<boolean> | undefined;
  private watching: NodeAddress | undefined;
  private readonly stopped = new AbortController();
  /** Master switches so far. */
  switches = 0;

  constructor(private readonly d: MasterTrackerDeps, epoch: number | undefined) {
    this.epoch = epoch;
    this.hold = new FailoverHold(d.o.fenceTimeout, (from) => {
      this.d.emit('failover-abort', { masterName: this.d.o.masterName, master: from, reason: `no switch within fenceTimeout (${this.d.o.fenceTimeout} ms)`, at: Date.now() });
      this.requestRefresh('pubsub', false);
    });
  }

  /**
   * True while the write fence holds writes: a failover was announced and has not completed,
   * or a promotion was seen that the sentinels have not committed to yet.
   */
  get fenced(): boolean {
    return this.hold.active;
  }

  /** Config epoch of the configuration followed now. */
  get configEpoch(): number | undefined {
    return this.epoch;
  }

  /** Re-checks (sentinel query plus ROLE) so far. */
  get refreshes(): number {
    return this.checks.runs;
  }

  /** A re-check is running (or scheduled): resolves when none is. */
  get busy(): Promise<void> | undefined {
    return this.checks.busy ? this.checks.idle() : undefined;
  }

  /**
   * What a sentinel that cannot SUBSCRIBE showed when polled: the master it names and whether
   * a failover of it is in progress (with the replica being promoted, once chosen). A failover
   * of our master engages the same write fence as the pub/sub messages.
   */
  onPolled(master: NodeAddress | null, failover: { candidate: NodeAddress | undefined } | undefined): void {
    const promoting = failover?.candidate && this.d.o.natMap(failover.candidate);
    if (failover && master && sameAddress(this.d.o.natMap(master), this.d.node.target) && !(promoting && sameAddress(promoting, this.d.node.target))) {
      this.onSignal({ kind: 'failover-start', event: 'poll:failover_in_progress', master, candidate: failover.candidate }, 'poll');
      return;
    }
    if (master && !sameAddress(this.d.o.natMap(master), this.d.node.target)) this.requestRefresh('poll', false);
  }

  onSignal(sig: SentinelSignal, channel: string, leader?: NodeAddress): void {
    if (this.d.isClosed()) return;
    switch (sig.kind) {
      case 'failover-start':
        // A failover of another address (a replayed old one) is only a hint to look again.
        if (!sameAddress(this.d.o.natMap(sig.master), this.d.node.target)) {
          this.requestRefresh('pubsub', false);
          return;
        }
        // The sentinel announcing the failover leads it: if it goes down, the failover is stuck.
        if (this.d.o.role === 'master' && this.hold.engage(this.d.node.target, channel === 'poll' ? undefined : leader)) {
          this.holdWrites();
          this.d.emit('failover-start', { masterName: this.d.o.masterName, master: this.d.node.target, event: sig.event, at: Date.now() });
        }
        if (sig.candidate && this.hold.announced) void this.watchPromotion(this.d.o.natMap(sig.candidate), channel === 'poll' ? 'poll' : 'pubsub');
        return;
      case 'promoted':
        void this.tryPromoted(this.d.o.natMap(sig.address));
        return;
      case 'switch':
        // Announced, not yet trusted: hold writes to the old master while we check.
        this.requestRefresh('pubsub', !sameAddress(this.d.o.natMap(sig.to), this.d.node.target));
        return;
      case 'failover-end':
        if (sig.aborted) {
          const from = this.hold.lift();
          if (from) this.d.emit('failover-abort', { masterName: this.d.o.masterName, master: from, reason: sig.event, at: Date.now() });
        }
        this.requestRefresh('pubsub', false);
        return;
      case 'refresh':
        this.requestRefresh('pubsub', false);
        return;
      case 'replicas':
      case 'sentinel':
        return; // the pool's business (replica pools, the watch, subscriber loops)
      case 'sentinel-down':
        // The failover leader stopped (paused, partitioned): nobody will finish its failover before
        // fenceTimeout, so release the held writes to the master the sentinels still name.
        if (this.hold.ledBy(this.d.o.natMap(sig.address))) {
          const from = this.hold.lift()!;
          this.d.emit('failover-abort', { masterName: this.d.o.masterName, master: from, reason: `the failover leader ${formatAddress(sig.address)} is down`, at: Date.now() });
          this.requestRefresh('pubsub', false);
        }
        return;
    }
  }

  /**
   * The leader selected `candidate` for promotion: ask it for its ROLE until it is a master
   * (then switch at once, about a second before Sentinel publishes `+promoted-slave`), the
   * fence ends, or the pool closes.
   */
  private async watchPromotion(candidate: NodeAddress, detectedBy: DetectedBy): Promise<void> {
    const every = this.d.o.promotionCheckInterval;
    if (every === 0 || this.watching?.host === candidate.host && this.watching.port === candidate.port) return;
    this.watching = candidate;
    try {
      while (this.hold.announced && !this.d.isClosed()) {
        try {
          await this.d.verify(candidate);
          if (this.hold.announced) this.promoted(candidate, detectedBy);
          return;
        } catch {
          // Not promoted yet (or not reachable): look again shortly.
        }
        await sleep(every, this.stopped.signal, { unref: true });
      }
    } finally {
      this.watching = undefined;
    }
  }

  /** `+promoted-slave`: switch as soon as the promoted replica answers ROLE as master. */
  private async tryPromoted(address: NodeAddress): Promise<void> {
    if (this.d.o.role !== 'master' || sameAddress(address, this.d.node.target)) return;
    try {
      await this.d.verify(address);
    } catch {
      this.requestRefresh('pubsub', false);
      return;
    }
    this.promoted(address, 'pubsub');
  }

  /**
   * `address` answers ROLE master. With `failoverCommit: 'promotion'` the pool switches now;
   * with `'majority'` writes are held (to both nodes) until a majority of the sentinels names
   * the new master, or the promotion is undone: Sentinel turns back a promotion whose leader
   * went silent before the others adopted it, with every write it acknowledged.
   */
  private promoted(address: NodeAddress, detectedBy: DetectedBy): void {
    if (this.d.isClosed() || sameAddress(address, this.d.node.target)) return;
    if (this.d.o.failoverCommit === 'promotion') {
      this.applyMaster(address, detectedBy, undefined, 0);
      return;
    }
    this.hold.promoted(address, detectedBy);
    this.requestRefresh(detectedBy, true);
  }

  /**
   * Asks for the master again (coalesced: one resolution at a time, and a trigger that
   * arrives meanwhile runs one more). With `hold`, new commands wait until it completes.
   */
  requestRefresh(reason: DetectedBy, hold: boolean): void {
    if (this.d.isClosed() || this.d.o.role !== 'master' && reason === 'readonly') return;
    if (hold) this.holdWrites();
    this.reason = reason;
    this.wake.abort();
    void this.checks.request();
  }

  /**
   * One resolution. While commands wait for it (or a failover is announced) a failed one is
   * retried after the reconnect backoff, which a new trigger cuts short; a trigger during the
   * resolution itself runs the next one at once.
   */
  private async check(): Promise<void> {
    let ok = false;
    try {
      ok = await this.resolveOnce(this.reason);
    } catch (err) {
      if (!this.d.isClosed()) this.d.emit('error', err as Error);
    }
    if (this.d.isClosed()) {
      // A trigger that came before the pool closed must not start another resolution.
      this.checks.close();
      return;
    }
    if (this.checks.pending) return;
    // Nothing waits and no failover is announced: the next trigger or poll will look again.
    if (ok || (this.d.gate.isOpen && !this.hold.announced)) {
      this.attempt = 0;
      return;
    }
    this.wake = new AbortController();
    await sleep(backoffDelay(this.attempt++, this.d.o.pool.reconnect), this.wake.signal, { unref: true });
    if (!this.d.isClosed()) void this.checks.request();
  }

  /** One resolution: true when a master is confirmed and commands may flow. */
  private async resolveOnce(reason: DetectedBy): Promise<boolean> {
    let poll: SentinelPoll;
    try {
      poll = await this.d.ask();
    } catch (err) {
      // Cut off from every sentinel (not from the master): carry on with the last verified
      // master while it still answers ROLE master, rather than hold every command until the
      // sentinels come back.
      if (err instanceof AllSentinelsDownError && (await this.continueWithCurrent(`No sentinel of "${this.d.o.masterName}" could be reached`, err))) return true;
      throw err;
    }
    return this.d.o.failoverCommit === 'majority' ? this.resolveByMajority(poll, reason) : this.resolveByNewest(poll, reason);
  }

  /**
   * `failoverCommit: 'majority'`: follow only what a majority of the known sentinels names. A
   * new master needs a majority naming it from a newer configuration; the current one is
   * released to only when no failover is announced and every promotion seen since was undone.
   */
  private async resolveByMajority(poll: SentinelPoll, reason: DetectedBy): Promise<boolean> {
    const current = this.d.node.target;
    const c = judgeCommitment({ address: current, epoch: this.epoch }, poll.answers, poll.known);
    switch (c.kind) {
      case 'moved': {
        // A promotion the pool saw answered ROLE master already: the majority is all it waited
        // for, so it is not asked again on the way (a replica would refuse writes with READONLY,
        // which the dispatcher turns into a re-check; nothing is acknowledged there).
        const seen = this.hold.isUncommitted(c.address);
        if (!seen) await this.d.verify(c.address);
        if (this.d.isClosed()) return false;
        // The event says what first saw the promotion (the watch, the fence's candidate), not the message that completed the majority.
        this.applyMaster(c.address, seen ? this.hold.seenBy ?? reason : reason, c.epoch, c.confirmedBy);
        return true;
      }
      case 'current':
        if (!(await this.mayRelease(`${c.confirmedBy} of ${poll.known} sentinels still name ${key(current)}`))) return false;
        await this.d.verify(current);
        if (this.d.isClosed()) return false;
        this.applyMaster(current, reason, c.epoch, c.confirmedBy);
        return true;
      case 'older': {
        // Sentinels whose epochs restarted: followed only once the current master says it is a replica.
        const k = await this.checkCurrent(current, () => this.mayRelease(`the current master still answers ROLE master`));
        if (k !== 'follow') return k === 'stay';
        await this.d.verify(c.address);
        if (this.d.isClosed()) return false;
        this.applyMaster(c.address, reason, c.epoch, c.confirmedBy);
        return true;
      }
      case 'none':
        // Sentinels split or unreachable: keep the current master while it still is one, but
        // never release writes held for a failover or an uncommitted promotion on that basis.
        return (await this.checkCurrent(current, () => this.mayRelease(`no majority of the sentinels names another master`))) === 'stay';
    }
  }

  /**
   * Writes may go to the current master again: no failover is announced, and every promotion
   * seen since is undone (the node answers as a replica again, or not at all). Each undone one
   * is reported as a `failover-abort`.
   */
  private async mayRelease(why: string): Promise<boolean> {
    if (this.hold.announced) return false;
    const done = await this.hold.settle((a) => this.d.verify(a), (k) => this.d.emit('failover-abort', {
      masterName: this.d.o.masterName, master: { ...this.d.node.target }, at: Date.now(),
      reason: `the promotion of ${k} was not kept by the sentinels (${why}); writes held meanwhile go to ${key(this.d.node.target)}`,
    }));
    return done && !this.hold.active && !this.d.isClosed();
  }

  /** `failoverCommit: 'promotion'`: follow the newest configuration any sentinel reports. */
  private async resolveByNewest(poll: SentinelPoll, reason: DetectedBy): Promise<boolean> {
    const { address: answer, epoch: answerEpoch } = newestAnswer(poll.answers)!;
    if (this.hold.from && sameAddress(answer, this.hold.from)) return false; // the announced failover has not switched yet
    const current = this.d.node.target;
    const verdict = judgeAnswer({ address: current, epoch: this.epoch }, { address: answer, epoch: answerEpoch });
    if (verdict === 'stale') {
      // The newest answer comes from an older configuration than the one we follow (the sentinels
      // have not caught up with a switch we verified): stay while the current master still is one.
      const c = await this.checkCurrent(current);
      if (c !== 'follow') return c === 'stay';
    }
    if (this.pin && Date.now() > this.pin.until) this.pin = undefined;
    if (this.pin && sameAddress(answer, this.pin.against)) {
      // The sentinels lag behind a switch we already verified: keep the current master while it still is one.
      const c = await this.checkCurrent(current);
      if (c !== 'follow') return c === 'stay';
      this.pin = undefined;
    }
    if (this.pin && sameAddress(answer, current)) this.pin = undefined;
    await this.d.verify(answer);
    if (this.d.isClosed()) return false;
    this.applyMaster(answer, reason, answerEpoch, poll.answers.filter((a) => sameAddress(a.address, answer)).length);
    return true;
  }

  /**
   * Commands have waited `queueTimeout` for a confirmation that has not come (the sentinels do
   * not answer): go on with the last verified master if it still answers ROLE master. Never
   * while a failover is announced (its fence holds writes) or after the master said READONLY.
   */
  onGateStall(): Promise<boolean> {
    if (this.d.o.role !== 'master') return Promise.resolve(false);
    return this.continueWithCurrent(`The master of "${this.d.o.masterName}" could not be confirmed through the sentinels within queueTimeout (${this.d.o.queueTimeout} ms)`);
  }

  /**
   * The current master checked against an answer the tracker distrusts (an older configuration,
   * or the pin after its own switch): 'stay' (gate opened) while it still answers ROLE master,
   * 'follow' once it says it is a replica (the sentinels were reset and their epochs restarted,
   * or it really was demoted). A check that failed (a timeout, a dropped connection: a node busy
   * right after its promotion) proves nothing, and the distrusted answer's node may still say
   * master: 'later', ask again rather than go back to it.
   */
  private async checkCurrent(current: NodeAddress, mayOpen?: () => Promise<boolean>): Promise<'stay' | 'follow' | 'later'> {
    try {
      await this.d.verify(current);
      // The current master is one, but writes held for something else (majority mode) stay held.
      if (mayOpen && !(await mayOpen())) return 'later';
      this.openGate();
      return 'stay';
    } catch (err) {
      return err instanceof RoleMismatchError ? 'follow' : 'later';
    }
  }

  /**
   * Opens the gate on the last verified master if it still answers ROLE master (one check at a
   * time; said once per hold). Never while a failover is announced: its fence holds writes.
   */
  private continueWithCurrent(why: string, cause?: unknown): Promise<boolean> {
    if (this.fenced || this.d.isClosed()) return Promise.resolve(false);
    this.stallCheck ??= this.d.verify(this.d.node.target).then(
      () => {
        if (this.fenced || this.d.isClosed()) return false;
        if (!this.d.gate.isOpen) {
          this.openGate();
          this.d.emit('error', new ConnectionError(`${why}; commands go on to the last verified master ${key(this.d.node.target)}, which still answers ROLE master.`, { cause, address: { ...this.d.node.target } }));
        }
        return true;
      },
      () => false,
    ).finally(() => {
      this.stallCheck = undefined;
    });
    return this.stallCheck;
  }

  /**
   * Points the pool at `address` (verified with ROLE). `epoch`: the config epoch of the
   * configuration that names it (undefined when unknown or when the pool saw the promotion
   * itself); `confirmedBy`: how many sentinels named it.
   */
  private applyMaster(address: NodeAddress, reason: DetectedBy, epoch: number | undefined, confirmedBy: number): void {
    const from = this.d.node.target;
    const fencedAt = this.hold.fencedAt;
    this.hold.lift();
    if (!sameAddress(from, address)) {
      const at = Date.now();
      const promoted = this.lostAt.get(key(address));
      const promotedAt = promoted !== undefined && at - promoted <= this.d.o.fenceTimeout ? promoted : undefined;
      const { fenced, blindMs } = blindWindow(fencedAt, promotedAt, this.heldSince ?? at);
      const heldMs = this.heldSince === undefined ? 0 : at - this.heldSince;
      this.d.node.swap(address);
      this.switches++;
      this.epoch = epochAfterSwitch(this.epoch, epoch);
      this.lostAt.clear();
      this.hold.switched();
      this.pin = { against: from, until: at + this.d.o.fenceTimeout };
      this.openGate();
      this.d.switched({ masterName: this.d.o.masterName, from, to: { ...address }, detectedBy: reason, at, fenced, blindMs, epoch: this.epoch ?? 0, confirmedBy, heldMs });
    } else {
      if (epoch !== undefined && (this.epoch === undefined || epoch > this.epoch)) this.epoch = epoch;
      this.openGate();
    }
  }

  /** Holds commands at the gate, remembering since when (for the blind window of the switch). */
  private holdWrites(): void {
    if (this.d.gate.isOpen) this.heldSince = Date.now();
    this.d.gate.close();
  }

  private openGate(): void {
    this.heldSince = undefined;
    this.hold.released();
    this.d.gate.open();
  }

  /**
   * A watch connection to `replica` closed. Sentinel kills every normal connection of the
   * replica it promotes, so hold writes at once, then ask the replica for its ROLE: a master
   * means a promotion (switch now, before any sentinel announces it); anything else (restart,
   * network) releases the hold.
   */
  onReplicaLost(replica: NodeAddress, at: number): void {
    if (this.d.isClosed() || sameAddress(replica, this.d.node.target)) return;
    this.lostAt.set(key(replica), at);
    this.suspects++;
    this.holdWrites();
    if (this.heldSince !== undefined && this.heldSince > at) this.heldSince = at;
    void this.d.verify(replica).then(
      () => this.promoted(replica, 'promotion'),
      () => {},
    ).finally(() => {
      this.suspects--;
      // Not a promotion: release the hold unless a fence, a refresh or another suspect holds it.
      if (this.suspects === 0 && !this.d.isClosed() && !this.fenced && !this.checks.busy && !this.d.gate.isOpen) this.openGate();
    });
  }

  /** Stops every timer and loop; the pool closes the gate and the connections. */
  close(): Promise<void> {
    this.hold.close();
    this.wake.abort();
    this.stopped.abort();
    this.checks.close();
    return this.checks.idle();
  }
}

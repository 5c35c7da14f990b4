/**
 * The soak's mixed load: a few dozen async workers driving one pool (SentinelPool or
 * ClusterPool) with strings, hashes, counters, pipelines, transactions, blocking pops fed by
 * pushers, and pub/sub through a lease. Every acknowledged write is recorded compactly
 * (unique keys by sequence number, monotonic keys by their highest acknowledged value, list
 * items by value) so that it can be read back from the servers after each fault.
 *
 * Every finished call goes to the current {@link Window}, which counts calls and failures by
 * class and measures, per worker type, the longest run without a success among the calls that
 * touch the fault's node or slots (the outage, whose end is the recovery).
 */
import {
  MaxRedirectionsError,
  RedisError,
  TimeoutError,
  UncertainWriteError,
  keySlot,
  type ClusterPool,
  type SentinelPool,
} from '../../src/index.js';

export type AnyPool = SentinelPool | ClusterPool;

export const OP_TYPES = ['set', 'get', 'overwrite', 'hset', 'hgetall', 'incr', 'pipeline', 'multi', 'lpush', 'blpop', 'publish'] as const;
export type OpType = (typeof OP_TYPES)[number];

/**
 * Outage threshold: a longer run without a success of one worker type counts as an
 * interruption. BLPOP waits up to its 1 s server timeout on an empty list by design.
 */
export const GAP_THRESHOLD_MS = 250;
const gapThreshold = (t: OpType) => (t === 'blpop' ? 1000 + GAP_THRESHOLD_MS : GAP_THRESHOLD_MS);

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

// ------------------------------------------------------------------ error classes

/** An error's class for the report: `TimeoutError(sent)`, `RedisError READONLY`, `MaxRedirectionsError<…>`, … */
export function errorClass(e: unknown): string {
  if (e instanceof TimeoutError) return `TimeoutError(${e.sent ? 'sent' : 'unsent'})`;
  if (e instanceof MaxRedirectionsError) return `MaxRedirectionsError<${errorClass(e.cause)}>`;
  if (e instanceof RedisError) return `RedisError ${e.code}`;
  if (e instanceof Error) return e.name;
  return typeof e;
}

/** The command may have run on the server (its reply was lost). */
export function mayHaveRun(e: unknown): boolean {
  return e instanceof UncertainWriteError || (e instanceof TimeoutError && e.sent);
}

/** A failure the soak itself detected (a read that did not return what was just written). */
export class ReadMismatch extends Error {
  override name = 'ReadMismatch';
}

// ------------------------------------------------------------------ acknowledged writes

/** Keys written once each: `<prefix><seq>` = `v<seq>` (or hash field `n` = `<seq>`). */
export class UniqueKeys {
  private next = 0;
  /** Seqs whose write was not acknowledged (failed; it may still have run). */
  private readonly unacked = new Set<number>();
  /** Seqs acknowledged since the last check, and when (epoch ms). */
  window: number[] = [];
  windowAt: number[] = [];
  acked = 0;

  constructor(
    readonly prefix: string,
    readonly kind: 'string' | 'hash' = 'string',
  ) {}

  alloc(): number {
    return this.next++;
  }
  key(seq: number): string {
    return `${this.prefix}${seq}`;
  }
  value(seq: number): string {
    return this.kind === 'string' ? `v${seq}` : String(seq);
  }
  ack(seq: number, at = Date.now()): void {
    this.window.push(seq);
    this.windowAt.push(at);
    this.acked++;
  }
  fail(seq: number): void {
    this.unacked.add(seq);
  }
  /** Every acknowledged seq of the whole run (call when no write is in flight). */
  *all(): Iterable<number> {
    for (let s = 0; s < this.next; s++) if (!this.unacked.has(s)) yield s;
  }
  /** The read that shows the write, and what it must return. */
  check(seq: number): { key: string; args: string[]; expect: string } {
    const key = this.key(seq);
    return this.kind === 'string'
      ? { key, args: ['GET', key], expect: this.value(seq) }
      : { key, args: ['HGET', key, 'n'], expect: this.value(seq) };
  }
}

/** A key whose value only grows (a counter, a "last written" key): it must hold at least the highest acknowledged value. */
export class Monotonic {
  maxAcked = -1;
  maxAckedAt = 0;
  constructor(readonly key: string) {}
  ack(v: number): void {
    if (v > this.maxAcked) {
      this.maxAcked = v;
      this.maxAckedAt = Date.now();
    }
  }
}

/** A list fed by LPUSH and drained by BLPOP: every acknowledged push is popped or still in the list. */
export class ListLog {
  /** Acknowledged pushes not popped yet. */
  readonly pending = new Set<string>();
  /** Popped before its push was acknowledged (or pushed by a push that failed but ran). */
  readonly poppedEarly = new Set<string>();
  pushedAcked = 0;
  popped = 0;
  duplicates = 0;
  private readonly seenPops = new Set<string>();
  /** BLPOPs that failed after being sent since the last check (each may have popped an item). */
  uncertainPops = 0;
  /** Items popped a second time since the last check. */
  windowDuplicates = 0;
  constructor(readonly key: string) {}

  pushed(v: string): void {
    this.pushedAcked++;
    if (this.poppedEarly.delete(v)) return;
    this.pending.add(v);
  }
  pop(v: string): void {
    this.popped++;
    if (this.seenPops.has(v)) {
      this.duplicates++;
      this.windowDuplicates++;
    }
    this.seenPops.add(v);
    if (!this.pending.delete(v)) this.poppedEarly.add(v);
  }
  get backlog(): number {
    return this.pending.size;
  }
}

// ------------------------------------------------------------------ windows

interface TypeGap {
  /** Calls of this type (touching the fault's node or slots) that started since the fault began. */
  attempts: number;
  /** …of which succeeded. */
  oks: number;
  lastOk: number;
  maxGap: number;
  maxGapEnd: number;
  maxGapStart: number;
  /** The first run over the threshold that began during the fault: its end is this type's recovery. */
  firstGapStart: number;
  firstGapEnd: number;
  /** Time of the last success (of a call touching the fault). */
  lastOkAt: number;
}

/** Everything that happened between the end of one fault's check and the end of the next one's. */
export class Window {
  readonly openedAt = Date.now();
  faultStart = 0;
  /** When the fault was lifted (healed, resumed, restarted) or completed (failover done). */
  faultEnd = 0;
  calls = 0;
  oks = 0;
  readonly byType = new Map<OpType, { calls: number; fails: number; maxMs: number }>();
  /** Failures by class, from the fault's start on. */
  readonly failures = new Map<string, number>();
  /** Failures by `type: class`, from the fault's start on. */
  readonly failuresByType = new Map<string, number>();
  /** Failures before the fault started (should be none). */
  readonly failuresBefore = new Map<string, number>();
  /** Calls that settled later than their deadline plus slack. */
  overDeadline = 0;
  overDeadlineExamples: string[] = [];
  private readonly gaps = new Map<OpType, TypeGap>();
  /** Which calls the fault touches (slots in a cluster; every call in Sentinel mode). */
  affects: (slots: readonly number[] | undefined) => boolean = () => true;
  published = 0;
  received = 0;
  resubscribes = 0;
  /** Background `error` / `node-error` events of the pool, by class. */
  poolErrors = new Map<string, number>();
  /** Pool events worth showing (failover, failover-start/abort), with their time from the fault's start. */
  notes: string[] = [];

  startFault(affects?: (slots: readonly number[] | undefined) => boolean): void {
    this.faultStart = Date.now();
    if (affects) this.affects = affects;
  }

  endFault(): void {
    if (this.faultEnd === 0) this.faultEnd = Date.now();
  }

  record(type: OpType, start: number, end: number, error: unknown, slots: readonly number[] | undefined, deadlineMs: number): void {
    this.calls++;
    let t = this.byType.get(type);
    if (!t) this.byType.set(type, (t = { calls: 0, fails: 0, maxMs: 0 }));
    t.calls++;
    if (end - start > t.maxMs) t.maxMs = end - start;
    if (error === undefined) this.oks++;
    else t.fails++;
    if (end - start > deadlineMs + 1500) {
      this.overDeadline++;
      if (this.overDeadlineExamples.length < 5) this.overDeadlineExamples.push(`${type} ${end - start} ms (deadline ${deadlineMs}) ${error === undefined ? 'ok' : errorClass(error)}`);
    }
    if (error !== undefined) {
      const c = errorClass(error);
      if (this.faultStart === 0 || end < this.faultStart) {
        bump(this.failuresBefore, `${type}: ${c}`);
      } else {
        bump(this.failures, c);
        bump(this.failuresByType, `${type}: ${c}`);
      }
    }
    if (this.faultStart === 0 || end < this.faultStart) return;
    if (!this.affects(slots)) return;
    let g = this.gaps.get(type);
    if (!g) this.gaps.set(type, (g = { attempts: 0, oks: 0, lastOk: this.faultStart, maxGap: 0, maxGapEnd: 0, maxGapStart: 0, firstGapStart: 0, firstGapEnd: 0, lastOkAt: 0 }));
    if (start >= this.faultStart) g.attempts++;
    if (error === undefined) {
      g.oks++;
      const from = Math.max(g.lastOk, this.faultStart);
      const gap = end - from;
      // Only runs that began while the fault was on are its outage (later ones are not its doing).
      const during = this.faultEnd === 0 || from <= this.faultEnd;
      if (during && gap > g.maxGap) {
        g.maxGap = gap;
        g.maxGapEnd = end;
        g.maxGapStart = from;
      }
      if (during && g.firstGapEnd === 0 && gap > gapThreshold(type)) {
        g.firstGapStart = from;
        g.firstGapEnd = end;
      }
      g.lastOk = Math.max(g.lastOk, end);
      g.lastOkAt = end;
    }
  }

  /** Worker types that touched the fault and have had no success since `t`. */
  notRecoveredSince(t: number): OpType[] {
    const out: OpType[] = [];
    for (const [type, g] of this.gaps) if (g.attempts > 0 && g.lastOkAt < t) out.push(type);
    return out;
  }

  /** Per type touching the fault: its first outage (and the longest, when another), in ms from the fault's start; and the slowest calls. */
  describeGaps(): string {
    const rel = (t: number) => `+${t - this.faultStart}`;
    const gaps = [...this.gaps]
      .filter(([type, g]) => g.maxGap > gapThreshold(type))
      .sort((a, b) => b[1].maxGap - a[1].maxGap)
      .map(([type, g]) =>
        g.firstGapEnd === g.maxGapEnd
          ? `${type} ${rel(g.maxGapStart)}..${rel(g.maxGapEnd)}`
          : `${type} ${rel(g.firstGapStart)}..${rel(g.firstGapEnd)} (longest ${g.maxGap} ms: ${rel(g.maxGapStart)}..${rel(g.maxGapEnd)})`,
      );
    const slow = [...this.byType]
      .sort((a, b) => b[1].maxMs - a[1].maxMs)
      .slice(0, 4)
      .map(([type, t]) => `${type} ${t.maxMs} ms`);
    return `outage per type (first run without a success that began during the fault, > ${GAP_THRESHOLD_MS} ms, BLPOP > ${gapThreshold('blpop')} ms; ms from the fault's start): ${gaps.join(', ') || 'none'}; slowest calls: ${slow.join(', ')}`;
  }

  /**
   * Recovery: from the fault's start to the end of the first run without a success (over the
   * threshold) that began while the fault was on, over the worker types whose calls touch the
   * fault; the latest such end among the types.
   */
  recovery(): { ms: number | undefined; worst: OpType | undefined; never: OpType[]; perType: Array<[OpType, number]> } {
    let ms: number | undefined;
    let worst: OpType | undefined;
    const never: OpType[] = [];
    const perType: Array<[OpType, number]> = [];
    for (const [type, g] of this.gaps) {
      if (g.attempts > 0 && g.oks === 0) {
        never.push(type);
        continue;
      }
      if (g.firstGapEnd === 0) continue;
      const r = g.firstGapEnd - this.faultStart;
      perType.push([type, r]);
      if (ms === undefined || r > ms) {
        ms = r;
        worst = type;
      }
    }
    perType.sort((a, b) => b[1] - a[1]);
    return { ms, worst, never, perType };
  }

  failureCount(): number {
    let n = 0;
    for (const v of this.failures.values()) n += v;
    return n;
  }
}

function bump(m: Map<string, number>, k: string, n = 1): void {
  m.set(k, (m.get(k) ?? 0) + n);
}

// ------------------------------------------------------------------ the load

export interface LoadOptions {
  /** Key prefix for this mode (`soak:s:` or `soak:c:`). */
  prefix: string;
  /** Slots of keys for the per-fault filter (cluster); undefined in Sentinel mode. */
  cluster: boolean;
  /** The pool's default command deadline (for the over-deadline check). */
  commandTimeout: number;
}

/** How many workers of each kind (one pool). */
export const WORKERS = {
  set: 8, // 6 idempotent, 2 not
  overwrite: 2,
  hash: 4,
  incr: 4,
  pipeline: 4,
  multi: 3,
  lpush: 2,
  blpop: 3,
  publish: 1,
  subscribe: 1,
} as const;
const SET_IDEMPOTENT = 6;
const BLPOP_TIMEOUT_S = 1;
/** Most acknowledged, unpopped items a pusher lets pile up in its list. */
const LIST_BACKLOG = 500;

export class Load {
  window = new Window();
  readonly strings: UniqueKeys[] = [];
  readonly hashes: UniqueKeys[] = [];
  readonly pipelined: UniqueKeys[] = [];
  readonly txKeys: UniqueKeys[] = [];
  readonly monotonic: Monotonic[] = [];
  readonly lists: ListLog[] = [];
  /** Hash tags of the transaction workers (one slot each). */
  readonly txTags: string[] = [];
  readonly channel: string;
  /** Totals over the whole run. */
  totals = { calls: 0, published: 0, received: 0, resubscribes: 0 };

  private stopped = false;
  private paused = false;
  private resume: (() => void) | undefined;
  private resumed: Promise<void> = Promise.resolve();
  private inFlight = 0;
  /** Start times of the calls in flight. */
  private readonly starts = new Set<{ start: number }>();
  private readonly loops: Promise<void>[] = [];
  private subscriberDone = new AbortController();
  private publishedSeq = 0;

  constructor(
    private readonly pool: AnyPool,
    private readonly o: LoadOptions,
  ) {
    const p = o.prefix;
    this.channel = `${p}chan`;
    for (let w = 0; w < WORKERS.set; w++) this.strings.push(new UniqueKeys(`${p}s:${w}:`));
    for (let w = 0; w < WORKERS.hash; w++) this.hashes.push(new UniqueKeys(`${p}h:${w}:`, 'hash'));
    for (let w = 0; w < WORKERS.pipeline; w++) this.pipelined.push(new UniqueKeys(`${p}p:${w}:`));
    for (let w = 0; w < WORKERS.multi; w++) {
      const tag = `${p}t:${w}`;
      this.txTags.push(tag);
      this.txKeys.push(new UniqueKeys(`{${tag}}:k:`));
    }
    for (let w = 0; w < WORKERS.lpush; w++) this.lists.push(new ListLog(`${p}q:${w}`));
  }

  /** Keys that are written all the time (counters, overwritten keys, transaction tags, lists): their slots make good migration targets. */
  hotKeys(): string[] {
    return [...this.monotonic.map((m) => m.key), ...this.lists.map((l) => l.key)];
  }

  private slots(...keys: string[]): number[] | undefined {
    return this.o.cluster ? keys.map((k) => keySlot(k)) : undefined;
  }

  /**
   * Runs one call and records it in the current window. `judge` may turn a reply into a
   * failure (a read that does not return what was written, a pipeline entry that failed):
   * that failure is recorded instead of the success.
   */
  private async op<T>(
    type: OpType,
    slots: number[] | undefined,
    run: () => Promise<T>,
    o: { deadlineMs?: number; judge?: (v: T) => unknown } = {},
  ): Promise<{ ok: true; value: T; good: boolean } | { ok: false; error: unknown }> {
    const start = Date.now();
    const deadlineMs = o.deadlineMs ?? this.o.commandTimeout;
    this.inFlight++;
    const mark = { start };
    this.starts.add(mark);
    try {
      let value: T;
      try {
        value = await run();
      } catch (error) {
        if (!this.stopped) {
          this.window.record(type, start, Date.now(), error, slots, deadlineMs);
          this.totals.calls++;
        }
        return { ok: false, error };
      }
      const bad = o.judge?.(value);
      this.window.record(type, start, Date.now(), bad, slots, deadlineMs);
      this.totals.calls++;
      return { ok: true, value, good: bad === undefined };
    } finally {
      this.inFlight--;
      this.starts.delete(mark);
    }
  }

  /** Start of the oldest call still in flight (Infinity when none). */
  oldestInFlight(): number {
    let t = Infinity;
    for (const m of this.starts) if (m.start < t) t = m.start;
    return t;
  }

  private async gate(): Promise<boolean> {
    while (this.paused && !this.stopped) await this.resumed;
    return !this.stopped;
  }

  private loop(body: () => Promise<boolean | void>): void {
    this.loops.push(
      (async () => {
        while (await this.gate()) {
          const ok = await body();
          // A failed call is followed by a short pause, so a broken pool cannot turn the load into a hot loop.
          if (ok === false && !this.stopped) await sleep(10);
        }
      })(),
    );
  }

  start(): void {
    const pool = this.pool;
    const idem = pool.with({ idempotent: true });
    const p = this.o.prefix;

    // SET of unique keys, then GET it back.
    this.strings.forEach((t, w) => {
      const writer = w < SET_IDEMPOTENT ? idem : pool;
      this.loop(async () => {
        const seq = t.alloc();
        const key = t.key(seq);
        const value = t.value(seq);
        const slots = this.slots(key);
        const r = await this.op('set', slots, () => writer.set(key, value));
        if (!r.ok) {
          t.fail(seq);
          return false;
        }
        t.ack(seq);
        const g = await this.op('get', slots, () => pool.get(key), {
          judge: (v) => (v === value ? undefined : new ReadMismatch(`GET ${key} right after its acknowledged SET returned ${JSON.stringify(v)}, not ${value}`)),
        });
        return g.ok && g.good;
      });
    });

    // One key per worker, overwritten with an increasing number.
    for (let w = 0; w < WORKERS.overwrite; w++) {
      const m = new Monotonic(`${p}last:${w}`);
      this.monotonic.push(m);
      let n = 0;
      this.loop(async () => {
        const v = ++n;
        const r = await this.op('overwrite', this.slots(m.key), () => idem.set(m.key, String(v)));
        if (r.ok) m.ack(v);
        return r.ok;
      });
    }

    // HSET of unique hashes, then HGETALL.
    this.hashes.forEach((t, w) => {
      this.loop(async () => {
        const seq = t.alloc();
        const key = t.key(seq);
        const slots = this.slots(key);
        const r = await this.op('hset', slots, () => idem.hset(key, { n: String(seq), w: String(w) }));
        if (!r.ok) {
          t.fail(seq);
          return false;
        }
        t.ack(seq);
        const g = await this.op('hgetall', slots, () => pool.hgetall(key), {
          judge: (v) => (v.n === String(seq) && v.w === String(w) ? undefined : new ReadMismatch(`HGETALL ${key} right after its acknowledged HSET returned ${JSON.stringify(v)}`)),
        });
        return g.ok && g.good;
      });
    });

    // INCR, not idempotent: a reply lost after the write is an UncertainWriteError, never retried.
    for (let w = 0; w < WORKERS.incr; w++) {
      const m = new Monotonic(`${p}ctr:${w}`);
      this.monotonic.push(m);
      this.loop(async () => {
        const r = await this.op('incr', this.slots(m.key), async () => Number(await pool.incr(m.key)));
        if (r.ok) m.ack(r.value);
        return r.ok;
      });
    }

    // Pipelines of 10 idempotent commands: 6 SETs of unique keys, 3 GETs of them, 1 EXISTS.
    this.pipelined.forEach((t) => {
      this.loop(async () => {
        const seqs = Array.from({ length: 6 }, () => t.alloc());
        const keys = seqs.map((s) => t.key(s));
        const b = idem.pipeline();
        seqs.forEach((s, i) => b.set(keys[i]!, t.value(s)));
        for (let i = 0; i < 3; i++) b.get(keys[i]!);
        b.exists(...keys.slice(0, 2));
        const r = await this.op('pipeline', this.slots(...keys), () => b.exec(), {
          // The pipeline counts as failed with the class of its first failed entry.
          judge: (res) => {
            const err = res.find((x) => x instanceof Error);
            if (err) return err;
            for (let i = 0; i < 3; i++) {
              if (res[6 + i] !== t.value(seqs[i]!)) return new ReadMismatch(`pipeline GET ${keys[i]} after its SET in the same pipeline returned ${JSON.stringify(res[6 + i])}`);
            }
            return undefined;
          },
        });
        if (!r.ok) {
          seqs.forEach((s) => t.fail(s));
          return false;
        }
        seqs.forEach((s, i) => (r.value[i] instanceof Error ? t.fail(s) : t.ack(s)));
        return r.good;
      });
    });

    // MULTI/EXEC in one slot ({tag}), not idempotent.
    this.txKeys.forEach((t, w) => {
      const tag = this.txTags[w]!;
      const counter = new Monotonic(`{${tag}}:n`);
      this.monotonic.push(counter);
      this.loop(async () => {
        const seq = t.alloc();
        const key = t.key(seq);
        const r = await this.op(
          'multi',
          this.slots(key),
          () => pool.multi().set(key, t.value(seq)).incr(counter.key).hset(`{${tag}}:h`, 'last', String(seq)).exec(),
          { judge: (res) => (res === null ? new ReadMismatch('EXEC returned null without WATCH') : res.find((x) => x instanceof Error)) },
        );
        if (!r.ok || !r.good || r.value === null) {
          t.fail(seq);
          return false;
        }
        t.ack(seq);
        counter.ack(Number(r.value[1]));
        return true;
      });
    });

    // LPUSH (not idempotent) into lists that BLPOP workers drain.
    this.lists.forEach((l, w) => {
      let seq = 0;
      this.loop(async () => {
        if (l.backlog > LIST_BACKLOG) {
          await sleep(5);
          return true;
        }
        const v = `${w}:${seq++}`;
        const r = await this.op('lpush', this.slots(l.key), () => pool.lpush(l.key, v));
        if (r.ok) l.pushed(v);
        return r.ok;
      });
    });
    for (let w = 0; w < WORKERS.blpop; w++) {
      const l = this.lists[w % this.lists.length]!;
      this.loop(async () => {
        const r = await this.op('blpop', this.slots(l.key), () => pool.blpop(l.key, BLPOP_TIMEOUT_S), {
          deadlineMs: this.o.commandTimeout + BLPOP_TIMEOUT_S * 1000,
        });
        if (r.ok) {
          if (r.value) l.pop(r.value[1]);
          return true;
        }
        if (mayHaveRun(r.error)) l.uncertainPops++;
        return false;
      });
    }

    // PUBLISH every ~5 ms; a subscriber on a lease counts what arrives.
    this.loop(async () => {
      const n = ++this.publishedSeq;
      const r = await this.op('publish', undefined, () => pool.publish(this.channel, String(n)));
      if (r.ok) {
        this.window.published++;
        this.totals.published++;
      }
      await sleep(5);
      return r.ok;
    });
    this.loops.push(this.subscriber());
  }

  private async subscriber(): Promise<void> {
    const done = this.subscriberDone.signal;
    let first = true;
    while (!done.aborted) {
      try {
        await this.pool.use(async (lease) => {
          await lease.subscribe(this.channel, () => {
            this.window.received++;
            this.totals.received++;
          });
          if (!first) {
            this.window.resubscribes++;
            this.totals.resubscribes++;
          }
          first = false;
          await new Promise<void>((resolve) => {
            if (lease.signal.aborted || done.aborted) return resolve();
            lease.signal.addEventListener('abort', () => resolve(), { once: true });
            done.addEventListener('abort', () => resolve(), { once: true });
          });
        });
      } catch {
        // lost the connection, or could not borrow one: subscribe again
      }
      if (!done.aborted) await sleep(50);
    }
  }

  /** Stops issuing calls and waits until none is in flight (or `timeoutMs` passed: returns how many are still out). */
  async pause(timeoutMs = 20_000): Promise<number> {
    this.paused = true;
    this.resumed = new Promise((r) => (this.resume = r));
    const until = Date.now() + timeoutMs;
    while (this.inFlight > 0 && Date.now() < until) await sleep(10);
    return this.inFlight;
  }

  unpause(): void {
    this.paused = false;
    this.resume?.();
  }

  /** Starts a new window and returns the finished one. */
  nextWindow(): Window {
    const w = this.window;
    this.window = new Window();
    for (const l of this.lists) {
      l.uncertainPops = 0;
      l.windowDuplicates = 0;
    }
    return w;
  }

  get active(): number {
    return this.inFlight;
  }

  /** Stops every worker and the subscriber, and waits for them. */
  async stop(timeoutMs = 20_000): Promise<boolean> {
    this.stopped = true;
    this.unpause();
    this.subscriberDone.abort();
    let timer: NodeJS.Timeout | undefined;
    const finished = await Promise.race([
      Promise.all(this.loops).then(() => true),
      new Promise<boolean>((r) => (timer = setTimeout(() => r(false), timeoutMs))),
    ]);
    clearTimeout(timer);
    return finished;
  }
}

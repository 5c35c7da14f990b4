/**
 * One command as a connection holds it, from queued to settled, and the per-call options that
 * shape it. The connection owns every transition; this file only names the states.
 */
import type { CommandTraits } from '../commands/traits.js';
import type { Reply } from '../types.js';
import type { Durability } from './durability.js';
import type { DurableCommand } from './confirmations.js';

/** Per-command options understood by a connection. */
export interface SendOptions {
  /** Deadline in ms for this command; 0 disables; undefined uses `commandTimeout`. */
  timeout?: number;
  /** Absolute deadline (epoch ms, 0 = none); when given it wins over `timeout` and saves a clock read. */
  deadline?: number;
  /** Aborts the command: rejected with `signal.reason`; if already written, its late reply is discarded. */
  signal?: AbortSignal;
  /** Decode bulk strings of this reply as Buffers. */
  returnBuffers?: boolean;
  /** A blocking command (BLPOP, XREAD BLOCK …): exempt from `socketTimeout` while it waits. */
  blocking?: boolean;
  /** Receives RESP3 attributes that came with the reply. */
  onAttributes?: (attributes: Map<Reply, Reply>) => void;
  /**
   * A per-call timeout the caller asked for (`with({ timeout: 60000 })` for a slow script), in
   * ms; 0 = none. One beyond `socketTimeout` stretches the inactivity check while this
   * command's reply is the one awaited. The default `commandTimeout` never does.
   */
  patience?: number;
  /**
   * A write that must reach replicas before it resolves: a WAIT follows the flush that carries
   * it, and its reply is held until that WAIT answers (see durability.ts).
   */
  durable?: Durability;
  /**
   * The traits of this command, when the caller worked them out (see commands/traits.ts): the
   * connection reads its transaction role there instead of looking at the name. Only on
   * options that go with this one command.
   */
  traits?: CommandTraits | undefined;
}

// Plain constants, not an enum: a per-file transpiler (tsx, esbuild) makes an enum an object
// whose members would be looked up on every reply and every flush.
/** In the write queue, not handed to the socket: provably unsent. */
export const QUEUED = 0;
/** Handed to the socket: it may have executed. */
export const WRITTEN = 1;
/** Resolved, rejected, or given up by its caller; a late reply is dropped. */
export const SETTLED = 2;

/** A command from `send()` until it settles. */
export class Command implements DurableCommand {
  /** QUEUED, WRITTEN or SETTLED. */
  state = QUEUED;
  /** SUBSCRIBE to n channels: n-1 placeholder entries follow this one to absorb the extra confirmations. */
  extras = 0;
  /** Deadline in epoch ms; 0 = none. */
  timer = 0;
  /** Detaches the AbortSignal listener; called when it settles. */
  abort: (() => void) | undefined;
  /** Encoded length (bytes for ASCII), for maxPendingBytes. */
  size = 0;
  /** Inactivity allowed while this is the reply awaited, when longer than socketTimeout; 0 = socketTimeout. */
  idleLimit = 0;
  /** Durable write: what it asks of the replicas. */
  durable: Durability | undefined = undefined;
  /** Durable write whose reply arrived and is held until its WAIT answers. */
  confirming = false;
  /** A durable write's reply while it is held. */
  reply: Reply = null;
  /** …and the RESP3 attributes that came with it. */
  attrs: Map<Reply, Reply> | undefined = undefined;
  /** A SUBSCRIBE's extra entry: sends nothing, absorbs one confirmation. */
  placeholder = false;
  /** For (P|S)(UN)SUBSCRIBE: the confirmation this entry waits for (`subscribe`, `sunsubscribe` …). */
  confirm: string | undefined;
  /** …and the channel it names; undefined matches any (UNSUBSCRIBE without arguments). */
  confirmName: string | undefined;
  constructor(
    /** The command name as sent, for messages. */
    readonly name: string,
    /**
     * The RESP bytes; '' for a SUBSCRIBE's placeholder entries, which send nothing. Cleared once
     * handed to the socket (the socket holds the bytes then), so a backlog is held once.
     */
    public encoded: string | Array<string | Buffer>,
    readonly resolve: (v: Reply) => void,
    readonly reject: (e: Error) => void,
    /** Decode this reply's bulk strings as Buffers. */
    readonly buffers: boolean,
    /** A blocking command: exempt from socketTimeout while it waits. */
    readonly blocking: boolean,
    /** Its confirmation puts the connection in subscribed mode. */
    readonly subscribe: boolean,
    readonly signal: AbortSignal | undefined,
    readonly onAttributes: ((a: Map<Reply, Reply>) => void) | undefined,
  ) {}
}

/** Total length of an encoding that came as parts (it carries Buffer arguments). */
export function partsSize(parts: ReadonlyArray<string | Buffer>): number {
  let n = 0;
  for (const p of parts) n += p.length;
  return n;
}

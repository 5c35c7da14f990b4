import {
  AuthenticationError, ConnectionError, NodeUnreachableError, ProtocolError, TimeoutError, UncertainWriteError,
} from '../errors.js';
import type { Arg } from '../types.js';
import { CommandRegistry } from './command-table.js';

let registry: CommandRegistry | undefined;

/**
 * Whether `args` is a read-only command, by command and subcommand (`XINFO STREAM` and
 * `SCRIPT EXISTS` are, `SCRIPT LOAD` is not): resending it cannot change data. Unknown
 * commands are not read-only. `table` defaults to the built-in command table.
 */
export function isReadOnlyCommand(args: readonly Arg[], table?: CommandRegistry): boolean {
  if (args.length === 0) return false;
  const info = (table ?? (registry ??= new CommandRegistry())).get(String(args[0]), args.length > 1 ? args[1] : undefined);
  return info?.flags.has('readonly') ?? false;
}

/**
 * The one rule every mode follows for "may this failed attempt be sent again?":
 * - provably not sent (a plain `ConnectionError`, an unsent `TimeoutError`): yes;
 * - written, reply lost (`UncertainWriteError`, a sent `TimeoutError`, or `sent` known to the
 *   caller): only when read-only or marked `idempotent`, since it may have executed;
 * - its reply was refused (`ProtocolError`: malformed, or over `maxReplyBytes`): never, it ran
 *   and another try returns the same reply;
 * - refused credentials, a fail-fast refusal (`NodeUnreachableError`) and anything else
 *   (server errors, TypeErrors): no.
 */
export function mayResend(err: unknown, sent: boolean, readOnly: boolean, idempotent: boolean): boolean {
  if (err instanceof ProtocolError || err instanceof AuthenticationError || err instanceof NodeUnreachableError) return false;
  if (!(err instanceof ConnectionError) && !(err instanceof TimeoutError)) return false;
  const written = sent || err instanceof UncertainWriteError || (err instanceof TimeoutError && err.sent);
  return !written || readOnly || idempotent;
}

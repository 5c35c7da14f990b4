import { isReadOnly } from './command-table.js';

/** True when the command only reads (safe to retry even after it may have run). */
export function isReadOnlyCommand(name: string): boolean {
  return isReadOnly(name);
}

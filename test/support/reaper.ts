/**
 * Last-resort cleanup: every child process the harness starts is registered
 * here by PID, and every temp dir it creates. When this process exits, or
 * gets SIGINT/SIGTERM, each registered child still alive is SIGKILLed (by
 * PID, never by name), the exit hooks run (the container backend's removes its
 * containers) and the dirs are removed. Normal teardown goes through `stop()`,
 * which unregisters what it has cleaned up.
 */
import { rmSync } from 'node:fs';

const children = new Set<number>();
const dirs = new Set<string>();
/** Synchronous last-resort cleanups of other kinds (the container backend removes its containers). */
const hooks = new Set<() => void>();
let installed = false;

function killAll(): void {
  for (const pid of children) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  children.clear();
  for (const hook of hooks) {
    try {
      hook();
    } catch {
      // best effort at exit
    }
  }
  hooks.clear();
  for (const dir of dirs) {
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch {
      // best effort at exit
    }
  }
  dirs.clear();
}

function onSignal(signal: NodeJS.Signals): void {
  killAll();
  // Keep the default "terminate" behaviour unless somebody else (e.g. the
  // test runner) also handles this signal and will decide for itself.
  if (process.listenerCount(signal) === 1) {
    process.removeListener(signal, onSignal);
    process.kill(process.pid, signal);
  }
}

function install(): void {
  if (installed) return;
  installed = true;
  process.on('exit', killAll);
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
}

export function trackChild(pid: number): void {
  install();
  children.add(pid);
}

export function untrackChild(pid: number): void {
  children.delete(pid);
}

export function trackDir(dir: string): void {
  install();
  dirs.add(dir);
}

export function untrackDir(dir: string): void {
  dirs.delete(dir);
}

/** Runs `hook` (synchronously, best effort) when this process exits or gets SIGINT/SIGTERM, before the dirs go. */
export function trackExitHook(hook: () => void): void {
  install();
  hooks.add(hook);
}

export function untrackExitHook(hook: () => void): void {
  hooks.delete(hook);
}

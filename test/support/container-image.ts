/**
 * The image the container backend runs: built locally from this machine's own Redis
 * binaries, because nothing can be pulled from a registry where the tests run. It is a
 * `docker import` of a root file system holding redis-server (redis-sentinel is a link to
 * it: one program, started as a sentinel by its name), redis-cli, the shared libraries
 * `ldd` names for them, and sh, cat, awk and grep (the container's port check runs them,
 * as testcontainers' own port wait does).
 *
 * The tag is a hash of those files, so a changed binary gets a new image and an unchanged
 * one is built once per engine. `REDIS_CONTAINER_IMAGE` names another image to use instead
 * (e.g. `redis:7.0.15` where a registry is reachable; it needs the same programs).
 *
 */
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, symlinkSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type Dockerode from 'dockerode';
import { redisBinaries } from './redis-binaries.js';

const IMAGE_REPO = 'redis-ha-pool/redis-local';
/** Bumped when the layout of the root file system changes, so old images are not reused. */
const LAYOUT_VERSION = '1';
/** What testcontainers' port check and the harness run inside the container. */
const SHELL_TOOLS = ['sh', 'cat', 'awk', 'grep'] as const;

const run = promisify(execFile);

function onPath(name: string): string {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter).filter(Boolean)) {
    const candidate = path.join(dir, name);
    try {
      return realpathSync(candidate);
    } catch {
      // not in this dir
    }
  }
  throw new Error(`container image: '${name}' is not on PATH; the image needs it (testcontainers' port check runs it inside the container)`);
}

/** Absolute paths of the shared libraries (and the loader) `ldd` lists for `binary`. */
async function sharedLibraries(binary: string): Promise<string[]> {
  const { stdout } = await run('ldd', [binary]);
  const libs: string[] = [];
  for (const line of stdout.split('\n')) {
    // "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" or "/lib64/ld-linux-x86-64.so.2 (0x...)"
    const m = /(?:=>\s*)?(\/\S+)\s+\(0x[0-9a-f]+\)/.exec(line);
    if (m) libs.push(m[1]!);
  }
  if (libs.length === 0 && !/not a dynamic executable|statically linked/.test(stdout)) {
    throw new Error(`container image: could not read the shared libraries of ${binary} from ldd: ${stdout.trim()}`);
  }
  return libs;
}

interface RootFs {
  /** Target path in the image -> file on this machine. */
  files: Map<string, string>;
  /** Link in the image -> its target. */
  links: Map<string, string>;
}

async function collectRootFs(): Promise<RootFs> {
  const bins = await redisBinaries();
  const programs = new Map<string, string>([
    ['redis-server', realpathSync(bins.redisServer)],
    ['redis-cli', realpathSync(bins.redisCli)],
    ...SHELL_TOOLS.map((t) => [t, onPath(t)] as const),
  ]);
  const files = new Map<string, string>();
  for (const [name, source] of programs) {
    files.set(`/usr/bin/${name}`, source);
    for (const lib of await sharedLibraries(source)) files.set(lib, realpathSync(lib));
  }
  const links = new Map([
    ['/usr/bin/redis-sentinel', 'redis-server'],
    // testcontainers runs /bin/sh; Debian's usr-merged /bin is a link too.
    ['/bin/sh', '/usr/bin/sh'],
  ]);
  return { files, links };
}

function tagOf(fs: RootFs): string {
  const h = createHash('sha256').update(LAYOUT_VERSION);
  for (const [target, source] of [...fs.files].sort(([a], [b]) => a.localeCompare(b))) {
    h.update(`\0${target}\0`).update(readFileSync(source));
  }
  for (const [link, target] of fs.links) h.update(`\0${link}->${target}`);
  return h.digest('hex').slice(0, 12);
}

async function tarOf(fs: RootFs): Promise<{ dir: string; tar: NodeJS.ReadableStream; done: Promise<void> }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'redis-ha-pool-rootfs-'));
  for (const [target, source] of fs.files) {
    mkdirSync(path.join(dir, path.dirname(target)), { recursive: true });
    copyFileSync(source, path.join(dir, target));
  }
  for (const [link, target] of fs.links) {
    mkdirSync(path.join(dir, path.dirname(link)), { recursive: true });
    symlinkSync(target, path.join(dir, link));
  }
  for (const d of ['data', 'tmp']) mkdirSync(path.join(dir, d), { mode: 0o1777 });
  const child = spawn('tar', ['-C', dir, '--numeric-owner', '--owner=0', '--group=0', '-c', '.'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const done = new Promise<void>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`tar of the image root failed (${code}): ${stderr.trim()}`))));
  });
  return { dir, tar: child.stdout, done };
}

async function imageExists(docker: Dockerode, name: string): Promise<boolean> {
  try {
    await docker.getImage(name).inspect();
    return true;
  } catch (err) {
    if ((err as { statusCode?: number }).statusCode === 404) return false;
    throw err;
  }
}

async function importImage(docker: Dockerode, fs: RootFs, repo: string, tag: string): Promise<void> {
  const { dir, tar, done } = await tarOf(fs);
  try {
    const progress = await docker.importImage(tar, { repo, tag, message: 'redis-ha-pool test image' });
    await new Promise<void>((resolve, reject) => {
      docker.modem.followProgress(progress, (err: Error | null, events: { error?: string }[]) => {
        const failed = events?.find((e) => e.error);
        if (err || failed) reject(err ?? new Error(`docker import failed: ${failed!.error}`));
        else resolve();
      });
    });
    await done;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const built = new Map<Dockerode, Promise<string>>();

/**
 * The image name to run: `REDIS_CONTAINER_IMAGE` if set, else the local image, built now
 * (about a second) unless this engine has it already. Memoised per engine and process;
 * two processes building at once both import the same content under the same tag.
 */
export function redisImage(docker: Dockerode): Promise<string> {
  const override = process.env.REDIS_CONTAINER_IMAGE;
  if (override) return Promise.resolve(override);
  let p = built.get(docker);
  if (!p) {
    p = (async () => {
      const fs = await collectRootFs();
      const tag = tagOf(fs);
      const name = `${IMAGE_REPO}:${tag}`;
      if (!(await imageExists(docker, name))) await importImage(docker, fs, IMAGE_REPO, tag);
      return name;
    })();
    p.catch(() => built.delete(docker));
    built.set(docker, p);
  }
  return p;
}

// Lints the package as npm would publish it: publint (package.json fields, exports, files)
// and Are the Types Wrong (the typings each resolution mode finds: node10, node16 from CJS and
// from ESM, bundler). Run on a tarball (`node scripts/check-package.mjs pkg.tgz`, as the
// package test does with the one it installs) or, with no argument, on a fresh `npm pack` of
// the current build (`npm run check:package` builds first).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const bin = (pkg, file) => path.join(root, 'node_modules', pkg, file);
const run = (args) => execFileSync(process.execPath, args, { cwd: root, stdio: 'inherit' });

let tarball = process.argv[2];
let tmp;
if (!tarball) {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'redis-ha-pool-check-'));
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const out = execFileSync(npm, ['pack', '--json', '--pack-destination', tmp], { cwd: root, encoding: 'utf8' });
  tarball = path.join(tmp, JSON.parse(out)[0].filename);
}
try {
  // --strict: warnings fail too; suggestions are printed but pass.
  run([bin('publint', 'src/cli.js'), 'run', '--strict', tarball]);
  // Every problem kind fails (exit 1); the table shows what each resolution mode gets.
  run([bin('@arethetypeswrong/cli', 'dist/index.js'), tarball, '--no-emoji', '--no-color']);
} finally {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
}

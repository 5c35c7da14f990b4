// Emits dist/esm (ESM) and dist/cjs (CommonJS), each with .d.ts, from one source tree.
// The CJS folder gets its own package.json so Node treats its .js files as CommonJS
// even though the package itself is "type": "module".
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';

// src/version.ts carries package.json's version (CLIENT SETINFO LIB-VER) so that nothing reads
// package.json at run time; rewritten here when `npm version` changed it.
const version = JSON.parse(readFileSync('package.json', 'utf8')).version;
const versionFile = 'src/version.ts';
const versionSource = readFileSync(versionFile, 'utf8');
const updated = versionSource.replace(/export const PACKAGE_VERSION = '[^']*';/, `export const PACKAGE_VERSION = '${version}';`);
if (updated !== versionSource) writeFileSync(versionFile, updated);

const tsc = (project) => execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', project], { stdio: 'inherit' });
rmSync('dist', { recursive: true, force: true });
tsc('tsconfig.json');
tsc('tsconfig.cjs.json');
writeFileSync('dist/cjs/package.json', JSON.stringify({ type: 'commonjs' }) + '\n');

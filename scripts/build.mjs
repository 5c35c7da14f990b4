// Emits dist/esm (ESM) and dist/cjs (CommonJS), each with .d.ts, from one source tree.
// The CJS folder gets its own package.json so Node treats its .js files as CommonJS
// even though the package itself is "type": "module".
import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';

const tsc = (project) => execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', project], { stdio: 'inherit' });
rmSync('dist', { recursive: true, force: true });
tsc('tsconfig.json');
tsc('tsconfig.cjs.json');
writeFileSync('dist/cjs/package.json', JSON.stringify({ type: 'commonjs' }) + '\n');

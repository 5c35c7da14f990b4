/**
 * The API reference: TypeDoc over the package's entry point, with every exported symbol
 * required to have documentation and every warning (a broken link, a type referenced but not
 * exported) treated as an error (typedoc.json). This is `npm run docs:check`.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

describe('the API reference', () => {
  it('builds with no warnings: every export is documented', async () => {
    const result = await new Promise<{ code: number; output: string }>((resolve) => {
      execFile(process.execPath, [path.join(ROOT, 'node_modules', 'typedoc', 'bin', 'typedoc'), '--emit', 'none'], { cwd: ROOT, timeout: 120_000, env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' } }, (err, stdout, stderr) => {
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, output: stdout + stderr });
      });
    });
    // The output lists each undocumented symbol by name: it is the failure message.
    expect(result.output).not.toMatch(/\[warning\]|\[error\]/);
    expect(result.code).toBe(0);
  }, 120_000);
});

/**
 * vitest `globalSetup`: runs once in the main process before any worker starts, and
 * installs what the tests need when it is missing (see prepare.ts). Workers then only look
 * the binaries up (redis-binaries.ts) and never install anything themselves.
 */
import { prepareTestTools } from './prepare.js';

export default async function setup(): Promise<void> {
  try {
    await prepareTestTools();
  } catch (err) {
    // One message that says what is missing, why and what to run; thrown, vitest would bury it
    // under "No test files found" and a stack trace, so stop here instead (no test has started).
    process.stderr.write(`\n${(err as Error).message}\n\n`);
    process.exit(1);
  }
}

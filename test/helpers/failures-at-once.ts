// A mocha root hook (`require` in the suites' mocharc files): a failed test's error is printed
// when it fails, not only in the summary at the end. A long suite (the cluster suite runs over an
// hour on a busy machine) that is interrupted or killed prints no summary, and its failures were
// then known by title only (issue 30, 2026-11-29: a panel scenario failed in a cluster run that
// was interrupted to diagnose it, and what it answered was lost).

import type { Context } from 'mocha';

export const mochaHooks = {
  afterEach(this: Context): void {
    const test = this.currentTest;
    if (test?.state !== 'failed') return;
    const err = (test as unknown as { err?: Error }).err;
    const text = err === undefined ? '(no error recorded)' : (err.stack ?? `${err.name}: ${err.message}`);
    process.stdout.write(`\n      failed: ${test.fullTitle()}\n${text.split('\n').map((l) => `        ${l}`).join('\n')}\n\n`);
  },
};

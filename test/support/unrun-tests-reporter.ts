import { relative } from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';

/**
 * A test whose `beforeAll` (or `beforeEach`) failed is reported as skipped, next to the few skipped on purpose, so a
 * summary line like "65 skipped" hides a setup that never worked (issue 37: every gateway suite on a fresh clone).
 * This reporter names each file where tests did not run because a hook failed, and fails the run for it. Vitest
 * already fails a file whose hook failed; the line says which tests that cost, and the run fails even if that changes.
 */
export default class UnrunTestsReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const unrun: string[] = [];
    for (const module of testModules) {
      let count = 0;
      for (const test of module.children.allTests('skipped')) {
        if (hookFailedAbove(test.parent)) count++;
      }
      if (count > 0)
        unrun.push(`${relative(process.cwd(), module.moduleId)} (${count} test${count === 1 ? '' : 's'})`);
    }
    if (unrun.length === 0) return;
    process.stderr.write(
      `\nTests that did not run because a beforeAll/beforeEach hook failed (a failure, not a skip):\n${unrun
        .map((line) => `  ${line}`)
        .join('\n')}\n`,
    );
    process.exitCode = 1;
  }
}

type Parent = TestModule | import('vitest/node').TestSuite;

function hookFailedAbove(parent: Parent): boolean {
  for (let at: Parent | undefined = parent; at; at = at.type === 'suite' ? at.parent : undefined) {
    if (at.errors().length > 0) return true;
  }
  return false;
}

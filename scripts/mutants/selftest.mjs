#!/usr/bin/env node
// Self-test of the mutant runner (scripts/mutants.mjs): runs it as a child process, exactly as
// `npm run mutants` does, on the fake mutants of scripts/mutants/fixtures/lists (a tiny module and its
// suite, outside every lane's include globs) and asserts each verdict, the summary line, the --report
// record and the exit status. Then it breaks the runner on purpose through its fault seam
// (TENON_MUTANTS_FAULT=no-invalidate-on-restore: a restored file's lane is not told) and asserts that the
// leak check reports the leak in both lanes, which also proves the warm lanes do cache what the runner
// must invalidate. Plus the pure parts (title IDs, the test-name pattern) directly. Exits 1 if any case
// fails.
//
// Usage: node scripts/mutants/selftest.mjs
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { idPattern, titleIds } from './judge.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const RUNNER = join(here, '..', 'mutants.mjs');
const LISTS = 'scripts/mutants/fixtures/lists';
/** The fixture's hanging mutant must be stopped well before a real run's limit. */
const RUN_LIMIT_S = 20;
const scratch = mkdtempSync(join(tmpdir(), 'tenon-mutants-selftest-'));
let failed = 0;

function runner(extra, env = {}) {
  const result = spawnSync(process.execPath, [RUNNER, '--lists', LISTS, '--run-limit', String(RUN_LIMIT_S), '--json', ...extra], {
    encoding: 'utf8',
    env: { ...process.env, ...env },
  });
  const lines = result.stdout.trimEnd().split('\n');
  const start = result.stdout.indexOf('{');
  let record;
  try {
    record = JSON.parse(result.stdout.slice(start, result.stdout.lastIndexOf('}') + 1));
  } catch {
    throw new Error(`runner printed no JSON (rc ${result.status}):\n${result.stdout}\n${result.stderr}`);
  }
  return { status: result.status, last: lines.at(-1), record, stdout: result.stdout };
}

async function check(name, fn) {
  const t0 = Date.now();
  try {
    await fn();
    console.log(`ok    ${name} (${((Date.now() - t0) / 1000).toFixed(1)}s)`);
  } catch (error) {
    failed += 1;
    console.log(`FAIL  ${name}\n${error.stack ?? error}`);
  }
}

await check('title IDs and the test-name pattern select the same tests', () => {
  assert.deepEqual(titleIds('[A][B, C] text [D]'), ['A', 'B', 'C']);
  const pattern = new RegExp(idPattern(['G1-move', 'O5']));
  assert.ok(pattern.test('suite [G1-move] moves'));
  assert.ok(pattern.test('[IO4, O5] checks access'));
  assert.ok(pattern.test('[G1-move][G2-x] both'));
  assert.ok(!pattern.test('[G1-moved] a longer ID'), 'an ID is matched whole, never as a prefix');
  assert.ok(!pattern.test('[IO5] another ID ending the same way'));
  assert.ok(!pattern.test('G1-move without brackets'));
  assert.ok(new RegExp(idPattern(['a.b'])).test('[a.b] dots are literal') && !new RegExp(idPattern(['a.b'])).test('[axb] not any char'));
});

await check('every verdict of the fake mutants, the summary line and the --report record', () => {
  const reportFile = join(scratch, 'report.json');
  const { status, last, record } = runner(['--report', reportFile]);
  const verdicts = Object.fromEntries(record.results.map((r) => [r.id, r.verdict]));
  assert.deepEqual(verdicts, {
    'fx-stale': 'stale',
    'fx-unguarded': 'unguarded',
    'fx-timeout': 'timeout',
    'fx-killed': 'killed',
    'fx-survived': 'survived',
    'fx-failed-elsewhere': 'failed-elsewhere',
    'fx-focus-killed': 'killed',
    'fx-focus-missed': 'killed',
    'fx-focus-stale': 'stale',
    'fx-browser-killed': 'killed',
  });
  // fx-killed: the run stopped at the first failed named test, so the third named test never ran.
  assert.equal(record.results.find((r) => r.id === 'fx-killed').detail, '1 of 3 named tests failed');
  // A focus that catches the mutant decides alone; one that does not is said, and every named test still runs.
  assert.equal(record.results.find((r) => r.id === 'fx-focus-killed').detail, '1 of 3 named tests failed');
  assert.equal(record.results.find((r) => r.id === 'fx-focus-missed').detail, '1 of 3 named tests failed (its focus "inside the range" did not kill it)');
  assert.equal(record.results.find((r) => r.id === 'fx-focus-stale').detail, 'its focus "a title no test has" selects no passing named test');
  assert.equal(last, 'mutants: 4 killed of 10 (1 survived, 1 failed-elsewhere, 1 timeout, 1 unguarded, 2 stale)');
  assert.equal(status, 1, 'a run with anything but kills fails');
  assert.equal(record.leaks, undefined, 'restored files left nothing behind (the leak checks passed)');
  const report = JSON.parse(readFileSync(reportFile, 'utf8'));
  assert.equal(report.kind, 'tenon-mutants');
  assert.equal(report.ok, false);
  assert.equal(report.line, last);
  assert.equal(report.killed, 4);
  assert.equal(report.total, 10);
});

await check('--only: a run of kills passes', () => {
  const { status, last } = runner(['--only', 'fx-killed,fx-browser-killed']);
  assert.equal(last, 'mutants: 2 killed of 2');
  assert.equal(status, 0);
});

await check('a restore the node lane is not told of is caught as a leak', () => {
  // The node lane has no file watcher: without the runner's invalidation it would keep the mutated module,
  // and the leak check must say so. The browser lane's Vite server also watches the copy's files, so it may
  // pick up the restore on its own; it must then pass its leak check (no false leak).
  const { status, last, record } = runner(['--only', 'fx-killed,fx-browser-killed'], { TENON_MUTANTS_FAULT: 'no-invalidate-on-restore' });
  assert.deepEqual(
    record.results.map((r) => r.verdict),
    ['killed', 'killed'],
  );
  const leaked = (record.leaks ?? []).map((l) => l.lane);
  assert.ok(leaked.includes('node'), `node lane leak not reported: ${JSON.stringify(record.leaks)}`);
  assert.match(last, /^mutants: 2 killed of 2 \(leak check failed: node lane after 1 mutant\(s\)/);
  assert.equal(status, 1);
});

rmSync(scratch, { recursive: true, force: true });
console.log(failed === 0 ? 'mutants selftest: all cases pass' : `mutants selftest: ${failed} case(s) failed`);
process.exit(failed === 0 ? 0 : 1);

// Totals every step of `npm test` into one line: `tenon: N passed, M failed[, K skipped]`.
// A check step (type check, contracts) counts as one test. A vitest lane counts its tests from the JSON
// report; a lane that exited non-zero without a report (crash, bad config) counts as one failure, and a
// lane whose report shows no failures but whose process failed adds one failure, so the line can never
// read clean when something broke. Exit status: 0 only when nothing failed.
// Mutants are not tests: the step named `mutants` (scripts/mutants.mjs --report) adds nothing to `passed`.
// Its own line (`mutants: N killed of M ...`, from the report) is printed just before the tenon line; when
// the step failed (a mutant not killed, a failed control run, a crash, no report) it counts as one failure,
// so the tenon line and the exit status can never read clean.
import { existsSync, readFileSync } from 'node:fs';

const argv = process.argv.slice(2);
const dirAt = argv.indexOf('--dir');
const dir = dirAt >= 0 ? argv.splice(dirAt, 2)[1] : '.vitest-reports';
/** The step whose report is a mutant record, never a test count. */
const MUTANT_STEP = 'mutants';
/** A step's exit status; a step that left none did not finish (1). */
const statusOf = (name) => (existsSync(`${dir}/${name}.status`) ? Number(readFileSync(`${dir}/${name}.status`, 'utf8').trim()) : 1);
const rows = [];
let mutantLine;
for (const name of argv) {
  const status = statusOf(name);
  if (name === MUTANT_STEP) {
    const reportFile = `${dir}/${name}.json`;
    let report;
    try {
      report = existsSync(reportFile) ? JSON.parse(readFileSync(reportFile, 'utf8')) : undefined;
    } catch {
      report = undefined;
    }
    const valid = report?.kind === 'tenon-mutants' && typeof report.line === 'string';
    const clean = status === 0 && valid && report.ok === true;
    mutantLine = valid ? report.line : `mutants: no report (exit ${status})`;
    const note = valid ? `${report.killed} killed of ${report.total}${status !== 0 ? `, exit ${status}` : ''}` : `no report, exit ${status}`;
    rows.push({ name, passed: '-', failed: clean ? 0 : 1, skipped: '-', note: `not tests: ${note}` });
    continue;
  }
  const reportFile = `${dir}/${name}.json`;
  if (existsSync(reportFile)) {
    const report = JSON.parse(readFileSync(reportFile, 'utf8'));
    // Playwright's JSON reporter (the e2e lane) counts in `stats`; vitest's in num*Tests.
    const pw = report.numPassedTests === undefined ? report.stats : undefined;
    const passed = pw ? (pw.expected ?? 0) + (pw.flaky ?? 0) : (report.numPassedTests ?? 0);
    let failed = pw ? (pw.unexpected ?? 0) : (report.numFailedTests ?? 0);
    const skipped = pw ? (pw.skipped ?? 0) : (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
    if (status !== 0 && failed === 0) failed = 1;
    rows.push({ name, passed, failed, skipped, note: status !== 0 ? `exit ${status}` : '' });
  } else {
    rows.push({ name, passed: status === 0 ? 1 : 0, failed: status === 0 ? 0 : 1, skipped: 0, note: status === 0 ? 'check' : `check, exit ${status}` });
  }
}

const pad = (s, n) => String(s).padEnd(n);
console.log(`${pad('step', 20)}${pad('passed', 8)}${pad('failed', 8)}${pad('skipped', 8)}note`);
for (const r of rows) console.log(`${pad(r.name, 20)}${pad(r.passed, 8)}${pad(r.failed, 8)}${pad(r.skipped, 8)}${r.note}`);
const count = (n) => (typeof n === 'number' ? n : 0);
const total = rows.reduce((t, r) => ({ passed: t.passed + count(r.passed), failed: t.failed + r.failed, skipped: t.skipped + count(r.skipped) }), {
  passed: 0,
  failed: 0,
  skipped: 0,
});
if (mutantLine !== undefined) console.log(mutantLine);
const tail = total.skipped > 0 ? `, ${total.skipped} skipped` : '';
console.log(`tenon: ${total.passed} passed, ${total.failed} failed${tail}`);
process.exit(total.failed === 0 ? 0 : 1);

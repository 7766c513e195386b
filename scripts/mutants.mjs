// `npm run mutants`: each designated bad implementation in contracts/mutants/*.json must make a test that
// names one of the mutant's guarantees fail (DESIGN.md: a guarantee is not done until its mutation is
// killed).
//
// Contract. Mutants are applied in a private copy of the working tree (tracked and untracked, non-ignored
// files; node_modules linked), a sibling of the checkout so `../shared` still resolves. The checkout itself
// is never edited, so other work in it (people, editors, git commits) can never see a mutated file. For
// each mutant: apply one exact text replacement to one source file of the copy, run the named test files
// in its lane (`"lane": "node"` by default, or `"browser"`), read the lane's vitest JSON report, restore the
// file byte for byte.
//
// Verdicts (one line per mutant):
//   killed            a test whose title (or an enclosing describe title) starts with a bracket group
//                     naming one of the mutant's guarantee IDs failed: the guarantee's own test caught it
//   survived          every test passed
//   failed-elsewhere  the run failed, but not in a test naming the mutant's IDs (another test, a hook, a
//                     file that failed to load, an unhandled error): the guarantee's test did not catch it
//   crashed           the runner ended without a usable report, or the report lacks a requested file
//   timeout           the run was stopped after RUN_LIMIT_MS
//   unguarded         the control run found no passing test naming the mutant's IDs in its files
//   stale             the `find` text is missing or not unique (the list went stale)
// Only `killed` passes; anything else makes the run exit 1. Before any mutant, a control run per lane
// checks that the suites pass unmutated (otherwise a failure would mean nothing). The last line is always
// `mutants: N killed of M`, followed by the other verdicts in parentheses when there are any.
// Usage: node scripts/mutants.mjs [--only ID[,ID]] [--json] [--report FILE]
// --report writes a JSON record ({ kind: 'tenon-mutants', ok, killed, total, line, results }) that
// scripts/summary.mjs prints on its own line; mutants are never counted as tests.
// Processes: every lane run is its own process group, killed as a group when it ends or times out, so a
// stopped run leaves no vitest or Chromium behind.
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/** A suite run longer than this is stopped and reported as `timeout` (never as a kill). */
const RUN_LIMIT_MS = 5 * 60 * 1000;
/** The control run of a lane runs every suite the selected mutants name at once, so it may take longer. */
const CONTROL_LIMIT_MS = 30 * 60 * 1000;
/** How much of a run's output is kept to show when a control run fails. */
const OUTPUT_TAIL_CHARS = 4000;
/** Failing tests named on a `failed-elsewhere` line. */
const SHOWN_FAILURES = 3;
const VERDICTS = ['killed', 'survived', 'failed-elsewhere', 'crashed', 'timeout', 'unguarded', 'stale'];

const checkout = join(dirname(fileURLToPath(import.meta.url)), '..');
const mutantDir = join(checkout, 'contracts/mutants');
const mutants = readdirSync(mutantDir)
  .filter((f) => f.endsWith('.json'))
  .sort()
  .flatMap((f) => JSON.parse(readFileSync(join(mutantDir, f), 'utf8')).mutants.map((m) => ({ ...m, list: f })));

const args = process.argv.slice(2);
const onlyArg = args.find((a) => a.startsWith('--only'));
const only = onlyArg ? (onlyArg.includes('=') ? onlyArg.split('=')[1] : args[args.indexOf(onlyArg) + 1]).split(',') : undefined;
const json = args.includes('--json');
const reportAt = args.indexOf('--report');
const reportFile = reportAt >= 0 ? args[reportAt + 1] : undefined;

/** Ends the run: the summary line, the --report record, the exit status. */
function finish(results, total, extra = {}) {
  const counts = Object.fromEntries(VERDICTS.map((v) => [v, results.filter((r) => r.verdict === v).length]));
  const others = [
    ...VERDICTS.filter((v) => v !== 'killed' && counts[v] > 0).map((v) => `${counts[v]} ${v}`),
    ...(extra.control ? [`control run failed: ${extra.control}`] : []),
  ];
  const ok = others.length === 0 && counts.killed === total;
  const line = `mutants: ${counts.killed} killed of ${total}${others.length ? ` (${others.join(', ')})` : ''}`;
  if (json) console.log(JSON.stringify({ killed: counts.killed, total, counts, ...extra, results }, null, 2));
  console.log(line);
  if (reportFile) writeFileSync(reportFile, JSON.stringify({ kind: 'tenon-mutants', ok, killed: counts.killed, total, counts, line, ...extra, results }, null, 2));
  process.exit(ok ? 0 : 1);
}

const ids = mutants.map((m) => m.id);
const duplicate = ids.find((id, i) => ids.indexOf(id) !== i);
if (duplicate !== undefined) {
  console.log(`mutants: mutant id ${duplicate} appears twice in contracts/mutants/*.json`);
  process.exit(2);
}
const unknown = (only ?? []).filter((id) => !ids.includes(id));
if (unknown.length > 0) {
  console.log(`mutants: --only names unknown mutant(s): ${unknown.join(', ')}`);
  process.exit(2);
}
const selected = mutants.filter((m) => !only || only.includes(m.id));

// Mutant runs write their vitest reports here, never over the lane reports of `npm test`.
const scratch = mkdtempSync(join(tmpdir(), 'tenon-mutants-'));

// The private copy the mutants are applied to.
const root = realpathSync(mkdtempSync(join(checkout, '..', '.tenon-mutants-')));
const laneEnv = { ...process.env, FORCE_COLOR: '0', TENON_REPORT_DIR: scratch };

let restore;
let running;
const restoreNow = () => {
  if (restore) {
    restore();
    restore = undefined;
  }
};
const killGroup = (pid) => {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // the group is already gone
  }
};
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    if (running !== undefined) killGroup(running);
    restoreNow();
    process.exit(130);
  });
}
process.on('exit', () => {
  restoreNow();
  rmSync(scratch, { recursive: true, force: true });
  rmSync(root, { recursive: true, force: true });
});

const files = await new Promise((resolve) => {
  const git = spawn('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: checkout });
  const chunks = [];
  git.stdout.on('data', (c) => chunks.push(c));
  git.on('close', (code) => resolve(code === 0 ? Buffer.concat(chunks).toString('utf8') : undefined));
});
if (files === undefined) {
  console.log('mutants: cannot list the working tree (git ls-files failed)');
  process.exit(1);
}
for (const rel of files.split('\0').filter(Boolean)) {
  mkdirSync(dirname(join(root, rel)), { recursive: true });
  try {
    cpSync(join(checkout, rel), join(root, rel));
  } catch {
    // listed but deleted in the working tree: not part of it
  }
}
symlinkSync(join(checkout, 'node_modules'), join(root, 'node_modules'), 'dir');

/** Runs the lane over the test files in its own process group; resolves with exit status and parsed report. */
function runLane(lane, tests, limit = RUN_LIMIT_MS) {
  const reportPath = join(scratch, `${lane}.json`);
  rmSync(reportPath, { force: true });
  return new Promise((resolve) => {
    const child = spawn('bash', ['scripts/lane.sh', lane, ...tests], { cwd: root, env: laneEnv, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    running = child.pid;
    let output = '';
    const keep = (chunk) => {
      output = (output + chunk.toString('utf8')).slice(-OUTPUT_TAIL_CHARS);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child.pid);
    }, limit);
    // Whatever the lane left running in its group (a browser, a worker fork) ends with it: such a leftover
    // may hold the output pipes open, so the run is over when the lane's own process exits.
    child.on('exit', () => killGroup(child.pid));
    child.on('close', (status, signal) => {
      clearTimeout(timer);
      killGroup(child.pid);
      running = undefined;
      let report;
      try {
        report = existsSync(reportPath) ? JSON.parse(readFileSync(reportPath, 'utf8')) : undefined;
      } catch {
        report = undefined;
      }
      resolve({ status, signal, timedOut, output, report });
    });
  });
}

/** Guarantee IDs named by the leading bracket groups of a title: '[A][B, C] text' -> A, B, C. */
function titleIds(title) {
  const found = [];
  let rest = title.trimStart();
  while (rest.startsWith('[')) {
    const close = rest.indexOf(']');
    if (close < 0) break;
    for (const part of rest.slice(1, close).split(',')) if (part.trim() !== '') found.push(part.trim());
    rest = rest.slice(close + 1).trimStart();
  }
  return found;
}

/** Every test of a report, with its file relative to the copy and the IDs its title or describes name. */
function testsOf(report) {
  return report.testResults.flatMap((file) =>
    file.assertionResults.map((a) => ({
      file: relative(root, file.name),
      name: a.fullName,
      status: a.status,
      ids: new Set([a.title, ...(a.ancestorTitles ?? [])].flatMap(titleIds)),
    })),
  );
}

const names = (m, tests) => tests.filter((t) => m.tests.includes(t.file) && m.guarantees.some((id) => t.ids.has(id)));

/** The verdict of one mutant run from its exit status and report. */
function judge(m, run) {
  if (run.timedOut) return { verdict: 'timeout', detail: `stopped after ${RUN_LIMIT_MS / 1000}s` };
  if (run.report === undefined || !Array.isArray(run.report.testResults)) {
    return { verdict: 'crashed', detail: `no report (exit ${run.status ?? run.signal})` };
  }
  const missing = m.tests.filter((f) => !run.report.testResults.some((r) => relative(root, r.name) === f));
  if (missing.length > 0) return { verdict: 'crashed', detail: `no results for ${missing.join(', ')} (exit ${run.status ?? run.signal})` };
  const tests = testsOf(run.report);
  const named = names(m, tests);
  const caught = named.filter((t) => t.status === 'failed');
  if (caught.length > 0) return { verdict: 'killed', detail: `${caught.length} of ${named.length} named tests failed` };
  const elsewhere = tests.filter((t) => t.status === 'failed').map((t) => `${t.file} > ${t.name}`);
  const broken = run.report.testResults
    .filter((r) => r.status === 'failed' && !r.assertionResults.some((a) => a.status === 'failed'))
    .map((r) => `${relative(root, r.name)} (${r.message ? `did not load: ${r.message.split('\n')[0]}` : 'hook or suite error'})`);
  if (run.status !== 0 || elsewhere.length > 0 || broken.length > 0) {
    const where = [...elsewhere, ...broken];
    const shown = where.length ? `${where.slice(0, SHOWN_FAILURES).join('; ')}${where.length > SHOWN_FAILURES ? `; +${where.length - SHOWN_FAILURES} more` : ''}` : `exit ${run.status} with every test passing (unhandled error?)`;
    return { verdict: 'failed-elsewhere', detail: `0 of ${named.length} named tests failed; failed instead: ${shown}` };
  }
  const skipped = named.filter((t) => t.status !== 'passed').length;
  return { verdict: 'survived', detail: `${named.length} named tests passed${skipped ? ` (${skipped} did not run)` : ''}` };
}

// Control: the suites must pass on the unmutated tree, or a failure would mean nothing; it also finds the
// tests that name each mutant's guarantees (a mutant nothing names can never be killed).
const laneOf = (m) => m.lane ?? 'node';
const results = [];
const named = new Map();
for (const lane of [...new Set(selected.map(laneOf))]) {
  const inLane = selected.filter((m) => laneOf(m) === lane);
  const suites = [...new Set(inLane.flatMap((m) => m.tests))];
  const control = await runLane(lane, suites, CONTROL_LIMIT_MS);
  if (control.timedOut || control.status !== 0 || control.report === undefined) {
    console.log(control.output);
    const why = control.timedOut ? 'timed out' : control.report === undefined ? `exit ${control.status ?? control.signal}, no report` : `exit ${control.status}`;
    console.log(`control  ${lane} suites fail unmutated (${why}): ${suites.join(' ')}`);
    finish([], selected.length, { control: `${lane} lane, ${why}` });
  }
  const tests = testsOf(control.report);
  for (const m of inLane) named.set(m.id, names(m, tests).filter((t) => t.status === 'passed').length);
  if (!json) console.log(`control  ${lane} suites pass unmutated: ${suites.join(' ')}`);
}

for (const m of selected) {
  const line = (r) => {
    results.push(r);
    if (!json) console.log(`${r.verdict.padEnd(17)}${m.id.padEnd(36)}${(r.seconds === undefined ? '-' : `${r.seconds}s`).padStart(8)}  (${m.guarantees.join(', ')}) ${r.detail}`);
  };
  const base = { id: m.id, list: m.list, lane: laneOf(m), guarantees: m.guarantees };
  if (named.get(m.id) === 0) {
    line({ ...base, verdict: 'unguarded', detail: `no passing test in ${m.tests.join(', ')} names ${m.guarantees.join(' or ')}` });
    continue;
  }
  const file = join(root, m.file);
  const original = readFileSync(file, 'utf8');
  const at = original.indexOf(m.find);
  if (at < 0 || original.indexOf(m.find, at + 1) >= 0) {
    line({ ...base, verdict: 'stale', detail: at < 0 ? 'find text not present' : 'find text not unique' });
    continue;
  }
  restore = () => writeFileSync(file, original);
  writeFileSync(file, original.slice(0, at) + m.replace + original.slice(at + m.find.length));
  const t0 = Date.now();
  const run = await runLane(laneOf(m), m.tests);
  restoreNow();
  line({ ...base, ...judge(m, run), seconds: ((Date.now() - t0) / 1000).toFixed(1) });
}

finish(results, selected.length);

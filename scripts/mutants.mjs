// `npm run mutants`: each designated bad implementation in contracts/mutants/*.json must make the named
// guarantee suites fail (DESIGN.md: a guarantee is not done until its mutation is killed).
// Mutants are applied in a private copy of the working tree (tracked and untracked, non-ignored files;
// node_modules linked), a sibling of the checkout so `../shared` still resolves. The checkout itself is
// never edited, so other work in it (people, editors, git commits) can never see a mutated file.
// For each mutant: apply one exact text replacement to one source file of the copy, run the named test
// files in its lane (`"lane": "node"` by default, or `"browser"`), expect a failure, restore the file byte
// for byte. A mutant whose `find` text is missing is an error (the list went stale), not a pass.
// Usage: node scripts/mutants.mjs [--only ID[,ID]] [--json] [--report FILE]
// --report writes a vitest-style count (numPassedTests = killed, numFailedTests = survived or stale) that
// scripts/summary.mjs adds to the `npm test` total.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const checkout = join(dirname(fileURLToPath(import.meta.url)), '..');
const mutantDir = join(checkout, 'contracts/mutants');
const list = {
  mutants: readdirSync(mutantDir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .flatMap((f) => JSON.parse(readFileSync(join(mutantDir, f), 'utf8')).mutants),
};
const args = process.argv.slice(2);
const onlyArg = args.find((a) => a.startsWith('--only'));
const only = onlyArg ? (onlyArg.includes('=') ? onlyArg.split('=')[1] : args[args.indexOf(onlyArg) + 1]).split(',') : undefined;
const json = args.includes('--json');
const reportAt = args.indexOf('--report');
const reportFile = reportAt >= 0 ? args[reportAt + 1] : undefined;

// Mutant runs write their vitest reports here, never over the lane reports of `npm test`.
const scratch = mkdtempSync(join(tmpdir(), 'tenon-mutants-'));

// The private copy the mutants are applied to.
const root = mkdtempSync(join(checkout, '..', '.tenon-mutants-'));
const files = spawnSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: checkout, encoding: 'utf8' });
if (files.status !== 0) {
  console.log('mutants: cannot list the working tree (git ls-files failed)');
  process.exit(1);
}
for (const rel of files.stdout.split('\0').filter(Boolean)) {
  mkdirSync(dirname(join(root, rel)), { recursive: true });
  try {
    cpSync(join(checkout, rel), join(root, rel));
  } catch {
    // listed but deleted in the working tree: not part of it
  }
}
symlinkSync(join(checkout, 'node_modules'), join(root, 'node_modules'), 'dir');
const laneEnv = { ...process.env, FORCE_COLOR: '0', TENON_REPORT_DIR: scratch };

let restore;
const restoreNow = () => {
  if (restore) {
    restore();
    restore = undefined;
  }
};
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    restoreNow();
    process.exit(130);
  });
}
process.on('exit', () => {
  restoreNow();
  rmSync(scratch, { recursive: true, force: true });
  rmSync(root, { recursive: true, force: true });
});

const selected = list.mutants.filter((m) => !only || only.includes(m.id));

// Control: the suites must pass on the unmutated tree, or a "kill" would mean nothing.
const laneOf = (m) => m.lane ?? 'node';
/** A suite run longer than this is stopped; for a mutant that counts as killed (it broke the suite), noted. */
const RUN_LIMIT_MS = 5 * 60 * 1000;
const runLane = (lane, tests) =>
  spawnSync('bash', ['scripts/lane.sh', lane, ...tests], {
    cwd: root,
    encoding: 'utf8',
    env: laneEnv,
    maxBuffer: 64 * 1024 * 1024,
    timeout: RUN_LIMIT_MS,
    killSignal: 'SIGKILL',
  });
const suites = [...new Set(selected.flatMap((m) => m.tests))];
const failedControl = [...new Set(selected.map(laneOf))]
  .map((lane) => runLane(lane, [...new Set(selected.filter((m) => laneOf(m) === lane).flatMap((m) => m.tests))]))
  .find((run) => run.status !== 0);
if (failedControl !== undefined) {
  const control = failedControl;
  console.log(control.stdout.slice(-4000));
  if (reportFile) writeFileSync(reportFile, JSON.stringify({ numPassedTests: 0, numFailedTests: 1, control: 'failed' }));
  console.log(`mutants: control run failed — the suites must pass unmutated (${suites.join(' ')})`);
  process.exit(1);
}
if (!json) console.log(`control  suites pass unmutated: ${suites.join(' ')}`);

const results = [];
for (const m of selected) {
  const file = join(root, m.file);
  const original = readFileSync(file, 'utf8');
  const at = original.indexOf(m.find);
  if (at < 0 || original.indexOf(m.find, at + 1) >= 0) {
    results.push({ id: m.id, verdict: 'stale', detail: at < 0 ? 'find text not present' : 'find text not unique' });
    continue;
  }
  restore = () => writeFileSync(file, original);
  writeFileSync(file, original.slice(0, at) + m.replace + original.slice(at + m.find.length));
  const t0 = Date.now();
  const run = runLane(laneOf(m), m.tests);
  restoreNow();
  const seconds = ((Date.now() - t0) / 1000).toFixed(1);
  const killed = run.status !== 0;
  const timedOut = run.error !== undefined && /ETIMEDOUT/.test(String(run.error.code ?? run.error));
  results.push({ id: m.id, guarantees: m.guarantees, verdict: killed ? 'killed' : 'survived', seconds, ...(timedOut ? { note: 'timeout' } : {}) });
  if (!json) console.log(`${killed ? 'killed  ' : 'SURVIVED'} ${m.id.padEnd(34)} ${seconds}s  (${m.guarantees.join(', ')})${timedOut ? ' [suite hung: stopped]' : ''}`);
}

const killed = results.filter((r) => r.verdict === 'killed').length;
const bad = results.filter((r) => r.verdict !== 'killed');
if (json) console.log(JSON.stringify({ killed, total: results.length, results }, null, 2));
else {
  for (const r of bad.filter((r) => r.verdict === 'stale')) console.log(`STALE    ${r.id}: ${r.detail}`);
  console.log(`mutants: ${killed}/${results.length} killed${bad.length ? ` — ${bad.length} not killed` : ''}`);
}
if (reportFile) {
  writeFileSync(reportFile, JSON.stringify({ numPassedTests: killed, numFailedTests: bad.length, numPendingTests: 0, numTodoTests: 0, results }, null, 2));
}
process.exit(bad.length === 0 ? 0 : 1);

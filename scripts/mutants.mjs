// `npm run mutants`: each designated bad implementation in contracts/mutants/*.json must make a test that
// names one of the mutant's guarantees fail (DESIGN.md: a guarantee is not done until its mutation is
// killed).
//
// Contract. Mutants are applied in private copies of the working tree (tracked and untracked, non-ignored
// files; node_modules linked), siblings of the checkout so `../shared` still resolves. The checkout itself
// is never edited, so other work in it (people, editors, git commits) can never see a mutated file. The
// run is split over parallel jobs (--jobs N, default 2, at most MAX_JOBS): each job has
// its own copy, and at most one mutant applied in it at a time, so a mutant is visible only to its own
// job's lane. The lanes (`"lane": "node"` by default, `"node-relaxed"` (Node with V8's relaxed-SIMD flag)
// or `"browser"`) take turns; each lane's jobs (all of them for a Node lane, one for the browser lane) run side by side, each ONE warm vitest instance of the
// lane (scripts/mutants/lane-server.mjs: vitest's Node API; the browser lane keeps one Vite server and one
// Chromium) in its job's copy, taking the lane's mutants one by one from its shared queue until none is
// left. For each mutant: apply one exact text replacement to one source file of the copy, have the
// lane drop what it cached of that file (the node lane rebuilds dist/workers, its Node build, when the
// build reads the file and the run uses the build: a named test file the lanes saw start a worker or child
// process from dist/workers, or any run caught doing so on the stale build, which is then thrown away and
// run again rebuilt; scripts/mutants/lane-server.mjs), run the named test files with only the tests whose titles carry the mutant's IDs selected, restore
// the file byte for byte, and have the lane drop its cache of the file again. A mutant may name a `focus`
// (text in the full names of the named tests that exercise its code, e.g. its weight kind): those run
// first, and anything but a kill there goes on to all the named tests; a focus that selects no passing
// named test in the control is reported `stale`. A run that is not a kill is
// repeated with every test of the named files selected (still mutated), so `survived` and
// `failed-elsewhere` mean exactly what they mean for a whole-file run. A change to the lane's own vitest
// config cannot be invalidated: such a mutant gets a fresh lane, before and after.
//
// Verdicts (one line per mutant):
//   killed            a test whose title (or an enclosing describe title) starts with a bracket group
//                     naming one of the mutant's guarantee IDs failed: the guarantee's own test caught it
//   survived          every test passed
//   failed-elsewhere  the run failed, but not in a test naming the mutant's IDs (another test, a hook, a
//                     file that failed to load, an unhandled error): the guarantee's test did not catch it
//   crashed           the lane gave no usable result (the lane died, the node build failed), or no result
//                     for a requested file
//   timeout           the run was stopped after RUN_LIMIT_MS (the lane is then restarted, cold)
//   unguarded         the control run found no passing test naming the mutant's IDs in its files
//   stale             the `find` text is missing or not unique (the list went stale)
// Only `killed` passes; anything else makes the run exit 1. Before any mutant, a control run per lane
// checks that the suites pass unmutated (otherwise a failure would mean nothing). Isolation is checked,
// not assumed: every LEAK_CHECK_EVERY mutants of a job's lane, and after its last, each file mutated there
// since the last check is checked once, in that job's lane: a test that killed the last mutant of that file (of its failed named tests,
// the quickest in the control run) runs again on the restored tree and must pass. A file's state at the
// check is its last write, so a restore the lane's modules missed shows as that mutant's code and fails
// its killing test again (a missed restore of an earlier mutant of the file was overwritten by the later
// mutant's write, which the lane was told of). A failure there is a leak (a mutant's effect outlived its restore), reported on the
// summary line and failing the run. A mutant that was not killed fails the run anyway. The
// last line is always `mutants: N killed of M`, followed by the other verdicts and failures in
// parentheses when there are any.
// Usage: node scripts/mutants.mjs [--only ID[,ID]] [--jobs N] [--json] [--report FILE]
// --jobs N (or TENON_MUTANT_JOBS=N; `cores`: one per core) sets the number of parallel jobs (default 2).
// --report writes a JSON record ({ kind: 'tenon-mutants', ok, killed, total, line, results }) that
// scripts/summary.mjs prints on its own line; mutants are never counted as tests.
// --lane-reports DIR takes each lane's control from DIR/<lane>.json, the JSON report of a lane run of the same
// tree (`npm test` passes its own): when every suite the lane's mutants name is in it and passed, that run
// is the control and the suites are not run a second time; otherwise the control runs as usual.
// --lists DIR reads the mutant lists from DIR instead of contracts/mutants, --run-limit SECONDS replaces
// RUN_LIMIT_MS (both for the runner's self-test, scripts/mutants/selftest.mjs).
// Processes: each lane is its own process group, killed as a group when it closes, times out, or the
// runner ends, so a stopped run leaves no vitest or Chromium behind.
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { VERDICTS, idPattern, judge, namedTests, summaryLine, testsOf } from './mutants/judge.mjs';
import { LaneClient, killGroup, liveServers } from './mutants/lane-client.mjs';

/** A mutant's run longer than this is stopped and reported as `timeout` (never as a kill). */
const DEFAULT_RUN_LIMIT_MS = 5 * 60 * 1000;
/** The control run of a lane runs every suite the selected mutants name at once, so it may take longer. */
const CONTROL_LIMIT_MS = 30 * 60 * 1000;
/** Mutants of a lane between two leak checks (there is always one after a lane's last mutant). */
const LEAK_CHECK_EVERY = 50;
/** The most parallel jobs (private copies, each with its own warm lane) a run uses. */
const MAX_JOBS = 4;

const checkout = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const option = (name) => {
  const at = args.findIndex((a) => a === name || a.startsWith(`${name}=`));
  if (at < 0) return undefined;
  return args[at].includes('=') ? args[at].slice(name.length + 1) : args[at + 1];
};
const only = option('--only')?.split(',');
const json = args.includes('--json');
const reportFile = option('--report');
const laneReports = option('--lane-reports');
const mutantDir = join(checkout, option('--lists') ?? 'contracts/mutants');
const RUN_LIMIT_MS = option('--run-limit') !== undefined ? Number(option('--run-limit')) * 1000 : DEFAULT_RUN_LIMIT_MS;
/**
 * Fault seam for the self-test (scripts/mutants/selftest.mjs), never set otherwise:
 * `no-invalidate-on-restore` restores a mutated file without telling its lane, which must then be caught
 * as a leak.
 */
const FAULT = process.env['TENON_MUTANTS_FAULT'];

const mutants = readdirSync(mutantDir)
  .filter((f) => f.endsWith('.json'))
  .sort()
  .flatMap((f) => JSON.parse(readFileSync(join(mutantDir, f), 'utf8')).mutants.map((m) => ({ ...m, list: f })));

const laneOf = (m) => m.lane ?? 'node';
const results = [];
const failures = [];
let selected = [];

/** Ends the run: the summary line, the --report record, the exit status. */
function finish(extra = {}) {
  const order = new Map(selected.map((m, i) => [m.id, i]));
  results.sort((a, b) => order.get(a.id) - order.get(b.id));
  const total = selected.length;
  const counts = Object.fromEntries(VERDICTS.map((v) => [v, results.filter((r) => r.verdict === v).length]));
  const others = [
    ...VERDICTS.filter((v) => v !== 'killed' && counts[v] > 0).map((v) => `${counts[v]} ${v}`),
    ...(extra.control ? [`control run failed: ${extra.control}`] : []),
    ...failures.map((f) => `leak check failed: ${f.lane} lane after ${f.after}`),
  ];
  const ok = others.length === 0 && counts.killed === total;
  const line = summaryLine(counts, total, others);
  const record = { killed: counts.killed, total, counts, ...extra, ...(failures.length ? { leaks: failures } : {}), results };
  if (json) console.log(JSON.stringify(record, null, 2));
  console.log(line);
  if (reportFile) writeFileSync(reportFile, JSON.stringify({ kind: 'tenon-mutants', ok, ...record, line }, null, 2));
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
selected = mutants.filter((m) => !only || only.includes(m.id));

// Parallel jobs (--jobs N or TENON_MUTANT_JOBS=N, at most MAX_JOBS; `--jobs cores` uses the machine's
// cores; default 2, one per core of the 2-core CI machine; TENON_MUTANT_JOBS=1 runs them one by one): each job is
// a private copy of the tree with its own warm lane, pulling the next mutant of a lane from that lane's
// queue, so a mutant is only ever visible in its own job's copy and lane.
const jobsAsked = option('--jobs') ?? process.env['TENON_MUTANT_JOBS'] ?? '2';
const jobs = Math.max(1, Math.min(MAX_JOBS, Math.floor(jobsAsked === 'cores' ? availableParallelism() : Number(jobsAsked)) || 1));
// TENON_FC_END_ON_FAILURE: a property a mutant breaks ends at its first counterexample instead of
// shrinking it (contracts/support/fc.ts); the verdict needs only the failure, and shrinking a broken kernel
// over a software adapter costs more than the run itself.
const laneEnv = { ...process.env, FORCE_COLOR: '0', TENON_FC_END_ON_FAILURE: '1' };

/** The private copies (one per job), removed when the runner exits. */
const copies = [];
/** Each job's pending restore of the file it mutated (run when the runner is stopped mid-mutant). */
const restores = new Set();
const restoreAll = () => {
  for (const restore of restores) restore();
  restores.clear();
};
const stopLanes = () => {
  for (const pid of liveServers) killGroup(pid);
};
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    stopLanes();
    restoreAll();
    process.exit(130);
  });
}
process.on('exit', () => {
  stopLanes();
  restoreAll();
  for (const copy of copies) rmSync(copy, { recursive: true, force: true });
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
const treeFiles = files.split('\0').filter(Boolean);

/** A fresh private copy of the working tree (a sibling of the checkout, so `../shared` resolves). */
function makeCopy() {
  const root = realpathSync(mkdtempSync(join(checkout, '..', '.tenon-mutants-')));
  copies.push(root);
  for (const rel of treeFiles) {
    mkdirSync(dirname(join(root, rel)), { recursive: true });
    try {
      cpSync(join(checkout, rel), join(root, rel));
    } catch {
      // listed but deleted in the working tree: not part of it
    }
  }
  symlinkSync(join(checkout, 'node_modules'), join(root, 'node_modules'), 'dir');
  return root;
}

const seconds = (ms) => (ms / 1000).toFixed(1);
const say = (text) => {
  if (!json) console.log(text);
};

/** One line per mutant, as it is judged. */
function record(m, r) {
  results.push(r);
  say(`${r.verdict.padEnd(17)}${m.id.padEnd(36)}${(r.seconds === undefined ? '-' : `${r.seconds}s`).padStart(8)}  (${m.guarantees.join(', ')}) ${r.detail}`);
}

/**
 * Specs of one run: each file once, selecting the tests that carry any of the IDs given for it; with
 * `focus`, only those whose full name also contains that text.
 */
function filteredSpecs(ms, focus) {
  const byFile = new Map();
  for (const m of ms) for (const f of m.tests) byFile.set(f, [...(byFile.get(f) ?? []), ...m.guarantees]);
  const narrow = focus === undefined ? '' : `^(?=[\\s\\S]*${escapeRegExp(focus)})[\\s\\S]*`;
  return [...byFile].map(([file, idsOfFile]) => ({ file, pattern: `${narrow}${idPattern(idsOfFile)}` }));
}

/** `text` as a RegExp source that matches it literally. */
const escapeRegExp = (text) => text.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');

/** The named tests of `m` that its `focus` selects (all of them without one). */
const focused = (m, tests) => namedTests(m, tests).filter((t) => m.focus === undefined || t.name.includes(m.focus));

/**
 * The control tests of a lane from its --lane-reports report, or undefined when there is none or it lacks
 * a suite, or a suite in it did not pass (then the control runs here).
 */
function laneControl(lane, suites) {
  if (laneReports === undefined) return undefined;
  let report;
  try {
    report = JSON.parse(readFileSync(join(laneReports, `${lane}.json`), 'utf8'));
  } catch {
    return undefined;
  }
  if (!Array.isArray(report?.testResults)) return undefined;
  const base = realpathSync(checkout);
  const byFile = new Map(report.testResults.map((r) => [relative(base, r.name), r]));
  const ok = suites.every((f) => byFile.get(f)?.status === 'passed' && !byFile.get(f).assertionResults.some((a) => a.status === 'failed'));
  return ok ? testsOf(report, base) : undefined;
}

/** Each lane's mutants not yet taken by a job, in list order. */
const queues = new Map();
for (const m of selected) queues.set(laneOf(m), [...(queues.get(laneOf(m)) ?? []), m]);
/**
 * The most jobs one lane may have: the browser lane keeps one job (one Chromium, one Vite browser server).
 * Lanes never run side by side: a browser lane started beside node jobs was seen to hang in its first run
 * (2 of 8 tries on a loaded machine, not yet understood), so the lanes take turns, each with all its jobs.
 */
const LANE_JOBS = { browser: 1 };
/** Each lane's control tests: decided once, by the first job on the lane, and shared by every job on it. */
const controls = new Map();

/**
 * The control tests of `lane`: the suites its mutants name must pass on the unmutated tree, or a failure
 * would mean nothing; it also finds the tests that name each mutant's guarantees (a mutant nothing names
 * can never be killed). A lane report of the same tree that holds every suite, passed, already is that
 * evidence; otherwise the first job on the lane runs the control on its (still unmutated) copy.
 */
function controlOf(lane, client, root, started, ready) {
  if (controls.has(lane)) return controls.get(lane);
  const suites = [...new Set(selected.filter((m) => laneOf(m) === lane).flatMap((m) => m.tests))];
  const decided = (async () => {
    const previous = laneControl(lane, suites);
    if (previous !== undefined) {
      say(`control  ${lane} suites passed unmutated in the lane run (${laneReports}/${lane}.json): ${suites.join(' ')} (lane ready in ${seconds(ready - started)}s)`);
      return previous;
    }
    const control = await client.run(
      suites.map((file) => ({ file })),
      CONTROL_LIMIT_MS,
    );
    if (control.timedOut || control.status !== 0 || control.report === undefined) {
      console.log(client.output);
      console.log(`control  ${lane} suites fail unmutated: ${suites.join(' ')}`);
      client.stop();
      finish({ control: `${lane} lane, ${control.timedOut ? 'timed out' : control.report === undefined ? `no report${control.note ? `: ${control.note}` : ''}` : `exit ${control.status}`}` });
    }
    say(`control  ${lane} suites pass unmutated: ${suites.join(' ')} (lane ready in ${seconds(ready - started)}s, control ${seconds(Date.now() - ready)}s)`);
    return testsOf(control.report, root);
  })();
  controls.set(lane, decided);
  return decided;
}

/**
 * Runs mutants of one lane in one job's copy (`root`) until the lane's queue is empty: its control (the
 * lane's, shared), its mutants, its leak checks.
 */
async function runLane(lane, root, job) {
  const client = new LaneClient(lane, root, laneEnv);
  const tag = jobs > 1 ? ` (job ${job + 1})` : '';
  const started = Date.now();
  try {
    await client.start();
  } catch (error) {
    console.log(client.output);
    console.log(`control  ${lane} lane did not start${tag} (${error.message})`);
    client.stop();
    finish({ control: `${lane} lane, ${error.message}` });
  }
  const ready = Date.now();
  const controlTests = await controlOf(lane, client, root, started, ready);

  const isConfig = (file) => client.configFiles.includes(file);
  const restart = async () => {
    client.stop();
    await client.start();
  };
  let sinceCheck = [];
  const leakCheck = async (count) => {
    if (sinceCheck.length === 0) return;
    const checked = sinceCheck;
    sinceCheck = [];
    if (client.child === undefined) await restart();
    const t0 = Date.now();
    const cost = (t) => controlTests.find((c) => c.file === t.file && c.name === t.name)?.duration ?? Infinity;
    // A file's state at the check is its last write: only the last killed mutant of each file could
    // still be showing, so that mutant's quickest killing test is the file's check.
    const lastOfFile = new Map();
    for (const c of checked) if (c.caught.length > 0) lastOfFile.set(c.m.file, c);
    const targets = [...lastOfFile.values()].flatMap(({ m, caught }) => {
      const quickest = caught.reduce((best, t) => (best === undefined || cost(t) < cost(best) ? t : best), undefined);
      return quickest === undefined ? [] : [{ ...quickest, id: m.id }];
    });
    if (targets.length === 0) return;
    const byFile = new Map();
    for (const t of targets) byFile.set(t.file, [...(byFile.get(t.file) ?? []), t.title]);
    const specs = [...byFile].map(([file, titles]) => ({ file, pattern: [...new Set(titles)].map(escapeRegExp).join('|') }));
    const run = await client.run(specs, RUN_LIMIT_MS);
    const after = run.report === undefined ? [] : testsOf(run.report, root);
    const bad = run.timedOut || run.report === undefined
      ? [`the check gave no result (${run.timedOut ? 'timed out' : (run.note ?? `exit ${run.status}`)})`]
      : targets.flatMap((t) => {
          const status = after.find((a) => a.file === t.file && a.name === t.name)?.status ?? 'not run';
          return status === 'passed' ? [] : [`${t.id}: ${t.file} > ${t.name} ${status}`];
        });
    if (bad.length === 0) {
      say(`leak-check ${lane}${tag}: ${targets.length} test(s), one per file the last ${checked.length} mutant(s) changed, pass again on the restored tree (${seconds(Date.now() - t0)}s)`);
      return;
    }
    failures.push({ lane, after: `${count} mutant(s)`, mutants: checked.map(({ m }) => m.id), detail: bad });
    say(`leak     ${lane}${tag}: after ${count} mutant(s), on the restored tree: ${bad.join('; ')}`);
    // Continue on a fresh lane: whatever leaked stays out of the mutants still to run.
    await restart();
  };

  let count = 0;
  for (let m = queues.get(lane).shift(); m !== undefined; m = queues.get(lane).shift()) {
    const base = { id: m.id, list: m.list, lane, guarantees: m.guarantees };
    if (namedTests(m, controlTests).filter((t) => t.status === 'passed').length === 0) {
      record(m, { ...base, verdict: 'unguarded', detail: `no passing test in ${m.tests.join(', ')} names ${m.guarantees.join(' or ')}` });
      continue;
    }
    if (focused(m, controlTests).filter((t) => t.status === 'passed').length === 0) {
      record(m, { ...base, verdict: 'stale', detail: `its focus "${m.focus}" selects no passing named test` });
      continue;
    }
    const file = join(root, m.file);
    const original = readFileSync(file);
    const text = original.toString('utf8');
    const at = text.indexOf(m.find);
    if (at < 0 || text.indexOf(m.find, at + 1) >= 0) {
      record(m, { ...base, verdict: 'stale', detail: at < 0 ? 'find text not present' : 'find text not unique' });
      continue;
    }
    const t0 = Date.now();
    const restore = () => writeFileSync(file, original);
    restores.add(restore);
    writeFileSync(file, text.slice(0, at) + m.replace + text.slice(at + m.find.length));
    client.touched(file);
    if (isConfig(file) || client.child === undefined) await restart().catch(() => undefined);
    // The first failed named test decides (killed): the lane stops the run there. A mutant's `focus` (the
    // named tests of the code it breaks, e.g. its weight kind's) runs first; anything but a kill there
    // goes on to every named test, so a focus only ever saves time.
    let run;
    let verdict;
    if (m.focus !== undefined) {
      run = await client.run(filteredSpecs([m], m.focus), RUN_LIMIT_MS, { files: m.tests, ids: m.guarantees });
      verdict = judge(m, { ...run, limitMs: RUN_LIMIT_MS }, root);
      if (verdict.verdict !== 'killed' && client.child === undefined) await restart().catch(() => undefined);
    }
    const focusMissed = m.focus !== undefined && verdict.verdict !== 'killed';
    if (verdict?.verdict !== 'killed') {
      run = await client.run(filteredSpecs([m]), RUN_LIMIT_MS, { files: m.tests, ids: m.guarantees });
      verdict = judge(m, { ...run, limitMs: RUN_LIMIT_MS }, root);
    }
    if (verdict.verdict === 'survived' || verdict.verdict === 'failed-elsewhere') {
      // Not a kill with only the named tests selected: the whole files decide, as they always did.
      run = await client.run(
        m.tests.map((f) => ({ file: f })),
        RUN_LIMIT_MS,
      );
      verdict = judge(m, { ...run, limitMs: RUN_LIMIT_MS }, root);
    }
    restore();
    restores.delete(restore);
    if (FAULT !== 'no-invalidate-on-restore') client.touched(file);
    if (isConfig(file) || client.child === undefined) await restart().catch(() => undefined);
    if (focusMissed) verdict = { ...verdict, detail: `${verdict.detail} (its focus "${m.focus}" did not kill it)` };
    record(m, { ...base, ...verdict, seconds: seconds(Date.now() - t0) });
    const caught = verdict.verdict === 'killed' ? namedTests(m, testsOf(run.report, root)).filter((t) => t.status === 'failed') : [];
    sinceCheck.push({ m, caught });
    count += 1;
    if (count % LEAK_CHECK_EVERY === 0) await leakCheck(count);
  }
  await leakCheck(count);
  await client.close();
  // The node lane's closing account of dist/workers (rebuilds, runs again after a stale use, dist users).
  const builds = client.output.split('\n').findLast((line) => line.startsWith('lane-server node:'));
  if (builds !== undefined) say(`${builds.replace('lane-server node:', `dist     ${lane}${tag}:`)}`);
}

/** Each job's copy of the tree, made when the job first runs (and kept for its later lanes). */
const jobRoots = [];
const rootOf = (n) => (jobRoots[n] ??= makeCopy());

// One lane at a time (list order); within a lane, its jobs run side by side until its queue is empty.
for (const [lane, queue] of queues) {
  const count = Math.min(jobs, LANE_JOBS[lane] ?? Infinity, queue.length);
  await Promise.all(Array.from({ length: count }, (_, n) => runLane(lane, rootOf(n), n)));
}
finish();

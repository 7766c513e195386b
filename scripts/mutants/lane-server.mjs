// A warm test lane for the mutant runner: one vitest instance (vitest's Node API) for one project
// (`node`, `node-relaxed` or `browser`; `node-relaxed` is a Node lane like `node` in all that follows),
// started once and reused for every run the runner asks for, so a mutant pays its tests, not a vitest
// start, a Chromium launch or Vite's dependency pre-bundling.
//
// Contract. Started by scripts/mutants/lane-client.mjs as `node lane-server.mjs <lane>` with cwd = the
// runner's private copy of the tree and scripts/env.sh sourced, in a process group of its own (its test
// forks and Chromium are in that group, so the client can stop all of it at once). It never writes a
// source file: the client writes and restores files and names them in the next request, and this server
// drops every cached transform of those files (and of their importers) before it runs anything, in both
// the lane's Vite environments and, for the browser lane, the browser's Vite server. Each test file runs
// in a fresh fork (node) or a fresh iframe (browser), so nothing evaluated under one file content
// survives into a run with another. The node lane also owns dist/workers (the Node builds the suites
// load natively, outside Vite): built at start like scripts/lane.sh does, and rebuilt only for a run that
// uses it while it is stale. Stale: some input of the build differs from what the last build read (a
// content hash per input, so a mutant written and restored without a rebuild leaves it fresh). Uses it:
// scripts/mutants/dist-probe.mjs, preloaded into every test fork, logs each test file that starts a
// worker or child process from dist/workers; those files are remembered (the lane's dist users). A run
// naming a dist user while the build is stale rebuilds first. A run that uses the build while stale
// anyway (a file not yet known to use it) is cancelled as soon as the probe logs it, its result is
// thrown away, and it runs again after a rebuild: no result ever comes from a stale build.
//
// Messages (process IPC):
//   server -> client  { type: 'ready', configFiles }                 configFiles: the config's own files
//                     { type: 'result', id, status, report, note, distUsers }
//                                                     report: vitest JSON-report shape; distUsers: the
//                                                     test files (relative) this lane knows use dist/workers
//                     { type: 'fatal', message }                    the lane could not start
//   client -> server  { type: 'run', id, changed: [abs], specs: [{ file: abs, pattern? }], stopOn?, distUsers? }
//                     distUsers: test files (relative) other lanes of the runner saw using dist/workers
//                     stopOn: { files: [relative to root], ids: [guarantee IDs] }: the run is cancelled as
//                     soon as one test of those files that names one of those IDs fails (a mutant's verdict
//                     is decided then: killed); what did not run yet is reported as not run.
//                     { type: 'close' }
import { build } from 'vite';
import { createVitest } from 'vitest/node';
import { createHash } from 'node:crypto';
import { readFileSync, realpathSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { join, relative, resolve } from 'node:path';
import { titleIds } from './judge.mjs';

const lane = process.argv[2];
/** A Node lane (`node`, or `node-relaxed`: the same forks with V8's relaxed-SIMD flag), not the browser's. */
const nodeLane = lane !== 'browser';
const root = realpathSync(process.cwd());
const NODE_BUILD_CONFIG = 'vite.node.config.ts';
const NODE_BUILD_OUT = join(root, 'dist/workers');
/** Vite's cache for this copy (inside the copy, so it goes when the copy does). */
const VITE_CACHE_DIR = '.vite-cache';
/** The dist probe's log (scripts/mutants/dist-probe.mjs), inside the copy. */
const PROBE_LOG = join(root, '.tenon-dist-probe.log');
/** How often a run on a stale build looks at the probe's log. */
const PROBE_POLL_MS = 100;

/** JSON-report status of a test, as vitest's JSON reporter maps task states. */
const STATUS = { fail: 'failed', only: 'pending', pass: 'passed', run: 'pending', skip: 'skipped', todo: 'todo', queued: 'pending' };

const send = (message) =>
  new Promise((done) => process.send(message.type === 'result' ? { ...message, distUsers: [...distUsers].map((f) => relative(root, f)) } : message, done));

/** Source files (no query) of the Node build's modules, and whether the build succeeded. */
let buildInputs = new Set();
/** Content hash of each build input as the last build read it. */
let builtHashes = new Map();
/** Build inputs whose content now differs from what the last build read: the build is stale. */
const dirty = new Set();
/** Test files seen (by the probe) to start a worker or child process from dist/workers. */
const distUsers = new Set();
/** How many rebuilds this lane did, and how many runs were run again after one (logged at close). */
const stats = { builds: 0, reruns: 0 };

const hashOf = (file) => {
  try {
    return createHash('sha1').update(readFileSync(file)).digest('hex');
  } catch {
    return 'missing';
  }
};

async function buildNode() {
  stats.builds += 1;
  const seen = new Set();
  const collect = {
    name: 'tenon-mutants-build-inputs',
    buildEnd() {
      for (const id of this.getModuleIds()) if (!id.startsWith('\0')) seen.add(id.split('?')[0]);
    },
  };
  await build({ root, configFile: join(root, NODE_BUILD_CONFIG), logLevel: 'error', plugins: [collect] });
  buildInputs = new Set([...seen, join(root, NODE_BUILD_CONFIG)]);
  builtHashes = new Map([...buildInputs].filter((f) => statSync(f, { throwIfNoEntry: false })?.isFile()).map((f) => [f, hashOf(f)]));
  dirty.clear();
}

/** Every file under dist/workers (what a rebuild may have rewritten). */
function builtFiles(dir = NODE_BUILD_OUT) {
  try {
    return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? builtFiles(join(dir, e.name)) : [join(dir, e.name)]));
  } catch {
    return [];
  }
}

let vitest;
/** The stop condition of the run in progress (see `stopOn` above), or undefined. */
let stopOn;

/**
 * A reporter that ends a run early once its verdict is known: a failed test that `stopOn` names. The
 * cancellation is vitest's own (what `bail` does): tests not yet started are skipped, the run resolves.
 */
const earlyStop = {
  onTestCaseResult(testCase) {
    if (stopOn === undefined || testCase.result().state !== 'failed') return;
    if (!stopOn.files.includes(relative(root, testCase.module.moduleId))) return;
    const titles = [testCase.name];
    for (let s = testCase.parent; s !== undefined && s.type === 'suite'; s = s.parent) titles.push(s.name);
    if (!titles.flatMap(titleIds).some((id) => stopOn.ids.includes(id))) return;
    stopOn = undefined;
    void vitest.cancelCurrentRun('test-failure');
  },
};

/** Every Vite environment this lane's tests are served from (the browser lane has its own server). */
function environments() {
  return vitest.projects.flatMap((p) => [...Object.values(p.vite.environments), ...Object.values(p.browser?.vite.environments ?? {})]);
}

/**
 * Drops what is cached for `file`: its transforms in every environment (vitest.invalidateFile; an
 * importer's transform never depends on what it imports, so importers keep theirs), and marks it and
 * every module importing it, transitively, as invalidated for the next run, as vitest's own watcher does
 * on a change, so a worker that kept a module cache would evaluate them again.
 */
function invalidate(file) {
  vitest.invalidateFile(file);
  const pending = [file];
  const seen = new Set();
  while (pending.length > 0) {
    const next = pending.pop();
    if (seen.has(next)) continue;
    seen.add(next);
    vitest.watcher.invalidates.add(next);
    for (const env of environments()) {
      for (const mod of env.moduleGraph.getModulesByFile(next) ?? []) for (const importer of mod.importers) if (importer.file) pending.push(importer.file);
    }
  }
}

/** The lane's project: `node`, or the browser lane's one instance (`browser (chromium)`). */
function project() {
  const found = vitest.projects.filter((p) => p.name === lane || p.name.startsWith(`${lane} (`));
  if (found.length !== 1) throw new Error(`expected one vitest project for the ${lane} lane, found ${found.map((p) => p.name).join(', ') || 'none'}`);
  return found[0];
}

/** Tests of a file task, depth first, as vitest's JSON reporter lists them. */
function testsIn(task) {
  return task.tasks?.flatMap((t) => (t.type === 'test' ? [t] : testsIn(t))) ?? [];
}

/** A file task as one `testResults` entry of vitest's JSON report. */
function fileReport(file) {
  const assertionResults = testsIn(file).map((t) => {
    const ancestorTitles = [];
    for (let s = t.suite; s; s = s.suite) ancestorTitles.unshift(s.name);
    return {
      ancestorTitles,
      fullName: t.name ? [...ancestorTitles, t.name].join(' ') : ancestorTitles.join(' '),
      status: STATUS[t.result?.state || t.mode] || 'skipped',
      title: t.name,
      duration: t.result?.duration,
    };
  });
  const failed = file.result?.state === 'fail' || assertionResults.some((a) => a.status === 'failed');
  return { assertionResults, status: failed ? 'failed' : 'passed', message: file.result?.errors?.[0]?.message ?? '', name: file.filepath };
}

/** Rebuilds dist/workers; false (after sending the run's result) when the build failed. */
async function rebuild(id) {
  try {
    await buildNode();
  } catch (error) {
    await send({ type: 'result', id, status: 1, note: `node build failed: ${String(error?.message ?? error).split('\n')[0]}` });
    return false;
  }
  for (const file of builtFiles()) invalidate(file);
  return true;
}

/** The test files the probe's log names (each file that used dist/workers since the log was emptied). */
function probed() {
  let text = '';
  try {
    text = readFileSync(PROBE_LOG, 'utf8');
  } catch {
    return [];
  }
  return [...new Set(text.split('\n').filter(Boolean).map((line) => line.split('\t')[0]))];
}

async function run(message) {
  const { id, changed, specs } = message;
  for (const file of message.distUsers ?? []) distUsers.add(resolve(root, file));
  for (const file of changed) {
    invalidate(file);
    if (!nodeLane || !buildInputs.has(file)) continue;
    if (builtHashes.get(file) === hashOf(file)) dirty.delete(file);
    else dirty.add(file);
  }
  const paths = specs.map((s) => resolve(root, s.file));
  if (nodeLane && dirty.size > 0 && paths.some((f) => distUsers.has(f)) && !(await rebuild(id))) return;
  const usedStale = await runSpecs(message, paths);
  if (usedStale === undefined) return;
  // The run reached dist/workers while it was stale: its result says nothing about the mutant. Again,
  // on a fresh build (the file is a known dist user now, so this happens once per file and lane).
  stats.reruns += 1;
  if (!(await rebuild(id))) return;
  await runSpecs(message, paths);
}

/**
 * One run of the request's specs; sends its result, or returns true without sending one when the run
 * used dist/workers while the build was stale (then it was cancelled as soon as the probe saw it).
 */
async function runSpecs({ id, specs, stopOn: stop }, paths) {
  const stale = nodeLane && dirty.size > 0;
  writeFileSync(PROBE_LOG, '');
  let staleUse = false;
  const watch = stale
    ? setInterval(() => {
        if (staleUse || probed().length === 0) return;
        staleUse = true;
        stopOn = undefined;
        void vitest.cancelCurrentRun('test-failure');
      }, PROBE_POLL_MS)
    : undefined;
  try {
    return await runOnce(id, specs, stop, paths, () => {
      for (const file of probed()) distUsers.add(file);
      return stale && (staleUse || probed().length > 0);
    });
  } finally {
    clearInterval(watch);
  }
}

async function runOnce(id, specs, stop, paths, usedStale) {
  const p = project();
  // A file whose run never starts must read as missing, never as its previous run's results.
  vitest.state.clearFiles(p, paths);
  const specifications = specs.map((s) => p.createSpecification(resolve(root, s.file), s.pattern ? { testNamePattern: s.pattern } : undefined));
  let result;
  stopOn = stop;
  try {
    result = await vitest.runTestSpecifications(specifications, false);
  } catch (error) {
    stopOn = undefined;
    if (usedStale()) return true;
    await send({ type: 'result', id, status: 1, note: `vitest threw: ${String(error?.message ?? error).split('\n')[0]}` });
    return undefined;
  }
  stopOn = undefined;
  if (usedStale()) return true;
  const files = specifications.map((s) => s.testModule?.task).filter((task) => task !== undefined && task.result !== undefined);
  const modules = specifications.map((s) => s.testModule).filter((m) => m !== undefined);
  const failed = result.unhandledErrors.length > 0 || modules.length === 0 || modules.some((m) => !m.ok());
  const report = { testResults: files.map(fileReport), unhandledErrors: result.unhandledErrors.length };
  await send({ type: 'result', id, status: failed ? 1 : 0, report });
  return undefined;
}

try {
  if (nodeLane) {
    await buildNode();
    // The test forks inherit this environment: each loads the probe first (scripts/mutants/dist-probe.mjs).
    process.env['TENON_DIST_PROBE'] = PROBE_LOG;
    process.env['TENON_DIST_PROBE_DIR'] = NODE_BUILD_OUT;
    const probe = pathToFileURL(join(root, 'scripts/mutants/dist-probe.mjs')).href;
    process.env['NODE_OPTIONS'] = `${process.env['NODE_OPTIONS'] ?? ''} --import ${probe}`.trim();
  }
  // A cache of its own (Vite's optimized dependencies, vitest's results): the shared one under
  // node_modules/.vite belongs to the checkout's lanes, and a copy's different root would make each side
  // re-optimize over the other's.
  vitest = await createVitest('test', { project: [lane], watch: false, reporters: ['default', earlyStop], color: false }, { cacheDir: join(root, VITE_CACHE_DIR) });
  await vitest.standalone();
} catch (error) {
  await send({ type: 'fatal', message: String(error?.stack ?? error) });
  process.exit(1);
}

let queue = Promise.resolve();
process.on('message', (message) => {
  if (message.type === 'run') {
    queue = queue.then(() => run(message).catch((error) => send({ type: 'result', id: message.id, status: 1, note: `lane error: ${String(error?.message ?? error).split('\n')[0]}` })));
  }
  if (message.type === 'close') queue = queue.then(async () => {
    if (nodeLane) console.log(`lane-server node: ${stats.builds} build(s) of dist/workers, ${stats.reruns} run(s) again after a stale use; dist users: ${[...distUsers].map((f) => relative(root, f)).join(' ') || 'none'}`);
    await vitest.close();
    process.exit(0);
  });
});
// The client went away: nothing more to run for.
process.on('disconnect', () => process.exit(0));
await send({ type: 'ready', configFiles: [vitest.vite.config.configFile, ...(vitest.vite.config.configFileDependencies ?? [])].filter(Boolean) });

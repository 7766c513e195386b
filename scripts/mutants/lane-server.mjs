// A warm test lane for the mutant runner: one vitest instance (vitest's Node API) for one project
// (`node` or `browser`), started once and reused for every run the runner asks for, so a mutant pays its
// tests, not a vitest start, a Chromium launch or Vite's dependency pre-bundling.
//
// Contract. Started by scripts/mutants/lane-client.mjs as `node lane-server.mjs <lane>` with cwd = the
// runner's private copy of the tree and scripts/env.sh sourced, in a process group of its own (its test
// forks and Chromium are in that group, so the client can stop all of it at once). It never writes a
// source file: the client writes and restores files and names them in the next request, and this server
// drops every cached transform of those files (and of their importers) before it runs anything, in both
// the lane's Vite environments and, for the browser lane, the browser's Vite server. Each test file runs
// in a fresh fork (node) or a fresh iframe (browser), so nothing evaluated under one file content
// survives into a run with another. The node lane also owns dist/workers (the Node builds the suites
// load natively, outside Vite): built at start like scripts/lane.sh does, and rebuilt before a run
// whenever a changed file is one of the build's inputs.
//
// Messages (process IPC):
//   server -> client  { type: 'ready', configFiles }                 configFiles: the config's own files
//                     { type: 'result', id, status, report, note }  report: vitest JSON-report shape
//                     { type: 'fatal', message }                    the lane could not start
//   client -> server  { type: 'run', id, changed: [abs], specs: [{ file: abs, pattern? }], stopOn? }
//                     stopOn: { files: [relative to root], ids: [guarantee IDs] }: the run is cancelled as
//                     soon as one test of those files that names one of those IDs fails (a mutant's verdict
//                     is decided then: killed); what did not run yet is reported as not run.
//                     { type: 'close' }
import { build } from 'vite';
import { createVitest } from 'vitest/node';
import { realpathSync, readdirSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { titleIds } from './judge.mjs';

const lane = process.argv[2];
const root = realpathSync(process.cwd());
const NODE_BUILD_CONFIG = 'vite.node.config.ts';
const NODE_BUILD_OUT = join(root, 'dist/workers');
/** Vite's cache for this copy (inside the copy, so it goes when the copy does). */
const VITE_CACHE_DIR = '.vite-cache';

/** JSON-report status of a test, as vitest's JSON reporter maps task states. */
const STATUS = { fail: 'failed', only: 'pending', pass: 'passed', run: 'pending', skip: 'skipped', todo: 'todo', queued: 'pending' };

const send = (message) => new Promise((done) => process.send(message, done));

/** Source files (no query) of the Node build's modules, and whether the build succeeded. */
let buildInputs = new Set();
async function buildNode() {
  const seen = new Set();
  const collect = {
    name: 'tenon-mutants-build-inputs',
    buildEnd() {
      for (const id of this.getModuleIds()) if (!id.startsWith('\0')) seen.add(id.split('?')[0]);
    },
  };
  await build({ root, configFile: join(root, NODE_BUILD_CONFIG), logLevel: 'error', plugins: [collect] });
  buildInputs = new Set([...seen, join(root, NODE_BUILD_CONFIG)]);
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

async function run({ id, changed, specs, stopOn: stop }) {
  let rebuild = false;
  for (const file of changed) {
    invalidate(file);
    if (lane === 'node' && buildInputs.has(file)) rebuild = true;
  }
  if (rebuild) {
    try {
      await buildNode();
    } catch (error) {
      await send({ type: 'result', id, status: 1, note: `node build failed: ${String(error?.message ?? error).split('\n')[0]}` });
      return;
    }
    for (const file of builtFiles()) invalidate(file);
  }
  const p = project();
  const paths = specs.map((s) => resolve(root, s.file));
  // A file whose run never starts must read as missing, never as its previous run's results.
  vitest.state.clearFiles(p, paths);
  const specifications = specs.map((s) => p.createSpecification(resolve(root, s.file), s.pattern ? { testNamePattern: s.pattern } : undefined));
  let result;
  stopOn = stop;
  try {
    result = await vitest.runTestSpecifications(specifications, false);
  } catch (error) {
    stopOn = undefined;
    await send({ type: 'result', id, status: 1, note: `vitest threw: ${String(error?.message ?? error).split('\n')[0]}` });
    return;
  }
  stopOn = undefined;
  const files = specifications.map((s) => s.testModule?.task).filter((task) => task !== undefined && task.result !== undefined);
  const modules = specifications.map((s) => s.testModule).filter((m) => m !== undefined);
  const failed = result.unhandledErrors.length > 0 || modules.length === 0 || modules.some((m) => !m.ok());
  const report = { testResults: files.map(fileReport), unhandledErrors: result.unhandledErrors.length };
  await send({ type: 'result', id, status: failed ? 1 : 0, report });
}

try {
  if (lane === 'node') await buildNode();
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
    await vitest.close();
    process.exit(0);
  });
});
// The client went away: nothing more to run for.
process.on('disconnect', () => process.exit(0));
await send({ type: 'ready', configFiles: [vitest.vite.config.configFile, ...(vitest.vite.config.configFileDependencies ?? [])].filter(Boolean) });

// Which test files use the Node build (dist/workers): preloaded (`--import`) into the node lane's test forks
// by scripts/mutants/lane-server.mjs, which then knows whether a run needed dist/workers rebuilt for the
// mutant in the tree.
//
// Contract. Active only when TENON_DIST_PROBE names a log file and only in a vitest test fork's main thread
// (where `__vitest_worker__` names the running test file). Everything in the fork that can reach the Node
// build goes through one of two doors: a worker_threads Worker (pool, rank and dataplane workers, whose
// script is dist/workers/*.js) or a child process (the CLI, dist/workers/tenon.js). Both are wrapped: a call
// whose arguments mention the build's directory (TENON_DIST_PROBE_DIR) appends one line, `<test file>\t<what>`, to the log before
// it goes on unchanged. Worker threads and child processes inherit NODE_OPTIONS but are no vitest fork, so
// the probe stays inert in them (their loads were already recorded at the door they came through).
import childProcess from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { promisify } from 'node:util';
import { isMainThread } from 'node:worker_threads';
import workerThreads from 'node:worker_threads';

const log = process.env['TENON_DIST_PROBE'];
const built = process.env['TENON_DIST_PROBE_DIR'];

/** The args of one call as text (URLs, paths, argument arrays, options objects with their args). */
function mentions(args) {
  const text = (value, depth) => {
    if (typeof value === 'string') return value;
    if (value instanceof URL) return value.href + value.pathname;
    if (Array.isArray(value) && depth < 2) return value.map((v) => text(v, depth + 1)).join(' ');
    return '';
  };
  return args.map((a) => text(a, 0)).join(' ');
}

function note(what, args) {
  const file = globalThis.__vitest_worker__?.filepath;
  if (file === undefined) return;
  const said = mentions(args);
  if (!said.includes(built) && !said.includes(encodeURI(built))) return;
  appendFileSync(log, `${file}\t${what}\n`);
}

if (log !== undefined && built !== undefined && isMainThread) {
  const Original = workerThreads.Worker;
  workerThreads.Worker = class Worker extends Original {
    constructor(...args) {
      note('worker', args);
      super(...args);
    }
  };
  for (const name of ['spawn', 'spawnSync', 'fork', 'execFile', 'execFileSync', 'exec', 'execSync']) {
    const original = childProcess[name];
    const probed = function probed(...args) {
      note(name, args);
      return original.apply(this, args);
    };
    // execFile and exec promisify to { stdout, stderr } through their own custom form: kept, and probed.
    const custom = original[promisify.custom];
    if (custom !== undefined) {
      probed[promisify.custom] = function probedPromise(...args) {
        note(name, args);
        return custom.apply(this, args);
      };
    }
    childProcess[name] = probed;
  }
  syncBuiltinESMExports();
}

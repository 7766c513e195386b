// The mutant runner's handle on one warm lane (scripts/mutants/lane-server.mjs): starts it, asks it for
// runs, enforces the time limit of each run, and stops it.
//
// Contract. The server runs in the private copy (`root`) with scripts/env.sh sourced, as the leader of a
// process group of its own: vitest, its test forks and Chromium all live in that group, and every way
// this handle ends the server (close, a run past its limit, the runner exiting) kills the whole group, so
// no vitest or Chromium outlives it. A run past its limit resolves as { timedOut: true } and leaves the
// handle stopped; `start()` again gives a fresh, cold server. Output of the server is kept (a tail only)
// for the runner to show when a control run fails.
import { spawn } from 'node:child_process';
import { appendFileSync } from 'node:fs';

/** How much of a server's output is kept to show when a run fails. */
const OUTPUT_TAIL_CHARS = 4000;
/** How long a starting lane may take to be ready (a cold Vite server, Chromium launch, dependency pre-bundling). */
const START_LIMIT_MS = 5 * 60 * 1000;
/** How long a closing lane may take before its group is killed. */
const CLOSE_LIMIT_MS = 20 * 1000;

const killGroup = (pid) => {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // the group is already gone
  }
};

/** Every live server's pid, so the runner can kill them all when it is interrupted. */
export const liveServers = new Set();
/**
 * Test files (relative to the tree) any node lane of this runner saw using dist/workers: each lane's
 * results add what it learnt, each run hands the lane the whole set, so what one job's lane learnt
 * spares the others a stale run (scripts/mutants/lane-server.mjs).
 */
export const distUsers = new Set();

export class LaneClient {
  constructor(lane, root, env) {
    this.lane = lane;
    this.root = root;
    this.env = env;
    this.output = '';
    this.child = undefined;
    this.pending = new Map();
    this.nextId = 0;
    /** Files changed since the server last ran (written or restored by the runner). */
    this.changed = new Set();
    /** Files of the lane's vitest config (a change to one needs a fresh server, not an invalidation). */
    this.configFiles = [];
    this.starts = 0;
  }

  /** Starts a fresh server; resolves once it is ready, or rejects with why it is not. */
  start() {
    const child = spawn('bash', ['-c', 'source scripts/env.sh && exec node scripts/mutants/lane-server.mjs "$1"', 'lane-server', this.lane], {
      cwd: this.root,
      env: this.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    this.child = child;
    this.starts += 1;
    liveServers.add(child.pid);
    // A fresh server has nothing cached: nothing is pending for it.
    this.changed.clear();
    // TENON_MUTANTS_LOG=FILE keeps every line the lanes print (vitest's own report of each run), for
    // looking into a slow or odd run.
    const log = process.env['TENON_MUTANTS_LOG'];
    const keep = (chunk) => {
      this.output = (this.output + chunk.toString('utf8')).slice(-OUTPUT_TAIL_CHARS);
      if (log) appendFileSync(log, chunk);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.on('exit', () => {
      killGroup(child.pid);
      liveServers.delete(child.pid);
      if (this.child === child) this.child = undefined;
      for (const [, p] of this.pending) p.resolve({ status: 1, report: undefined, note: 'lane server exited mid-run' });
      this.pending.clear();
    });
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.stop();
        reject(new Error(`the ${this.lane} lane did not start within ${START_LIMIT_MS / 1000}s`));
      }, START_LIMIT_MS);
      child.on('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`the ${this.lane} lane server exited while starting (${code ?? signal})`));
      });
      child.on('message', (message) => {
        if (message.type === 'ready') {
          clearTimeout(timer);
          this.configFiles = message.configFiles;
          resolve();
        } else if (message.type === 'fatal') {
          clearTimeout(timer);
          this.output = (this.output + message.message).slice(-OUTPUT_TAIL_CHARS);
          reject(new Error(`the ${this.lane} lane could not start: ${message.message.split('\n')[0]}`));
        } else if (message.type === 'result') {
          const p = this.pending.get(message.id);
          this.pending.delete(message.id);
          for (const file of message.distUsers ?? []) distUsers.add(file);
          p?.resolve({ status: message.status, report: message.report, note: message.note });
        }
      });
    });
  }

  /** Notes that the runner wrote `file` (absolute): the next run drops what the server cached of it. */
  touched(file) {
    this.changed.add(file);
  }

  /**
   * Runs `specs` ([{ file (relative to root), pattern? }]); resolves with { status, report, note,
   * timedOut }. A run past `limitMs` kills the server and resolves timed out. With `stopOn` ({ files, ids })
   * the server ends the run at the first failed test of those files naming one of those IDs.
   */
  run(specs, limitMs, stopOn = undefined) {
    if (this.child === undefined) return Promise.resolve({ status: 1, report: undefined, note: 'lane server not running', timedOut: false });
    const id = this.nextId++;
    const changed = [...this.changed];
    this.changed.clear();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        this.stop();
        resolve({ status: undefined, report: undefined, timedOut: true });
      }, limitMs);
      this.pending.set(id, {
        resolve: (r) => {
          clearTimeout(timer);
          resolve({ ...r, timedOut: false });
        },
      });
      this.child.send({ type: 'run', id, changed, specs, stopOn, distUsers: [...distUsers] });
    });
  }

  /** Kills the server's whole process group now. */
  stop() {
    if (this.child !== undefined) {
      killGroup(this.child.pid);
      liveServers.delete(this.child.pid);
      this.child = undefined;
    }
  }

  /** Asks the server to close vitest (Chromium included); kills the group if it takes too long. */
  async close() {
    const child = this.child;
    if (child === undefined) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.send({ type: 'close' });
    const timer = setTimeout(() => this.stop(), CLOSE_LIMIT_MS);
    await exited;
    clearTimeout(timer);
    this.stop();
  }
}

export { killGroup };

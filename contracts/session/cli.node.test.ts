// Plan: the `tenon` CLI as a user runs it (the built dist/workers/tenon.js in a child Node process): greedy
// generation of the stories260K fixture prints the known ids with --json on Dawn and on the host
// provider; bad usage exits 2 and a missing file exits 1 with a coded message. The built file runs as a
// command by itself (its `#!` line, its mode). With XDG_RUNTIME_DIR unset, generation on Dawn writes
// nothing to stderr: the CLI gives the variable a private default first (src/cli/runtime-dir.ts, whose
// choices are also checked directly). On a software adapter the CLI paces Dawn's event pump (--json says
// eventPump "paced"): the global setImmediate goes through a timer while installed, clearImmediate cancels
// either kind, and the originals come back on restore.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { paceDawnEvents } from '../../src/cli/dawn-events.js';
import { ensureRuntimeDir } from '../../src/cli/runtime-dir.js';
import { readModelFixture } from '../support/models.js';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const cli = fileURLToPath(new URL('../../dist/workers/tenon.js', import.meta.url));
const model = fileURLToPath(new URL('../../../shared/models/stories260K.bin', import.meta.url));
const tokenizer = fileURLToPath(new URL('../../../shared/models/tok512.bin', import.meta.url));
const absent = (await readModelFixture('stories260K.bin')) === undefined;

/** Owner-only permission bits, and the mask of every permission bit. */
const PRIVATE_MODE = 0o700;
const PERMISSION_BITS = 0o777;
const GREEDY = { promptIds: [1, 403, 407, 261, 378], generatedIds: [432, 383, 286, 261, 376, 298, 315, 421, 395, 317], text: ', there was a little girl named Lily' };
const uid = process.getuid?.() ?? 'user';

/** Scratch folders of this file, removed at the end. */
const scratch: string[] = [];
const scratchDir = (): string => {
  const dir = mkdtempSync(join(tmpdir(), 'tenon-cli-test-'));
  scratch.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
});

function run(args: string[], env: NodeJS.ProcessEnv = process.env, command?: string): { status: number | null; stdout: string; stderr: string } {
  const [file, argv] = command === undefined ? [process.execPath, [cli, ...args]] : [command, args];
  const r = spawnSync(file, argv, { cwd: repo, encoding: 'utf8', env, timeout: 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

const generateArgs = (provider: string): string[] => ['generate', '--model', model, '--tokenizer', tokenizer, '--prompt', 'Once upon a time', '--steps', '10', '--provider', provider, '--json'];

/**
 * The pump's unit test takes milliseconds; a broken clearImmediate can corrupt Node's immediate queue and
 * hang it, so it fails at this bound instead of the lane's 60 s test limit.
 */
const PUMP_TEST_LIMIT_MS = 10_000;

describe('tenon CLI', () => {
  for (const provider of ['webgpu', 'host'] as const) {
    it.skipIf(absent)(`[TS-cli-json] generate --json on ${provider} prints the prompt ids and llama2.c's greedy ids`, () => {
      const r = run(generateArgs(provider));
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      const out = JSON.parse(r.stdout) as { promptIds: number[]; generatedIds: number[]; text: string; provider: string };
      expect(out.provider).toBe(provider);
      expect(out.promptIds).toEqual(GREEDY.promptIds);
      expect(out.generatedIds).toEqual(GREEDY.generatedIds);
      expect(out.text).toBe(GREEDY.text);
    });
  }

  it.skipIf(absent)('[TS-cli-quiet] with XDG_RUNTIME_DIR unset, generate on Dawn writes nothing to stderr and makes a private runtime dir', () => {
    const tmp = scratchDir();
    const env: NodeJS.ProcessEnv = { ...process.env, TMPDIR: tmp };
    delete env['XDG_RUNTIME_DIR'];
    const r = run(generateArgs('webgpu'), env);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect((JSON.parse(r.stdout) as { generatedIds: number[] }).generatedIds).toEqual(GREEDY.generatedIds);
    const made = statSync(join(tmp, `tenon-runtime-${uid}`));
    expect(made.isDirectory()).toBe(true);
    expect(made.mode & PERMISSION_BITS).toBe(PRIVATE_MODE);
  });

  it('[TS-cli-quiet] the runtime dir default: a valid value is kept; unset, empty or not a directory gets a private dir, never a squatted one', () => {
    const base = scratchDir();
    const own = join(base, 'own');
    mkdirSync(own);
    const kept: NodeJS.ProcessEnv = { XDG_RUNTIME_DIR: own };
    expect(ensureRuntimeDir(kept, base)).toBe(own);
    expect(kept['XDG_RUNTIME_DIR']).toBe(own);
    const stable = join(base, `tenon-runtime-${uid}`);
    for (const value of [undefined, '', join(base, 'absent'), join(base, 'a-file')]) {
      if (value?.endsWith('a-file')) writeFileSync(value, '');
      const env: NodeJS.ProcessEnv = value === undefined ? {} : { XDG_RUNTIME_DIR: value };
      expect(ensureRuntimeDir(env, base)).toBe(stable);
      expect(env['XDG_RUNTIME_DIR']).toBe(stable);
      expect(statSync(stable).mode & PERMISSION_BITS).toBe(PRIVATE_MODE);
    }
    // The default name taken by a directory others can enter, or by a file: a fresh private dir instead.
    for (const squat of ['open-dir', 'file'] as const) {
      const other = scratchDir();
      const name = join(other, `tenon-runtime-${uid}`);
      if (squat === 'file') writeFileSync(name, '');
      else {
        mkdirSync(name);
        chmodSync(name, PERMISSION_BITS);
      }
      const env: NodeJS.ProcessEnv = {};
      const chosen = ensureRuntimeDir(env, other);
      expect(chosen).not.toBe(name);
      expect(chosen.startsWith(join(other, 'tenon-runtime-'))).toBe(true);
      expect(statSync(chosen).isDirectory()).toBe(true);
      expect(statSync(chosen).mode & PERMISSION_BITS).toBe(PRIVATE_MODE);
    }
  });

  it('[TS-cli-dawn-pump] paceDawnEvents routes setImmediate through a timer until restored; clearImmediate cancels either kind', async () => {
    const original = globalThis.setImmediate;
    const originalClear = globalThis.clearImmediate;
    const restore = paceDawnEvents();
    const ran: string[] = [];
    try {
      expect(globalThis.setImmediate).not.toBe(original);
      const paced = globalThis.setImmediate(() => ran.push('paced'));
      // A timer (it has refresh()), not an immediate.
      expect(typeof (paced as unknown as { refresh?: unknown }).refresh).toBe('function');
      const cancelled = globalThis.setImmediate(() => ran.push('cancelled'));
      globalThis.clearImmediate(cancelled);
      await new Promise((resolve) => setTimeout(resolve, 5));
      expect(ran).toEqual(['paced']);
    } finally {
      restore();
    }
    expect(globalThis.setImmediate).toBe(original);
    expect(globalThis.clearImmediate).toBe(originalClear);
    const immediate = globalThis.setImmediate(() => ran.push('cancelled'));
    expect(typeof (immediate as unknown as { refresh?: unknown }).refresh).toBe('undefined');
    globalThis.clearImmediate(immediate);
    await new Promise((resolve) => setImmediate(resolve));
    expect(ran).toEqual(['paced']);
  }, PUMP_TEST_LIMIT_MS);

  it.skipIf(absent)('[TS-cli-dawn-pump] generate on Dawn paces the event pump on a software adapter (SwiftShader here) and says so; the host provider has none', () => {
    for (const provider of ['webgpu', 'host'] as const) {
      const r = run(['generate', '--model', model, '--tokenizer', tokenizer, '--prompt', 'Once', '--steps', '1', '--provider', provider, '--json']);
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      const out = JSON.parse(r.stdout) as { eventPump: string | null; providerSelection: { adapter?: { software: boolean } } };
      expect(out.eventPump).toBe(provider === 'host' ? null : out.providerSelection.adapter!.software ? 'paced' : 'immediate');
    }
  });

  it('[SHIP-bin] the built CLI runs as a command by itself (#! line, executable): --help exits 0 with the usage', () => {
    const help = run(['--help'], process.env, cli);
    expect(help.stderr).toBe('');
    expect(help.status).toBe(0);
    expect(help.stdout.startsWith('usage: tenon generate --model FILE')).toBe(true);
  });

  it('[TS-cli-json] bad usage exits 2; an unreadable model exits 1 with its code', () => {
    const usage = run(['generate', '--model', 'x']);
    expect(usage.status).toBe(2);
    expect(usage.stderr).toContain('usage: tenon generate');
    const missing = run(['generate', '--model', '/nonexistent.bin', '--tokenizer', '/nonexistent.tok', '--prompt', 'a', '--steps', '1', '--provider', 'host']);
    expect(missing.status).toBe(1);
    expect(missing.stderr.startsWith('tenon: ')).toBe(true);
  });
});

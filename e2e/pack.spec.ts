// Plan: the package as another project gets it. `npm pack` the built package, install the tarball into
// a fresh project with npm itself, offline (its few dependencies come from the npm cache or, when the
// cache lacks one, from tarballs packed from this repository's node_modules and installed alongside: still
// npm's own install, bin links and modes included), then (1) import it as an ES module in Node and run a
// graph, (2) type-check a strict TypeScript file against the installed declarations (skipLibCheck off) —
// and a control file with a type error must fail —, (3) run the `tenon` command as a user would, through
// `npx` (a shell runs it, so it needs its `#!` line and execute permission) in a second project installed
// from the same tarballs outside this repository: --help, greedy generation of the stories260K fixture on
// the host provider, the coded refusal of the webgpu provider without the `webgpu` package, and `tenon
// tokenize` on a GGUF fixture (decompressed into that project) against llama.cpp's ids; and (4)
// load the installed script-tag bundle from a plain HTML page in Chromium: the global works, and so do
// the worker files it starts. The first project lives under test-results/ (Playwright empties it on every
// run), the second under the system temp directory (removed after the run).
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { gunzipSync } from 'node:zlib';
import { join, resolve } from 'node:path';
import { expect, test } from '@playwright/test';
import { skipWithoutGguf, skipWithoutModels } from './fixtures.js';

const repo = resolve('.');
const project = resolve('test-results/pack-project');
const tsc = join(repo, 'node_modules/typescript/bin/tsc');
const models = resolve('../shared/models');
/** ../shared/models/README.md: "Once upon a time" with BOS, and llama2.c's greedy continuation. */
const PROMPT_IDS = [1, 403, 407, 261, 378];
const GREEDY_IDS = [432, 383, 286, 261, 376, 298, 315, 421, 395, 317];
/** Any execute bit (owner, group or others). */
const EXECUTE_BITS = 0o111;

const npmEnv = { ...process.env, npm_config_update_notifier: 'false' };

function run(command: string, args: string[], cwd: string): string {
  return execFileSync(command, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: npmEnv });
}

/** The tarballs to install (tenon's, then any dependency packed from node_modules); set by beforeAll. */
let tarballs: string[] = [];

/** Installs `tarballs` (paths relative to `project`) into the npm project at `cwd` with npm, offline. */
function install(cwd: string, files: string[]): void {
  run('npm', ['install', ...files.map((t) => join(project, t)), '--offline', '--no-audit', '--no-fund', '--ignore-scripts', '--loglevel=error'], cwd);
}

function newProject(dir: string, name: string): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name, private: true, type: 'module' }, null, 2));
}

/**
 * The project the command runs in: the same tarballs installed into a folder under the system temp
 * directory, away from this repository, whose node_modules would otherwise resolve what the package
 * leaves out (Node looks for modules in every parent folder). Made by the first test that needs it.
 */
let cliProject: string | undefined;

function commandProject(): string {
  if (cliProject === undefined) {
    const dir = mkdtempSync(join(tmpdir(), 'tenon-pack-cli-'));
    newProject(dir, 'tenon-cli-check');
    install(dir, tarballs);
    cliProject = dir;
  }
  return cliProject;
}

/** `npx --no-install tenon ...` in the command project: status and both streams (a failure is a result here). */
function npxTenon(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync('npx', ['--no-install', 'tenon', ...args], { cwd: commandProject(), encoding: 'utf8', env: npmEnv, timeout: 120_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

test.describe.configure({ mode: 'serial' });

test.beforeAll(() => {
  test.setTimeout(180_000);
  rmSync(project, { recursive: true, force: true });
  newProject(project, 'tenon-pack-check');
  run('npm', ['pack', '--ignore-scripts', '--pack-destination', project], repo);
  const { name, version } = JSON.parse(readFileSync('package.json', 'utf8')) as { name: string; version: string };
  const packed = readdirSync(project).filter((f) => f.endsWith('.tgz'));
  expect(packed).toEqual([`${name}-${version}.tgz`]);
  tarballs = [packed[0]!];
  try {
    install(project, tarballs);
  } catch (err) {
    // No network here and the npm cache lacks a dependency: pack each dependency from this repository's
    // node_modules (the exact pinned versions) and let npm install them together with the tarball.
    console.warn(`npm install --offline failed (${String((err as { stderr?: string }).stderr ?? err).trim()}); installing the dependencies from packed copies`);
    const { dependencies } = JSON.parse(readFileSync('package.json', 'utf8')) as { dependencies: Record<string, string> };
    for (const dep of Object.keys(dependencies)) {
      tarballs.push(run('npm', ['pack', join(repo, 'node_modules', dep), '--ignore-scripts', '--pack-destination', project, '--loglevel=error'], project).trim().split('\n').pop()!);
    }
    install(project, tarballs);
  }
  copyFileSync('examples/esm/node.mjs', join(project, 'node.mjs'));
  copyFileSync('examples/esm/app.ts', join(project, 'app.ts'));
});

test.afterAll(() => {
  if (cliProject !== undefined) rmSync(cliProject, { recursive: true, force: true });
});

test('[SHIP-pack] the packed package installs into another project and imports as an ES module in Node', () => {
  const out = run(process.execPath, ['node.mjs'], project);
  expect(JSON.parse(out.trim())).toMatchObject({ sum: [5, 7, 9] });
  const listed = run(process.execPath, ['--input-type=module', '-e', "import * as t from 'tenon'; console.log(String(Object.keys(t).length))"], project);
  expect(Number(listed.trim())).toBeGreaterThan(50);
  // The browser bundle leaves Node's worker_threads out: a worker pool in Node is refused with a code.
  const pool = run(
    process.execPath,
    ['--input-type=module', '-e', "import { createWorkerPool, createHostProvider } from 'tenon'; createWorkerPool({ provider: createHostProvider({ shared: true }) }).then(() => console.log('created'), (e) => console.log(`${e.code} ${e.reason}`))"],
    project,
  );
  expect(pool.trim()).toBe('ENOTSUP node-only');
});

test('[SHIP-pack] a strict TypeScript file type-checks against the installed declarations; a type error is caught', () => {
  const compilerOptions = {
    strict: true,
    target: 'ES2022',
    module: 'ESNext',
    moduleResolution: 'Bundler',
    lib: ['ES2023', 'DOM', 'ESNext.Disposable'],
    types: [],
    noEmit: true,
    skipLibCheck: false,
  };
  writeFileSync(join(project, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['app.ts'] }, null, 2));
  run(process.execPath, [tsc, '-p', 'tsconfig.json'], project);
  // Control: the same check must fail on a misuse of the API.
  writeFileSync(join(project, 'wrong.ts'), "import { createHostProvider } from 'tenon';\nexport const n: number = createHostProvider();\n");
  writeFileSync(join(project, 'tsconfig.wrong.json'), JSON.stringify({ compilerOptions, files: ['wrong.ts'] }, null, 2));
  let failed = '';
  try {
    run(process.execPath, [tsc, '-p', 'tsconfig.wrong.json'], project);
  } catch (err) {
    failed = String((err as { stdout?: string }).stdout);
  }
  expect(failed).toContain('wrong.ts');
  expect(failed).toContain('TS2322');
});

test('[SHIP-bin] the installed `tenon` command is linked, starts with a #! line for Node and is executable', () => {
  const dir = commandProject();
  const target = realpathSync(join(dir, 'node_modules/.bin/tenon'));
  expect(target).toBe(join(realpathSync(dir), 'node_modules/tenon/dist/workers/tenon.js'));
  expect(readFileSync(target, 'utf8').split('\n', 1)[0]).toBe('#!/usr/bin/env node');
  expect(statSync(target).mode & EXECUTE_BITS).toBe(EXECUTE_BITS);
});

test('[SHIP-bin] npx tenon --help exits 0 with the usage; a bad command exits 2', () => {
  const help = npxTenon(['--help']);
  expect(help.stderr).toBe('');
  expect(help.status).toBe(0);
  expect(help.stdout.startsWith('usage: tenon generate --model FILE')).toBe(true);
  const bad = npxTenon(['frobnicate']);
  expect(bad.status).toBe(2);
  expect(bad.stderr.startsWith('tenon: unknown command frobnicate')).toBe(true);
});

test('[SHIP-bin] npx tenon generate --json on the host provider prints llama2.c greedy ids for the fixture', () => {
  test.skip(skipWithoutModels(), 'model fixtures absent (../shared/models)');
  test.setTimeout(120_000);
  const fixtures = ['--model', join(models, 'stories260K.bin'), '--tokenizer', join(models, 'tok512.bin'), '--prompt', 'Once upon a time', '--steps', String(GREEDY_IDS.length)];
  const r = npxTenon(['generate', ...fixtures, '--provider', 'host', '--json']);
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  const out = JSON.parse(r.stdout) as { provider: string; promptIds: number[]; generatedIds: number[]; text: string };
  expect(out.provider).toBe('host');
  expect(out.promptIds).toEqual(PROMPT_IDS);
  expect(out.generatedIds).toEqual(GREEDY_IDS);
  expect(out.text).toBe(', there was a little girl named Lily');
  // Dawn is the `webgpu` package, a development dependency of tenon: an installing project that lacks it
  // gets a coded refusal for the webgpu provider, not a crash.
  const gpu = npxTenon(['generate', ...fixtures, '--provider', 'webgpu', '--json']);
  expect(gpu.status).toBe(1);
  expect(gpu.stdout).toBe('');
  expect(gpu.stderr.startsWith('tenon: ENOTSUP webgpu-package-missing: ')).toBe(true);
});

test('[SHIP-bin][SHIP-cli-tokenize] npx tenon tokenize --json on a GGUF fixture prints llama.cpp\'s ids; --special parses special tokens', () => {
  test.skip(skipWithoutGguf(['tiny-qwen2-Q4_K_M.gguf', 'tokenize-qwen.json']), 'GGUF fixtures absent (../shared/models/gguf)');
  test.setTimeout(120_000);
  const dir = commandProject();
  const gguf = join(dir, 'tiny-qwen2-Q4_K_M.gguf');
  writeFileSync(gguf, gunzipSync(readFileSync(join(models, 'gguf/tiny-qwen2-Q4_K_M.gguf.gz'))));
  const cases = JSON.parse(readFileSync(join(models, 'reference/tokenize-qwen.json'), 'utf8')) as { text: string; ids: number[] }[];
  const hello = cases.find((c) => c.text === 'Hello world')!;
  const r = npxTenon(['tokenize', '--model', gguf, '--text', hello.text, '--json']);
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  expect((JSON.parse(r.stdout) as { ids: number[] }).ids).toEqual(hello.ids);
  const special = npxTenon(['tokenize', '--model', gguf, '--text', '<|im_start|>user', '--special', '--json']);
  expect(special.status).toBe(0);
  // <|im_start|> is Qwen's control token 151644; "user" is 872.
  expect((JSON.parse(special.stdout) as { ids: number[] }).ids).toEqual([151644, 872]);
});

test('[SHIP-pack][SHIP-iife] the installed script-tag bundle works from a plain HTML page, its worker files included', async ({ page }) => {
  const html = `<!doctype html><meta charset="utf-8"><p id="status">loading</p>
<script src="node_modules/tenon/dist/tenon.iife.js"></script>
<script>
(async () => {
  const host = tenon.createHostProvider({ shared: true });
  const t = await tenon.fromArray(host, 'f32', Float32Array.of(1, 2, 3));
  const roundTrip = Array.from(await t.toArray());
  t.dispose();
  const pool = await tenon.createWorkerPool({ provider: host, size: 1 });
  const inputs = tenon.createAllocationGroup();
  inputs.insert(await tenon.fromArray(host, 'f32', Float32Array.of(1, 2)));
  inputs.insert(await tenon.fromArray(host, 'f32', Float32Array.of(3, 4)));
  const spec = { name: 'sum', inputs: { a: { slot: 0, dtype: 'f32', shape: [2] }, b: { slot: 1, dtype: 'f32', shape: [2] } },
    fresh: [{ name: 'out', dtype: 'f32', shape: [2] }], dispatches: [{ kernel: 'add', bind: ['a', 'b', 'out'], params: { n: 2 } }], outputs: ['out'] };
  const outcome = await (await pool.submit(spec, inputs)).wait();
  const v = outcome.bundle.output(0);
  const pooled = Array.from(await v.toArray());
  v.release();
  await pool.close();
  window.result = { roundTrip, pooled, version: typeof tenon.TextSession };
  document.getElementById('status').textContent = 'done';
})().catch((e) => { document.getElementById('status').textContent = 'failed: ' + (e.code ?? '') + ' ' + e.message; });
</script>`;
  writeFileSync(join(project, 'page.html'), html);
  await page.goto('/static/test-results/pack-project/page.html');
  await expect(page.locator('#status')).toHaveText('done', { timeout: 30_000 });
  expect(await page.evaluate(() => (window as unknown as { result: unknown }).result)).toEqual({ roundTrip: [1, 2, 3], pooled: [4, 6], version: 'function' });
});

// Plan: the package as another project gets it. `npm pack` the built package, install the tarball into
// a fresh project (offline: its few dependencies come from the npm cache, or, when the cache lacks one,
// from this repository's node_modules), then (1) import it as an ES
// module in Node and run a graph, (2) type-check a strict TypeScript file against the installed
// declarations (skipLibCheck off) — and a control file with a type error must fail — and (3) load the
// installed script-tag bundle from a plain HTML page in Chromium: the global works, and so do the worker
// files it starts. The project lives under test-results/ (Playwright empties it on every run).
import { execFileSync } from 'node:child_process';
import { copyFileSync, cpSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { expect, test } from '@playwright/test';

const repo = resolve('.');
const project = resolve('test-results/pack-project');
const tsc = join(repo, 'node_modules/typescript/bin/tsc');

function run(command: string, args: string[], cwd: string): string {
  return execFileSync(command, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, npm_config_update_notifier: 'false' } });
}

test.describe.configure({ mode: 'serial' });

test.beforeAll(() => {
  test.setTimeout(180_000);
  rmSync(project, { recursive: true, force: true });
  mkdirSync(project, { recursive: true });
  run('npm', ['pack', '--ignore-scripts', '--pack-destination', project], repo);
  const tarball = readdirSync(project).find((f) => f.endsWith('.tgz'));
  expect(tarball).toBeDefined();
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'tenon-pack-check', private: true, type: 'module' }, null, 2));
  try {
    run('npm', ['install', `./${tarball}`, '--offline', '--no-audit', '--no-fund', '--ignore-scripts', '--loglevel=error'], project);
  } catch (err) {
    // No network here and the npm cache lacks a dependency: install the way npm would, by hand — the
    // tarball unpacked as node_modules/tenon, its dependencies copied from this repository's node_modules.
    console.warn(`npm install --offline failed (${String((err as { stderr?: string }).stderr ?? err).trim()}); installing by hand`);
    const target = join(project, 'node_modules/tenon');
    mkdirSync(target, { recursive: true });
    run('tar', ['-xzf', join(project, tarball!), '-C', target, '--strip-components=1'], project);
    const { dependencies } = JSON.parse(readFileSync('package.json', 'utf8')) as { dependencies: Record<string, string> };
    for (const dep of Object.keys(dependencies)) cpSync(join(repo, 'node_modules', dep), join(project, 'node_modules', dep), { recursive: true });
  }
  copyFileSync('examples/esm/node.mjs', join(project, 'node.mjs'));
  copyFileSync('examples/esm/app.ts', join(project, 'app.ts'));
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

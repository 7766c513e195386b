// Plan: the built bundles as they ship (npm run build; served byte for byte under /static/), used the
// way the README tells users to: the script-tag bundle from a plain HTML page (a graph on WebGPU, a pool
// job in dist/pool.worker.js, a file through a data-plane worker in dist/dataplane.worker.js), and the
// ES module bundle imported by package name (an import map in Chromium; the package's self-reference in
// Node). Oracle: the computed values, and that the pages loaded nothing but the built files.
import { execFileSync } from 'node:child_process';
import { expect, test } from '@playwright/test';
import type { Page } from '@playwright/test';

/** Every script and worker URL a page requested (path only). */
function scriptsOf(page: Page): string[] {
  const seen: string[] = [];
  page.context().on('request', (r) => {
    if (['script', 'other'].includes(r.resourceType()) || r.url().endsWith('.js') || r.url().endsWith('.ts')) seen.push(new URL(r.url()).pathname);
  });
  return seen;
}

test('[SHIP-iife] examples/script-tag.html runs a graph, a pool job and a data-plane worker with only the script-tag bundle', async ({ page }) => {
  const requested = scriptsOf(page);
  await page.goto('/static/examples/script-tag.html');
  await expect(page.locator('#status')).toHaveText('done', { timeout: 30_000 });
  const result = await page.evaluate(() => (window as unknown as { tenonExample: Record<string, unknown> }).tenonExample);
  expect(result).toEqual({ provider: 'webgpu', sum: [11, 22, 33, 44], poolSum: [11, 22, 33, 44], file: 'hello from a worker' });
  const code = requested.filter((p) => p.endsWith('.js') || p.endsWith('.ts'));
  expect(code).toContain('/static/dist/tenon.iife.js');
  expect(code).toContain('/static/dist/pool.worker.js');
  expect(code).toContain('/static/dist/dataplane.worker.js');
  expect(code.filter((p) => !p.startsWith('/static/dist/'))).toEqual([]);
});

test('[SHIP-esm] examples/esm imports the ES module bundle by package name, in Chromium and in Node', async ({ page }) => {
  const requested = scriptsOf(page);
  await page.goto('/static/examples/esm/index.html');
  await expect(page.locator('#status')).toHaveText('done', { timeout: 30_000 });
  const result = await page.evaluate(() => (window as unknown as { tenonExample: Record<string, unknown> }).tenonExample);
  expect(result).toEqual({ provider: 'webgpu', sum: [10.5, 21.5, 32.5], file: 'written through a descriptor' });
  expect(requested.filter((p) => p.endsWith('.js') || p.endsWith('.ts')).sort()).toEqual(['/static/dist/tenon.js', '/static/examples/esm/main.js']);
  // Node resolves 'tenon' through the package's own exports (self-reference) to dist/tenon.js.
  const out = execFileSync(process.execPath, ['examples/esm/node.mjs'], { encoding: 'utf8' });
  expect(JSON.parse(out.trim())).toEqual({ sum: [5, 7, 9], liveRoots: expect.any(Number) });
});

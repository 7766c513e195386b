// Plan: the inference demo as built (dist/demo, served byte for byte under /static/), as a user meets it,
// on the stories260K fixture served locally (/models/ = ../shared/models; never the public URLs, no
// network). Each test starts from an empty browser profile (fresh OPFS and IndexedDB).
//   - greedy generation reproduces llama2.c's known continuation (ids and text), on WebGPU; the page shows
//     time to first token and tokens/s; screenshots after generation and after a device loss are kept
//     (test-results/demo-after-generation.png, test-results/demo-device-lost.png);
//   - speculative decoding gives exactly the greedy ids and shows how many drafts were accepted;
//   - a reload loads the weights from OPFS (no request for them at all) and hits the prompt cache saved
//     by the first visit;
//   - the generation worker terminated mid-stream: the page reports ECONNRESET, starts a new worker that
//     reloads from OPFS, and the next generation is right;
//   - the GPU device lost mid-generation: the page says so, "Reload model" builds a new provider and
//     session, and the next generation is right;
//   - a bad model file gives a coded error and the page stays usable;
//   - a browser without WebGPU runs on the host provider, says so, and still generates the same text.
// Fault seams (window.tenonDemo.faults) use production paths: worker.terminate(), provider.faults.loseDevice().
import { expect, test } from '@playwright/test';
import type { BrowserContext, Page } from '@playwright/test';
import { chromiumArgs, chromiumPath } from '../scripts/chromium.config.js';
import { skipWithoutModels } from './fixtures.js';

test.skip(skipWithoutModels(), 'the model fixtures in ../shared/models are absent');

const DEMO = '/static/dist/demo/index.html';
const FIXTURE = 'model=/models/stories260K.bin&tokenizer=/models/tok512.bin';
/** llama2.c's greedy ids after "Once upon a time" for stories260K (../shared/models/README.md). */
const GREEDY = [432, 383, 286, 261, 376, 298, 315, 421, 395, 317];
const KNOWN_TEXT = ', there was a little girl named Lily. She loved to play outside in the park.';
const LOAD_TIMEOUT = 30_000;

interface Run {
  ids: number[];
  text: string;
  firstTokenMs?: number;
  tokensPerSecond?: number;
  result?: { cache: { mode: string; reused: number; prefilled: number; saved: boolean }; speculation?: { passes: number; drafted: number; accepted: number }; promptTokens: number };
  error?: { code: string; reason?: string; outcome?: string };
}

interface DemoWindow {
  tenonDemo: {
    lastRun: Run | undefined;
    lastLoad: { provider: string; fromCache: boolean } | undefined;
    faults: { killWorkerAfterTokens(n: number): void; loseDeviceAfterTokens(n: number): void };
  };
}

async function openDemo(page: Page, params: string): Promise<void> {
  await page.goto(`${DEMO}?${FIXTURE}&${params}`);
  await expect(page.locator('body')).toHaveAttribute('data-state', 'ready', { timeout: LOAD_TIMEOUT });
}

/** Clicks Generate and waits for the run to end (in whatever state it ends). */
async function generate(page: Page): Promise<Run> {
  await page.evaluate(() => {
    (window as unknown as DemoWindow).tenonDemo.lastRun = undefined;
  });
  await page.click('#generate');
  await page.waitForFunction(() => {
    const d = window as unknown as DemoWindow;
    return d.tenonDemo.lastRun !== undefined && document.body.dataset['state'] !== 'generating';
  }, undefined, { timeout: LOAD_TIMEOUT });
  return page.evaluate(() => (window as unknown as DemoWindow).tenonDemo.lastRun!);
}

/** Counts requests for the fixture files from every page and worker of the context. */
function fixtureRequests(context: BrowserContext): { model: number; tokenizer: number } {
  const counts = { model: 0, tokenizer: 0 };
  context.on('request', (r) => {
    const path = new URL(r.url()).pathname;
    if (path === '/models/stories260K.bin') counts.model++;
    if (path === '/models/tok512.bin') counts.tokenizer++;
  });
  return counts;
}

function expectGreedy(run: Run): void {
  expect(run.error).toBeUndefined();
  expect(run.ids.slice(0, GREEDY.length)).toEqual(GREEDY);
  // KNOWN_TEXT takes 26 tokens: a shorter run must be a prefix of it, a longer one must start with it.
  if (run.ids.length >= 26) expect(run.text.startsWith(KNOWN_TEXT)).toBe(true);
  else expect(KNOWN_TEXT.startsWith(run.text)).toBe(true);
}

test('[SHIP-demo-greedy] the demo generates llama2.c\'s greedy continuation of "Once upon a time" on WebGPU and shows its speed', async ({ page }, testInfo) => {
  // WebGPU forced: the demo's default (auto) runs the host provider on SwiftShader (demo-provider-auto.spec.ts)
  await openDemo(page, 'maxTokens=40&promptCache=0&provider=webgpu');
  await expect(page.locator('#adapter')).toHaveAttribute('data-provider', 'webgpu');
  // The e2e lane runs on SwiftShader; the hardware lane runs this same test on a real GPU.
  if (testInfo.project.name === 'e2e') await expect(page.locator('#adapter')).toContainText('swiftshader');
  else await expect(page.locator('#adapter')).not.toContainText('swiftshader');
  const run = await generate(page);
  expectGreedy(run);
  expect(run.ids.length).toBe(40);
  await expect(page.locator('#generated')).toHaveText(run.text);
  await expect(page.locator('#prompt-echo')).toHaveText('Once upon a time');
  await expect(page.locator('#ttft')).toContainText(' ms');
  await expect(page.locator('#tps')).toContainText('tokens/s over 40 tokens');
  await expect(page.locator('#memory')).toContainText('weights');
  expect(Number(await page.locator('#memory').getAttribute('data-live-roots'))).toBeGreaterThan(0);
  const shot = 'test-results/demo-after-generation.png';
  await page.screenshot({ path: shot, fullPage: true });
  await testInfo.attach('demo after generation', { path: shot, contentType: 'image/png' });
});

test('[SHIP-demo-speculative] with speculative decoding on, the demo emits exactly the greedy ids and shows the accepted drafts', async ({ page }) => {
  await openDemo(page, 'maxTokens=120&promptCache=0');
  const plain = await generate(page);
  expectGreedy(plain);
  await page.check('#speculative');
  const fast = await generate(page);
  expect(fast.ids).toEqual(plain.ids);
  expect(fast.text).toBe(plain.text);
  const s = fast.result!.speculation!;
  expect(s.drafted).toBeGreaterThan(0);
  expect(s.accepted).toBeGreaterThan(0);
  await expect(page.locator('#spec-effect')).toContainText(`${s.accepted} of ${s.drafted} drafted tokens accepted`);
  await expect(page.locator('#runs tr')).toHaveCount(2);
});

test('[SHIP-demo-opfs-cache] a reload loads the weights from OPFS with no request for them, and hits the prompt cache saved before', async ({ page }) => {
  const requests = fixtureRequests(page.context());
  await openDemo(page, 'maxTokens=20&promptCache=1');
  expect(requests).toEqual({ model: 1, tokenizer: 1 });
  await expect(page.locator('#load-status')).toHaveAttribute('data-source', 'network');
  const first = await generate(page);
  expectGreedy(first);
  expect(first.result!.cache).toMatchObject({ mode: 'miss', saved: true, prefilled: 5 });
  await expect(page.locator('#cache-effect')).toContainText('saved the prompt cache to OPFS');

  await page.reload();
  await expect(page.locator('body')).toHaveAttribute('data-state', 'ready', { timeout: LOAD_TIMEOUT });
  expect(requests).toEqual({ model: 1, tokenizer: 1 });
  await expect(page.locator('#load-status')).toHaveAttribute('data-source', 'opfs');
  await expect(page.locator('#load-status')).toContainText('Loaded from OPFS');
  expect(await page.evaluate(() => (window as unknown as DemoWindow).tenonDemo.lastLoad?.fromCache)).toBe(true);
  const second = await generate(page);
  expect(second.ids).toEqual(first.ids);
  expect(second.result!.cache).toMatchObject({ mode: 'hit', reused: 4, prefilled: 1 });
  await expect(page.locator('#cache-effect')).toContainText('4 of 5 prompt tokens restored from OPFS');
  expect(requests).toEqual({ model: 1, tokenizer: 1 });
});

test('[SHIP-demo-worker-kill] the generation worker terminated mid-stream: ECONNRESET is shown, a new worker reloads from OPFS, the next run is right', async ({ page }) => {
  const requests = fixtureRequests(page.context());
  await openDemo(page, 'maxTokens=200&promptCache=0');
  await page.evaluate(() => (window as unknown as DemoWindow).tenonDemo.faults.killWorkerAfterTokens(5));
  const broken = await generate(page);
  expect(broken.error?.code).toBe('ECONNRESET');
  expect(broken.ids.length).toBeGreaterThanOrEqual(5);
  expect(broken.ids.length).toBeLessThan(200);
  await expect(page.locator('body')).toHaveAttribute('data-state', 'ready', { timeout: LOAD_TIMEOUT });
  await expect(page.locator('#message')).toContainText('ECONNRESET');
  await expect(page.locator('#message')).toContainText('Recovered: a new worker loaded the model from OPFS');
  expect(requests).toEqual({ model: 1, tokenizer: 1 });
  const next = await generate(page);
  expectGreedy(next);
  expect(next.ids.length).toBe(200);
});

test('[SHIP-demo-device-loss] the GPU device lost mid-generation: the page says so, "Reload model" builds a new provider and session, the next run is right', async ({ page }, testInfo) => {
  await openDemo(page, 'maxTokens=200&promptCache=0&provider=webgpu');
  await expect(page.locator('#reload')).toBeHidden();
  await page.evaluate(() => (window as unknown as DemoWindow).tenonDemo.faults.loseDeviceAfterTokens(5));
  const broken = await generate(page);
  expect(broken.error?.code).toBe('ENODEV');
  expect(broken.ids.length).toBeLessThan(200);
  await expect(page.locator('body')).toHaveAttribute('data-state', 'device-lost');
  await expect(page.locator('#message')).toContainText('The GPU device was lost');
  await expect(page.locator('#generate')).toBeDisabled();
  await expect(page.locator('#reload')).toBeVisible();
  const shot = 'test-results/demo-device-lost.png';
  await page.screenshot({ path: shot, fullPage: true });
  await testInfo.attach('demo after a device loss', { path: shot, contentType: 'image/png' });
  await page.click('#reload');
  await expect(page.locator('body')).toHaveAttribute('data-state', 'ready', { timeout: LOAD_TIMEOUT });
  await expect(page.locator('#reload')).toBeHidden();
  await expect(page.locator('#message')).toContainText('Model reloaded on a new device');
  await expect(page.locator('#adapter')).toHaveAttribute('data-provider', 'webgpu');
  // how many roots the loss retained depends on whether a step was in flight when it hit; the page must
  // report that count (a whole number), and show the same number in its memory table
  const retained = await page.locator('#memory').getAttribute('data-retained-after-loss');
  expect(retained).toMatch(/^\d+$/);
  await expect(page.locator('#memory dd').last()).toHaveText(`${retained} roots`);
  const next = await generate(page);
  expectGreedy(next);
  expect(next.ids.length).toBe(200);
});

test('[SHIP-demo-bad-model] a file that is not a llama2.c model gives a coded TenonError and the page stays usable', async ({ page }) => {
  await openDemo(page, 'maxTokens=10&promptCache=0');
  await page.setInputFiles('#model-file', { name: 'not-a-model.bin', mimeType: 'application/octet-stream', buffer: Buffer.from('this is a text file, not a llama2.c checkpoint\n') });
  await page.click('#load');
  await expect(page.locator('body')).toHaveAttribute('data-state', 'error', { timeout: LOAD_TIMEOUT });
  await expect(page.locator('#message')).toContainText('not a valid llama2.c model or tokenizer file');
  const code = await page.locator('#message').getAttribute('data-code');
  expect(['EINVAL', 'EOVERFLOW', 'ENOTSUP']).toContain(code);
  await expect(page.locator('#message')).toContainText(code!);
  await expect(page.locator('#generate')).toBeDisabled();
  // The right file again: the page loads it (from OPFS) and generates.
  await page.setInputFiles('#model-file', []);
  await page.click('#load');
  await expect(page.locator('body')).toHaveAttribute('data-state', 'ready', { timeout: LOAD_TIMEOUT });
  expectGreedy(await generate(page));
});

test('[SHIP-demo-no-webgpu] in a browser without WebGPU the demo says so, runs on the host provider and generates the same text', async ({ playwright }, testInfo) => {
  // Without --enable-unsafe-webgpu (and with the GPU off, for machines that have one) there is no adapter.
  const args = [...chromiumArgs.filter((a) => a !== '--enable-unsafe-webgpu'), '--disable-gpu', '--disable-features=WebGPU'];
  const browser = await playwright.chromium.launch({ executablePath: chromiumPath(), args });
  try {
    const page = await browser.newPage({ baseURL: testInfo.project.use.baseURL! });
    await page.goto('/e2e/pages/dataplane.html');
    const adapter = await page.evaluate(async () => ((navigator as Navigator & { gpu?: GPU }).gpu === undefined ? null : (navigator as Navigator & { gpu: GPU }).gpu.requestAdapter()));
    expect(adapter, 'precondition: this browser has no WebGPU adapter').toBeNull();
    await openDemo(page, 'maxTokens=20&promptCache=0');
    await expect(page.locator('#adapter')).toHaveAttribute('data-provider', 'host');
    await expect(page.locator('#message')).toHaveClass('warn');
    await expect(page.locator('#message')).toContainText('WebGPU is not available in this browser (ENOTSUP');
    await expect(page.locator('#message')).toContainText('host provider');
    expectGreedy(await generate(page));
  } finally {
    await browser.close();
  }
});

// Plan: the built demo (dist/demo under /static/) chooses its provider with createProvider('auto') unless
// the page's "Run on" select (or ?provider=) forces one. On the e2e lane's SwiftShader adapter the default
// runs the host provider and says why (an info message, the adapter panel's "chosen" row and its
// data-provider-reason), and still generates llama2.c's greedy ids; ?provider=webgpu runs WebGPU on the
// same adapter (reason forced). On a real GPU (the hardware lane) the default is WebGPU, reason
// hardware-adapter.
import { expect, test } from '@playwright/test';
import type { Page } from '@playwright/test';
import { skipWithoutModels } from './fixtures.js';

test.skip(skipWithoutModels(), 'the model fixtures in ../shared/models are absent');

const DEMO = '/static/dist/demo/index.html';
const FIXTURE = 'model=/models/stories260K.bin&tokenizer=/models/tok512.bin';
/** llama2.c's greedy ids after "Once upon a time" for stories260K (../shared/models/README.md). */
const GREEDY = [432, 383, 286, 261, 376, 298, 315, 421, 395, 317];
const LOAD_TIMEOUT = 30_000;

interface DemoWindow {
  tenonDemo: { lastRun: { ids: number[]; error?: unknown } | undefined };
}

async function open(page: Page, params: string): Promise<void> {
  await page.goto(`${DEMO}?${FIXTURE}&maxTokens=10&promptCache=0${params}`);
  await expect(page.locator('body')).toHaveAttribute('data-state', 'ready', { timeout: LOAD_TIMEOUT });
}

async function generatedIds(page: Page): Promise<number[]> {
  await page.click('#generate');
  await page.waitForFunction(() => {
    const d = window as unknown as DemoWindow;
    return d.tenonDemo.lastRun !== undefined && document.body.dataset['state'] !== 'generating';
  }, undefined, { timeout: LOAD_TIMEOUT });
  const run = await page.evaluate(() => (window as unknown as DemoWindow).tenonDemo.lastRun!);
  expect(run.error).toBeUndefined();
  return run.ids;
}

test('[SHIP-demo-provider-auto] by default the demo picks its provider from the adapter and says why; ?provider=webgpu forces WebGPU', async ({ page }, testInfo) => {
  const hardware = testInfo.project.name !== 'e2e';
  await open(page, '');
  const adapter = page.locator('#adapter');
  if (hardware) {
    await expect(adapter).toHaveAttribute('data-provider', 'webgpu');
    await expect(adapter).toHaveAttribute('data-provider-reason', 'hardware-adapter');
  } else {
    await expect(adapter).toHaveAttribute('data-provider', 'host');
    await expect(adapter).toHaveAttribute('data-provider-reason', 'fallback-adapter');
    await expect(adapter).toContainText('swiftshader');
    await expect(page.locator('#message')).toHaveClass('info');
    await expect(page.locator('#message')).toContainText('host provider');
  }
  expect((await generatedIds(page)).slice(0, GREEDY.length)).toEqual(GREEDY);

  await open(page, '&provider=webgpu');
  await expect(adapter).toHaveAttribute('data-provider', 'webgpu');
  await expect(adapter).toHaveAttribute('data-provider-reason', 'forced');
  expect((await generatedIds(page)).slice(0, GREEDY.length)).toEqual(GREEDY);
});

// Plan: what only a whole page can show (seed 004 §17.4 "authority restart and delayed recovery").
// The page is the namespace authority. A reload kills it, its sessions and its workers at an arbitrary
// point of a publication; the reloaded page recovers the plane from IndexedDB and OPFS. Oracle: the path
// holds exactly one complete revision (never a mix, never a half-written file), and every staging file
// of the dead run is reclaimed. A forced GC shows a dropped writer is reported and aborted, never published.
import { expect, test } from '@playwright/test';
import type { Page } from '@playwright/test';

const SMALL = 4096;
const BIG = 96 << 20;

async function open(page: Page, plane: string): Promise<void> {
  await page.goto('/e2e/pages/dataplane.html');
  await expect(page.locator('#status')).toHaveText('ready');
  await page.evaluate((name) => window.tenonE2E.init(name), plane);
}

test('[B7][K6][K7] a page reload while a worker stages a publication leaves the old revision whole and reclaims the staging', async ({ page }) => {
  const plane = `e2e-reload-${Date.now().toString(36)}`;
  await open(page, plane);
  expect(await page.evaluate((n) => window.tenonE2E.put('/r/x', 1, n), SMALL)).toBe(1);
  await page.evaluate((big) => window.tenonE2E.startWorkerPublication('/r/x', 2, big, 24 << 20), BIG);
  expect(await page.evaluate(() => window.tenonE2E.workerProgress())).toBe(24 << 20);
  expect((await page.evaluate(() => window.tenonE2E.stats())).files).toBe(2); // revision 1 and the staging file
  await page.reload();
  await expect(page.locator('#status')).toHaveText('ready');
  await page.evaluate((name) => window.tenonE2E.init(name), plane);
  expect(await page.evaluate(() => window.tenonE2E.stat('/r/x'))).toMatchObject({ revision: 1, length: SMALL });
  expect(await page.evaluate(() => window.tenonE2E.whichSeed('/r/x', [1, 2]))).toBe(1);
  const st = await page.evaluate(() => window.tenonE2E.stats());
  expect(st.files).toBe(st.boundFiles);
});

test('[B7][B8][N2] a page reload right after a clean close: the path holds one complete revision, old or new, never a mix', async ({ page }) => {
  const plane = `e2e-seal-${Date.now().toString(36)}`;
  await open(page, plane);
  expect(await page.evaluate((n) => window.tenonE2E.put('/r/y', 1, n), SMALL)).toBe(1);
  await page.evaluate((big) => window.tenonE2E.startPageSeal('/r/y', 3, big), 32 << 20);
  await page.reload();
  await expect(page.locator('#status')).toHaveText('ready');
  await page.evaluate((name) => window.tenonE2E.init(name), plane);
  const node = (await page.evaluate(() => window.tenonE2E.stat('/r/y'))) as { revision: number; length: number };
  const seed = await page.evaluate(() => window.tenonE2E.whichSeed('/r/y', [1, 3]));
  expect([node.revision === 1 && node.length === SMALL && seed === 1, node.revision === 2 && node.length === 32 << 20 && seed === 3]).toContain(true);
  const st = await page.evaluate(() => window.tenonE2E.stats());
  expect(st.files).toBe(st.boundFiles);
});

test('[D4][C5] a writer dropped without close is reported by the leak diagnostic and aborted, never published', async ({ page }) => {
  const plane = `e2e-drop-${Date.now().toString(36)}`;
  await open(page, plane);
  await page.evaluate(() => window.tenonE2E.dropWriter('/r/dropped'));
  await expect
    .poll(
      async () => {
        await page.evaluate(() => (globalThis as unknown as { gc(): void }).gc());
        return (await page.evaluate(() => window.tenonE2E.stats())).leaked;
      },
      { timeout: 20_000 },
    )
    .toBe(1);
  await expect.poll(async () => (await page.evaluate(() => window.tenonE2E.stats())).grants, { timeout: 10_000 }).toBe(0);
  const missing = await page.evaluate(() => window.tenonE2E.stat('/r/dropped').then(() => 'exists', (e: { code: string }) => e.code));
  expect(missing).toBe('ENOENT');
});

// Plan: the hardware lane's demo benchmark (project hardware; npm run test:hardware only). On the real
// GPU the built demo generates from the stories260K fixture: plain greedy decoding, a long prompt without
// and then with its OPFS prompt cache, and speculative decoding on a repetitive prompt. It checks only
// correctness (greedy ids, identical outputs); times are measured and reported, never asserted
// (DESIGN.md: benchmarks report). Results: bench/results/hardware-demo.json and a table on stdout.
import { mkdirSync, writeFileSync } from 'node:fs';
import { expect, test } from '@playwright/test';
import type { Page } from '@playwright/test';
import { skipWithoutModels } from './fixtures.js';

test.skip(skipWithoutModels(), 'the model fixtures in ../shared/models are absent');

const DEMO = '/static/dist/demo/index.html?model=/models/stories260K.bin&tokenizer=/models/tok512.bin';
const GREEDY = [432, 383, 286, 261, 376, 298, 315, 421, 395, 317];
const STORY =
  'Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red ball. ' +
  'She wanted to play with it, but it was too high. Lily\'s mom said, "Lily, let\'s go to the park." Lily was sad and didn\'t know what to do.';

interface Run {
  ids: number[];
  firstTokenMs?: number;
  tokensPerSecond?: number;
  result?: { cache: { mode: string }; speculation?: { drafted: number; accepted: number; passes: number } };
  error?: unknown;
}

async function run(page: Page, settings: { prompt: string; maxTokens: number; promptCache: boolean; speculative: boolean }): Promise<Run> {
  await page.fill('#prompt', settings.prompt);
  await page.fill('#max-tokens', String(settings.maxTokens));
  await page.setChecked('#prompt-cache', settings.promptCache);
  await page.setChecked('#speculative', settings.speculative);
  await page.evaluate(() => {
    (window as unknown as { tenonDemo: { lastRun: unknown } }).tenonDemo.lastRun = undefined;
  });
  await page.click('#generate');
  await page.waitForFunction(() => {
    const d = window as unknown as { tenonDemo: { lastRun: unknown } };
    return d.tenonDemo.lastRun !== undefined && document.body.dataset['state'] !== 'generating';
  }, undefined, { timeout: 120_000 });
  const r = await page.evaluate(() => (window as unknown as { tenonDemo: { lastRun: Run } }).tenonDemo.lastRun);
  expect(r.error).toBeUndefined();
  return r;
}

test('[SHIP-hardware-bench] the demo on the real GPU: first-token time and tokens/s, plain, with a prompt cache and speculative', async ({ page }) => {
  test.setTimeout(300_000);
  await page.goto(DEMO);
  await expect(page.locator('body')).toHaveAttribute('data-state', 'ready', { timeout: 60_000 });
  const adapter = await page.locator('#adapter').innerText();
  const plain = await run(page, { prompt: 'Once upon a time', maxTokens: 256, promptCache: false, speculative: false });
  expect(plain.ids.slice(0, GREEDY.length)).toEqual(GREEDY);
  const miss = await run(page, { prompt: STORY, maxTokens: 32, promptCache: true, speculative: false });
  const hit = await run(page, { prompt: STORY, maxTokens: 32, promptCache: true, speculative: false });
  expect(hit.result?.cache.mode).toBe('hit');
  expect(hit.ids).toEqual(miss.ids);
  const repetitive = `${STORY} ${STORY}`;
  const greedy = await run(page, { prompt: repetitive, maxTokens: 128, promptCache: false, speculative: false });
  const speculative = await run(page, { prompt: repetitive, maxTokens: 128, promptCache: false, speculative: true });
  expect(speculative.ids).toEqual(greedy.ids);
  const rows = [
    { case: 'greedy, 256 tokens', firstTokenMs: plain.firstTokenMs, tokensPerSecond: plain.tokensPerSecond },
    { case: 'long prompt, cache miss', firstTokenMs: miss.firstTokenMs, tokensPerSecond: miss.tokensPerSecond },
    { case: 'long prompt, cache hit', firstTokenMs: hit.firstTokenMs, tokensPerSecond: hit.tokensPerSecond },
    { case: 'repetitive, greedy', firstTokenMs: greedy.firstTokenMs, tokensPerSecond: greedy.tokensPerSecond },
    { case: 'repetitive, speculative', firstTokenMs: speculative.firstTokenMs, tokensPerSecond: speculative.tokensPerSecond, speculation: speculative.result?.speculation },
  ];
  const ratios = {
    promptCacheFirstTokenSpeedup: miss.firstTokenMs !== undefined && hit.firstTokenMs ? miss.firstTokenMs / hit.firstTokenMs : null,
    speculativeThroughputRatio: greedy.tokensPerSecond && speculative.tokensPerSecond ? speculative.tokensPerSecond / greedy.tokensPerSecond : null,
  };
  mkdirSync('bench/results', { recursive: true });
  writeFileSync('bench/results/hardware-demo.json', `${JSON.stringify({ when: new Date().toISOString(), model: 'stories260K', adapter, rows, ratios }, null, 2)}\n`);
  console.log(`demo on ${adapter.replace(/\s+/g, ' ')}`);
  for (const r of rows) console.log(`  ${r.case.padEnd(28)} first token ${r.firstTokenMs?.toFixed(1) ?? '–'} ms   ${r.tokensPerSecond?.toFixed(1) ?? '–'} tokens/s`);
  console.log(`  prompt cache first-token speedup ${ratios.promptCacheFirstTokenSpeedup?.toFixed(2) ?? '–'}x, speculative/greedy throughput ${ratios.speculativeThroughputRatio?.toFixed(2) ?? '–'}x`);
});

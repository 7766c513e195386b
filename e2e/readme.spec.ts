// Plan: the README's code can't rot. Every block marked `<!-- tested: e2e/readme.spec.ts ... -->` is taken
// from README.md as it is, compiled from TypeScript to JavaScript (types stripped, nothing else), and run
// as a module in a plain page where `tenon` names the built ES module bundle. The model URLs are the only
// substitution: the public stories15M files become the local stories260K fixture (no network in tests).
// Oracle: no page error, the values the blocks log, and the generated story text.
import { expect, test } from '@playwright/test';
import { markedBlocks, runModule } from './doc-blocks.js';
import { skipWithoutModels } from './fixtures.js';

const MARK = '<!-- tested: e2e/readme.spec.ts';
const MODEL_URL = 'https://huggingface.co/karpathy/tinyllamas/resolve/main/stories15M.bin';
const TOKENIZER_URL = 'https://raw.githubusercontent.com/karpathy/llama2.c/master/tokenizer.bin';
const KNOWN_TEXT = ', there was a little girl named Lily. She loved to play outside in the park.';

const blocks = markedBlocks('README.md', MARK);

test('[SHIP-readme-example] the README usage example runs as written: a graph sums, a file round-trips, the model tells its story', async ({ page }) => {
  test.skip(skipWithoutModels(), 'the model fixtures in ../shared/models are absent');
  expect(blocks.length).toBe(2);
  const usage = blocks[0]!;
  expect(usage).toContain(MODEL_URL);
  expect(usage).toContain(TOKENIZER_URL);
  const local = usage.replace(MODEL_URL, '/models/stories260K.bin').replace(TOKENIZER_URL, '/models/tok512.bin');
  const { logs, errors } = await runModule(page, local);
  await expect(page.locator('body')).toContainText(KNOWN_TEXT, { timeout: 30_000 });
  expect(errors).toEqual([]);
  expect(await logs()).toEqual([[11, 22, 33], 'hello']);
});

test('[SHIP-readme-example] the README ownership-kernel example runs as written and ends with no live roots', async ({ page }) => {
  const { logs, count, errors } = await runModule(page, blocks[1]!);
  await expect.poll(count, { timeout: 30_000 }).toBe(2);
  expect(errors).toEqual([]);
  expect(await logs()).toEqual([[1, 2, 3, 4, 5, 6], 0]);
});

// Plan: the hardware lane's first step (project hardware-adapter; npm run test:hardware only). The page's
// WebGPU adapter must be a real GPU: a fallback adapter or SwiftShader FAILS this test, which fails the
// lane (the rest of the lane depends on it). The adapter's facts go to bench/results/hardware-adapter.json.
import { mkdirSync, writeFileSync } from 'node:fs';
import { expect, test } from '@playwright/test';
import { adapterFacts, hardwareProblem } from './hardware-gate.js';

test('[SHIP-hardware-fallback] the hardware lane runs on a real GPU: a fallback or SwiftShader adapter fails it', async ({ page }) => {
  const facts = await adapterFacts(page);
  mkdirSync('bench/results', { recursive: true });
  writeFileSync('bench/results/hardware-adapter.json', `${JSON.stringify({ when: new Date().toISOString(), adapter: facts }, null, 2)}\n`);
  console.log(`hardware lane adapter: ${JSON.stringify(facts)}`);
  const problem = hardwareProblem(facts);
  expect(problem, `the hardware lane needs a real GPU; this machine offers ${problem}`).toBeUndefined();
});

// Plan: the hardware lane must fail, not skip, on a fallback adapter. This e2e-lane test runs the lane's
// gate against the software adapter this lane itself runs on (SwiftShader) and expects a refusal; the
// same gate decides e2e/hardware.spec.ts, which fails the hardware lane when it refuses.
import { expect, test } from '@playwright/test';
import { adapterFacts, hardwareProblem } from './hardware-gate.js';

test('[SHIP-hardware-fallback] the hardware gate refuses the software adapter this lane runs on', async ({ page }) => {
  const facts = await adapterFacts(page);
  expect(facts.present).toBe(true);
  expect(hardwareProblem(facts)).toMatch(/fallback adapter|SwiftShader/);
  // and it names no problem for a real GPU's facts
  expect(hardwareProblem({ present: true, vendor: 'nvidia', architecture: 'hopper', isFallbackAdapter: false })).toBeUndefined();
  expect(hardwareProblem({ present: false })).toBe('no WebGPU adapter at all');
});

// Op suite: softmax over rows (shaders/softmax.wgsl).
// Plan: property — random rows 1..40 and cols 1..600 (vocab-like widths, edges), logits spread ±1,
// ±20 or ±80 (exp would overflow without the max subtraction), offsets with canaries, folded
// dispatches: WGSL equals the host reference (f64) within 1e-5·(1+|host|) absolute on probabilities
// (WGSL's exp is not correctly rounded), and each GPU row sums to 1 within 1e-4; a control; check().
import { describe, expect, it } from 'vitest';
import { zeros } from '../../src/index.js';
import { softmax } from '../../src/submit/ops/index.js';
import { expectCode } from '../support/expect-error.js';
import { fc, fcParams } from '../support/fc.js';
import { operandOf } from '../support/run-op.js';
import { arb, expectClose, foldingLimits, randomF32, runBoth, useWebGPU } from './harness.js';

const TOL = { abs: 1e-5, rel: 1e-5 };

describe('softmax: WGSL against the host reference', () => {
  const gpu = useWebGPU();

  it('[OPS-softmax] random rows, widths and logit spreads agree within 1e-5·(1+|host|); rows sum to 1', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.constant(1), arb.size(40)), arb.size(600), fc.constantFrom(1, 20, 80), arb.seed(), arb.pads(2), fc.boolean(), async (rows, cols, spread, seed, pads, fold) => {
        const params = { rows, cols };
        const { gpu: g, host: h } = await runBoth(gpu(), softmax, [
          { dtype: 'f32', shape: [rows, cols], data: randomF32(seed, rows * cols, -spread, spread) },
          { dtype: 'f32', shape: [rows, cols], data: new Float32Array(rows * cols) },
        ], params, pads, foldingLimits(softmax, params, fold));
        expectClose(g[1]!, h[1]!, TOL, `softmax [${rows}, ${cols}] spread ${spread}`);
        for (let r = 0; r < rows; r++) {
          let sum = 0;
          for (let c = 0; c < cols; c++) sum += g[1]![r * cols + c]!;
          expect(Math.abs(sum - 1), `row ${r} sum`).toBeLessThan(1e-4);
        }
      }),
      fcParams(15),
    );
  });

  it('[OPS-softmax] control: equal logits give a uniform row; a huge logit takes all the mass', async () => {
    const x = Float32Array.from([5, 5, 5, 5, 1000, 0, -1000, 0]);
    const want = [0.25, 0.25, 0.25, 0.25, 1, 0, 0, 0];
    const { gpu: g, host: h } = await runBoth(gpu(), softmax, [
      { dtype: 'f32', shape: [2, 4], data: x },
      { dtype: 'f32', shape: [2, 4], data: new Float32Array(8) },
    ], { rows: 2, cols: 4 });
    expectClose(h[1]!, want, TOL, 'softmax host control');
    expectClose(g[1]!, want, TOL, 'softmax gpu control');
  });

  it('[OPS-check] softmax rejects mismatched shapes and dtypes with EINVAL', async () => {
    const p = gpu();
    const x = await zeros(p, 'f32', [2, 8]);
    const out = await zeros(p, 'f32', [2, 8]);
    const flat = await zeros(p, 'f32', [16]);
    const ints = await zeros(p, 'u32', [2, 8]);
    try {
      softmax.check([x, out].map(operandOf), { rows: 2, cols: 8 });
      expectCode(() => softmax.check([x, flat].map(operandOf), { rows: 2, cols: 8 }), 'EINVAL', 'shape-mismatch');
      expectCode(() => softmax.check([x, ints].map(operandOf), { rows: 2, cols: 8 }), 'EINVAL', 'dtype-mismatch');
      expectCode(() => softmax.check([x, out].map(operandOf), { rows: 2, cols: 0 }), 'EINVAL', 'bad-param');
    } finally {
      for (const t of [x, out, flat, ints]) t.dispose();
    }
  });
});

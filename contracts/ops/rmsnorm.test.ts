// Op suite: rmsnorm (llama2.c RMSNorm over rows with a weight, shaders/rmsnorm.wgsl).
// Plan: property — random rows 1..40 (often 1, the decode shape) and cols 1..300 (edges, odd), row
// magnitudes 1, 1e-2 or 1e-3 (at 1e-3 the mean square is ~3e-7, so eps = 1e-5 dominates: a kernel that
// drops or misplaces eps is off by orders of magnitude), eps 1e-5 or random, offsets with canaries,
// folded dispatches: WGSL equals the host reference within 2e-5·(1+|host|) (f32 sum of squares over
// <= 300 values vs the host's f64); a control with a known answer; check() rejections.
import { describe, it } from 'vitest';
import { zeros } from '../../src/index.js';
import { RMSNORM_EPS, rmsnorm } from '../../src/submit/ops/index.js';
import { expectCode } from '../support/expect-error.js';
import { fc, fcParams } from '../support/fc.js';
import { operandOf } from '../support/run-op.js';
import { arb, expectClose, foldingLimits, randomF32, runBoth, useWebGPU } from './harness.js';

const TOL = { abs: 2e-5, rel: 2e-5 };

describe('rmsnorm: WGSL against the host reference', () => {
  const gpu = useWebGPU();

  it('[OPS-rmsnorm] random rows, widths, magnitudes and eps agree within 2e-5·(1+|host|)', async () => {
    const eps = fc.oneof(fc.constant(RMSNORM_EPS), fc.double({ min: 1e-6, max: 1e-2, noNaN: true }));
    const magnitude = fc.constantFrom(1, 1e-2, 1e-3);
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.constant(1), arb.size(40)), arb.size(300), eps, magnitude, arb.seed(), arb.pads(3), fc.boolean(), async (rows, cols, e, mag, seed, pads, fold) => {
        const params = { rows, cols, eps: e };
        const { gpu: g, host: h } = await runBoth(gpu(), rmsnorm, [
          { dtype: 'f32', shape: [rows, cols], data: randomF32(seed, rows * cols, -mag, mag) },
          { dtype: 'f32', shape: [cols], data: randomF32(seed + 1, cols, -2, 2) },
          { dtype: 'f32', shape: [rows, cols], data: new Float32Array(rows * cols) },
        ], params, pads, foldingLimits(rmsnorm, params, fold));
        expectClose(g[2]!, h[2]!, TOL, `rmsnorm [${rows}, ${cols}] magnitude ${mag} eps ${e}`);
      }),
      fcParams(15),
    );
  });

  it('[OPS-rmsnorm] control: a row of 3s and 4s with unit weight normalizes to ±1-scale values', async () => {
    // mean square of [3, 4, 3, 4] = 12.5; out = w * x / sqrt(12.5 + eps).
    const x = Float32Array.from([3, 4, 3, 4]);
    const w = Float32Array.from([1, 1, 2, -1]);
    const d = Math.sqrt(12.5 + Math.fround(RMSNORM_EPS));
    const want = [3 / d, 4 / d, 6 / d, -4 / d];
    const { gpu: g, host: h } = await runBoth(gpu(), rmsnorm, [
      { dtype: 'f32', shape: [1, 4], data: x },
      { dtype: 'f32', shape: [4], data: w },
      { dtype: 'f32', shape: [1, 4], data: new Float32Array(4) },
    ], { rows: 1, cols: 4, eps: RMSNORM_EPS });
    expectClose(h[2]!, want, { abs: 1e-6, rel: 1e-6 }, 'rmsnorm host control');
    expectClose(g[2]!, want, TOL, 'rmsnorm gpu control');
  });

  it('[OPS-check] rmsnorm rejects a weight of the wrong length, bad eps and wrong dtypes with EINVAL', async () => {
    const p = gpu();
    const x = await zeros(p, 'f32', [2, 8]);
    const w = await zeros(p, 'f32', [8]);
    const w7 = await zeros(p, 'f32', [7]);
    const out = await zeros(p, 'f32', [2, 8]);
    const ints = await zeros(p, 'i32', [8]);
    try {
      const params = { rows: 2, cols: 8, eps: RMSNORM_EPS };
      rmsnorm.check([x, w, out].map(operandOf), params);
      expectCode(() => rmsnorm.check([x, w7, out].map(operandOf), params), 'EINVAL', 'shape-mismatch');
      expectCode(() => rmsnorm.check([x, ints, out].map(operandOf), params), 'EINVAL', 'dtype-mismatch');
      expectCode(() => rmsnorm.check([x, w, out].map(operandOf), { ...params, eps: 0 }), 'EINVAL', 'bad-param');
      expectCode(() => rmsnorm.check([x, w, out].map(operandOf), { ...params, eps: Number.NaN }), 'EINVAL', 'bad-param');
      expectCode(() => rmsnorm.check([x, w, out].map(operandOf), { ...params, rows: 3 }), 'EINVAL', 'shape-mismatch');
    } finally {
      for (const t of [x, w, w7, out, ints]) t.dispose();
    }
  });
});

// Op suite: silu_mul (out = silu(a) * b, silu(x) = x / (1 + exp(-x)), shaders/silu_mul.wgsl).
// Plan: property over random shapes, offsets and folded dispatches with a in [-30, 30] (both tails of
// the sigmoid, where exp overflows to inf for very negative x): WGSL equals the host reference (f64,
// rounded once) within 1e-5·(1+|host|) (WGSL's exp is not correctly rounded); a control with known
// values; check() rejections.
import { describe, expect, it } from 'vitest';
import { siluMul } from '../../src/submit/ops/index.js';
import { fc, fcParams } from '../support/fc.js';
import { count, elementwiseCase, expectElementwiseChecks } from './elementwise.js';
import { expectClose, foldingLimits, randomF32, runBoth, useWebGPU } from './harness.js';

const TOL = { abs: 1e-5, rel: 1e-5 };

describe('silu_mul: WGSL against the host reference', () => {
  const gpu = useWebGPU();

  it('[OPS-silu-mul] random shapes, offsets and folded dispatches agree within 1e-5·(1+|host|)', async () => {
    await fc.assert(
      fc.asyncProperty(elementwiseCase, async ({ shape, seed, pads, fold }) => {
        const n = count(shape);
        const params = { n };
        const { gpu: g, host: h } = await runBoth(gpu(), siluMul, [
          { dtype: 'f32', shape, data: randomF32(seed, n, -30, 30) },
          { dtype: 'f32', shape, data: randomF32(seed + 1, n, -2, 2) },
          { dtype: 'f32', shape, data: new Float32Array(n) },
        ], params, pads, foldingLimits(siluMul, params, fold));
        expectClose(g[2]!, h[2]!, TOL, `silu_mul [${shape}]`);
      }),
      fcParams(15),
    );
  });

  it('[OPS-silu-mul] control: silu(0) = 0, silu(x) -> x for large x, -> 0 for very negative x', async () => {
    const a = Float32Array.from([0, 1, -1, 20, -100, 2]);
    const b = Float32Array.from([5, 1, 1, 2, 3, -1]);
    const want = [0, 1 / (1 + Math.exp(-1)), -1 / (1 + Math.exp(1)), 40 / (1 + Math.exp(-20)), 0, -2 / (1 + Math.exp(-2))];
    const { gpu: g, host: h } = await runBoth(gpu(), siluMul, [
      { dtype: 'f32', shape: [6], data: a },
      { dtype: 'f32', shape: [6], data: b },
      { dtype: 'f32', shape: [6], data: new Float32Array(6) },
    ], { n: 6 });
    expectClose(h[2]!, want, TOL, 'silu_mul host control');
    expectClose(g[2]!, want, TOL, 'silu_mul gpu control');
    expect(Number.isFinite(g[2]![4]!)).toBe(true);
  });

  it('[OPS-check] silu_mul rejects wrong shapes, dtypes, counts and strided operands with EINVAL', async () => {
    await expectElementwiseChecks(gpu(), siluMul, 3, (n) => ({ n }));
  });
});

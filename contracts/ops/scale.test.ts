// Op suite: scale (out = a * s, shaders/scale.wgsl).
// Plan: property over random shapes, offsets, folded dispatches and factors (including 0 and negative):
// WGSL equals the host reference within 1e-6·(1+|host|) (one f32 product with s rounded to f32 on both
// sides); check() rejections, including a non-finite factor.
import { describe, it } from 'vitest';
import { zeros } from '../../src/index.js';
import { scale } from '../../src/submit/ops/index.js';
import { expectCode } from '../support/expect-error.js';
import { fc, fcParams } from '../support/fc.js';
import { operandOf } from '../support/run-op.js';
import { count, expectElementwiseChecks, shapeArb } from './elementwise.js';
import { arb, expectClose, foldingLimits, randomF32, runBoth, useWebGPU } from './harness.js';

const TOL = { abs: 1e-6, rel: 1e-6 };

describe('scale: WGSL against the host reference', () => {
  const gpu = useWebGPU();

  it('[OPS-scale] random shapes, factors, offsets and folded dispatches agree within 1e-6·(1+|host|)', async () => {
    const factor = fc.oneof(fc.constantFrom(0, 1, -1, 0.125), fc.double({ min: -50, max: 50, noNaN: true }));
    await fc.assert(
      fc.asyncProperty(shapeArb, factor, arb.seed(), arb.pads(2), fc.boolean(), async (shape, s, seed, pads, fold) => {
        const n = count(shape);
        const params = { n, s };
        const { gpu: g, host: h } = await runBoth(gpu(), scale, [
          { dtype: 'f32', shape, data: randomF32(seed, n, -10, 10) },
          { dtype: 'f32', shape, data: new Float32Array(n) },
        ], params, pads, foldingLimits(scale, params, fold));
        expectClose(g[1]!, h[1]!, TOL, `scale [${shape}] by ${s}`);
      }),
      fcParams(15),
    );
  });

  it('[OPS-check] scale rejects wrong shapes, dtypes, counts, strided operands and a non-finite factor with EINVAL', async () => {
    await expectElementwiseChecks(gpu(), scale, 2, (n) => ({ n, s: 2 }));
    const a = await zeros(gpu(), 'f32', [4]);
    const out = await zeros(gpu(), 'f32', [4]);
    try {
      expectCode(() => scale.check([a, out].map(operandOf), { n: 4, s: Number.NaN }), 'EINVAL', 'bad-param');
      expectCode(() => scale.check([a, out].map(operandOf), { n: 4, s: Infinity }), 'EINVAL', 'bad-param');
    } finally {
      a.dispose();
      out.dispose();
    }
  });
});

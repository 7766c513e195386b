// Op suite: mul (out = a * b, shaders/mul.wgsl).
// Plan: property over random shapes (rank 1..3, edges), element offsets with canaries, and forced
// folding into y: WGSL equals the host reference within 1e-6·(1+|host|) (one correctly rounded f32
// product on both sides); check() rejections with their reasons.
import { describe, it } from 'vitest';
import { mul } from '../../src/submit/ops/index.js';
import { fc, fcParams } from '../support/fc.js';
import { count, elementwiseCase, expectElementwiseChecks } from './elementwise.js';
import { expectClose, foldingLimits, randomF32, runBoth, useWebGPU } from './harness.js';

const TOL = { abs: 1e-6, rel: 1e-6 };

describe('mul: WGSL against the host reference', () => {
  const gpu = useWebGPU();

  it('[OPS-mul] random shapes, offsets and folded dispatches agree within 1e-6·(1+|host|)', async () => {
    await fc.assert(
      fc.asyncProperty(elementwiseCase, async ({ shape, seed, pads, fold }) => {
        const n = count(shape);
        const params = { n };
        const { gpu: g, host: h } = await runBoth(gpu(), mul, [
          { dtype: 'f32', shape, data: randomF32(seed, n, -10, 10) },
          { dtype: 'f32', shape, data: randomF32(seed + 1, n, -10, 10) },
          { dtype: 'f32', shape, data: new Float32Array(n) },
        ], params, pads, foldingLimits(mul, params, fold));
        expectClose(g[2]!, h[2]!, TOL, `mul [${shape}]`);
      }),
      fcParams(15),
    );
  });

  it('[OPS-check] mul rejects wrong shapes, dtypes, counts and strided operands with EINVAL', async () => {
    await expectElementwiseChecks(gpu(), mul, 3, (n) => ({ n }));
  });
});

// Op suite: add_inplace (acc += b, shaders/add_inplace.wgsl).
// Plan: property over random shapes, offsets and folded dispatches: the accumulator after the WGSL run
// equals the host reference within 1e-6·(1+|host|) (one correctly rounded f32 addition); b unchanged,
// canaries intact; check() rejections.
import { describe, it } from 'vitest';
import { addInplace } from '../../src/submit/ops/index.js';
import { fc, fcParams } from '../support/fc.js';
import { count, expectElementwiseChecks, shapeArb } from './elementwise.js';
import { arb, expectClose, foldingLimits, randomF32, runBoth, useWebGPU } from './harness.js';

const TOL = { abs: 1e-6, rel: 1e-6 };

describe('add_inplace: WGSL against the host reference', () => {
  const gpu = useWebGPU();

  it('[OPS-add-inplace] random shapes, offsets and folded dispatches agree within 1e-6·(1+|host|)', async () => {
    await fc.assert(
      fc.asyncProperty(shapeArb, arb.seed(), arb.pads(2), fc.boolean(), async (shape, seed, pads, fold) => {
        const n = count(shape);
        const params = { n };
        const { gpu: g, host: h } = await runBoth(gpu(), addInplace, [
          { dtype: 'f32', shape, data: randomF32(seed, n, -100, 100) },
          { dtype: 'f32', shape, data: randomF32(seed + 1, n, -100, 100) },
        ], params, pads, foldingLimits(addInplace, params, fold));
        expectClose(g[0]!, h[0]!, TOL, `add_inplace [${shape}]`);
      }),
      fcParams(15),
    );
  });

  it('[OPS-check] add_inplace rejects wrong shapes, dtypes, counts and strided operands with EINVAL', async () => {
    await expectElementwiseChecks(gpu(), addInplace, 2, (n) => ({ n }));
  });
});

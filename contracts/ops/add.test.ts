// Op suite: add (out = a + b, shaders/add.wgsl).
// Plan: property over random shapes (rank 1..3, edges), element offsets with canaries, and forced
// folding into y: WGSL equals the host reference within 1e-6·(1+|host|) (both are one correctly rounded
// f32 addition, so in practice they are bit-equal); check() rejections with their reasons.
import { describe, it } from 'vitest';
import { add } from '../../src/submit/ops/index.js';
import { fc, fcParams } from '../support/fc.js';
import { count, elementwiseCase, expectElementwiseChecks } from './elementwise.js';
import { expectClose, foldingLimits, randomF32, runBoth, useWebGPU } from './harness.js';

const TOL = { abs: 1e-6, rel: 1e-6 };

describe('add: WGSL against the host reference', () => {
  const gpu = useWebGPU();

  it('[OPS-add] random shapes, offsets and folded dispatches agree within 1e-6·(1+|host|)', async () => {
    await fc.assert(
      fc.asyncProperty(elementwiseCase, async ({ shape, seed, pads, fold }) => {
        const n = count(shape);
        const params = { n };
        const { gpu: g, host: h } = await runBoth(gpu(), add, [
          { dtype: 'f32', shape, data: randomF32(seed, n, -100, 100) },
          { dtype: 'f32', shape, data: randomF32(seed + 1, n, -100, 100) },
          { dtype: 'f32', shape, data: new Float32Array(n) },
        ], params, pads, foldingLimits(add, params, fold));
        expectClose(g[2]!, h[2]!, TOL, `add [${shape}]`);
      }),
      fcParams(15),
    );
  });

  it('[OPS-check] add rejects wrong shapes, dtypes, counts and strided operands with EINVAL', async () => {
    await expectElementwiseChecks(gpu(), add, 3, (n) => ({ n }));
  });
});

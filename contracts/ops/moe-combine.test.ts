// Op suite: moe_combine (weighted sum of the routed experts' outputs; shaders/moe_combine.wgsl).
// Plan: (1) property — tokens 1..20, used 1..8 (k = 1 included), n 1..300 (edges around the workgroup),
// y and weights random, accumulate on and off, offsets with canaries, folded dispatches: WGSL equals the
// host twin within 1e-6·(1 + |host|) (f32 sums in the same order against the host's f64 sum), and the
// host twin equals the definition (a weighted sum, plus the previous out when accumulating); y and
// weights are not written; (2) control: one token, two experts, hand-computed; (3) check() rejections.
import { describe, expect, it } from 'vitest';
import { zeros } from '../../src/index.js';
import { moeCombine } from '../../src/submit/ops/index.js';
import { expectCode } from '../support/expect-error.js';
import { fc, fcParams } from '../support/fc.js';
import { operandOf } from '../support/run-op.js';
import { arb, expectClose, foldingLimits, randomF32, runBoth, useWebGPU } from './harness.js';

describe('moe_combine: WGSL against the host twin', () => {
  const gpu = useWebGPU();

  it('[OPS-moe-combine] random tokens, slots and widths, accumulate or not, offsets, folds: within 1e-6·(1+|host|)', async () => {
    await fc.assert(
      fc.asyncProperty(arb.size(20), fc.integer({ min: 1, max: 8 }), arb.size(300), fc.boolean(), arb.seed(), arb.pads(3), fc.boolean(), async (tokens, used, n, accumulate, seed, pads, fold) => {
        const params = { tokens, used, n, accumulate };
        const y = randomF32(seed, tokens * used * n);
        const weights = randomF32(seed + 1, tokens * used, 0, 1);
        const out0 = randomF32(seed + 2, tokens * n);
        const { gpu: g, host: h } = await runBoth(gpu(), moeCombine, [
          { dtype: 'f32', shape: [tokens, used, n], data: y },
          { dtype: 'f32', shape: [tokens, used], data: weights },
          { dtype: 'f32', shape: [tokens, n], data: out0 },
        ], params, pads, foldingLimits(moeCombine, params, fold));
        const label = `moe_combine tokens ${tokens} used ${used} n ${n} accumulate ${accumulate}`;
        expectClose(g[2]!, h[2]!, { abs: 1e-6, rel: 1e-6 }, label);
        const want = new Float64Array(tokens * n);
        for (let t = 0; t < tokens; t++) {
          for (let c = 0; c < n; c++) {
            let s = accumulate ? out0[t * n + c]! : 0;
            for (let j = 0; j < used; j++) s += weights[t * used + j]! * y[(t * used + j) * n + c]!;
            want[t * n + c] = s;
          }
        }
        expectClose(h[2]!, want, { abs: 1e-7, rel: 1e-7 }, `${label} (definition)`);
      }),
      fcParams(15),
    );
  });

  it('[OPS-moe-combine] control: one token, two experts, with and without the residual', async () => {
    const y = Float32Array.from([1, 2, 3, 10, 20, 30]);
    const weights = Float32Array.from([0.75, 0.25]);
    for (const accumulate of [false, true]) {
      const { gpu: g } = await runBoth(gpu(), moeCombine, [
        { dtype: 'f32', shape: [1, 2, 3], data: y },
        { dtype: 'f32', shape: [1, 2], data: weights },
        { dtype: 'f32', shape: [1, 3], data: Float32Array.from([100, 100, 100]) },
      ], { tokens: 1, used: 2, n: 3, accumulate });
      expect(Array.from(g[2]!)).toEqual(accumulate ? [103.25, 106.5, 109.75] : [3.25, 6.5, 9.75]);
    }
  });

  it('[OPS-check] moe_combine rejects wrong y, weights or out shapes, a non-boolean accumulate and bad sizes with EINVAL', async () => {
    const p = gpu();
    const y = await zeros(p, 'f32', [2, 3, 4]);
    const weights = await zeros(p, 'f32', [2, 3]);
    const weights2 = await zeros(p, 'f32', [2, 2]);
    const out = await zeros(p, 'f32', [2, 4]);
    const out5 = await zeros(p, 'f32', [2, 5]);
    try {
      const params = { tokens: 2, used: 3, n: 4, accumulate: false };
      moeCombine.check([y, weights, out].map(operandOf), params);
      expectCode(() => moeCombine.check([y, weights2, out].map(operandOf), params), 'EINVAL', 'shape-mismatch');
      expectCode(() => moeCombine.check([y, weights, out5].map(operandOf), params), 'EINVAL', 'shape-mismatch');
      expectCode(() => moeCombine.check([y, weights, out].map(operandOf), { ...params, used: 2 }), 'EINVAL', 'shape-mismatch');
      expectCode(() => moeCombine.check([y, weights, out].map(operandOf), { ...params, accumulate: 0 as unknown as boolean }), 'EINVAL', 'bad-param');
      expectCode(() => moeCombine.check([y, weights, out].map(operandOf), { ...params, n: 0 }), 'EINVAL', 'bad-param');
    } finally {
      for (const t of [y, weights, weights2, out, out5]) t.dispose();
    }
  });
});

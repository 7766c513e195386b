// Op suite: bias_add (x[r, :] += bias, in place; shaders/bias_add.wgsl), the Q/K/V biases of qwen2.
// Plan: (1) property — rows 1..40 (1 = decode), cols 1..300 (edges around the workgroup of 64), values
// in [-1, 1], offsets with canaries, folded dispatches: WGSL equals the host twin exactly (one correctly
// rounded f32 addition per element on both) and bias is not written; (2) control: every row gets the same
// bias, element by element; (3) check() rejects a bias of the wrong length, an x of the wrong width and
// non-f32 operands with EINVAL.
import { describe, expect, it } from 'vitest';
import { zeros } from '../../src/index.js';
import { biasAdd } from '../../src/submit/ops/index.js';
import { expectCode } from '../support/expect-error.js';
import { fc, fcParams } from '../support/fc.js';
import { operandOf } from '../support/run-op.js';
import { arb, foldingLimits, randomF32, runBoth, useWebGPU } from './harness.js';

describe('bias_add: WGSL against the host twin', () => {
  const gpu = useWebGPU();

  it('[OPS-bias-add] random rows and widths, offsets and folded dispatches: WGSL equals the host exactly', async () => {
    await fc.assert(
      fc.asyncProperty(arb.size(40), arb.size(300), arb.seed(), arb.pads(2), fc.boolean(), async (rows, cols, seed, pads, fold) => {
        const params = { rows, cols };
        const x = randomF32(seed, rows * cols);
        const bias = randomF32(seed + 1, cols);
        const { gpu: g, host: h } = await runBoth(gpu(), biasAdd, [
          { dtype: 'f32', shape: [rows, cols], data: x },
          { dtype: 'f32', shape: [cols], data: bias },
        ], params, pads, foldingLimits(biasAdd, params, fold));
        expect(Array.from(g[0]!)).toEqual(Array.from(h[0]!));
        // The host twin adds bias[c] to every row (the reference the GPU is held to).
        const want = Float32Array.from(x, (v, i) => v + bias[i % cols]!);
        expect(Array.from(h[0]!)).toEqual(Array.from(want));
      }),
      fcParams(15),
    );
  });

  it('[OPS-bias-add] control: the same bias on every row, one element each', async () => {
    const { gpu: g } = await runBoth(gpu(), biasAdd, [
      { dtype: 'f32', shape: [3, 2], data: Float32Array.from([0, 0, 1, 1, 10, 20]) },
      { dtype: 'f32', shape: [2], data: Float32Array.from([0.5, -2]) },
    ], { rows: 3, cols: 2 });
    expect(Array.from(g[0]!)).toEqual([0.5, -2, 1.5, -1, 10.5, 18]);
  });

  it('[OPS-check] bias_add rejects a bias of the wrong length, a wrong width and non-f32 operands with EINVAL', async () => {
    const p = gpu();
    const x = await zeros(p, 'f32', [3, 4]);
    const bias = await zeros(p, 'f32', [4]);
    const bias5 = await zeros(p, 'f32', [5]);
    const biasU = await zeros(p, 'u32', [4]);
    try {
      biasAdd.check([x, bias].map(operandOf), { rows: 3, cols: 4 });
      expectCode(() => biasAdd.check([x, bias5].map(operandOf), { rows: 3, cols: 4 }), 'EINVAL', 'shape-mismatch');
      expectCode(() => biasAdd.check([x, bias].map(operandOf), { rows: 3, cols: 5 }), 'EINVAL', 'shape-mismatch');
      expectCode(() => biasAdd.check([x, biasU].map(operandOf), { rows: 3, cols: 4 }), 'EINVAL', 'dtype-mismatch');
      expectCode(() => biasAdd.check([x, bias].map(operandOf), { rows: 0, cols: 4 }), 'EINVAL', 'bad-param');
      expectCode(() => biasAdd.check([x].map(operandOf), { rows: 3, cols: 4 }), 'EINVAL', 'operand-count');
    } finally {
      for (const t of [x, bias, bias5, biasU]) t.dispose();
    }
  });
});

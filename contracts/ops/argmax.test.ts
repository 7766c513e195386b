// Op suite: argmax over rows -> u32 (shaders/argmax.wgsl).
// Plan: property — random rows 1..40 and cols 1..600, values either continuous or drawn from 3 small
// integers (so ties are the rule, and the first-maximum rule is exercised), offsets with canaries,
// folded dispatches: WGSL equals the host reference exactly; the host reference is the first index of
// the row maximum (checked against indexOf(max)); check() rejections (the output must be u32 [rows]).
import { describe, expect, it } from 'vitest';
import { zeros } from '../../src/index.js';
import { argmax } from '../../src/submit/ops/index.js';
import { expectCode } from '../support/expect-error.js';
import { fc, fcParams } from '../support/fc.js';
import { operandOf } from '../support/run-op.js';
import { arb, foldingLimits, randomF32, rng, runBoth, useWebGPU } from './harness.js';

function tiedValues(seed: number, n: number): Float32Array {
  const r = rng(seed);
  return Float32Array.from({ length: n }, () => Math.floor(r() * 3) - 1);
}

describe('argmax: WGSL against the host reference', () => {
  const gpu = useWebGPU();

  it('[OPS-argmax] random rows with frequent ties: WGSL equals the host exactly (first maximum wins)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.constant(1), arb.size(40)), arb.size(600), fc.boolean(), arb.seed(), arb.pads(2), fc.boolean(), async (rows, cols, ties, seed, pads, fold) => {
        const x = ties ? tiedValues(seed, rows * cols) : randomF32(seed, rows * cols, -5, 5);
        const params = { rows, cols };
        const { gpu: g, host: h } = await runBoth(gpu(), argmax, [
          { dtype: 'f32', shape: [rows, cols], data: x },
          { dtype: 'u32', shape: [rows], data: new Uint32Array(rows) },
        ], params, pads, foldingLimits(argmax, params, fold));
        for (let r = 0; r < rows; r++) {
          const row = Array.from(x.subarray(r * cols, (r + 1) * cols));
          expect(h[1]![r], `host row ${r}`).toBe(row.indexOf(Math.max(...row)));
        }
        expect(Array.from(g[1]!)).toEqual(Array.from(h[1]!));
      }),
      fcParams(15),
    );
  });

  it('[OPS-argmax] control: ties resolve to the first index, the last column can win', async () => {
    const x = Float32Array.from([1, 3, 3, 0, /* */ -2, -2, -2, -2, /* */ 0, 0, 0, 9]);
    const { gpu: g, host: h } = await runBoth(gpu(), argmax, [
      { dtype: 'f32', shape: [3, 4], data: x },
      { dtype: 'u32', shape: [3], data: new Uint32Array(3) },
    ], { rows: 3, cols: 4 });
    expect(Array.from(h[1]!)).toEqual([1, 0, 3]);
    expect(Array.from(g[1]!)).toEqual([1, 0, 3]);
  });

  it('[OPS-check] argmax rejects a non-u32 or wrongly shaped output with EINVAL', async () => {
    const p = gpu();
    const x = await zeros(p, 'f32', [2, 8]);
    const out = await zeros(p, 'u32', [2]);
    const outF = await zeros(p, 'f32', [2]);
    const outI = await zeros(p, 'i32', [2]);
    const out3 = await zeros(p, 'u32', [3]);
    try {
      argmax.check([x, out].map(operandOf), { rows: 2, cols: 8 });
      expectCode(() => argmax.check([x, outF].map(operandOf), { rows: 2, cols: 8 }), 'EINVAL', 'dtype-mismatch');
      expectCode(() => argmax.check([x, outI].map(operandOf), { rows: 2, cols: 8 }), 'EINVAL', 'dtype-mismatch');
      expectCode(() => argmax.check([x, out3].map(operandOf), { rows: 2, cols: 8 }), 'EINVAL', 'shape-mismatch');
    } finally {
      for (const t of [x, out, outF, outI, out3]) t.dispose();
    }
  });
});

// Op suite: rope (llama2.c rotary embedding, in place, shaders/rope.wgsl).
// Plan: (1) property — random count 1..24, heads 1..8, even headDim 2..32 (8 = stories260K), pos0 in
// 0..600 or anywhere up to ROPE_MAX_POSITION, theta 10000 or random, x in [-1, 1], offsets with
// canaries, folded dispatches: WGSL equals the host reference within 4e-6 absolute (both rotate by the
// same f32 angle, f32(pos · freq) with llama2.c's f32 frequencies; what is left is the kernel's own
// range reduction and sin/cos series against the host's f64 Math.sin/cos); (2) controls: position 0
// is the identity, each pair (2i, 2i+1) of each head turns by t/theta^(2i/headDim) (so the pairs are not
// (i, i + headDim/2)), lengths are kept; (3) check() rejections (odd or too large headDim, positions
// past ROPE_MAX_POSITION, wrong width, bad theta).
import { describe, expect, it } from 'vitest';
import { zeros } from '../../src/index.js';
import { ROPE_MAX_HEAD_DIM, ROPE_MAX_POSITION, ROPE_THETA, rope } from '../../src/submit/ops/index.js';
import { expectCode } from '../support/expect-error.js';
import { fc, fcParams } from '../support/fc.js';
import { operandOf } from '../support/run-op.js';
import { arb, expectClose, foldingLimits, randomF32, runBoth, useWebGPU } from './harness.js';

const TOL = { abs: 4e-6, rel: 0 };

describe('rope: WGSL against the host reference', () => {
  const gpu = useWebGPU();

  it('[OPS-rope] random heads, head dims, positions and theta agree within 4e-6 absolute', async () => {
    const headDim = fc.oneof(fc.constant(8), fc.integer({ min: 1, max: 16 }).map((h) => 2 * h));
    const pos0 = fc.oneof(fc.integer({ min: 0, max: 600 }), fc.integer({ min: 0, max: ROPE_MAX_POSITION - 24 }));
    const theta = fc.oneof(fc.constant(ROPE_THETA), fc.double({ min: 100, max: 1e6, noNaN: true }));
    await fc.assert(
      fc.asyncProperty(arb.size(24), fc.integer({ min: 1, max: 8 }), headDim, pos0, theta, arb.seed(), arb.pads(1), fc.boolean(), async (count, heads, hd, p0, th, seed, pads, fold) => {
        const params = { count, heads, headDim: hd, pos0: p0, theta: th };
        const { gpu: g, host: h } = await runBoth(gpu(), rope, [
          { dtype: 'f32', shape: [count, heads * hd], data: randomF32(seed, count * heads * hd) },
        ], params, pads, foldingLimits(rope, params, fold));
        expectClose(g[0]!, h[0]!, TOL, `rope count ${count} heads ${heads} headDim ${hd} pos0 ${p0} theta ${th}`);
      }),
      fcParams(15),
    );
  });

  it('[OPS-rope] controls: identity at position 0, pair (0,1) turns by p radians, pairs are (2i, 2i+1) per head', async () => {
    const headDim = 8;
    const heads = 2;
    // Row 0 at position 0, row 1 at position 1, row 2 at position 2: every pair of every head is (1, 0).
    const x = new Float32Array(3 * heads * headDim);
    for (let i = 0; i < x.length; i += 2) x[i] = 1;
    const { gpu: g, host: h } = await runBoth(gpu(), rope, [{ dtype: 'f32', shape: [3, heads * headDim], data: x }], { count: 3, heads, headDim, pos0: 0, theta: ROPE_THETA });
    const want = new Float64Array(x.length);
    for (let t = 0; t < 3; t++) {
      for (let hh = 0; hh < heads; hh++) {
        for (let i = 0; i < headDim; i += 2) {
          const angle = t / Math.pow(ROPE_THETA, i / headDim);
          const at = t * heads * headDim + hh * headDim + i;
          want[at] = Math.cos(angle);
          want[at + 1] = Math.sin(angle);
        }
      }
    }
    expectClose(h[0]!, want, { abs: 1e-6, rel: 0 }, 'rope host control');
    expectClose(g[0]!, want, TOL, 'rope gpu control');
    // Position 0 leaves row 0 as it was; pair lengths are kept.
    expect(Array.from(g[0]!.subarray(0, heads * headDim))).toEqual(Array.from(x.subarray(0, heads * headDim)));
    for (let i = 0; i < want.length; i += 2) expect(Math.hypot(g[0]![i]!, g[0]![i + 1]!)).toBeCloseTo(1, 5);
  });

  it('[OPS-check] rope rejects odd head dims, wrong widths, bad theta and positions past the supported range with EINVAL', async () => {
    const p = gpu();
    const x = await zeros(p, 'f32', [2, 16]);
    try {
      const ok = [operandOf(x)];
      rope.check(ok, { count: 2, heads: 2, headDim: 8, pos0: 0, theta: ROPE_THETA });
      expectCode(() => rope.check(ok, { count: 2, heads: 2, headDim: 7, pos0: 0, theta: ROPE_THETA }), 'EINVAL', 'bad-param');
      expectCode(() => rope.check(ok, { count: 2, heads: 4, headDim: 8, pos0: 0, theta: ROPE_THETA }), 'EINVAL', 'shape-mismatch');
      expectCode(() => rope.check(ok, { count: 2, heads: 2, headDim: 8, pos0: 0, theta: 0 }), 'EINVAL', 'bad-param');
      expectCode(() => rope.check(ok, { count: 2, heads: 2, headDim: 8, pos0: ROPE_MAX_POSITION, theta: ROPE_THETA }), 'EINVAL', 'out-of-range');
      rope.check(ok, { count: 2, heads: 2, headDim: 8, pos0: ROPE_MAX_POSITION - 1, theta: ROPE_THETA });
      const wide = { dtype: 'f32' as const, shape: [1, 2 * (ROPE_MAX_HEAD_DIM + 2)], contiguous: true };
      expectCode(() => rope.check([wide], { count: 1, heads: 2, headDim: ROPE_MAX_HEAD_DIM + 2, pos0: 0, theta: ROPE_THETA }), 'EINVAL', 'bad-param');
    } finally {
      x.dispose();
    }
  });
});

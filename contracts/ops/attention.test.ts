// Op suite: attention (causal grouped-query attention over a KV cache, shaders/attention.wgsl).
// Plan: (1) property — random count 1..12 (count = 1 is decode), kvHeads 1..4 with 1..3 query heads
// each, headDim 1..20 (multiples of 4 and not), pos0 0..40, spare cache rows past pos0+count-1 filled
// with large values (any read past the causal bound shows), offsets with canaries, folded dispatches:
// WGSL (one-pass online softmax in f32) equals the host reference (two-pass softmax in f64) within
// 2e-5·(1+|host|); (2) stories260K shapes: 8 heads over 4 kv heads, headDim 8, maxSeq 512, a prefill of
// 32 positions and decode steps at positions up to 511; (3) controls: at position 0 the output is
// v[0] of the head's kv head; with q = 0 it is the mean of v[0..pos]; heads read kv head h / group;
// (4) check() rejections.
import { describe, expect, it } from 'vitest';
import { zeros } from '../../src/index.js';
import { attention } from '../../src/submit/ops/index.js';
import type { AttentionParams } from '../../src/submit/ops/index.js';
import { expectCode } from '../support/expect-error.js';
import { fc, fcParams } from '../support/fc.js';
import { operandOf } from '../support/run-op.js';
import { arb, expectClose, foldingLimits, randomF32, runBoth, useWebGPU } from './harness.js';
import type { BothResult } from './harness.js';

const TOL = { abs: 2e-5, rel: 2e-5 };

/** Runs both implementations; cache rows from pos0+count on hold `junk` so reading them shows. */
async function both(
  p: ReturnType<ReturnType<typeof useWebGPU>>,
  params: AttentionParams,
  seed: number,
  pads: readonly number[] = [],
  fold = false,
): Promise<BothResult> {
  const { count, heads, kvHeads, headDim, maxSeq, pos0 } = params;
  const kvWidth = kvHeads * headDim;
  const k = randomF32(seed + 1, maxSeq * kvWidth, -1, 1);
  const v = randomF32(seed + 2, maxSeq * kvWidth, -1, 1);
  k.fill(50, (pos0 + count) * kvWidth);
  v.fill(1000, (pos0 + count) * kvWidth);
  return runBoth(p, attention, [
    { dtype: 'f32', shape: [count, heads * headDim], data: randomF32(seed, count * heads * headDim, -2, 2) },
    { dtype: 'f32', shape: [maxSeq, kvWidth], data: k },
    { dtype: 'f32', shape: [maxSeq, kvWidth], data: v },
    { dtype: 'f32', shape: [count, heads * headDim], data: new Float32Array(count * heads * headDim) },
  ], params, pads, foldingLimits(attention, params, fold));
}

describe('attention: WGSL against the host reference', () => {
  const gpu = useWebGPU();

  it('[OPS-attention] random prefill/decode shapes, GQA groups and head dims agree within 2e-5·(1+|host|)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.constant(1), arb.size(12)),
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 1, max: 3 }),
        fc.oneof(fc.constant(8), fc.integer({ min: 1, max: 20 })),
        fc.nat(40),
        fc.nat(3),
        arb.seed(),
        arb.pads(4),
        fc.boolean(),
        async (count, kvHeads, group, headDim, pos0, spare, seed, pads, fold) => {
          const params = { count, heads: kvHeads * group, kvHeads, headDim, maxSeq: pos0 + count + spare, pos0 };
          const { gpu: g, host: h } = await both(gpu(), params, seed, pads, fold);
          for (const x of h[3]!) expect(Math.abs(x), 'host never reads past the causal bound').toBeLessThanOrEqual(1);
          expectClose(g[3]!, h[3]!, TOL, `attention ${JSON.stringify(params)}`);
        },
      ),
      fcParams(15),
    );
  });

  it('[OPS-attention] stories260K shapes: prefill of 32 at position 0, decode at positions 1, 100 and 511', async () => {
    const model = { heads: 8, kvHeads: 4, headDim: 8, maxSeq: 512 };
    const cases = [{ count: 32, pos0: 0 }, { count: 1, pos0: 1 }, { count: 1, pos0: 100 }, { count: 1, pos0: 511 }];
    for (const [i, c] of cases.entries()) {
      const { gpu: g, host: h } = await both(gpu(), { ...model, ...c }, 100 + i);
      expectClose(g[3]!, h[3]!, TOL, `attention stories260K ${JSON.stringify(c)}`);
    }
  });

  it('[OPS-attention] controls: position 0 returns v[0]; q = 0 averages v[0..pos]; head h reads kv head h / group', async () => {
    const heads = 4;
    const kvHeads = 2;
    const headDim = 3;
    const maxSeq = 4;
    const kvWidth = kvHeads * headDim;
    // v[j, g, d] = 100·g + 10·j + d: each (position, kv head) is recognizable.
    const v = Float32Array.from({ length: maxSeq * kvWidth }, (_, i) => 100 * Math.floor((i % kvWidth) / headDim) + 10 * Math.floor(i / kvWidth) + (i % headDim));
    const k = randomF32(9, maxSeq * kvWidth);
    const q = new Float32Array(3 * heads * headDim);
    const { gpu: g, host: h } = await runBoth(gpu(), attention, [
      { dtype: 'f32', shape: [3, heads * headDim], data: q },
      { dtype: 'f32', shape: [maxSeq, kvWidth], data: k },
      { dtype: 'f32', shape: [maxSeq, kvWidth], data: v },
      { dtype: 'f32', shape: [3, heads * headDim], data: new Float32Array(3 * heads * headDim) },
    ], { count: 3, heads, kvHeads, headDim, maxSeq, pos0: 0 });
    const want: number[] = [];
    for (let t = 0; t < 3; t++) {
      for (let hh = 0; hh < heads; hh++) {
        const kvh = Math.floor(hh / (heads / kvHeads));
        // Mean over positions 0..t of 100·kvh + 10·j + d.
        for (let d = 0; d < headDim; d++) want.push(100 * kvh + 10 * (t / 2) + d);
      }
    }
    expectClose(h[3]!, want, { abs: 1e-9, rel: 1e-9 }, 'attention host control');
    expectClose(g[3]!, want, TOL, 'attention gpu control');
  });

  it('[OPS-check] attention rejects kvHeads not dividing heads, positions past the cache and wrong shapes with EINVAL', async () => {
    const p = gpu();
    const q = await zeros(p, 'f32', [2, 16]);
    const k = await zeros(p, 'f32', [8, 8]);
    const v = await zeros(p, 'f32', [8, 8]);
    const v7 = await zeros(p, 'f32', [7, 8]);
    const out = await zeros(p, 'f32', [2, 16]);
    try {
      const ok = [q, k, v, out].map(operandOf);
      const params = { count: 2, heads: 4, kvHeads: 2, headDim: 4, maxSeq: 8, pos0: 6 };
      attention.check(ok, params);
      expectCode(() => attention.check(ok, { ...params, pos0: 7 }), 'EINVAL', 'out-of-range');
      expectCode(() => attention.check([{ ...ok[0]!, shape: [2, 12] }, { ...ok[1]!, shape: [8, 8] }, { ...ok[2]!, shape: [8, 8] }, { ...ok[3]!, shape: [2, 12] }], { ...params, heads: 3, kvHeads: 2 }), 'EINVAL', 'bad-param');
      expectCode(() => attention.check([q, k, v7, out].map(operandOf), params), 'EINVAL', 'shape-mismatch');
      expectCode(() => attention.check(ok, { ...params, headDim: 8 }), 'EINVAL', 'shape-mismatch');
    } finally {
      for (const t of [q, k, v, v7, out]) t.dispose();
    }
  });
});

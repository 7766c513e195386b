// Op suite: kv_write (append rows to a KV cache at pos0, shaders/kv_write.wgsl).
// Plan: property — random count 1..20, width 1..80, pos0 and maxSeq with pos0 + count <= maxSeq
// (including an exactly full cache), the cache pre-filled with random values, offsets with canaries,
// folded dispatches: the whole cache after the WGSL run equals the host reference exactly (rows
// pos0..pos0+count-1 replaced, every other row untouched); check() rejects rows past the cache end
// with EINVAL 'out-of-range' and mismatched widths with 'shape-mismatch'.
import { describe, expect, it } from 'vitest';
import { zeros } from '../../src/index.js';
import { kvWrite } from '../../src/submit/ops/index.js';
import { expectCode } from '../support/expect-error.js';
import { fc, fcParams } from '../support/fc.js';
import { operandOf } from '../support/run-op.js';
import { arb, foldingLimits, randomF32, runBoth, useWebGPU } from './harness.js';

describe('kv_write: WGSL against the host reference', () => {
  const gpu = useWebGPU();

  it('[OPS-kv-write] random appends: the whole cache equals the host reference exactly', async () => {
    await fc.assert(
      fc.asyncProperty(arb.size(20), arb.size(80), fc.nat(30), fc.nat(4), arb.seed(), arb.pads(2), fc.boolean(), async (count, width, pos0, spare, seed, pads, fold) => {
        const maxSeq = pos0 + count + spare;
        const params = { count, width, maxSeq, pos0 };
        const before = randomF32(seed + 1, maxSeq * width, 5, 6);
        const { gpu: g, host: h } = await runBoth(gpu(), kvWrite, [
          { dtype: 'f32', shape: [count, width], data: randomF32(seed, count * width) },
          { dtype: 'f32', shape: [maxSeq, width], data: before },
        ], params, pads, foldingLimits(kvWrite, params, fold));
        expect(Array.from(h[1]!.subarray(0, pos0 * width))).toEqual(Array.from(before.subarray(0, pos0 * width)));
        expect(Array.from(g[1]!)).toEqual(Array.from(h[1]!));
      }),
      fcParams(15),
    );
  });

  it('[OPS-check] kv_write rejects rows past the cache end (out-of-range) and width mismatches with EINVAL', async () => {
    const p = gpu();
    const src = await zeros(p, 'f32', [2, 8]);
    const cache = await zeros(p, 'f32', [6, 8]);
    const cacheWide = await zeros(p, 'f32', [6, 9]);
    try {
      const ok = [src, cache].map(operandOf);
      kvWrite.check(ok, { count: 2, width: 8, maxSeq: 6, pos0: 4 });
      expectCode(() => kvWrite.check(ok, { count: 2, width: 8, maxSeq: 6, pos0: 5 }), 'EINVAL', 'out-of-range');
      expectCode(() => kvWrite.check(ok, { count: 2, width: 8, maxSeq: 6, pos0: -1 }), 'EINVAL', 'bad-param');
      expectCode(() => kvWrite.check([src, cacheWide].map(operandOf), { count: 2, width: 8, maxSeq: 6, pos0: 0 }), 'EINVAL', 'shape-mismatch');
    } finally {
      for (const t of [src, cache, cacheWide]) t.dispose();
    }
  });
});

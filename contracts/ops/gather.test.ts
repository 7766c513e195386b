// Op suite: gather (embedding lookup, shaders/gather.wgsl).
// Plan: property — ids u32 or i32 [count 1..40] into a table [vocab 1..300, dim 1..100] (edges), with
// about 1 id in 10 out of range (>= vocab, or negative for i32), offsets with canaries, folded
// dispatches: WGSL equals the host reference exactly (a copy); out-of-range ids give zero rows on
// both; check() rejections (ids must be u32/i32 [count], table f32 [vocab, dim]).
import { describe, expect, it } from 'vitest';
import { zeros } from '../../src/index.js';
import { gather } from '../../src/submit/ops/index.js';
import { expectCode } from '../support/expect-error.js';
import { fc, fcParams } from '../support/fc.js';
import { operandOf } from '../support/run-op.js';
import { arb, foldingLimits, randomF32, rng, runBoth, useWebGPU } from './harness.js';

describe('gather: WGSL against the host reference', () => {
  const gpu = useWebGPU();

  it('[OPS-gather] random ids (u32 and i32, some out of range) and tables: WGSL equals the host exactly', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('u32' as const, 'i32' as const), arb.size(40), arb.size(300), arb.size(100), arb.seed(), arb.pads(3), fc.boolean(), async (dtype, count, vocab, dim, seed, pads, fold) => {
        const r = rng(seed);
        const raw = Array.from({ length: count }, () => {
          const u = r();
          if (u < 0.05) return vocab + Math.floor(r() * 5);
          if (u < 0.1) return dtype === 'i32' ? -1 - Math.floor(r() * 5) : vocab;
          return Math.floor(r() * vocab);
        });
        const ids = dtype === 'u32' ? Uint32Array.from(raw) : Int32Array.from(raw);
        const params = { count, vocab, dim };
        const { gpu: g, host: h } = await runBoth(gpu(), gather, [
          { dtype, shape: [count], data: ids },
          { dtype: 'f32', shape: [vocab, dim], data: randomF32(seed + 1, vocab * dim) },
          { dtype: 'f32', shape: [count, dim], data: new Float32Array(count * dim) },
        ], params, pads, foldingLimits(gather, params, fold));
        raw.forEach((id, t) => {
          if (id < 0 || id >= vocab) expect(Array.from(h[2]!.subarray(t * dim, (t + 1) * dim)), `row ${t}`).toEqual(new Array(dim).fill(0));
        });
        expect(Array.from(g[2]!)).toEqual(Array.from(h[2]!));
      }),
      fcParams(15),
    );
  });

  it('[OPS-gather] control: rows come from the table in id order, repeats included', async () => {
    const table = Float32Array.from([0, 1, 10, 11, 20, 21]);
    const { gpu: g, host: h } = await runBoth(gpu(), gather, [
      { dtype: 'u32', shape: [4], data: Uint32Array.from([2, 0, 2, 1]) },
      { dtype: 'f32', shape: [3, 2], data: table },
      { dtype: 'f32', shape: [4, 2], data: new Float32Array(8) },
    ], { count: 4, vocab: 3, dim: 2 });
    const want = [20, 21, 0, 1, 20, 21, 10, 11];
    expect(Array.from(h[2]!)).toEqual(want);
    expect(Array.from(g[2]!)).toEqual(want);
  });

  it('[OPS-check] gather rejects float ids, a table of the wrong width and a wrong output with EINVAL', async () => {
    const p = gpu();
    const ids = await zeros(p, 'u32', [3]);
    const idsF = await zeros(p, 'f32', [3]);
    const table = await zeros(p, 'f32', [10, 4]);
    const out = await zeros(p, 'f32', [3, 4]);
    const out5 = await zeros(p, 'f32', [3, 5]);
    try {
      const params = { count: 3, vocab: 10, dim: 4 };
      gather.check([ids, table, out].map(operandOf), params);
      expectCode(() => gather.check([idsF, table, out].map(operandOf), params), 'EINVAL', 'dtype-mismatch');
      expectCode(() => gather.check([ids, table, out5].map(operandOf), params), 'EINVAL', 'shape-mismatch');
      expectCode(() => gather.check([ids, table, out].map(operandOf), { ...params, vocab: 11 }), 'EINVAL', 'shape-mismatch');
    } finally {
      for (const t of [ids, idsF, table, out, out5]) t.dispose();
    }
  });
});

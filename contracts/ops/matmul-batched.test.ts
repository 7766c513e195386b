// Op suite: matmul_batched (out[i] = a[i] x b[i], shaders/matmul.wgsl with the batch on z).
// Plan: property — random batch 1..6, M (half the runs 1), N, K in 1..48, element offsets with
// canaries: WGSL equals the host reference within 1e-4·(1+|host|) (f32 accumulation over K <= 48);
// every rows-per-invocation specialization;
// batch slices do not bleed into each other (each batch has its own scale); check() rejections and a
// dispatch over the device limit refused with EINVAL.
import { describe, expect, it } from 'vitest';
import { zeros } from '../../src/index.js';
import { matmulBatched } from '../../src/submit/ops/index.js';
import { expectCode } from '../support/expect-error.js';
import { fc, fcParams } from '../support/fc.js';
import { operandOf } from '../support/run-op.js';
import { arb, expectClose, naiveMatmul, randomF32, runBoth, useWebGPU } from './harness.js';

const TOL = { abs: 1e-4, rel: 1e-4 };

describe('matmul_batched: WGSL against the host reference', () => {
  const gpu = useWebGPU();

  it('[OPS-matmul-batched] random batches and shapes agree within 1e-4·(1+|host|)', async () => {
    const rows = fc.oneof(fc.constant(1), arb.size(48));
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 6 }), rows, arb.size(48), arb.size(48), arb.seed(), arb.pads(3), async (batch, m, n, k, seed, pads) => {
        const a = randomF32(seed, batch * m * k);
        // Batch i of b is scaled by i + 1, so reading another batch's slice shows up as a wrong magnitude.
        const b = randomF32(seed + 1, batch * k * n);
        for (let i = 0; i < b.length; i++) b[i] = b[i]! * (1 + Math.floor(i / (k * n)));
        const { gpu: g, host: h } = await runBoth(gpu(), matmulBatched, [
          { dtype: 'f32', shape: [batch, m, k], data: a },
          { dtype: 'f32', shape: [batch, k, n], data: b },
          { dtype: 'f32', shape: [batch, m, n], data: new Float32Array(batch * m * n) },
        ], { batch, m, n, k }, pads);
        expectClose(g[2]!, h[2]!, { abs: TOL.abs * batch, rel: TOL.rel }, `matmul_batched ${batch}x[${m}x${k} · ${k}x${n}]`);
      }),
      fcParams(15),
    );
  });

  it('[OPS-matmul-batched] every rows-per-invocation specialization (M = 1, 2, 3, 5, 9) with 3 batches', async () => {
    let seed = 31;
    for (const m of [1, 2, 3, 5, 9]) {
      const [batch, n, k] = [3, 20, 13];
      const { gpu: g, host: h } = await runBoth(gpu(), matmulBatched, [
        { dtype: 'f32', shape: [batch, m, k], data: randomF32(seed++, batch * m * k) },
        { dtype: 'f32', shape: [batch, k, n], data: randomF32(seed++, batch * k * n) },
        { dtype: 'f32', shape: [batch, m, n], data: new Float32Array(batch * m * n) },
      ], { batch, m, n, k });
      expectClose(g[2]!, h[2]!, TOL, `matmul_batched 3x[${m}x${k} · ${k}x${n}]`);
    }
  });

  it('[OPS-matmul-batched] the host reference equals a naive triple loop per batch exactly', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 9 }), fc.integer({ min: 1, max: 9 }), fc.integer({ min: 1, max: 9 }), arb.seed(), (batch, m, n, k, seed) => {
        const a = randomF32(seed, batch * m * k);
        const b = randomF32(seed + 1, batch * k * n);
        const out = new Float32Array(batch * m * n);
        matmulBatched.host({ batch, m, n, k }, [a, b, out]);
        for (let i = 0; i < batch; i++) {
          const want = naiveMatmul(a.subarray(i * m * k), (kk, j) => b[i * k * n + kk * n + j]!, m, n, k);
          expect(Array.from(out.subarray(i * m * n, (i + 1) * m * n))).toEqual(Array.from(want));
        }
      }),
      fcParams(50),
    );
  });

  it('[OPS-check] matmul_batched rejects mismatched batches and shapes, and dispatches past the device limit, with EINVAL', async () => {
    const p = gpu();
    const a = await zeros(p, 'f32', [2, 3, 4]);
    const b = await zeros(p, 'f32', [2, 4, 5]);
    const b3 = await zeros(p, 'f32', [3, 4, 5]);
    const out = await zeros(p, 'f32', [2, 3, 5]);
    try {
      const params = { batch: 2, m: 3, n: 5, k: 4 };
      matmulBatched.check([a, b, out].map(operandOf), params);
      expectCode(() => matmulBatched.check([a, b3, out].map(operandOf), params), 'EINVAL', 'shape-mismatch');
      expectCode(() => matmulBatched.check([a, b, out].map(operandOf), { ...params, batch: 0 }), 'EINVAL', 'bad-param');
      expectCode(() => matmulBatched.workgroups({ ...params, batch: 70_000 }, { maxComputeWorkgroupsPerDimension: 65_535 }), 'EINVAL', 'shape-mismatch');
    } finally {
      for (const t of [a, b, b3, out]) t.dispose();
    }
  });
});

// Op suite: matmul (plain [M,K] x [K,N], shaders/matmul.wgsl at batch 1).
// Plan: (1) property — on the lane's WebGPU provider, random M, N, K in 1..80 (often 1, tile and
// workgroup edges ±1, odd K, M = 1 decode rows), operands at random element offsets with canaries
// around them, the WGSL result equals the host reference within 1e-4·(1 + |host|) (f32 accumulation
// over K <= 172 in a different order than the host's f64 sum), read operands stay unchanged and no
// canary is touched; every rows-per-invocation specialization (TM = 1, 2, 4, 8) runs; (2) the host
// reference (four rows at a time) equals a naive triple loop exactly; (3) control — a hand-computed
// 2x3 x 3x2 product, exact on both; (4) check() rejects wrong shapes, dtypes, strided operands and bad
// sizes with EINVAL before anything runs.
import { describe, expect, it } from 'vitest';
import { zeros } from '../../src/index.js';
import { matmul, rowsPerInvocation } from '../../src/submit/ops/index.js';
import { expectCode } from '../support/expect-error.js';
import { fc, fcParams } from '../support/fc.js';
import { operandOf, runOp } from '../support/run-op.js';
import { arb, expectClose, naiveMatmul, randomF32, runBoth, useWebGPU } from './harness.js';

/** |gpu - host| <= TOL.abs + TOL.rel·|host|. */
const TOL = { abs: 1e-4, rel: 1e-4 };

describe('matmul: WGSL against the host reference', () => {
  const gpu = useWebGPU();

  it('[OPS-matmul] random shapes (M=1 decode rows, edges, odd K) agree within 1e-4·(1+|host|)', async () => {
    await fc.assert(
      fc.asyncProperty(arb.size(80), arb.size(80), arb.size(80), arb.seed(), fc.array(arb.pad(), { minLength: 3, maxLength: 3 }), async (m, n, k, seed, pads) => {
        const a = randomF32(seed, m * k);
        const b = randomF32(seed + 1, k * n);
        const { gpu: g, host: h } = await runBoth(gpu(), matmul, [
          { dtype: 'f32', shape: [m, k], data: a },
          { dtype: 'f32', shape: [k, n], data: b },
          { dtype: 'f32', shape: [m, n], data: new Float32Array(m * n) },
        ], { m, n, k }, pads);
        expectClose(g[2]!, h[2]!, TOL, `matmul ${m}x${k} · ${k}x${n}`);
      }),
      fcParams(15),
    );
  });

  it('[OPS-matmul] every rows-per-invocation specialization (M = 1, 2, 3, 5, 9) at stories260K-like shapes', async () => {
    const ms = [1, 2, 3, 5, 9];
    expect(new Set(ms.map(rowsPerInvocation))).toEqual(new Set([1, 2, 4, 8]));
    let seed = 21;
    for (const m of ms) {
      for (const [n, k] of [[64, 64], [172, 64], [64, 172]] as const) {
        const { gpu: g, host: h } = await runBoth(gpu(), matmul, [
          { dtype: 'f32', shape: [m, k], data: randomF32(seed++, m * k) },
          { dtype: 'f32', shape: [k, n], data: randomF32(seed++, k * n) },
          { dtype: 'f32', shape: [m, n], data: new Float32Array(m * n) },
        ], { m, n, k });
        expectClose(g[2]!, h[2]!, TOL, `matmul ${m}x${k} · ${k}x${n}`);
      }
    }
  });

  it('[OPS-matmul] the host reference equals a naive triple loop exactly (M not a multiple of its 4-row blocks included)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 13 }), fc.integer({ min: 1, max: 13 }), fc.integer({ min: 1, max: 13 }), arb.seed(), (m, n, k, seed) => {
        const a = randomF32(seed, m * k);
        const b = randomF32(seed + 1, k * n);
        const out = new Float32Array(m * n);
        matmul.host({ m, n, k }, [a, b, out]);
        expect(Array.from(out)).toEqual(Array.from(naiveMatmul(a, (kk, j) => b[kk * n + j]!, m, n, k)));
      }),
      fcParams(100),
    );
  });

  it('[OPS-matmul] control: a hand-computed 2x3 · 3x2 product is exact on host and GPU', async () => {
    const a = Float32Array.from([1, 2, 3, 4, 5, 6]);
    const b = Float32Array.from([7, 8, 9, 10, 11, 12]);
    const want = [58, 64, 139, 154];
    const { gpu: g, host: h } = await runBoth(gpu(), matmul, [
      { dtype: 'f32', shape: [2, 3], data: a },
      { dtype: 'f32', shape: [3, 2], data: b },
      { dtype: 'f32', shape: [2, 2], data: new Float32Array(4) },
    ], { m: 2, n: 2, k: 3 });
    expect(Array.from(h[2]!)).toEqual(want);
    expect(Array.from(g[2]!)).toEqual(want);
  });

  it('[OPS-check] matmul rejects mismatched shapes, dtypes, strided operands and bad sizes with EINVAL', async () => {
    const p = gpu();
    const a = await zeros(p, 'f32', [2, 3]);
    const b = await zeros(p, 'f32', [3, 4]);
    const out = await zeros(p, 'f32', [2, 4]);
    const bad = await zeros(p, 'f32', [4, 3]);
    const ints = await zeros(p, 'u32', [3, 4]);
    try {
      const ok = [a, b, out].map(operandOf);
      expect(() => matmul.check(ok, { m: 2, n: 4, k: 3 })).not.toThrow();
      expectCode(() => matmul.check([a, bad, out].map(operandOf), { m: 2, n: 4, k: 3 }), 'EINVAL', 'shape-mismatch');
      expectCode(() => matmul.check(ok, { m: 2, n: 4, k: 4 }), 'EINVAL', 'shape-mismatch');
      expectCode(() => matmul.check([a, ints, out].map(operandOf), { m: 2, n: 4, k: 3 }), 'EINVAL', 'dtype-mismatch');
      expectCode(() => matmul.check([a, b].map(operandOf), { m: 2, n: 4, k: 3 }), 'EINVAL', 'operand-count');
      expectCode(() => matmul.check(ok, { m: 0, n: 4, k: 3 }), 'EINVAL', 'bad-param');
      expectCode(() => matmul.check(ok, { m: 2.5, n: 4, k: 3 }), 'EINVAL', 'bad-param');
      expectCode(() => matmul.check([operandOf(a), { ...operandOf(b), contiguous: false }, operandOf(out)], { m: 2, n: 4, k: 3 }), 'EINVAL', 'not-contiguous');
      // The runner refuses before preparing anything: the output keeps its contents and no borrow.
      await out.fill(7);
      await expect(runOp(p, matmul, [a, bad, out], { m: 2, n: 4, k: 3 })).rejects.toMatchObject({ code: 'EINVAL', reason: 'shape-mismatch' });
      expect(Array.from(await out.toArray())).toEqual(new Array(8).fill(7));
      out.viewMut().release();
    } finally {
      for (const t of [a, b, out, bad, ints]) t.dispose();
    }
  });
});

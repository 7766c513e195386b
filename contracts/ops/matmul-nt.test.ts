// Op suite: matmul_nt (out = a x w^T, a [M,K], w [N,K]: llama2.c's linear layers, shaders/matmul_nt.wgsl).
// Plan: (1) property — random M (half the runs M = 1, the decode shape; otherwise 1..80 with tile and
// workgroup edges), N, K in 1..80 (odd K included), element offsets with canaries: WGSL equals the host
// reference within 1e-4·(1+|host|) (f32 accumulation over K <= 80, different order from the host's f64
// sum); (2) every row-tile specialization (M = 1, 2, 3..4, 5+) at llama2.c stories260K decode/prefill
// shapes; (3) the host reference (four dot products at a time) equals a naive triple loop exactly;
// (4) check() rejections; (5) OPS-matmul-nt-add (the ACC epilogue): random shapes and offsets with a
// non-zero `out`, WGSL within 1e-4 of the host twin, and bit-identical to the f32 sum of what `out` held
// and matmul_nt's own WGSL product (what matmul_nt into a scratch + add_inplace gave); the host twin equals
// matmul_nt's host product added in f32 exactly.
import { describe, expect, it } from 'vitest';
import { zeros } from '../../src/index.js';
import { matmulNT, matmulNTAdd, rowsPerInvocation } from '../../src/submit/ops/index.js';
import { expectCode } from '../support/expect-error.js';
import { fc, fcParams } from '../support/fc.js';
import { operandOf } from '../support/run-op.js';
import { arb, expectClose, naiveMatmul, randomF32, runBoth, useWebGPU } from './harness.js';

/** |gpu - host| <= TOL.abs + TOL.rel·|host|. */
const TOL = { abs: 1e-4, rel: 1e-4 };

async function compare(p: ReturnType<ReturnType<typeof useWebGPU>>, m: number, n: number, k: number, seed: number, pads: readonly number[] = []): Promise<void> {
  const { gpu: g, host: h } = await runBoth(p, matmulNT, [
    { dtype: 'f32', shape: [m, k], data: randomF32(seed, m * k) },
    { dtype: 'f32', shape: [n, k], data: randomF32(seed + 1, n * k) },
    { dtype: 'f32', shape: [m, n], data: new Float32Array(m * n) },
  ], { m, n, k }, pads);
  expectClose(g[2]!, h[2]!, TOL, `matmul_nt ${m}x${k} · (${n}x${k})^T`);
}

describe('matmul_nt: WGSL against the host reference', () => {
  const gpu = useWebGPU();

  it('[OPS-matmul-nt] random shapes (half M=1 decode, edges, odd K) agree within 1e-4·(1+|host|)', async () => {
    const rows = fc.oneof(fc.constant(1), arb.size(80));
    await fc.assert(
      fc.asyncProperty(rows, arb.size(80), arb.size(80), arb.seed(), arb.pads(3), async (m, n, k, seed, pads) => {
        await compare(gpu(), m, n, k, seed, pads);
      }),
      fcParams(15),
    );
  });

  it('[OPS-matmul-nt] every rows-per-invocation specialization at stories260K shapes (dim 64, hidden 172, vocab 512)', async () => {
    const ms = [1, 2, 3, 4, 5, 9, 17];
    expect(new Set(ms.map(rowsPerInvocation))).toEqual(new Set([1, 2, 4, 8]));
    let seed = 11;
    for (const m of ms) {
      for (const [n, k] of [[64, 64], [172, 64], [64, 172], [512, 64]] as const) await compare(gpu(), m, n, k, seed++);
    }
  });

  it('[OPS-matmul-nt] the host reference equals a naive triple loop over the transposed weight exactly (N not a multiple of 4 included)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 9 }), fc.integer({ min: 1, max: 13 }), fc.integer({ min: 1, max: 13 }), arb.seed(), (m, n, k, seed) => {
        const a = randomF32(seed, m * k);
        const w = randomF32(seed + 1, n * k);
        const out = new Float32Array(m * n);
        matmulNT.host({ m, n, k }, [a, w, out]);
        expect(Array.from(out)).toEqual(Array.from(naiveMatmul(a, (kk, j) => w[j * k + kk]!, m, n, k)));
      }),
      fcParams(100),
    );
  });

  it('[OPS-check] matmul_nt rejects a weight in [K,N] instead of [N,K], wrong dtypes and bad sizes with EINVAL', async () => {
    const p = gpu();
    const a = await zeros(p, 'f32', [1, 3]);
    const w = await zeros(p, 'f32', [4, 3]);
    const wT = await zeros(p, 'f32', [3, 4]);
    const out = await zeros(p, 'f32', [1, 4]);
    const ints = await zeros(p, 'u32', [1, 4]);
    try {
      matmulNT.check([a, w, out].map(operandOf), { m: 1, n: 4, k: 3 });
      expectCode(() => matmulNT.check([a, wT, out].map(operandOf), { m: 1, n: 4, k: 3 }), 'EINVAL', 'shape-mismatch');
      expectCode(() => matmulNT.check([a, w, ints].map(operandOf), { m: 1, n: 4, k: 3 }), 'EINVAL', 'dtype-mismatch');
      expectCode(() => matmulNT.check([a, w, out].map(operandOf), { m: 1, n: 4, k: -3 }), 'EINVAL', 'bad-param');
    } finally {
      for (const t of [a, w, wT, out, ints]) t.dispose();
    }
  });

  it('[OPS-matmul-nt-add] random shapes (half M=1) into a non-zero out: within 1e-4 of the host twin, and out + matmul_nt\'s WGSL product in f32, bit for bit', async () => {
    const rows = fc.oneof(fc.constant(1), arb.size(40));
    await fc.assert(
      fc.asyncProperty(rows, arb.size(80), arb.size(80), arb.seed(), arb.pads(3), async (m, n, k, seed, pads) => {
        const a = { dtype: 'f32' as const, shape: [m, k], data: randomF32(seed, m * k) };
        const w = { dtype: 'f32' as const, shape: [n, k], data: randomF32(seed + 1, n * k) };
        const before = randomF32(seed + 2, m * n);
        const sum = await runBoth(gpu(), matmulNTAdd, [a, w, { dtype: 'f32', shape: [m, n], data: before }], { m, n, k }, pads);
        expectClose(sum.gpu[2]!, sum.host[2]!, TOL, `matmul_nt_add ${m}x${k} · (${n}x${k})^T`);
        const product = await runBoth(gpu(), matmulNT, [a, w, { dtype: 'f32', shape: [m, n], data: new Float32Array(m * n) }], { m, n, k }, pads);
        const want = (product.gpu[2]! as Float32Array).map((v, i) => Math.fround(before[i]! + v));
        expect(Array.from(sum.gpu[2]!)).toEqual(Array.from(want));
      }),
      fcParams(10),
    );
  });

  it('[OPS-matmul-nt-add] the host twin adds matmul_nt\'s host product to out in f32, exactly', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 5 }), fc.integer({ min: 1, max: 13 }), fc.integer({ min: 1, max: 13 }), arb.seed(), (m, n, k, seed) => {
        const a = randomF32(seed, m * k);
        const w = randomF32(seed + 1, n * k);
        const before = randomF32(seed + 2, m * n);
        const product = new Float32Array(m * n);
        matmulNT.host({ m, n, k }, [a, w, product]);
        const out = before.slice();
        matmulNTAdd.host({ m, n, k }, [a, w, out]);
        expect(Array.from(out)).toEqual(Array.from(before.map((v, i) => Math.fround(v + product[i]!))));
      }),
      fcParams(100),
    );
  });
});

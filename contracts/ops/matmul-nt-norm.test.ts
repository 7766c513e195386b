// Op suite: matmul_nt_norm (out = a x w^T with a = rmsnorm(x) · norm, shaders/matmul_nt_norm.wgsl: a final
// norm folded into the classifier of a decode step, one dispatch).
// Plan: (1) property — random M (half the runs M = 1, the decode shape), N, K in 1..80, element offsets
// with canaries: WGSL equals the host twin within 1e-4·(1+|host|); (2) at stories260K's classifier shape
// (M = 1, N = 512, K = 64), an N past one workgroup that is not a multiple of 8, and M = 3, WGSL equals
// rmsnorm then matmul_nt on the same device within 1e-5·(1+|x|); (3) the host twin equals rmsnorm's and
// matmul_nt's host twins composed, exactly; (4) check() rejections.
import { describe, expect, it } from 'vitest';
import { zeros } from '../../src/index.js';
import { matmulNT, matmulNTNorm, rmsnorm } from '../../src/submit/ops/index.js';
import { expectCode } from '../support/expect-error.js';
import { fc, fcParams } from '../support/fc.js';
import { operandOf } from '../support/run-op.js';
import { arb, expectClose, randomF32, runBoth, useWebGPU } from './harness.js';

/** |gpu - host| <= TOL.abs + TOL.rel·|host|: f32 sums over K <= 80 against the host's f64 sums. */
const TOL = { abs: 1e-4, rel: 1e-4 };
/** Against rmsnorm + matmul_nt on the device: the same f32 sums. */
const SAME_DEVICE = { abs: 1e-5, rel: 1e-5 };
const EPS = 1e-5;

function operands(m: number, n: number, k: number, seed: number) {
  return {
    x: { dtype: 'f32' as const, shape: [m, k], data: randomF32(seed, m * k, -2, 2) },
    norm: { dtype: 'f32' as const, shape: [k], data: randomF32(seed + 1, k, 0.5, 1.5) },
    w: { dtype: 'f32' as const, shape: [n, k], data: randomF32(seed + 2, n * k) },
    out: { dtype: 'f32' as const, shape: [m, n], data: new Float32Array(m * n) },
  };
}

describe('matmul_nt_norm: WGSL against the host twin and the ops it replaces', () => {
  const gpu = useWebGPU();

  it('[OPS-matmul-nt-norm] random shapes (half M=1 decode, edges, odd K) and offsets agree with the host twin within 1e-4·(1+|host|)', async () => {
    const rows = fc.oneof(fc.constant(1), arb.size(40));
    await fc.assert(
      fc.asyncProperty(rows, arb.size(80), arb.size(80), arb.seed(), arb.pads(4), async (m, n, k, seed, pads) => {
        const o = operands(m, n, k, seed);
        const { gpu: g, host: h } = await runBoth(gpu(), matmulNTNorm, [o.x, o.norm, o.w, o.out], { m, n, k, eps: EPS }, pads);
        expectClose(g[3]!, h[3]!, TOL, `matmul_nt_norm ${m}x${k} · (${n}x${k})^T`);
      }),
      fcParams(12),
    );
  });

  it('[OPS-matmul-nt-norm] decode shapes (stories260K classifier 512x64, N 300 past one workgroup, M = 3): equal to rmsnorm + matmul_nt on the device within 1e-5', async () => {
    let seed = 31;
    for (const [m, n, k] of [[1, 512, 64], [1, 300, 33], [3, 20, 64]] as const) {
      const o = operands(m, n, k, seed++);
      const folded = await runBoth(gpu(), matmulNTNorm, [o.x, o.norm, o.w, o.out], { m, n, k, eps: EPS });
      const normed = await runBoth(gpu(), rmsnorm, [o.x, o.norm, { dtype: 'f32', shape: [m, k], data: new Float32Array(m * k) }], { rows: m, cols: k, eps: EPS });
      const xn = { dtype: 'f32' as const, shape: [m, k], data: normed.gpu[2]! as Float32Array };
      const composed = await runBoth(gpu(), matmulNT, [xn, o.w, o.out], { m, n, k });
      expectClose(folded.gpu[3]!, composed.gpu[2]!, SAME_DEVICE, `matmul_nt_norm ${m}x${n}x${k} vs rmsnorm + matmul_nt`);
    }
  });

  it('[OPS-matmul-nt-norm] the host twin equals rmsnorm then matmul_nt on the host, exactly', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 13 }), fc.integer({ min: 1, max: 13 }), arb.seed(), (m, n, k, seed) => {
        const o = operands(m, n, k, seed);
        const out = new Float32Array(m * n);
        matmulNTNorm.host({ m, n, k, eps: EPS }, [o.x.data, o.norm.data, o.w.data, out]);
        const xn = new Float32Array(m * k);
        rmsnorm.host({ rows: m, cols: k, eps: EPS }, [o.x.data, o.norm.data, xn]);
        const want = new Float32Array(m * n);
        matmulNT.host({ m, n, k }, [xn, o.w.data, want]);
        expect(Array.from(out)).toEqual(Array.from(want));
      }),
      fcParams(100),
    );
  });

  it('[OPS-check] matmul_nt_norm rejects a weight of another shape, a norm of another length, wrong dtypes and bad sizes with EINVAL', async () => {
    const p = gpu();
    const x = await zeros(p, 'f32', [1, 3]);
    const norm = await zeros(p, 'f32', [3]);
    const norm4 = await zeros(p, 'f32', [4]);
    const w = await zeros(p, 'f32', [4, 3]);
    const wT = await zeros(p, 'f32', [3, 4]);
    const out = await zeros(p, 'f32', [1, 4]);
    const ints = await zeros(p, 'u32', [1, 4]);
    try {
      const ok = { m: 1, n: 4, k: 3, eps: EPS };
      matmulNTNorm.check([x, norm, w, out].map(operandOf), ok);
      expectCode(() => matmulNTNorm.check([x, norm, wT, out].map(operandOf), ok), 'EINVAL', 'shape-mismatch');
      expectCode(() => matmulNTNorm.check([x, norm4, w, out].map(operandOf), ok), 'EINVAL', 'shape-mismatch');
      expectCode(() => matmulNTNorm.check([x, norm, w, ints].map(operandOf), ok), 'EINVAL', 'dtype-mismatch');
      expectCode(() => matmulNTNorm.check([x, norm, w, out].map(operandOf), { ...ok, k: 0 }), 'EINVAL', 'bad-param');
    } finally {
      for (const t of [x, norm, norm4, w, wT, out, ints]) t.dispose();
    }
  });
});

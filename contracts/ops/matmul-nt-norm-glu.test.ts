// Op suite: matmul_nt_norm_glu (out = silu(a x gate^T) * (a x up^T) with a = rmsnorm(x) · norm,
// shaders/matmul_nt_norm_glu.wgsl: the FFN norm, the gate and up projections of llama's SwiGLU MLP and their
// product in one dispatch).
// Plan: (1) property — random M (half the runs M = 1, the decode shape), N, K in 1..80, element offsets
// with canaries: WGSL equals the host twin within 1e-4·(1+|host|); (2) at stories260K's decode shape
// (M = 1, N = 172, K = 64) and an N past one workgroup, WGSL equals rmsnorm, matmul_nt twice and silu_mul
// on the same device within 1e-5·(1+|x|) (the same per-column sums; only exp may differ by an ulp); (3) the
// host twin equals those ops' host twins composed, exactly; (4) check() rejections.
import { describe, expect, it } from 'vitest';
import { zeros } from '../../src/index.js';
import { matmulNT, matmulNTNormGlu, rmsnorm, siluMul } from '../../src/submit/ops/index.js';
import { expectCode } from '../support/expect-error.js';
import { fc, fcParams } from '../support/fc.js';
import { operandOf } from '../support/run-op.js';
import { arb, expectClose, randomF32, runBoth, useWebGPU } from './harness.js';

/** |gpu - host| <= TOL.abs + TOL.rel·|host|: f32 sums over K <= 80 against the host's f64 sums. */
const TOL = { abs: 1e-4, rel: 1e-4 };
/** Against the composed ops on the device: the same f32 sums, exp within an ulp or so. */
const SAME_DEVICE = { abs: 1e-5, rel: 1e-5 };
const EPS = 1e-5;

type Gpu = ReturnType<ReturnType<typeof useWebGPU>>;

function operands(m: number, n: number, k: number, seed: number) {
  return {
    a: { dtype: 'f32' as const, shape: [m, k], data: randomF32(seed, m * k, -2, 2) },
    norm: { dtype: 'f32' as const, shape: [k], data: randomF32(seed + 3, k, 0.5, 1.5) },
    gate: { dtype: 'f32' as const, shape: [n, k], data: randomF32(seed + 1, n * k) },
    up: { dtype: 'f32' as const, shape: [n, k], data: randomF32(seed + 2, n * k) },
    out: { dtype: 'f32' as const, shape: [m, n], data: new Float32Array(m * n) },
  };
}

async function compare(p: Gpu, m: number, n: number, k: number, seed: number, pads: readonly number[] = []): Promise<void> {
  const o = operands(m, n, k, seed);
  const { gpu: g, host: h } = await runBoth(p, matmulNTNormGlu, [o.a, o.norm, o.gate, o.up, o.out], { m, n, k, eps: EPS }, pads);
  expectClose(g[4]!, h[4]!, TOL, `matmul_nt_norm_glu ${m}x${k} · (${n}x${k})^T`);
}

describe('matmul_nt_norm_glu: WGSL against the host twin and the ops it replaces', () => {
  const gpu = useWebGPU();

  it('[OPS-matmul-nt-norm-glu] random shapes (half M=1 decode, edges, odd K) and offsets agree with the host twin within 1e-4·(1+|host|)', async () => {
    const rows = fc.oneof(fc.constant(1), arb.size(40));
    await fc.assert(
      fc.asyncProperty(rows, arb.size(80), arb.size(80), arb.seed(), arb.pads(5), async (m, n, k, seed, pads) => {
        await compare(gpu(), m, n, k, seed, pads);
      }),
      fcParams(12),
    );
  });

  it('[OPS-matmul-nt-norm-glu] decode shapes (stories260K 172x64, and N past one workgroup): equal to rmsnorm, matmul_nt twice and silu_mul on the device within 1e-5', async () => {
    let seed = 5;
    for (const [m, n, k] of [[1, 172, 64], [1, 300, 33], [3, 20, 64]] as const) {
      const o = operands(m, n, k, seed++);
      const glu = await runBoth(gpu(), matmulNTNormGlu, [o.a, o.norm, o.gate, o.up, o.out], { m, n, k, eps: EPS });
      const normed = await runBoth(gpu(), rmsnorm, [o.a, o.norm, { dtype: 'f32', shape: [m, k], data: new Float32Array(m * k) }], { rows: m, cols: k, eps: EPS });
      const xn = { dtype: 'f32' as const, shape: [m, k], data: normed.gpu[2]! as Float32Array };
      const g = await runBoth(gpu(), matmulNT, [xn, o.gate, o.out], { m, n, k });
      const u = await runBoth(gpu(), matmulNT, [xn, o.up, o.out], { m, n, k });
      const composed = await runBoth(gpu(), siluMul, [
        { dtype: 'f32', shape: [m, n], data: g.gpu[2]! as Float32Array },
        { dtype: 'f32', shape: [m, n], data: u.gpu[2]! as Float32Array },
        { dtype: 'f32', shape: [m, n], data: new Float32Array(m * n) },
      ], { n: m * n });
      expectClose(glu.gpu[4]!, composed.gpu[2]!, SAME_DEVICE, `matmul_nt_norm_glu ${m}x${n}x${k} vs rmsnorm + matmul_nt + silu_mul`);
    }
  });

  it('[OPS-matmul-nt-norm-glu] the host twin equals rmsnorm, matmul_nt twice and silu_mul on the host, exactly', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 13 }), fc.integer({ min: 1, max: 13 }), arb.seed(), (m, n, k, seed) => {
        const o = operands(m, n, k, seed);
        const out = new Float32Array(m * n);
        matmulNTNormGlu.host({ m, n, k, eps: EPS }, [o.a.data, o.norm.data, o.gate.data, o.up.data, out]);
        const xn = new Float32Array(m * k);
        rmsnorm.host({ rows: m, cols: k, eps: EPS }, [o.a.data, o.norm.data, xn]);
        const g = new Float32Array(m * n);
        const u = new Float32Array(m * n);
        const want = new Float32Array(m * n);
        matmulNT.host({ m, n, k }, [xn, o.gate.data, g]);
        matmulNT.host({ m, n, k }, [xn, o.up.data, u]);
        siluMul.host({ n: m * n }, [g, u, want]);
        expect(Array.from(out)).toEqual(Array.from(want));
      }),
      fcParams(100),
    );
  });

  it('[OPS-check] matmul_nt_norm_glu rejects an up of another shape, a norm of another length, wrong dtypes and bad sizes with EINVAL', async () => {
    const p = gpu();
    const a = await zeros(p, 'f32', [1, 3]);
    const norm = await zeros(p, 'f32', [3]);
    const norm4 = await zeros(p, 'f32', [4]);
    const w = await zeros(p, 'f32', [4, 3]);
    const wT = await zeros(p, 'f32', [3, 4]);
    const out = await zeros(p, 'f32', [1, 4]);
    const ints = await zeros(p, 'u32', [1, 4]);
    try {
      const ok = { m: 1, n: 4, k: 3, eps: EPS };
      matmulNTNormGlu.check([a, norm, w, w, out].map(operandOf), ok);
      expectCode(() => matmulNTNormGlu.check([a, norm, w, wT, out].map(operandOf), ok), 'EINVAL', 'shape-mismatch');
      expectCode(() => matmulNTNormGlu.check([a, norm4, w, w, out].map(operandOf), ok), 'EINVAL', 'shape-mismatch');
      expectCode(() => matmulNTNormGlu.check([a, norm, w, w, ints].map(operandOf), ok), 'EINVAL', 'dtype-mismatch');
      expectCode(() => matmulNTNormGlu.check([a, norm, w, w, out].map(operandOf), { ...ok, k: 0 }), 'EINVAL', 'bad-param');
    } finally {
      for (const t of [a, norm, norm4, w, wT, out, ints]) t.dispose();
    }
  });
});

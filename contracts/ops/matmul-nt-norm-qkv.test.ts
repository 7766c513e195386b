// Op suite: matmul_nt_norm_qkv (RMSNorm folded into the Q, K and V projections, one qkv row per row of x,
// shaders/matmul_nt_norm_qkv.wgsl).
// Plan: (1) property — random M (half the runs M = 1, the decode shape), K in 1..80, Q and KV multiples of
// 8 up to 96 (past one workgroup), element offsets with canaries: WGSL equals the host twin within
// 1e-4·(1+|host|); (2) at stories260K's decode shape (K 64, Q 64, KV 32) WGSL equals rmsnorm then matmul_nt
// into each matrix's columns on the same device within 1e-5·(1+|x|); (3) the host twin equals rmsnorm's and
// matmul_nt's host twins composed, exactly; (4) check() rejections (widths not multiples of 8 included).
import { describe, expect, it } from 'vitest';
import { zeros } from '../../src/index.js';
import { matmulNT, matmulNTNormQkv, rmsnorm } from '../../src/submit/ops/index.js';
import { expectCode } from '../support/expect-error.js';
import { fc, fcParams } from '../support/fc.js';
import { operandOf } from '../support/run-op.js';
import { arb, expectClose, randomF32, runBoth, useWebGPU } from './harness.js';

const TOL = { abs: 1e-4, rel: 1e-4 };
const SAME_DEVICE = { abs: 1e-5, rel: 1e-5 };
const EPS = 1e-5;

type Gpu = ReturnType<ReturnType<typeof useWebGPU>>;

function operands(m: number, k: number, qRows: number, kvRows: number, seed: number) {
  return {
    x: { dtype: 'f32' as const, shape: [m, k], data: randomF32(seed, m * k, -2, 2) },
    norm: { dtype: 'f32' as const, shape: [k], data: randomF32(seed + 1, k, 0.5, 1.5) },
    wq: { dtype: 'f32' as const, shape: [qRows, k], data: randomF32(seed + 2, qRows * k) },
    wk: { dtype: 'f32' as const, shape: [kvRows, k], data: randomF32(seed + 3, kvRows * k) },
    wv: { dtype: 'f32' as const, shape: [kvRows, k], data: randomF32(seed + 4, kvRows * k) },
    qkv: { dtype: 'f32' as const, shape: [m, qRows + 2 * kvRows], data: new Float32Array(m * (qRows + 2 * kvRows)) },
  };
}

/** rmsnorm, then matmul_nt of the normed rows by each matrix, interleaved into qkv rows (host or device). */
async function composed(p: Gpu, m: number, k: number, qRows: number, kvRows: number, seed: number): Promise<{ gpu: Float32Array; host: Float32Array }> {
  const o = operands(m, k, qRows, kvRows, seed);
  const normed = await runBoth(p, rmsnorm, [o.x, o.norm, { dtype: 'f32', shape: [m, k], data: new Float32Array(m * k) }], { rows: m, cols: k, eps: EPS });
  const width = qRows + 2 * kvRows;
  const gpu = new Float32Array(m * width);
  const host = new Float32Array(m * width);
  let col = 0;
  for (const w of [o.wq, o.wk, o.wv]) {
    const n = w.shape[0]!;
    for (const side of ['gpu', 'host'] as const) {
      const xn = normed[side][2]! as Float32Array;
      const r = await runBoth(p, matmulNT, [{ dtype: 'f32', shape: [m, k], data: xn }, w, { dtype: 'f32', shape: [m, n], data: new Float32Array(m * n) }], { m, n, k });
      const out = (side === 'gpu' ? r.gpu[2] : r.host[2]) as Float32Array;
      const into = side === 'gpu' ? gpu : host;
      for (let i = 0; i < m; i++) into.set(out.subarray(i * n, (i + 1) * n), i * width + col);
    }
    col += n;
  }
  return { gpu, host };
}

describe('matmul_nt_norm_qkv: WGSL against the host twin and the ops it replaces', () => {
  const gpu = useWebGPU();

  it('[OPS-matmul-nt-norm-qkv] random shapes (half M=1 decode, odd K) and offsets agree with the host twin within 1e-4·(1+|host|)', async () => {
    const rows = fc.oneof(fc.constant(1), arb.size(20));
    const eights = fc.integer({ min: 1, max: 12 }).map((v) => 8 * v);
    await fc.assert(
      fc.asyncProperty(rows, arb.size(80), eights, eights, arb.seed(), arb.pads(6), async (m, k, qRows, kvRows, seed, pads) => {
        const o = operands(m, k, qRows, kvRows, seed);
        const { gpu: g, host: h } = await runBoth(gpu(), matmulNTNormQkv, [o.x, o.norm, o.wq, o.wk, o.wv, o.qkv], { m, k, qRows, kvRows, eps: EPS }, pads);
        expectClose(g[5]!, h[5]!, TOL, `matmul_nt_norm_qkv m ${m} k ${k} q ${qRows} kv ${kvRows}`);
      }),
      fcParams(12),
    );
  });

  it('[OPS-matmul-nt-norm-qkv] stories260K decode shape (and M = 3): equal to rmsnorm + matmul_nt per matrix on the device within 1e-5; host twin equal to the composed host twins exactly', async () => {
    let seed = 21;
    for (const [m, k, qRows, kvRows] of [[1, 64, 64, 32], [3, 40, 16, 8]] as const) {
      const o = operands(m, k, qRows, kvRows, seed);
      const fusedRun = await runBoth(gpu(), matmulNTNormQkv, [o.x, o.norm, o.wq, o.wk, o.wv, o.qkv], { m, k, qRows, kvRows, eps: EPS });
      const want = await composed(gpu(), m, k, qRows, kvRows, seed++);
      expectClose(fusedRun.gpu[5]!, want.gpu, SAME_DEVICE, `matmul_nt_norm_qkv ${m}x${k} vs rmsnorm + matmul_nt`);
      expect(Array.from(fusedRun.host[5]!)).toEqual(Array.from(want.host));
    }
  });

  it('[OPS-check] matmul_nt_norm_qkv rejects widths that are not multiples of 8, a norm of another length and wrong dtypes with EINVAL', async () => {
    const p = gpu();
    const x = await zeros(p, 'f32', [1, 3]);
    const norm = await zeros(p, 'f32', [3]);
    const norm4 = await zeros(p, 'f32', [4]);
    const w8 = await zeros(p, 'f32', [8, 3]);
    const w4 = await zeros(p, 'f32', [4, 3]);
    const qkv = await zeros(p, 'f32', [1, 24]);
    const qkv12 = await zeros(p, 'f32', [1, 12]);
    const ints = await zeros(p, 'u32', [1, 24]);
    try {
      const ok = { m: 1, k: 3, qRows: 8, kvRows: 8, eps: EPS };
      matmulNTNormQkv.check([x, norm, w8, w8, w8, qkv].map(operandOf), ok);
      expectCode(() => matmulNTNormQkv.check([x, norm, w4, w4, w4, qkv12].map(operandOf), { ...ok, qRows: 4, kvRows: 4 }), 'EINVAL', 'bad-param');
      expectCode(() => matmulNTNormQkv.check([x, norm4, w8, w8, w8, qkv].map(operandOf), ok), 'EINVAL', 'shape-mismatch');
      expectCode(() => matmulNTNormQkv.check([x, norm, w8, w8, w8, ints].map(operandOf), ok), 'EINVAL', 'dtype-mismatch');
    } finally {
      for (const t of [x, norm, norm4, w8, w4, qkv, qkv12, ints]) t.dispose();
    }
  });
});

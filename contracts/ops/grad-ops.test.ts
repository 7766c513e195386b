// Op suite: the backward kernels (src/submit/ops/grad-*.ts, shaders/*_grad*.wgsl).
// Plan, per rule: (1) finite differences — on the host twin, with seeded inputs and a seeded output
// gradient R, the rule's gradient of L = sum(R · forward(inputs)) equals the central difference
// (L(x + h) - L(x - h)) / (2h) of the forward op's own host twin at 6 seeded entries of every input,
// h = 2^-7 (exact in f32), within REL·(|fd| + |rule|)/2 + ABS, the bound stated per op below (f32
// forward outputs and O(h^2) truncation); (2) host vs WebGPU — the WGSL kernel equals the host twin on
// seeded shapes (sizes off the tile and workgroup edges, operands at non-zero offsets with canaries),
// within 1e-4·(1 + |host|) unless stated; (3) controls where a property alone could hide a bug: a
// repeated token's embedding gradient is the sum of its rows; the accumulate flag adds; AdamW's first
// step is -lr·sign(g) (plus decay); check() rejections. softmax_grad is the standalone softmax rule
// (the llama step's softmaxes live inside attention_grad_q/kv and cross_entropy_grad).
import { describe, expect, it } from 'vitest';
import {
  adamwStep, attention, attentionGradKV, attentionGradQ, crossEntropyGrad, checkTargets, embeddingGrad, gather, matmul, matmulNT, matmulTNGrad,
  rmsnorm, rmsnormGradW, rmsnormGradX, rope, ropeGrad, siluMul, siluMulGrad, softmax, softmaxGrad,
} from '../../src/submit/ops/index.js';
import { expectCode } from '../support/expect-error.js';
import { operandOf } from '../support/run-op.js';
import { expectClose, randomF32, rng, runBoth, useWebGPU } from './harness.js';
import { zeros } from '../../src/index.js';

const H = 2 ** -7;
const PROBES = 6;
const GPU_TOL = { abs: 1e-4, rel: 1e-4 };

/** sum(R · y) in f64. */
function dotAll(r: Float32Array, y: Float32Array): number {
  let s = 0;
  for (let i = 0; i < y.length; i++) s += r[i]! * y[i]!;
  return s;
}

interface FdBound {
  readonly rel: number;
  readonly abs: number;
}

/**
 * Central differences of `loss` (which reads `inputs` as they are) at PROBES seeded entries of every
 * input, against the rule's `grads` (same order), within the bound.
 */
function expectFd(label: string, seed: number, inputs: Float32Array[], grads: Float32Array[], loss: () => number, bound: FdBound): void {
  const r = rng(seed);
  inputs.forEach((x, i) => {
    for (let probe = 0; probe < PROBES; probe++) {
      const e = Math.floor(r() * x.length);
      const saved = x[e]!;
      x[e] = saved + H;
      const up = x[e]!;
      const lp = loss();
      x[e] = saved - H;
      const down = x[e]!;
      const lm = loss();
      x[e] = saved;
      const fd = (lp - lm) / (up - down);
      const g = grads[i]![e]!;
      const err = Math.abs(fd - g);
      if (!(err <= bound.rel * (Math.abs(fd) + Math.abs(g)) / 2 + bound.abs)) {
        expect.fail(`${label}: input ${i} element ${e}: rule ${g}, finite difference ${fd}`);
      }
    }
  });
}

describe('backward kernels: finite differences and host vs WebGPU', () => {
  const gpu = useWebGPU();

  it('[OPS-grad-matmul] dx = dy·W (matmul) and dW = dyᵀ·x (matmul_tn_grad) match finite differences of matmul_nt within 1e-3 rel + 1e-4', () => {
    for (const [m, n, k, seed] of [[3, 5, 7, 11], [1, 9, 4, 12], [6, 2, 13, 13]] as const) {
      const x = randomF32(seed, m * k);
      const w = randomF32(seed + 1, n * k);
      const r = randomF32(seed + 2, m * n);
      const dx = new Float32Array(m * k);
      const dw = new Float32Array(n * k);
      matmul.host({ m, n: k, k: n }, [r, w, dx]);
      matmulTNGrad.host({ m, n, k, accumulate: false }, [r, x, dw]);
      const loss = () => {
        const out = new Float32Array(m * n);
        matmulNT.host({ m, n, k }, [x, w, out]);
        return dotAll(r, out);
      };
      expectFd(`linear ${m}x${k}·${n}x${k}ᵀ`, seed, [x, w], [dx, dw], loss, { rel: 1e-3, abs: 1e-4 });
    }
  });

  it('[OPS-grad-matmul] matmul_tn_grad: WGSL equals the host twin (edges of the 4x4 blocks and 16x4 workgroups), and accumulate adds', async () => {
    for (const [m, n, k, seed, acc] of [[5, 17, 67, 21, false], [32, 64, 172, 22, true], [1, 3, 2, 23, true]] as const) {
      const dy = randomF32(seed, m * n);
      const x = randomF32(seed + 1, m * k);
      const init = randomF32(seed + 2, n * k);
      const { gpu: g, host: h } = await runBoth(gpu(), matmulTNGrad, [
        { dtype: 'f32', shape: [m, n], data: dy },
        { dtype: 'f32', shape: [m, k], data: x },
        { dtype: 'f32', shape: [n, k], data: init },
      ], { m, n, k, accumulate: acc }, [1, 3, 2]);
      expectClose(g[2]!, h[2]!, GPU_TOL, `matmul_tn_grad ${m} ${n} ${k}`);
      const fresh = new Float32Array(n * k);
      matmulTNGrad.host({ m, n, k, accumulate: false }, [dy, x, fresh]);
      expectClose(h[2]!, acc ? fresh.map((v, i) => v + init[i]!) : fresh, { abs: 1e-6, rel: 1e-6 }, 'accumulate flag');
    }
  });

  it('[OPS-grad-rmsnorm] dx (rmsnorm_grad_x) and dw (rmsnorm_grad_w) match finite differences of rmsnorm within 1e-3 rel + 1e-4', () => {
    for (const [rows, cols, seed] of [[3, 8, 31], [1, 17, 32], [4, 5, 33]] as const) {
      const x = randomF32(seed, rows * cols);
      const w = randomF32(seed + 1, cols, -2, 2);
      const r = randomF32(seed + 2, rows * cols);
      const dx = new Float32Array(rows * cols);
      const rstd = new Float32Array(rows);
      const dw = new Float32Array(cols);
      rmsnormGradX.host({ rows, cols, eps: 1e-5, accumulate: false }, [x, w, r, dx, rstd]);
      rmsnormGradW.host({ rows, cols, accumulate: false }, [x, r, rstd, dw]);
      const loss = () => {
        const out = new Float32Array(rows * cols);
        rmsnorm.host({ rows, cols, eps: 1e-5 }, [x, w, out]);
        return dotAll(r, out);
      };
      expectFd(`rmsnorm [${rows}, ${cols}]`, seed, [x, w], [dx, dw], loss, { rel: 1e-3, abs: 1e-4 });
    }
  });

  it('[OPS-grad-rmsnorm] WGSL equals the host twin for both kernels (accumulating dx, rows past one workgroup)', async () => {
    for (const [rows, cols, seed] of [[70, 9, 41], [3, 64, 42]] as const) {
      const x = randomF32(seed, rows * cols);
      const w = randomF32(seed + 1, cols);
      const dy = randomF32(seed + 2, rows * cols);
      const { gpu: g, host: h } = await runBoth(gpu(), rmsnormGradX, [
        { dtype: 'f32', shape: [rows, cols], data: x },
        { dtype: 'f32', shape: [cols], data: w },
        { dtype: 'f32', shape: [rows, cols], data: dy },
        { dtype: 'f32', shape: [rows, cols], data: randomF32(seed + 3, rows * cols) },
        { dtype: 'f32', shape: [rows], data: new Float32Array(rows) },
      ], { rows, cols, eps: 1e-5, accumulate: true }, [2, 0, 1, 5, 3]);
      expectClose(g[3]!, h[3]!, GPU_TOL, 'rmsnorm_grad_x dx');
      expectClose(g[4]!, h[4]!, GPU_TOL, 'rmsnorm_grad_x rstd');
      const { gpu: gw, host: hw } = await runBoth(gpu(), rmsnormGradW, [
        { dtype: 'f32', shape: [rows, cols], data: x },
        { dtype: 'f32', shape: [rows, cols], data: dy },
        { dtype: 'f32', shape: [rows], data: h[4]! as Float32Array },
        { dtype: 'f32', shape: [cols], data: new Float32Array(cols) },
      ], { rows, cols, accumulate: false }, [1, 2, 3, 4]);
      expectClose(gw[3]!, hw[3]!, GPU_TOL, 'rmsnorm_grad_w dw');
    }
  });

  it('[OPS-grad-rope] rope_grad matches finite differences of rope within 1e-3 rel + 1e-4 (both styles), and WGSL equals the host within 4e-6 absolute', async () => {
    for (const [count, heads, headDim, pos0, style, seed] of [[3, 2, 8, 0, 'normal', 51], [2, 3, 4, 17, 'neox', 52]] as const) {
      const p = { count, heads, headDim, pos0, theta: 10000, style };
      const x = randomF32(seed, count * heads * headDim);
      const r = randomF32(seed + 1, x.length);
      const dx = r.slice();
      ropeGrad.host(p, [dx]);
      const loss = () => {
        const y = x.slice();
        rope.host(p, [y]);
        return dotAll(r, y);
      };
      expectFd(`rope ${style}`, seed, [x], [dx], loss, { rel: 1e-3, abs: 1e-4 });
      const { gpu: g, host: h } = await runBoth(gpu(), ropeGrad, [{ dtype: 'f32', shape: [count, heads * headDim], data: r }], p, [3]);
      expectClose(g[0]!, h[0]!, { abs: 4e-6, rel: 0 }, `rope_grad ${style}`);
    }
  });

  it('[OPS-grad-attention] causal GQA backward (dq, dk, dv; softmax backward inside) matches finite differences of attention within 2e-3 rel + 2e-4', () => {
    for (const [count, heads, kvHeads, headDim, seed] of [[4, 4, 2, 4, 61], [3, 2, 2, 8, 62]] as const) {
      const qW = heads * headDim;
      const kvW = kvHeads * headDim;
      const q = randomF32(seed, count * qW, -2, 2);
      const k = randomF32(seed + 1, count * kvW, -2, 2);
      const v = randomF32(seed + 2, count * kvW);
      const r = randomF32(seed + 3, count * qW);
      const forward = () => {
        const out = new Float32Array(count * qW);
        attention.host({ count, heads, kvHeads, headDim, maxSeq: count, pos0: 0 }, [q, k, v, out]);
        return out;
      };
      const p = { count, heads, kvHeads, headDim };
      const dq = new Float32Array(count * qW);
      const dk = new Float32Array(count * kvW);
      const dv = new Float32Array(count * kvW);
      const stats = new Float32Array(count * heads * 2);
      attentionGradQ.host(p, [q, k, v, forward(), r, dq, stats]);
      attentionGradKV.host(p, [q, k, v, r, stats, dk, dv]);
      expectFd(`attention ${count}x${heads}/${kvHeads}x${headDim}`, seed, [q, k, v], [dq, dk, dv], () => dotAll(r, forward()), { rel: 2e-3, abs: 2e-4 });
    }
  });

  it('[OPS-grad-attention] WGSL equals the host twin for both kernels (grouped heads, rows past one workgroup)', async () => {
    for (const [count, heads, kvHeads, headDim, seed] of [[9, 8, 4, 8, 71], [5, 2, 1, 12, 72]] as const) {
      const qW = heads * headDim;
      const kvW = kvHeads * headDim;
      const q = randomF32(seed, count * qW, -2, 2);
      const k = randomF32(seed + 1, count * kvW, -2, 2);
      const v = randomF32(seed + 2, count * kvW);
      const dout = randomF32(seed + 3, count * qW);
      const out = new Float32Array(count * qW);
      attention.host({ count, heads, kvHeads, headDim, maxSeq: count, pos0: 0 }, [q, k, v, out]);
      const p = { count, heads, kvHeads, headDim };
      const f = (shape: number[], data: Float32Array) => ({ dtype: 'f32' as const, shape, data });
      const { gpu: g, host: h } = await runBoth(gpu(), attentionGradQ, [
        f([count, qW], q), f([count, kvW], k), f([count, kvW], v), f([count, qW], out), f([count, qW], dout),
        f([count, qW], new Float32Array(count * qW)), f([count, heads, 2], new Float32Array(count * heads * 2)),
      ], p, [1, 2, 3, 0, 4, 5, 6]);
      expectClose(g[5]!, h[5]!, GPU_TOL, 'attention_grad_q dq');
      expectClose(g[6]!, h[6]!, GPU_TOL, 'attention_grad_q stats');
      const { gpu: g2, host: h2 } = await runBoth(gpu(), attentionGradKV, [
        f([count, qW], q), f([count, kvW], k), f([count, kvW], v), f([count, qW], dout), f([count, heads, 2], h[6]! as Float32Array),
        f([count, kvW], new Float32Array(count * kvW)), f([count, kvW], new Float32Array(count * kvW)),
      ], p, [3, 1, 0, 2, 5, 4, 6]);
      expectClose(g2[5]!, h2[5]!, GPU_TOL, 'attention_grad_kv dk');
      expectClose(g2[6]!, h2[6]!, GPU_TOL, 'attention_grad_kv dv');
    }
  });

  it('[OPS-grad-silu-mul] silu_mul_grad matches finite differences of silu_mul within 1e-3 rel + 1e-4, and WGSL equals the host', async () => {
    const n = 77;
    const a = randomF32(81, n, -6, 6);
    const b = randomF32(82, n, -2, 2);
    const r = randomF32(83, n);
    const da = new Float32Array(n);
    const db = new Float32Array(n);
    siluMulGrad.host({ n }, [a, b, r, da, db]);
    expectFd('silu_mul', 81, [a, b], [da, db], () => {
      const out = new Float32Array(n);
      siluMul.host({ n }, [a, b, out]);
      return dotAll(r, out);
    }, { rel: 1e-3, abs: 1e-4 });
    const f = (data: Float32Array) => ({ dtype: 'f32' as const, shape: [7, 11], data });
    const { gpu: g, host: h } = await runBoth(gpu(), siluMulGrad, [f(a), f(b), f(r), f(new Float32Array(n)), f(new Float32Array(n))], { n }, [1, 0, 2, 3, 4]);
    expectClose(g[3]!, h[3]!, GPU_TOL, 'silu_mul_grad da');
    expectClose(g[4]!, h[4]!, GPU_TOL, 'silu_mul_grad db');
  });

  it('[OPS-grad-softmax] softmax_grad matches finite differences of softmax within 1e-3 rel + 1e-4, and WGSL equals the host (rows past one workgroup)', async () => {
    for (const [rows, cols, seed] of [[3, 9, 121], [70, 5, 122], [1, 1, 123]] as const) {
      const x = randomF32(seed, rows * cols, -3, 3);
      const r = randomF32(seed + 1, rows * cols);
      const forward = () => {
        const y = new Float32Array(rows * cols);
        softmax.host({ rows, cols }, [x, y]);
        return y;
      };
      const dx = new Float32Array(rows * cols);
      softmaxGrad.host({ rows, cols }, [forward(), r, dx]);
      expectFd(`softmax [${rows}, ${cols}]`, seed, [x], [dx], () => dotAll(r, forward()), { rel: 1e-3, abs: 1e-4 });
      const f = (data: Float32Array) => ({ dtype: 'f32' as const, shape: [rows, cols], data });
      const { gpu: g, host: h } = await runBoth(gpu(), softmaxGrad, [f(forward()), f(r), f(new Float32Array(rows * cols))], { rows, cols }, [2, 1, 3]);
      expectClose(g[2]!, h[2]!, GPU_TOL, `softmax_grad [${rows}, ${cols}]`);
    }
  });

  it('[OPS-grad-embedding] embedding_grad matches finite differences of gather (exact: the loss is linear in the table), and WGSL equals the host', async () => {
    const vocab = 13;
    const dim = 6;
    const ids = Uint32Array.from([3, 7, 3, 0, 12, 3, 7]);
    const count = ids.length;
    const table = randomF32(91, vocab * dim);
    const r = randomF32(92, count * dim);
    const dtable = new Float32Array(vocab * dim);
    embeddingGrad.host({ count, vocab, dim, accumulate: false }, [ids, r, dtable]);
    expectFd('embedding', 91, [table], [dtable], () => {
      const out = new Float32Array(count * dim);
      gather.host({ count, vocab, dim }, [ids, table, out]);
      return dotAll(r, out);
    }, { rel: 1e-4, abs: 1e-5 });
    const init = randomF32(93, vocab * dim);
    const { gpu: g, host: h } = await runBoth(gpu(), embeddingGrad, [
      { dtype: 'u32', shape: [count], data: ids },
      { dtype: 'f32', shape: [count, dim], data: r },
      { dtype: 'f32', shape: [vocab, dim], data: init },
    ], { count, vocab, dim, accumulate: true }, [2, 1, 3]);
    expectClose(g[2]!, h[2]!, { abs: 1e-6, rel: 1e-6 }, 'embedding_grad');
  });

  it('[OPS-grad-embedding] control: a token repeated three times gets the sum of its three rows on host and GPU; untouched rows stay zero', async () => {
    const ids = Uint32Array.from([2, 0, 2, 2]);
    const dout = Float32Array.from([1, 10, 100, 1000, 2, 20, 4, 40]);
    const want = [100, 1000, 0, 0, 7, 70];
    const { gpu: g, host: h } = await runBoth(gpu(), embeddingGrad, [
      { dtype: 'u32', shape: [4], data: ids },
      { dtype: 'f32', shape: [4, 2], data: dout },
      { dtype: 'f32', shape: [3, 2], data: new Float32Array(6) },
    ], { count: 4, vocab: 3, dim: 2, accumulate: false });
    expect(Array.from(h[2]!)).toEqual(want);
    expect(Array.from(g[2]!)).toEqual(want);
  });

  it('[OPS-grad-cross-entropy] dlogits matches finite differences of the fused loss within 1e-3 rel + 1e-4, and WGSL equals the host (rows of 1..130 classes)', async () => {
    for (const [rows, cols, seed] of [[3, 11, 101], [2, 130, 102], [5, 1, 103]] as const) {
      const logits = randomF32(seed, rows * cols, -4, 4);
      const targets = Uint32Array.from({ length: rows }, (_, i) => (i * 7 + seed) % cols);
      const scale = 1 / rows;
      const dlogits = new Float32Array(rows * cols);
      const loss = new Float32Array(rows);
      crossEntropyGrad.host({ rows, cols, scale }, [logits, targets, dlogits, loss]);
      expectFd(`cross-entropy [${rows}, ${cols}]`, seed, [logits], [dlogits], () => {
        const l = new Float32Array(rows);
        crossEntropyGrad.host({ rows, cols, scale }, [logits, targets, new Float32Array(rows * cols), l]);
        return scale * l.reduce((s, v) => s + v, 0);
      }, { rel: 1e-3, abs: 1e-4 });
      const { gpu: g, host: h } = await runBoth(gpu(), crossEntropyGrad, [
        { dtype: 'f32', shape: [rows, cols], data: logits },
        { dtype: 'u32', shape: [rows], data: targets },
        { dtype: 'f32', shape: [rows, cols], data: new Float32Array(rows * cols) },
        { dtype: 'f32', shape: [rows], data: new Float32Array(rows) },
      ], { rows, cols, scale }, [1, 2, 0, 3]);
      expectClose(g[2]!, h[2]!, { abs: 1e-6, rel: 1e-4 }, 'cross_entropy_grad dlogits');
      expectClose(g[3]!, h[3]!, GPU_TOL, 'cross_entropy_grad loss');
    }
  });

  it('[OPS-grad-adamw] control: the first AdamW step moves each weight by -lr·sign(g) minus lr·wd·w on host and GPU; later steps agree', async () => {
    const n = 70;
    const param = randomF32(111, n);
    const grad = randomF32(112, n);
    const p1 = { n, lr: 0.01, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0.1, step: 1 };
    const f = (data: Float32Array) => ({ dtype: 'f32' as const, shape: [n], data });
    const { gpu: g, host: h } = await runBoth(gpu(), adamwStep, [f(param), f(grad), f(new Float32Array(n)), f(new Float32Array(n))], p1, [1, 2, 3, 0]);
    const want = param.map((w, i) => w - 0.01 * (Math.sign(grad[i]!) + 0.1 * w));
    expectClose(h[0]!, want, { abs: 1e-6, rel: 1e-5 }, 'adamw host step 1');
    expectClose(g[0]!, h[0]!, { abs: 1e-6, rel: 1e-5 }, 'adamw gpu step 1');
    const { gpu: g2, host: h2 } = await runBoth(gpu(), adamwStep, [f(h[0]! as Float32Array), f(randomF32(113, n)), f(h[2]! as Float32Array), f(h[3]! as Float32Array)], { ...p1, step: 2 });
    for (const i of [0, 2, 3]) expectClose(g2[i]!, h2[i]!, { abs: 1e-6, rel: 1e-5 }, `adamw step 2 operand ${i}`);
  });

  it('[OPS-grad-check] backward kernels reject bad shapes, head sizes and targets with EINVAL before anything runs', async () => {
    const p = gpu();
    const a = await zeros(p, 'f32', [2, 3]);
    const b = await zeros(p, 'f32', [2, 4]);
    const w = await zeros(p, 'f32', [4, 3]);
    const w2 = await zeros(p, 'f32', [3, 4]);
    try {
      expect(() => matmulTNGrad.check([b, a, w].map(operandOf), { m: 2, n: 4, k: 3, accumulate: false })).not.toThrow();
      expectCode(() => matmulTNGrad.check([b, a, w2].map(operandOf), { m: 2, n: 4, k: 3, accumulate: false }), 'EINVAL', 'shape-mismatch');
      expectCode(() => attentionGradQ.check([], { count: 1, heads: 1, kvHeads: 1, headDim: 4 }), 'EINVAL', 'operand-count');
      const q = await zeros(p, 'f32', [1, 6]);
      try {
        const seven = [q, q, q, q, q, q, q].map(operandOf);
        expectCode(() => attentionGradQ.check(seven, { count: 1, heads: 1, kvHeads: 1, headDim: 6 }), 'EINVAL', 'bad-param');
      } finally {
        q.dispose();
      }
      expectCode(() => checkTargets([0, 3, 5], 5), 'EINVAL', 'out-of-range');
      expect(() => checkTargets([0, 4], 5)).not.toThrow();
    } finally {
      for (const t of [a, b, w, w2]) t.dispose();
    }
  });
});

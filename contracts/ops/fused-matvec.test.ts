// Op suite: the fused matrix-vector forms of shaders/fused_matvec.wesl (fused_norm_matmul, fused_norm_glu,
// fused_matmul_add) against the unfused composition they replace, built here from the op library's host
// twins: rmsnorm -> qmatmul (-> qmatmul -> silu_mul) (-> add_inplace).
// Plan, for every reduction variant this device runs (plain always; subgroups where the device has it):
// (1) property: a random weight kind (glu: a random kind for gate and another for up), M in 1..6 (half
//     the runs 1, the decode shape; 2, 3, 4, 5 reach TM = 2 and 4 with M not a multiple of TM), N in 1..17
//     (odd: a workgroup's second row missing), K of one or two blocks, eps, the output placed at a column
//     of wider rows (outCol, outStride) over canary values, element offsets with canaries: WGSL within
//     2e-5·Σ|xn·w| + 1e-6 of the composition per dot product (propagated through SiLU for glu), columns
//     outside the placement untouched, the host twin bit-identical to the composition;
// (2) split parts: a matrix cut into two row parts, each run as its own dispatch writing its columns
//     (outCol = the part's first row), gives bit-identical output on the GPU to the whole matrix in one
//     dispatch (the split-binding guarantee of the forward rests on it), for all three forms;
// (3) every packed kind once as W and as gate and up (the property draws kinds at random); (4) folded
//     dispatches; (5) a control with a known answer; (6) check() rejections.
import { describe, expect, it } from 'vitest';
import { zeros } from '../../src/index.js';
import { FUSED_MATVEC, PACKED_KINDS, fusedMatvecTiling, qmatmulVariant, siluMul } from '../../src/submit/ops/index.js';
import type { PackedKind, QMatmulVariant } from '../../src/submit/ops/index.js';
import { expectCode } from '../support/expect-error.js';
import { fc, fcParams } from '../support/fc.js';
import { operandOf } from '../support/run-op.js';
import { ABS, REL_L1, commonK, expectSameBits, expectWithin, l1, normRows, packedWeights, project } from './fused-support.js';
import type { Weights } from './fused-support.js';
import { arb, foldingLimits, randomF32, runBoth, useWebGPU } from './harness.js';
import { inBrowser } from '../support/providers.js';

/** What an untouched output element holds. */
const CANARY = 7.25;
const EPS = 1e-5;
/** f32 rounding of the final add (residual) or of SiLU's exp and quotient, relative to the result. */
const ROUND = 2e-6;
/** Tests that compile a pipeline per weight kind (SwiftShader compiles each in about a second). */
const SLOW = 240_000;
/**
 * Property runs: the node lane runs the same WGSL on the same SwiftShader (Dawn) with 10 cases; the browser
 * lane runs the first 3 of the same seeded sequence (Chromium's path checked; every kind still runs there in
 * the every-packed-kind test).
 */
const RUNS = inBrowser ? 3 : 10;
/** Largest |silu'(x)| (at x ≈ 2.4). */
const SILU_SLOPE = 1.1;

type Provider = ReturnType<ReturnType<typeof useWebGPU>>;

interface Case {
  readonly kinds: readonly PackedKind[];
  readonly m: number;
  readonly n: number;
  readonly blocks: number;
  /** Elements short of a whole 32 for float-only cases. */
  readonly tail: number;
  readonly col: number;
  readonly spare: number;
  readonly eps: number;
  readonly seed: number;
  readonly pads: readonly number[];
}

const caseArb = (count: number) =>
  fc.record({
    kinds: fc.array(fc.constantFrom(...PACKED_KINDS), { minLength: count, maxLength: count }),
    m: fc.oneof(fc.constant(1), fc.integer({ min: 1, max: 6 })),
    n: arb.size(17),
    blocks: fc.integer({ min: 1, max: 2 }),
    tail: fc.nat(3),
    col: fc.nat(3),
    spare: fc.nat(2),
    eps: fc.oneof(fc.constant(EPS), fc.double({ min: 1e-6, max: 1e-2, noNaN: true })),
    seed: arb.seed(),
    pads: arb.pads(5),
  });

function operand(w: Weights) {
  return { dtype: w.dtype, shape: w.shape, data: w.packed };
}

/** Output rows [m, stride] filled with the canary, with `y` [m, n] placed at column col (or added to them). */
function placed(y: Float32Array | undefined, m: number, n: number, stride: number, col: number, base?: Float32Array): Float32Array {
  const out = base === undefined ? new Float32Array(m * stride).fill(CANARY) : base.slice();
  if (y === undefined) return out;
  for (let i = 0; i < m; i++) for (let j = 0; j < n; j++) out[i * stride + col + j] = base === undefined ? y[i * n + j]! : Math.fround(base[i * stride + col + j]! + y[i * n + j]!);
  return out;
}

/** A bound per output element: `dot` [m, n] at the placement, 0 elsewhere (canaries must be exact). */
function placedBound(dot: Float64Array, m: number, n: number, stride: number, col: number): Float64Array {
  const out = new Float64Array(m * stride);
  for (let i = 0; i < m; i++) for (let j = 0; j < n; j++) out[i * stride + col + j] = dot[i * n + j]!;
  return out;
}

function skipUnless(p: Provider, variant: QMatmulVariant, ctx: { skip(): void }): boolean {
  if (variant === 'subgroups' && qmatmulVariant(p) !== 'subgroups') {
    ctx.skip();
    return true;
  }
  return false;
}

async function normMatmulCase(p: Provider, variant: QMatmulVariant, c: Case, fold = false): Promise<void> {
  const op = FUSED_MATVEC.normMatmul[variant];
  const kind = c.kinds[0]!;
  const k = commonK([kind], c.blocks, c.tail);
  const stride = c.col + c.n + c.spare;
  const x = randomF32(c.seed, c.m * k, -2, 2);
  const norm = randomF32(c.seed + 1, k, 0.5, 1.5);
  const w = packedWeights(kind, c.n, k, c.seed + 2);
  const params = { m: c.m, n: c.n, k, kind, eps: c.eps, outStride: stride, outCol: c.col };
  const { gpu, host } = await runBoth(p, op, [
    { dtype: 'f32', shape: [c.m, k], data: x },
    { dtype: 'f32', shape: [k], data: norm },
    operand(w),
    { dtype: 'f32', shape: [c.m, stride], data: placed(undefined, c.m, c.n, stride, c.col) },
  ], params, c.pads, foldingLimits(op, params, fold));
  const xn = normRows(x, norm, c.m, k, c.eps);
  const want = placed(project(w, xn, c.m), c.m, c.n, stride, c.col);
  const label = `${op.name} ${kind} M=${c.m} N=${c.n} K=${k} col=${c.col}/${stride}`;
  expectSameBits(host[3]!, want, `${label} host twin`);
  const bound = placedBound(l1(w, xn, c.m).map((v) => REL_L1 * v + ABS), c.m, c.n, stride, c.col);
  expectWithin(gpu[3]!, want, bound, label);
}

async function normGluCase(p: Provider, variant: QMatmulVariant, c: Case, fold = false): Promise<void> {
  const op = FUSED_MATVEC.normGlu[variant];
  const [gateKind, upKind] = c.kinds as [PackedKind, PackedKind];
  const k = commonK([gateKind, upKind], c.blocks, c.tail);
  const stride = c.col + c.n + c.spare;
  const x = randomF32(c.seed, c.m * k, -2, 2);
  const norm = randomF32(c.seed + 1, k, 0.5, 1.5);
  const gate = packedWeights(gateKind, c.n, k, c.seed + 2);
  const up = packedWeights(upKind, c.n, k, c.seed + 3);
  const params = { m: c.m, n: c.n, k, gateKind, upKind, eps: c.eps, outStride: stride, outCol: c.col };
  const { gpu, host } = await runBoth(p, op, [
    { dtype: 'f32', shape: [c.m, k], data: x },
    { dtype: 'f32', shape: [k], data: norm },
    operand(gate),
    operand(up),
    { dtype: 'f32', shape: [c.m, stride], data: placed(undefined, c.m, c.n, stride, c.col) },
  ], params, c.pads, foldingLimits(op, params, fold));
  const xn = normRows(x, norm, c.m, k, c.eps);
  const g = project(gate, xn, c.m);
  const u = project(up, xn, c.m);
  const h = new Float32Array(c.m * c.n);
  siluMul.host({ n: c.m * c.n }, [g, u, h]);
  const want = placed(h, c.m, c.n, stride, c.col);
  const label = `${op.name} ${gateKind}/${upKind} M=${c.m} N=${c.n} K=${k} col=${c.col}/${stride}`;
  expectSameBits(host[4]!, want, `${label} host twin`);
  const eg = l1(gate, xn, c.m).map((v) => REL_L1 * v + ABS);
  const eu = l1(up, xn, c.m).map((v) => REL_L1 * v + ABS);
  const dot = eg.map((e, i) => {
    const silu = g[i]! / (1 + Math.exp(-g[i]!));
    return SILU_SLOPE * e * (Math.abs(u[i]!) + eu[i]!) + (Math.abs(silu) + SILU_SLOPE * e) * eu[i]! + ROUND * Math.abs(h[i]!) + ABS;
  });
  expectWithin(gpu[4]!, want, placedBound(dot, c.m, c.n, stride, c.col), label);
}

async function matmulAddCase(p: Provider, variant: QMatmulVariant, c: Case, fold = false): Promise<void> {
  const op = FUSED_MATVEC.matmulAdd[variant];
  const kind = c.kinds[0]!;
  const k = commonK([kind], c.blocks, c.tail);
  const stride = c.col + c.n + c.spare;
  const x = randomF32(c.seed, c.m * k, -2, 2);
  const w = packedWeights(kind, c.n, k, c.seed + 2);
  const residual = randomF32(c.seed + 3, c.m * stride, -4, 4);
  const params = { m: c.m, n: c.n, k, kind, outStride: stride, outCol: c.col };
  const { gpu, host } = await runBoth(p, op, [
    { dtype: 'f32', shape: [c.m, k], data: x },
    operand(w),
    { dtype: 'f32', shape: [c.m, stride], data: residual },
  ], params, c.pads, foldingLimits(op, params, fold));
  const want = placed(project(w, x, c.m), c.m, c.n, stride, c.col, residual);
  const label = `${op.name} ${kind} M=${c.m} N=${c.n} K=${k} col=${c.col}/${stride}`;
  expectSameBits(host[2]!, want, `${label} host twin`);
  const bound = placedBound(l1(w, x, c.m).map((v) => REL_L1 * v + ABS), c.m, c.n, stride, c.col).map((b, i) => b + ROUND * Math.abs(want[i]!));
  expectWithin(gpu[2]!, want, bound, label);
}

describe('fused matvec forms: WGSL against the unfused composition', () => {
  const gpu = useWebGPU();

  for (const variant of ['plain', 'subgroups'] as const) {
    it(`[OPS-fused-norm-matmul] ${variant}: rmsnorm folded into a matmul of any kind equals rmsnorm -> qmatmul within 2e-5·Σ|xn·w|`, async (ctx) => {
      if (skipUnless(gpu(), variant, ctx)) return;
      await fc.assert(fc.asyncProperty(caseArb(1), (c) => normMatmulCase(gpu(), variant, c)), fcParams(RUNS));
    });

    it(`[OPS-fused-norm-glu] ${variant}: rmsnorm, gate/up of any two kinds and SiLU in one pass equal rmsnorm -> qmatmul x2 -> silu_mul`, async (ctx) => {
      if (skipUnless(gpu(), variant, ctx)) return;
      await fc.assert(fc.asyncProperty(caseArb(2), (c) => normGluCase(gpu(), variant, c)), fcParams(RUNS));
    });

    it(`[OPS-fused-matmul-add] ${variant}: a matmul of any kind added into the residual rows equals qmatmul -> add_inplace`, async (ctx) => {
      if (skipUnless(gpu(), variant, ctx)) return;
      await fc.assert(fc.asyncProperty(caseArb(1), (c) => matmulAddCase(gpu(), variant, c)), fcParams(RUNS));
    });
  }

  it('[OPS-fused-norm-matmul][OPS-fused-norm-glu] every packed kind (each once as W, as gate and as up; decode and M = 3)', async () => {
    const p = gpu();
    const variant = qmatmulVariant(p);
    let seed = 1000;
    for (const [i, kind] of PACKED_KINDS.entries()) {
      const other = PACKED_KINDS[(i + 3) % PACKED_KINDS.length]!;
      const c = { kinds: [kind, other], m: 1 + 2 * (i % 2), n: 5, blocks: 1, tail: 1, col: 1, spare: 0, eps: EPS, seed: seed++, pads: [0, 1, 2, 1, 0] };
      await normMatmulCase(p, variant, c);
      await normGluCase(p, variant, { ...c, kinds: [other, kind] });
    }
  }, SLOW);

  it('[OPS-fused-norm-matmul][OPS-fused-norm-glu][OPS-fused-matmul-add] every tiling (M = 1..5: TM 1, 2, 4) and folded dispatches', async () => {
    const p = gpu();
    const variant = qmatmulVariant(p);
    expect(new Set([1, 2, 3, 4, 5].map((m) => fusedMatvecTiling(m, 64).TM))).toEqual(new Set([1, 2, 4]));
    let seed = 11;
    for (const m of [2, 5]) {
      const c = { kinds: ['Q4_K', 'Q6_K'] as const, m, n: 7, blocks: 1, tail: 0, col: 1, spare: 1, eps: EPS, seed: seed++, pads: [1, 2, 3, 0, 1] };
      await normMatmulCase(p, variant, c, true);
      await normGluCase(p, variant, c, true);
      await matmulAddCase(p, variant, c, true);
    }
  });

  it('[OPS-fused-parts] a matrix cut into two row parts, one dispatch per part at its column, equals the whole matrix bit for bit on the GPU', async () => {
    const p = gpu();
    const variant = qmatmulVariant(p);
    const cases: readonly [PackedKind, PackedKind, number, number][] = [['F32', 'F32', 3, 9], ['Q4_K', 'Q6_K', 1, 11], ['Q8_0', 'Q5_1', 4, 6]];
    for (const [kindA, kindB, m, n] of cases) {
      const k = commonK([kindA, kindB], 1, 3);
      const x = randomF32(31, m * k, -2, 2);
      const norm = randomF32(32, k, 0.5, 1.5);
      const a = packedWeights(kindA, n, k, 33);
      const b = packedWeights(kindB, n, k, 34);
      const residual = randomF32(35, m * n, -1, 1);
      const first = Math.ceil(n / 2) + 1;
      const part = (w: Weights, lo: number, hi: number): Weights => {
        const words = w.shape[1];
        return { ...w, shape: [hi - lo, words], packed: w.packed.slice(lo * words, hi * words), rows: w.rows.slice(lo * k, hi * k) };
      };
      const xIn = { dtype: 'f32' as const, shape: [m, k], data: x };
      const normIn = { dtype: 'f32' as const, shape: [k], data: norm };
      const outOf = (data: Float32Array) => ({ dtype: 'f32' as const, shape: [m, n], data });
      // Whole, then part 0 into the whole's output rows, then part 1 into what part 0 left.
      const plainOp = FUSED_MATVEC.normMatmul[variant];
      const plainParams = (rows: number, col: number) => ({ m, n: rows, k, kind: kindA, eps: EPS, outStride: n, outCol: col });
      const whole = (await runBoth(p, plainOp, [xIn, normIn, operand(a), outOf(new Float32Array(m * n))], plainParams(n, 0))).gpu[3] as Float32Array;
      const half = (await runBoth(p, plainOp, [xIn, normIn, operand(part(a, 0, first)), outOf(new Float32Array(m * n))], plainParams(first, 0))).gpu[3] as Float32Array;
      const split = (await runBoth(p, plainOp, [xIn, normIn, operand(part(a, first, n)), outOf(half)], plainParams(n - first, first))).gpu[3]!;
      expectSameBits(split, whole, `fused_norm_matmul ${kindA} in parts`);

      const gluOp = FUSED_MATVEC.normGlu[variant];
      const gluParams = (rows: number, col: number) => ({ m, n: rows, k, gateKind: kindA, upKind: kindB, eps: EPS, outStride: n, outCol: col });
      const gluWhole = (await runBoth(p, gluOp, [xIn, normIn, operand(a), operand(b), outOf(new Float32Array(m * n))], gluParams(n, 0))).gpu[4] as Float32Array;
      const gluHalf = (await runBoth(p, gluOp, [xIn, normIn, operand(part(a, 0, first)), operand(part(b, 0, first)), outOf(new Float32Array(m * n))], gluParams(first, 0))).gpu[4] as Float32Array;
      const gluSplit = (await runBoth(p, gluOp, [xIn, normIn, operand(part(a, first, n)), operand(part(b, first, n)), outOf(gluHalf)], gluParams(n - first, first))).gpu[4]!;
      expectSameBits(gluSplit, gluWhole, `fused_norm_glu ${kindA}/${kindB} in parts`);

      const addOp = FUSED_MATVEC.matmulAdd[variant];
      const addParams = (rows: number, col: number) => ({ m, n: rows, k, kind: kindB, outStride: n, outCol: col });
      const addWhole = (await runBoth(p, addOp, [xIn, operand(b), outOf(residual)], addParams(n, 0))).gpu[2] as Float32Array;
      const addHalf = (await runBoth(p, addOp, [xIn, operand(part(b, 0, first)), outOf(residual)], addParams(first, 0))).gpu[2] as Float32Array;
      const addSplit = (await runBoth(p, addOp, [xIn, operand(part(b, first, n)), outOf(addHalf)], addParams(n - first, first))).gpu[2]!;
      expectSameBits(addSplit, addWhole, `fused_matmul_add ${kindB} in parts`);
    }
  });

  it('[OPS-fused-norm-matmul] control: a row of 3s and 4s through a unit norm and an identity F32 matrix gives the normalized row', async () => {
    const p = gpu();
    const k = 4;
    const x = Float32Array.of(3, 4, 3, 4);
    const identity = new Float32Array(16);
    for (let i = 0; i < 4; i++) identity[i * 5] = 1;
    const op = FUSED_MATVEC.normMatmul[qmatmulVariant(p)];
    const { gpu: g, host: h } = await runBoth(p, op, [
      { dtype: 'f32', shape: [1, k], data: x },
      { dtype: 'f32', shape: [k], data: Float32Array.of(1, 1, 2, -1) },
      { dtype: 'f32', shape: [4, 4], data: identity },
      { dtype: 'f32', shape: [1, 4], data: new Float32Array(4) },
    ], { m: 1, n: 4, k, kind: 'F32', eps: EPS });
    // mean square 12.5: out = w * x / sqrt(12.5 + eps).
    const d = Math.sqrt(12.5 + Math.fround(EPS));
    const want = [3 / d, 4 / d, 6 / d, -4 / d];
    expectWithin(h[3]!, want, [1e-6, 1e-6, 1e-6, 1e-6], 'host control');
    expectWithin(g[3]!, want, [2e-6, 2e-6, 2e-6, 2e-6], 'gpu control');
  });

  it('[OPS-check] the fused matvec forms reject wrong weight dtypes, partial blocks, placements past the row and wrong shapes with EINVAL', async () => {
    const p = gpu();
    const x = await zeros(p, 'f32', [2, 32]);
    const norm = await zeros(p, 'f32', [32]);
    const short = await zeros(p, 'f32', [31]);
    const wq = await zeros(p, 'u32', [3, packedWeights('Q4_0', 1, 32, 1).shape[1]]);
    const wf = await zeros(p, 'f32', [3, 32]);
    const out = await zeros(p, 'f32', [2, 3]);
    try {
      const op = FUSED_MATVEC.normMatmul.plain;
      const ok = { m: 2, n: 3, k: 32, kind: 'Q4_0' as const, eps: EPS };
      op.check([x, norm, wq, out].map(operandOf), ok);
      expectCode(() => op.check([x, norm, wf, out].map(operandOf), ok), 'EINVAL', 'dtype-mismatch');
      op.check([x, norm, wf, out].map(operandOf), { ...ok, kind: 'F32' });
      expectCode(() => op.check([x, short, wq, out].map(operandOf), ok), 'EINVAL', 'shape-mismatch');
      expectCode(() => op.check([x, norm, wq, out].map(operandOf), { ...ok, k: 31 }), 'EINVAL', 'bad-param');
      expectCode(() => op.check([x, norm, wq, out].map(operandOf), { ...ok, outCol: 1 }), 'EINVAL', 'out-of-range');
      expectCode(() => op.check([x, norm, wq, out].map(operandOf), { ...ok, eps: 0 }), 'EINVAL', 'bad-param');
      expectCode(() => op.check([x, norm, wq, out].map(operandOf), { ...ok, kind: 'Q2_K' as PackedKind }), 'EINVAL', 'bad-param');
      const glu = FUSED_MATVEC.normGlu.plain;
      expectCode(() => glu.check([x, norm, wq, wf, out].map(operandOf), { m: 2, n: 3, k: 32, gateKind: 'Q4_0', upKind: 'Q4_0', eps: EPS }), 'EINVAL', 'dtype-mismatch');
      const add = FUSED_MATVEC.matmulAdd.plain;
      expectCode(() => add.check([x, wq, out].map(operandOf), { m: 3, n: 3, k: 32, kind: 'Q4_0' }), 'EINVAL', 'shape-mismatch');
    } finally {
      for (const t of [x, norm, short, wq, wf, out]) t.dispose();
    }
  });
});

// Op suite: the attention block's entry in one pass, fused_norm_qkv_rope(_bias) (rmsnorm, Q/K/V
// projections of any kinds, qwen2's biases, RoPE on Q and K, K and V written into the caches), and its
// split-weights path fused_norm_matmul x3 -> fused_rope_kv(_bias), against the unfused composition built
// here from the op library's host twins: rmsnorm -> qmatmul x3 -> bias_add x3 -> rope (q, k) -> kv_write x2.
// Plan, for every reduction variant this device runs:
// (1) property: random kinds for Q, K and V, heads over 1..3 kv heads (GQA groups of 1..3), head sizes
//     2..16 (even), both pairings, frequency factors or none, with and without biases, M in 1..5 rows at
//     pos0 in 0..20 of a cache with spare rows holding junk, element offsets with canaries: q and the
//     written cache rows within the per-pair bound (the two dot products' 2e-5·Σ|xn·w| + 1e-6, plus
//     4e-6·(1 + |a| + |b|) for the rotation), every other cache row untouched, the host twin
//     bit-identical to the composition;
// (2) the split path equals the one-pass op bit for bit on the GPU (fused_norm_matmul for Q, K and V into
//     a qkv buffer at their columns, then fused_rope_kv): a forward whose Q/K/V matrices are split by rows
//     computes exactly what an unsplit one does;
// (3) fused_rope_kv alone against bias_add -> rope -> kv_write within 4e-6·(1 + |x|), and its host twin
//     bit-identical to that composition;
// (4) check() rejections.
import { describe, it } from 'vitest';
import { zeros } from '../../src/index.js';
import { FUSED_MATVEC, PACKED_KINDS, biasAdd, fusedRopeKv, fusedRopeKvBias, kvWrite, qmatmulVariant, rope } from '../../src/submit/ops/index.js';
import type { FusedNormQkvRopeParams, FusedRopeKvParams, PackedKind, QMatmulVariant, RopeStyle } from '../../src/submit/ops/index.js';
import { expectCode } from '../support/expect-error.js';
import { fc, fcParams } from '../support/fc.js';
import { operandOf } from '../support/run-op.js';
import { ABS, REL_L1, commonK, expectSameBits, expectWithin, l1, normRows, packedWeights, project } from './fused-support.js';
import type { Weights } from './fused-support.js';
import { arb, randomF32, runBoth, useWebGPU } from './harness.js';
import { inBrowser } from '../support/providers.js';

const EPS = 1e-5;
const THETA = 10000;
/** The rotation's own error (rope suite: 4e-6 on values of order 1). */
const ROPE_TOL = 4e-6;
/** What cache rows past the step hold: reading or writing them shows. */
const JUNK = 999;
/**
 * Property runs in the browser lane: the node lane runs the same WGSL on the same SwiftShader (Dawn) with 10
 * (one-pass) and 12 (split path) cases; the browser lane runs the first 3 of the same seeded sequences, so
 * Chromium's path is checked for each form and variant.
 */
const BROWSER_RUNS = 3;

type Provider = ReturnType<ReturnType<typeof useWebGPU>>;

interface Case {
  readonly kinds: readonly [PackedKind, PackedKind, PackedKind];
  readonly kvHeads: number;
  readonly group: number;
  readonly headDim: number;
  readonly blocks: number;
  readonly tail: number;
  readonly m: number;
  readonly pos0: number;
  readonly spare: number;
  readonly style: RopeStyle;
  readonly factors: boolean;
  readonly bias: boolean;
  readonly seed: number;
  readonly pads: readonly number[];
}

const caseArb = fc.record({
  kinds: fc.tuple(fc.constantFrom(...PACKED_KINDS), fc.constantFrom(...PACKED_KINDS), fc.constantFrom(...PACKED_KINDS)),
  kvHeads: fc.integer({ min: 1, max: 3 }),
  group: fc.integer({ min: 1, max: 3 }),
  headDim: fc.integer({ min: 1, max: 8 }).map((h) => 2 * h),
  blocks: fc.integer({ min: 1, max: 2 }),
  tail: fc.nat(3),
  m: fc.oneof(fc.constant(1), fc.integer({ min: 1, max: 5 })),
  pos0: fc.nat(20),
  spare: fc.nat(2),
  style: fc.constantFrom<RopeStyle>('normal', 'neox'),
  factors: fc.boolean(),
  bias: fc.boolean(),
  seed: arb.seed(),
  pads: arb.pads(8),
});

interface Built {
  readonly params: FusedNormQkvRopeParams;
  readonly qDim: number;
  readonly kvDim: number;
  readonly x: Float32Array;
  readonly vec: Float32Array;
  readonly w: readonly [Weights, Weights, Weights];
  readonly kCache: Float32Array;
  readonly vCache: Float32Array;
}

function build(c: Case): Built {
  const heads = c.kvHeads * c.group;
  const qDim = heads * c.headDim;
  const kvDim = c.kvHeads * c.headDim;
  const k = commonK(c.kinds, c.blocks, c.tail);
  const maxSeq = c.pos0 + c.m + c.spare;
  const norm = randomF32(c.seed + 1, k, 0.5, 1.5);
  const vec = new Float32Array(c.bias ? k + qDim + 2 * kvDim : k);
  vec.set(norm);
  if (c.bias) vec.set(randomF32(c.seed + 2, qDim + 2 * kvDim, -0.5, 0.5), k);
  const factors = c.factors ? Array.from(randomF32(c.seed + 3, c.headDim / 2, 1, 8)) : undefined;
  const params: FusedNormQkvRopeParams = {
    m: c.m, k, heads, kvHeads: c.kvHeads, headDim: c.headDim, qKind: c.kinds[0], kKind: c.kinds[1], vKind: c.kinds[2],
    eps: EPS, maxSeq, pos0: c.pos0, theta: THETA, style: c.style, ...(factors === undefined ? {} : { freqFactors: factors }),
  };
  return {
    params, qDim, kvDim, vec,
    x: randomF32(c.seed, c.m * k, -2, 2),
    w: [packedWeights(c.kinds[0], qDim, k, c.seed + 4), packedWeights(c.kinds[1], kvDim, k, c.seed + 5), packedWeights(c.kinds[2], kvDim, k, c.seed + 6)],
    kCache: new Float32Array(maxSeq * kvDim).fill(JUNK),
    vCache: new Float32Array(maxSeq * kvDim).fill(-JUNK),
  };
}

function ropeOf(b: Built, heads: number) {
  const p = b.params;
  return { count: p.m, heads, headDim: p.headDim, pos0: p.pos0, theta: p.theta, style: p.style!, ...(p.freqFactors === undefined ? {} : { freqFactors: p.freqFactors }) };
}

/** The unfused composition: q [m, qDim] and both caches after the step, with per-element bounds. */
function composition(b: Built, bias: boolean): { q: Float32Array; kCache: Float32Array; vCache: Float32Array; bounds: [Float64Array, Float64Array, Float64Array] } {
  const { m, k, headDim, style, pos0, maxSeq } = b.params;
  const xn = normRows(b.x, b.vec.subarray(0, k), m, k, EPS);
  const widths = [b.qDim, b.kvDim, b.kvDim];
  const ys = b.w.map((w) => project(w, xn, m));
  const errs = b.w.map((w) => l1(w, xn, m).map((v) => REL_L1 * v + ABS));
  if (bias) {
    let at = k;
    ys.forEach((y, s) => {
      biasAdd.host({ rows: m, cols: widths[s]! }, [y, b.vec.subarray(at, at + widths[s]!)]);
      at += widths[s]!;
    });
  }
  // Pair bounds: a rotated element mixes its pair's two dot products.
  const bounds = ys.map((y, s) => {
    const e = errs[s]!;
    if (s === 2) return Float64Array.from(e);
    const out = new Float64Array(e.length);
    const half = headDim / 2;
    for (let t = 0; t < m; t++) {
      for (let h = 0; h < widths[s]! / headDim; h++) {
        for (let i = 0; i < half; i++) {
          const a = t * widths[s]! + h * headDim + (style === 'neox' ? i : 2 * i);
          const bb = a + (style === 'neox' ? half : 1);
          const bound = e[a]! + e[bb]! + ROPE_TOL * (1 + Math.abs(y[a]!) + Math.abs(y[bb]!));
          out[a] = bound;
          out[bb] = bound;
        }
      }
    }
    return out;
  });
  rope.host(ropeOf(b, b.params.heads), [ys[0]!]);
  rope.host(ropeOf(b, b.params.kvHeads), [ys[1]!]);
  const kCache = b.kCache.slice();
  const vCache = b.vCache.slice();
  kvWrite.host({ count: m, width: b.kvDim, maxSeq, pos0 }, [ys[1]!, kCache]);
  kvWrite.host({ count: m, width: b.kvDim, maxSeq, pos0 }, [ys[2]!, vCache]);
  const cacheBound = (rows: Float64Array): Float64Array => {
    const out = new Float64Array(maxSeq * b.kvDim);
    out.set(rows, pos0 * b.kvDim);
    return out;
  };
  return { q: ys[0]!, kCache, vCache, bounds: [bounds[0]!, cacheBound(bounds[1]!), cacheBound(bounds[2]!)] };
}

function weightOperand(w: Weights) {
  return { dtype: w.dtype, shape: w.shape, data: w.packed };
}

async function fusedRun(p: Provider, variant: QMatmulVariant, b: Built, bias: boolean, pads: readonly number[] = []) {
  const op = bias ? FUSED_MATVEC.normQkvRopeBias[variant] : FUSED_MATVEC.normQkvRope[variant];
  const { m, k, maxSeq } = b.params;
  return runBoth(p, op, [
    { dtype: 'f32', shape: [m, k], data: b.x },
    { dtype: 'f32', shape: [b.vec.length], data: b.vec },
    ...b.w.map(weightOperand),
    { dtype: 'f32', shape: [m, b.qDim], data: new Float32Array(m * b.qDim) },
    { dtype: 'f32', shape: [maxSeq, b.kvDim], data: b.kCache },
    { dtype: 'f32', shape: [maxSeq, b.kvDim], data: b.vCache },
  ], b.params, pads);
}

/** The split path on the GPU: three fused_norm_matmul dispatches into qkv, then fused_rope_kv(_bias). */
async function splitRun(p: Provider, variant: QMatmulVariant, b: Built, bias: boolean): Promise<Float32Array[]> {
  const { m, k, maxSeq } = b.params;
  const width = b.qDim + 2 * b.kvDim;
  let qkv: Float32Array = new Float32Array(m * width);
  const cols = [0, b.qDim, b.qDim + b.kvDim];
  for (let s = 0; s < 3; s++) {
    const w = b.w[s]!;
    const params = { m, n: w.shape[0], k, kind: w.kind, eps: EPS, outStride: width, outCol: cols[s]! };
    const { gpu } = await runBoth(p, FUSED_MATVEC.normMatmul[variant], [
      { dtype: 'f32', shape: [m, k], data: b.x },
      { dtype: 'f32', shape: [k], data: b.vec.slice(0, k) },
      weightOperand(w),
      { dtype: 'f32', shape: [m, width], data: qkv },
    ], params);
    qkv = gpu[3] as Float32Array;
  }
  const ropeParams: FusedRopeKvParams = { count: m, heads: b.params.heads, kvHeads: b.params.kvHeads, headDim: b.params.headDim, maxSeq, pos0: b.params.pos0, theta: THETA, style: b.params.style!, ...(b.params.freqFactors === undefined ? {} : { freqFactors: b.params.freqFactors }) };
  const tail = [
    { dtype: 'f32' as const, shape: [m, b.qDim], data: new Float32Array(m * b.qDim) },
    { dtype: 'f32' as const, shape: [maxSeq, b.kvDim], data: b.kCache },
    { dtype: 'f32' as const, shape: [maxSeq, b.kvDim], data: b.vCache },
  ];
  const qkvIn = { dtype: 'f32' as const, shape: [m, width], data: qkv };
  if (bias) return (await runBoth(p, fusedRopeKvBias, [qkvIn, { dtype: 'f32', shape: [width], data: b.vec.slice(k) }, ...tail], ropeParams)).gpu.slice(2) as Float32Array[];
  return (await runBoth(p, fusedRopeKv, [qkvIn, ...tail], ropeParams)).gpu.slice(1) as Float32Array[];
}

describe('fused_norm_qkv_rope: WGSL against the unfused composition', () => {
  const gpu = useWebGPU();

  for (const variant of ['plain', 'subgroups'] as const) {
    it(`[OPS-fused-norm-qkv-rope] ${variant}: rmsnorm, Q/K/V of any kinds, biases, RoPE (both styles, factors) and the KV write in one pass equal the composition`, async (ctx) => {
      if (variant === 'subgroups' && qmatmulVariant(gpu()) !== 'subgroups') {
        ctx.skip();
        return;
      }
      await fc.assert(
        fc.asyncProperty(caseArb, async (c) => {
          const b = build(c);
          const want = composition(b, c.bias);
          const { gpu: g, host: h } = await fusedRun(gpu(), variant, b, c.bias, c.pads);
          const label = `${c.kinds.join('/')} ${c.style}${c.factors ? ' factors' : ''}${c.bias ? ' bias' : ''} heads ${b.params.heads}/${c.kvHeads}x${c.headDim} K=${b.params.k} M=${c.m} pos0=${c.pos0}`;
          expectSameBits(h[5]!, want.q, `${label} host q`);
          expectSameBits(h[6]!, want.kCache, `${label} host k cache`);
          expectSameBits(h[7]!, want.vCache, `${label} host v cache`);
          expectWithin(g[5]!, want.q, want.bounds[0], `${label} q`);
          expectWithin(g[6]!, want.kCache, want.bounds[1], `${label} k cache`);
          expectWithin(g[7]!, want.vCache, want.bounds[2], `${label} v cache`);
        }),
        fcParams(inBrowser ? BROWSER_RUNS : 10),
      );
    });
  }

  it('[OPS-fused-norm-qkv-rope][OPS-fused-rope-kv] the split path (fused_norm_matmul x3 into qkv, fused_rope_kv) equals the one-pass op bit for bit on the GPU', async () => {
    const p = gpu();
    const variant = qmatmulVariant(p);
    const cases: readonly Case[] = [
      { kinds: ['Q4_K', 'Q4_K', 'Q6_K'], kvHeads: 2, group: 2, headDim: 8, blocks: 1, tail: 0, m: 1, pos0: 5, spare: 1, style: 'normal', factors: false, bias: false, seed: 41, pads: [] },
      { kinds: ['F32', 'F16', 'BF16'], kvHeads: 1, group: 3, headDim: 6, blocks: 1, tail: 3, m: 3, pos0: 0, spare: 0, style: 'neox', factors: true, bias: true, seed: 42, pads: [] },
      { kinds: ['Q8_0', 'Q5_0', 'Q4_1'], kvHeads: 2, group: 1, headDim: 4, blocks: 2, tail: 0, m: 4, pos0: 9, spare: 2, style: 'neox', factors: false, bias: true, seed: 43, pads: [] },
    ];
    for (const c of cases) {
      const b = build(c);
      const fused = (await fusedRun(p, variant, b, c.bias)).gpu;
      const split = await splitRun(p, variant, b, c.bias);
      const label = `${c.kinds.join('/')} ${c.style}${c.bias ? ' bias' : ''}`;
      expectSameBits(split[0]!, fused[5]!, `${label} q`);
      expectSameBits(split[1]!, fused[6]!, `${label} k cache`);
      expectSameBits(split[2]!, fused[7]!, `${label} v cache`);
    }
  });

  it('[OPS-fused-rope-kv] biases, RoPE and the KV write from a qkv buffer equal bias_add -> rope -> kv_write within 4e-6·(1+|x|)', async () => {
    await fc.assert(
      fc.asyncProperty(caseArb, async (c) => {
        const heads = c.kvHeads * c.group;
        const qDim = heads * c.headDim;
        const kvDim = c.kvHeads * c.headDim;
        const width = qDim + 2 * kvDim;
        const maxSeq = c.pos0 + c.m + c.spare;
        const qkv = randomF32(c.seed, c.m * width, -3, 3);
        const bias = randomF32(c.seed + 1, width, -0.5, 0.5);
        const factors = c.factors ? Array.from(randomF32(c.seed + 3, c.headDim / 2, 1, 8)) : undefined;
        const params: FusedRopeKvParams = { count: c.m, heads, kvHeads: c.kvHeads, headDim: c.headDim, maxSeq, pos0: c.pos0, theta: THETA, style: c.style, ...(factors === undefined ? {} : { freqFactors: factors }) };
        const kCache = new Float32Array(maxSeq * kvDim).fill(JUNK);
        const vCache = new Float32Array(maxSeq * kvDim).fill(-JUNK);
        const tail = [
          { dtype: 'f32' as const, shape: [c.m, qDim], data: new Float32Array(c.m * qDim) },
          { dtype: 'f32' as const, shape: [maxSeq, kvDim], data: kCache },
          { dtype: 'f32' as const, shape: [maxSeq, kvDim], data: vCache },
        ];
        const qkvIn = { dtype: 'f32' as const, shape: [c.m, width], data: qkv };
        const run = c.bias
          ? await runBoth(gpu(), fusedRopeKvBias, [qkvIn, { dtype: 'f32', shape: [width], data: bias }, ...tail], params, c.pads)
          : await runBoth(gpu(), fusedRopeKv, [qkvIn, ...tail], params, c.pads);
        const at = c.bias ? 2 : 1;
        // The composition.
        const cols = (from: number, n: number) => {
          const out = new Float32Array(c.m * n);
          for (let t = 0; t < c.m; t++) out.set(qkv.subarray(t * width + from, t * width + from + n), t * n);
          return out;
        };
        const ys = [cols(0, qDim), cols(qDim, kvDim), cols(qDim + kvDim, kvDim)];
        if (c.bias) ys.forEach((y, s) => biasAdd.host({ rows: c.m, cols: s === 0 ? qDim : kvDim }, [y, bias.subarray(s === 0 ? 0 : s === 1 ? qDim : qDim + kvDim)]));
        const ropeParams = (h: number) => ({ count: c.m, heads: h, headDim: c.headDim, pos0: c.pos0, theta: THETA, style: c.style, ...(factors === undefined ? {} : { freqFactors: factors }) });
        rope.host(ropeParams(heads), [ys[0]!]);
        rope.host(ropeParams(c.kvHeads), [ys[1]!]);
        const wantK = kCache.slice();
        const wantV = vCache.slice();
        kvWrite.host({ count: c.m, width: kvDim, maxSeq, pos0: c.pos0 }, [ys[1]!, wantK]);
        kvWrite.host({ count: c.m, width: kvDim, maxSeq, pos0: c.pos0 }, [ys[2]!, wantV]);
        const label = `fused_rope_kv${c.bias ? '_bias' : ''} ${c.style} heads ${heads}/${c.kvHeads}x${c.headDim} M=${c.m} pos0=${c.pos0}`;
        expectSameBits(run.host[at]!, ys[0]!, `${label} host q`);
        expectSameBits(run.host[at + 1]!, wantK, `${label} host k cache`);
        expectSameBits(run.host[at + 2]!, wantV, `${label} host v cache`);
        const tol = (want: Float32Array) => Array.from(want, (v) => (v === JUNK || v === -JUNK ? 0 : ROPE_TOL * (1 + Math.abs(v))));
        expectWithin(run.gpu[at]!, ys[0]!, tol(ys[0]!), `${label} q`);
        expectWithin(run.gpu[at + 1]!, wantK, tol(wantK), `${label} k cache`);
        expectWithin(run.gpu[at + 2]!, wantV, tol(wantV), `${label} v cache`);
      }),
      fcParams(inBrowser ? BROWSER_RUNS : 12),
    );
  });

  it('[OPS-check] fused_norm_qkv_rope and fused_rope_kv reject bad heads, positions past the cache, odd head sizes and wrong vector lengths with EINVAL', async () => {
    const p = gpu();
    const x = await zeros(p, 'f32', [1, 32]);
    const vec = await zeros(p, 'f32', [32]);
    const wq = await zeros(p, 'f32', [8, 32]);
    const wkv = await zeros(p, 'f32', [4, 32]);
    const q = await zeros(p, 'f32', [1, 8]);
    const cache = await zeros(p, 'f32', [4, 4]);
    const qkv = await zeros(p, 'f32', [1, 16]);
    try {
      const op = FUSED_MATVEC.normQkvRope.plain;
      const ok: FusedNormQkvRopeParams = { m: 1, k: 32, heads: 2, kvHeads: 1, headDim: 4, qKind: 'F32', kKind: 'F32', vKind: 'F32', eps: EPS, maxSeq: 4, pos0: 3, theta: THETA };
      const ops = [x, vec, wq, wkv, wkv, q, cache, cache].map(operandOf);
      op.check(ops, ok);
      expectCode(() => op.check(ops, { ...ok, pos0: 4 }), 'EINVAL', 'out-of-range');
      expectCode(() => op.check(ops, { ...ok, kvHeads: 3 }), 'EINVAL', 'bad-param');
      expectCode(() => op.check(ops, { ...ok, style: 'sideways' as RopeStyle }), 'EINVAL', 'bad-param');
      expectCode(() => FUSED_MATVEC.normQkvRopeBias.plain.check(ops, ok), 'EINVAL', 'shape-mismatch');
      expectCode(() => op.check([x, vec, wkv, wkv, wkv, q, cache, cache].map(operandOf), ok), 'EINVAL', 'shape-mismatch');
      const rk = { count: 1, heads: 2, kvHeads: 1, headDim: 4, maxSeq: 4, pos0: 0, theta: THETA };
      fusedRopeKv.check([qkv, q, cache, cache].map(operandOf), rk);
      expectCode(() => fusedRopeKv.check([qkv, q, cache, cache].map(operandOf), { ...rk, headDim: 3 }), 'EINVAL', 'bad-param');
      expectCode(() => fusedRopeKv.check([qkv, q, cache, cache].map(operandOf), { ...rk, count: 2 }), 'EINVAL', 'shape-mismatch');
      expectCode(() => fusedRopeKvBias.check([qkv, q, q, cache, cache].map(operandOf), rk), 'EINVAL', 'shape-mismatch');
    } finally {
      for (const t of [x, vec, wq, wkv, q, cache, qkv]) t.dispose();
    }
  });
});

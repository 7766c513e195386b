// Op suite: fused_attention_block(_bias), a decode step's attention half in one dispatch (rmsnorm, Q/K/V
// of any packed kinds, biases, RoPE in both pairings, the KV write at pos0, attention over 0..pos0),
// against the chain it replaces, fused_norm_qkv_rope(_bias) -> fused_attention, through that chain's
// host twins (each chain op is checked against its twin on the GPU in its own suite; pipelines are the
// cost here, so the chain is not rerun on the device).
// Plan (seeded cases, tiny shapes; GQA groups 1, 2 and 4; head sizes 8 and 64; pos0 0, 1 and past one
// tile of 128 positions; F32, Q8_0 and Q4_K; the device's variant, and plain for one case past a tile):
// (1) the written cache rows pos0 within each element's bound: the chain's per-dot bound
//     2e-5·Σ|xn·w| + 1e-6, summed over a rotated pair, plus 4e-6·(1 + |a| + |b|) for the rotation;
//     every other cache row untouched (bound 0);
// (2) the attention output within OUT_TOL·(1 + max |v|) of the chain's (a softmax-weighted mean of v
//     rows: errors in q and k move the weights, errors in v move the mean);
// (3) the host twin equals the chain's host twins bit for bit;
// (4) check() rejects a group past the kernel's workgroup memory with EINVAL bad-param.
import { describe, it } from 'vitest';
import { zeros } from '../../src/index.js';
import { FUSED_ATTENTION_BLOCK, FUSED_MATVEC, fusedAttention, qmatmulVariant } from '../../src/submit/ops/index.js';
import type { FusedAttentionBlockParams, PackedKind, QMatmulVariant, RopeStyle } from '../../src/submit/ops/index.js';
import { expectCode } from '../support/expect-error.js';
import { operandOf } from '../support/run-op.js';
import { ABS, REL_L1, commonK, expectSameBits, expectWithin, l1, normRows, packedWeights } from './fused-support.js';
import type { Weights } from './fused-support.js';
import { randomF32, runBoth, useWebGPU } from './harness.js';

const EPS = 1e-5;
const THETA = 10000;
const ROPE_TOL = 4e-6;
/** The attention output's bound, relative to 1 + the largest |v| in the cache rows read (see the plan). */
const OUT_TOL = 2e-4;
/** Pipeline compiles on SwiftShader under a loaded machine. */
const TIMEOUT = 180_000;
/** Positions per tile of the kernel. */
const TILE = 128;
/** Cache rows past pos0: reading or writing them shows. */
const JUNK = 999;

interface Case {
  readonly kinds: readonly [PackedKind, PackedKind, PackedKind];
  readonly kvHeads: number;
  readonly group: number;
  readonly headDim: number;
  readonly pos0: number;
  readonly style: RopeStyle;
  readonly factors: boolean;
  readonly bias: boolean;
  readonly seed: number;
}

// Three pipelines (kinds, pairing and bias are pipeline constants or variants; compiling them is most of
// this suite's time): F32 normal, Q8_0 NEOX with biases, Q4_K normal with biases and frequency factors.
const CASES: readonly Case[] = [
  { kinds: ['F32', 'F32', 'F32'], kvHeads: 2, group: 1, headDim: 8, pos0: 0, style: 'normal', factors: false, bias: false, seed: 11 },
  { kinds: ['F32', 'F32', 'F32'], kvHeads: 1, group: 4, headDim: 64, pos0: 133, style: 'normal', factors: false, bias: false, seed: 12 },
  { kinds: ['Q8_0', 'Q8_0', 'Q8_0'], kvHeads: 1, group: 2, headDim: 8, pos0: 1, style: 'neox', factors: false, bias: true, seed: 13 },
  { kinds: ['Q8_0', 'Q8_0', 'Q8_0'], kvHeads: 2, group: 2, headDim: 64, pos0: 150, style: 'neox', factors: false, bias: true, seed: 14 },
  { kinds: ['Q4_K', 'Q4_K', 'Q4_K'], kvHeads: 2, group: 4, headDim: 8, pos0: 140, style: 'normal', factors: true, bias: true, seed: 15 },
];

interface Built {
  readonly params: FusedAttentionBlockParams;
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
  const k = commonK(c.kinds, 1);
  // One spare row past the step holds junk; the rows before it hold a random history.
  const maxSeq = c.pos0 + 2;
  const vec = new Float32Array(c.bias ? k + qDim + 2 * kvDim : k);
  vec.set(randomF32(c.seed + 1, k, 0.5, 1.5));
  if (c.bias) vec.set(randomF32(c.seed + 2, qDim + 2 * kvDim, -0.5, 0.5), k);
  const factors = c.factors ? Array.from(randomF32(c.seed + 3, c.headDim / 2, 1, 8)) : undefined;
  const cache = (seed: number, junk: number): Float32Array => {
    const out = new Float32Array(maxSeq * kvDim).fill(junk);
    out.set(randomF32(seed, c.pos0 * kvDim, -2, 2));
    return out;
  };
  return {
    qDim, kvDim, vec,
    params: {
      k, heads, kvHeads: c.kvHeads, headDim: c.headDim, qKind: c.kinds[0], kKind: c.kinds[1], vKind: c.kinds[2],
      eps: EPS, maxSeq, pos0: c.pos0, theta: THETA, style: c.style, ...(factors === undefined ? {} : { freqFactors: factors }),
    },
    x: randomF32(c.seed, k, -2, 2),
    w: [packedWeights(c.kinds[0], qDim, k, c.seed + 4), packedWeights(c.kinds[1], kvDim, k, c.seed + 5), packedWeights(c.kinds[2], kvDim, k, c.seed + 6)],
    kCache: cache(c.seed + 7, JUNK),
    vCache: cache(c.seed + 8, -JUNK),
  };
}

const f32 = (shape: number[], data: Float32Array) => ({ dtype: 'f32' as const, shape, data });
const weightOperand = (w: Weights) => ({ dtype: w.dtype, shape: w.shape, data: w.packed });

function operands(b: Built) {
  const { k, maxSeq } = b.params;
  return [
    f32([1, k], b.x),
    f32([b.vec.length], b.vec),
    ...b.w.map(weightOperand),
    f32([1, b.qDim], new Float32Array(b.qDim)),
    f32([maxSeq, b.kvDim], b.kCache),
    f32([maxSeq, b.kvDim], b.vCache),
  ];
}

/** The chain's host twins (fused_norm_qkv_rope(_bias), then fused_attention): out and both caches. */
function chain(b: Built, bias: boolean): { out: Float32Array; kCache: Float32Array; vCache: Float32Array } {
  const { heads, kvHeads, headDim, maxSeq, pos0 } = b.params;
  const q = new Float32Array(b.qDim);
  const kCache = b.kCache.slice();
  const vCache = b.vCache.slice();
  (bias ? FUSED_MATVEC.normQkvRopeBias.plain : FUSED_MATVEC.normQkvRope.plain).host({ ...b.params, m: 1 }, [b.x, b.vec, b.w[0].packed, b.w[1].packed, b.w[2].packed, q, kCache, vCache]);
  const out = new Float32Array(b.qDim);
  fusedAttention.host({ count: 1, heads, kvHeads, headDim, maxSeq, pos0 }, [q, kCache, vCache, out]);
  return { out, kCache, vCache };
}

/** Per-element bounds of the cache rows pos0 (0 elsewhere: untouched rows must match exactly). */
function cacheBounds(b: Built, want: Float32Array, s: 1 | 2): Float64Array {
  const { k, pos0, maxSeq, headDim, style } = b.params;
  const xn = normRows(b.x, b.vec.subarray(0, k), 1, k, EPS);
  const e = l1(b.w[s], xn, 1).map((v) => REL_L1 * v + ABS);
  const out = new Float64Array(maxSeq * b.kvDim);
  const at = pos0 * b.kvDim;
  if (s === 2) {
    out.set(e, at);
    return out;
  }
  const half = headDim / 2;
  for (let h = 0; h < b.params.kvHeads; h++) {
    for (let i = 0; i < half; i++) {
      const a = h * headDim + (style === 'neox' ? i : 2 * i);
      const c = a + (style === 'neox' ? half : 1);
      const bound = e[a]! + e[c]! + ROPE_TOL * (1 + Math.abs(want[at + a]!) + Math.abs(want[at + c]!));
      out[at + a] = bound;
      out[at + c] = bound;
    }
  }
  return out;
}

function label(c: Case, variant: QMatmulVariant): string {
  return `${variant} ${c.kinds.join('/')} ${c.style}${c.factors ? ' factors' : ''}${c.bias ? ' bias' : ''} heads ${c.kvHeads * c.group}/${c.kvHeads}x${c.headDim} pos0=${c.pos0}`;
}

describe('fused_attention_block: one dispatch against fused_norm_qkv_rope -> fused_attention', () => {
  const gpu = useWebGPU();

  /** Runs `cases` through the op's `variant` and checks them against the chain's host twins. */
  async function check(variant: QMatmulVariant, cases: readonly Case[]): Promise<void> {
    for (const c of cases) {
      const b = build(c);
      const name = label(c, variant);
      const op = c.bias ? FUSED_ATTENTION_BLOCK.bias[variant] : FUSED_ATTENTION_BLOCK.block[variant];
      const got = await runBoth(gpu(), op, operands(b), b.params);
      const want = chain(b, c.bias);
      expectSameBits(got.host[5]!, want.out, `${name} host out`);
      expectSameBits(got.host[6]!, want.kCache, `${name} host k cache`);
      expectSameBits(got.host[7]!, want.vCache, `${name} host v cache`);
      expectWithin(got.gpu[6]!, want.kCache, cacheBounds(b, want.kCache, 1), `${name} k cache`);
      expectWithin(got.gpu[7]!, want.vCache, cacheBounds(b, want.vCache, 2), `${name} v cache`);
      const vMax = Math.max(...Array.from(want.vCache.subarray(0, (c.pos0 + 1) * b.kvDim), Math.abs));
      expectWithin(got.gpu[5]!, want.out, new Float64Array(b.qDim).fill(OUT_TOL * (1 + vMax)), `${name} out`);
    }
  }

  it('[OPS-fused-attention-block] the device\'s variant: GQA 1/2/4, head sizes 8 and 64, pos0 0, 1 and past a tile, both pairings, biases, F32/Q8_0/Q4_K: caches and output within the stated bounds of the chain, host twin = the chain\'s twins bit for bit', async () => {
    await check(qmatmulVariant(gpu()), CASES);
  }, TIMEOUT);

  it('[OPS-fused-attention-block] the plain reduction on a device with subgroups: a Q8_0 case past a tile', async (ctx) => {
    if (qmatmulVariant(gpu()) === 'plain') {
      ctx.skip();
      return;
    }
    await check('plain', CASES.filter((c) => c.pos0 >= TILE && c.kinds[0] === 'Q8_0'));
  }, TIMEOUT);

  it('[OPS-fused-attention-block] fused_attention_block rejects a query group past its workgroup memory (which the chain accepts) and the chain\'s own errors with EINVAL', async () => {
    const p = gpu();
    const [x, vec, wq, wk4, wk2, out, cache4, cache2] = await Promise.all([
      zeros(p, 'f32', [1, 32]), zeros(p, 'f32', [32]), zeros(p, 'f32', [32, 32]), zeros(p, 'f32', [4, 32]),
      zeros(p, 'f32', [2, 32]), zeros(p, 'f32', [1, 32]), zeros(p, 'f32', [4, 4]), zeros(p, 'f32', [4, 2]),
    ]);
    try {
      const op = FUSED_ATTENTION_BLOCK.block.plain;
      // 8 heads of 4 over one kv head: a group of 8 fits.
      const fits: FusedAttentionBlockParams = { k: 32, heads: 8, kvHeads: 1, headDim: 4, qKind: 'F32', kKind: 'F32', vKind: 'F32', eps: EPS, maxSeq: 4, pos0: 3, theta: THETA };
      const fitOps = [x, vec, wq, wk4, wk4, out, cache4, cache4].map(operandOf);
      op.check(fitOps, fits);
      expectCode(() => op.check(fitOps, { ...fits, pos0: 4 }), 'EINVAL', 'out-of-range');
      // 16 heads of 2 over one kv head: a group of 16 > 8.
      const wide = { ...fits, heads: 16, headDim: 2 };
      const wideOps = [x, vec, wq, wk2, wk2, out, cache2, cache2].map(operandOf);
      FUSED_MATVEC.normQkvRope.plain.check(wideOps, { ...wide, m: 1 });
      expectCode(() => op.check(wideOps, wide), 'EINVAL', 'bad-param');
    } finally {
      for (const t of [x!, vec!, wq!, wk4!, wk2!, out!, cache4!, cache2!]) t.dispose();
    }
  });
});

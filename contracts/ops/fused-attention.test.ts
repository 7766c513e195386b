// Op suite: single-pass attention over the KV cache (shaders/fused_attention.wesl, one workgroup per
// head with an online softmax over tiles of positions) and its split form (positions cut into splits,
// fused_attention_combine merging them), against the unfused attention op's host twin (two-pass softmax
// in f64), which is the kernel they replace.
// Plan: (1) property, one split: random count 1..9 (half decode), kv heads 1..3 with groups of 1..3
//     query heads, head sizes 1..40 (past one 64-wide tile only in positions), pos0 0..150 (several tiles
//     of 64 positions), cache rows past the causal bound holding large values (any read shows), element
//     offsets with canaries: within 2e-5·(1+|host|); host twin = attention's host twin exactly;
// (2) property, split + combine: the same shapes with splitLen 1..70 (splits of one position, splits
//     that end inside a tile, a last split shorter than the rest, splits past the step's positions that
//     the partial buffer has room for but the step does not use): within 2e-5·(1+|host|); the split host
//     twins composed equal attention's within 1e-6 (f32 partials);
// (3) controls: at position 0 the output is v[0] of the head's kv head, in both forms;
// (4) check() rejections.
import { describe, it } from 'vitest';
import { zeros } from '../../src/index.js';
import { attention, fusedAttention, fusedAttentionCombine, fusedAttentionSplit, maxSplits } from '../../src/submit/ops/index.js';
import type { AttentionParams } from '../../src/submit/ops/index.js';
import { expectCode } from '../support/expect-error.js';
import { fc, fcParams } from '../support/fc.js';
import { operandOf } from '../support/run-op.js';
import { expectSameBits } from './fused-support.js';
import { arb, expectClose, randomF32, runBoth, useWebGPU } from './harness.js';

const TOL = { abs: 2e-5, rel: 2e-5 };

type Provider = ReturnType<ReturnType<typeof useWebGPU>>;

interface Inputs {
  readonly q: Float32Array;
  readonly k: Float32Array;
  readonly v: Float32Array;
}

function inputs(p: AttentionParams, seed: number): Inputs {
  const kvWidth = p.kvHeads * p.headDim;
  const k = randomF32(seed + 1, p.maxSeq * kvWidth, -1, 1);
  const v = randomF32(seed + 2, p.maxSeq * kvWidth, -1, 1);
  k.fill(50, (p.pos0 + p.count) * kvWidth);
  v.fill(1000, (p.pos0 + p.count) * kvWidth);
  return { q: randomF32(seed, p.count * p.heads * p.headDim, -2, 2), k, v };
}

function reference(p: AttentionParams, x: Inputs): Float32Array {
  const out = new Float32Array(p.count * p.heads * p.headDim);
  attention.host(p, [x.q, x.k, x.v, out]);
  return out;
}

function operands(p: AttentionParams, x: Inputs, out: { shape: readonly number[]; size: number }) {
  const kvWidth = p.kvHeads * p.headDim;
  return [
    { dtype: 'f32' as const, shape: [p.count, p.heads * p.headDim], data: x.q },
    { dtype: 'f32' as const, shape: [p.maxSeq, kvWidth], data: x.k },
    { dtype: 'f32' as const, shape: [p.maxSeq, kvWidth], data: x.v },
    { dtype: 'f32' as const, shape: out.shape, data: new Float32Array(out.size) },
  ];
}

/** Split + combine on the GPU and on the host; returns both outputs. */
async function splitRun(gpu: Provider, p: AttentionParams, splitLen: number, x: Inputs, pads: readonly number[] = []): Promise<{ gpu: Float32Array; host: Float32Array }> {
  const params = { ...p, splitLen };
  const partShape = [p.count, p.heads, maxSplits(p.maxSeq, splitLen), p.headDim + 2];
  const partSize = partShape.reduce((a, b) => a * b, 1);
  const partial = await runBoth(gpu, fusedAttentionSplit, operands(p, x, { shape: partShape, size: partSize }), params, pads);
  const width = p.heads * p.headDim;
  const out = { dtype: 'f32' as const, shape: [p.count, width], data: new Float32Array(p.count * width) };
  const g = await runBoth(gpu, fusedAttentionCombine, [{ dtype: 'f32', shape: partShape, data: partial.gpu[3] as Float32Array }, out], params, pads.slice(0, 2));
  const h = await runBoth(gpu, fusedAttentionCombine, [{ dtype: 'f32', shape: partShape, data: partial.host[3] as Float32Array }, out], params);
  return { gpu: g.gpu[1] as Float32Array, host: h.host[1] as Float32Array };
}

const shapeArb = fc.record({
  count: fc.oneof(fc.constant(1), arb.size(9)),
  kvHeads: fc.integer({ min: 1, max: 3 }),
  group: fc.integer({ min: 1, max: 3 }),
  headDim: fc.oneof(fc.constant(8), fc.integer({ min: 1, max: 40 })),
  pos0: fc.oneof(fc.nat(10), fc.nat(150)),
  spare: fc.nat(3),
  seed: arb.seed(),
  pads: arb.pads(4),
});

function paramsOf(s: { count: number; kvHeads: number; group: number; headDim: number; pos0: number; spare: number }): AttentionParams {
  return { count: s.count, heads: s.kvHeads * s.group, kvHeads: s.kvHeads, headDim: s.headDim, maxSeq: s.pos0 + s.count + s.spare, pos0: s.pos0 };
}

describe('fused attention: WGSL against the attention op', () => {
  const gpu = useWebGPU();

  it('[OPS-fused-attention] one split: online softmax per head over tiles of positions equals attention within 2e-5·(1+|host|)', async () => {
    await fc.assert(
      fc.asyncProperty(shapeArb, async (s) => {
        const p = paramsOf(s);
        const x = inputs(p, s.seed);
        const want = reference(p, x);
        const width = p.heads * p.headDim;
        const { gpu: g, host: h } = await runBoth(gpu(), fusedAttention, operands(p, x, { shape: [p.count, width], size: p.count * width }), p, s.pads);
        const label = `fused_attention count=${p.count} heads=${p.heads}/${p.kvHeads}x${p.headDim} pos0=${p.pos0}`;
        expectSameBits(h[3]!, want, `${label} host twin`);
        expectClose(g[3]!, want, TOL, label);
      }),
      fcParams(15),
    );
  });

  it('[OPS-fused-attention] split over positions + combine equals attention within 2e-5·(1+|host|), the host twins within 1e-6', async () => {
    await fc.assert(
      fc.asyncProperty(shapeArb, fc.oneof(fc.integer({ min: 1, max: 8 }), fc.integer({ min: 9, max: 70 })), async (s, splitLen) => {
        const p = paramsOf(s);
        const x = inputs(p, s.seed);
        const want = reference(p, x);
        const { gpu: g, host: h } = await splitRun(gpu(), p, splitLen, x, s.pads);
        const label = `split ${splitLen} count=${p.count} heads=${p.heads}/${p.kvHeads}x${p.headDim} pos0=${p.pos0}`;
        expectClose(h, want, { abs: 1e-6, rel: 1e-6 }, `${label} host twins`);
        expectClose(g, want, TOL, label);
      }),
      fcParams(15),
    );
  });

  it('[OPS-fused-attention] control: at position 0 every head returns v[0] of its kv head, in both forms', async () => {
    const p: AttentionParams = { count: 1, heads: 4, kvHeads: 2, headDim: 5, maxSeq: 3, pos0: 0 };
    const x = inputs(p, 77);
    const want = new Float32Array(p.heads * p.headDim);
    for (let h = 0; h < p.heads; h++) for (let d = 0; d < p.headDim; d++) want[h * p.headDim + d] = x.v[Math.floor(h / 2) * p.headDim + d]!;
    const { gpu: g } = await runBoth(gpu(), fusedAttention, operands(p, x, { shape: [1, 20], size: 20 }), p);
    expectClose(g[3]!, want, { abs: 1e-6, rel: 0 }, 'one split');
    expectClose((await splitRun(gpu(), p, 1, x)).gpu, want, { abs: 1e-6, rel: 0 }, 'split of one position');
  });

  it('[OPS-check] fused attention rejects positions past the cache, head sizes past 256, ungrouped heads and a wrong partial buffer with EINVAL', async () => {
    const p = gpu();
    const q = await zeros(p, 'f32', [1, 8]);
    const kv = await zeros(p, 'f32', [4, 4]);
    const out = await zeros(p, 'f32', [1, 8]);
    const part = await zeros(p, 'f32', [1, 2, 2, 6]);
    const big = await zeros(p, 'f32', [1, 300]);
    const bigKv = await zeros(p, 'f32', [4, 300]);
    try {
      const ok: AttentionParams = { count: 1, heads: 2, kvHeads: 1, headDim: 4, maxSeq: 4, pos0: 3 };
      fusedAttention.check([q, kv, kv, out].map(operandOf), ok);
      expectCode(() => fusedAttention.check([q, kv, kv, out].map(operandOf), { ...ok, pos0: 4 }), 'EINVAL', 'out-of-range');
      expectCode(() => fusedAttention.check([q, kv, kv, out].map(operandOf), { ...ok, kvHeads: 3 }), 'EINVAL', 'bad-param');
      expectCode(() => fusedAttention.check([big, bigKv, bigKv, big].map(operandOf), { ...ok, heads: 1, headDim: 300 }), 'EINVAL', 'bad-param');
      const split = { ...ok, splitLen: 2 };
      fusedAttentionSplit.check([q, kv, kv, part].map(operandOf), split);
      expectCode(() => fusedAttentionSplit.check([q, kv, kv, part].map(operandOf), { ...split, splitLen: 1 }), 'EINVAL', 'shape-mismatch');
      expectCode(() => fusedAttentionSplit.check([q, kv, kv, part].map(operandOf), { ...split, splitLen: 0 }), 'EINVAL', 'bad-param');
      fusedAttentionCombine.check([part, out].map(operandOf), split);
      expectCode(() => fusedAttentionCombine.check([out, part].map(operandOf), split), 'EINVAL', 'shape-mismatch');
      expectCode(() => fusedAttentionCombine.check([part, out].map(operandOf), { ...split, pos0: 4 }), 'EINVAL', 'out-of-range');
    } finally {
      for (const t of [q, kv, out, part, big, bigKv]) t.dispose();
    }
  });
});

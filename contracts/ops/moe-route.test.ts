// Op suite: moe_route (router softmax, top-k, renormalised weights; shaders/moe_route.wgsl).
// Plan: (1) property — tokens 1..20, experts 1..300 (past the largest workgroup, so invocations stride),
// used from 1 to experts (k = 1 and k = E included), renormalize on and off, logits continuous in
// [-8, 8] or drawn from four values (many exact ties), offsets with canaries, folded dispatches: the
// WGSL ids equal the host twin's exactly and its weights agree within 1e-5 relative (WGSL exp is not
// correctly rounded); the host twin equals an independent oracle (repeated first-maximum scans, the
// llama.cpp definition: softmax, top-k, get_rows, division by the sum) within 1e-7; renormalised
// weights sum to 1; (2) controls: equal logits pick experts 0..k-1 with weights 1/k (renormalised) or
// 1/E; a worked example; (3) check() rejects used > experts, a non-boolean renormalize, wrong shapes and
// dtypes with EINVAL.
import { describe, expect, it } from 'vitest';
import { zeros } from '../../src/index.js';
import { moeRoute } from '../../src/submit/ops/index.js';
import type { MoeRouteParams } from '../../src/submit/ops/index.js';
import { expectCode } from '../support/expect-error.js';
import { fc, fcParams } from '../support/fc.js';
import { operandOf } from '../support/run-op.js';
import { arb, expectClose, foldingLimits, randomF32, rng, runBoth, useWebGPU } from './harness.js';

/**
 * The oracle: per token, softmax over all experts in f64, then `used` scans each taking the first
 * (lowest-index) maximum probability among the experts not taken yet, then the weights divided by their
 * sum when renormalising.
 */
function oracle(logits: Float32Array, p: MoeRouteParams): { ids: number[]; weights: number[] } {
  const ids: number[] = [];
  const weights: number[] = [];
  for (let t = 0; t < p.tokens; t++) {
    const row = Array.from(logits.subarray(t * p.experts, (t + 1) * p.experts));
    const mx = Math.max(...row);
    const exps = row.map((v) => Math.exp(v - mx));
    const total = exps.reduce((a, b) => a + b, 0);
    const probs = exps.map((v) => v / total);
    const taken = new Set<number>();
    const picked: number[] = [];
    for (let j = 0; j < p.used; j++) {
      let best = -1;
      for (let e = 0; e < p.experts; e++) if (!taken.has(e) && (best < 0 || probs[e]! > probs[best]!)) best = e;
      taken.add(best);
      picked.push(best);
    }
    const sum = picked.reduce((a, e) => a + probs[e]!, 0);
    for (const e of picked) {
      ids.push(e);
      weights.push(p.renormalize ? probs[e]! / sum : probs[e]!);
    }
  }
  return { ids, weights };
}

async function route(provider: ReturnType<ReturnType<typeof useWebGPU>>, logits: Float32Array, params: MoeRouteParams, pads: readonly number[] = [], fold = false) {
  const { tokens, experts, used } = params;
  const { gpu: g, host: h } = await runBoth(provider, moeRoute, [
    { dtype: 'f32', shape: [tokens, experts], data: logits },
    { dtype: 'u32', shape: [tokens, used], data: new Uint32Array(tokens * used).fill(0xabcdef) },
    { dtype: 'f32', shape: [tokens, used], data: new Float32Array(tokens * used).fill(Number.NaN) },
  ], params, pads, foldingLimits(moeRoute, params, fold));
  return { gpuIds: Array.from(g[1]!), gpuWeights: g[2]! as Float32Array, hostIds: Array.from(h[1]!), hostWeights: h[2]! as Float32Array };
}

describe('moe_route: WGSL against the host twin and the llama.cpp-definition oracle', () => {
  const gpu = useWebGPU();

  it('[OPS-moe-route] random routers (ties included), k = 1 .. E, renormalised or not: same experts, weights within 1e-5', async () => {
    const shape = fc
      .record({ tokens: arb.size(20), experts: fc.oneof(arb.size(70), fc.constantFrom(1, 4, 8, 64, 256, 300)) })
      .chain(({ tokens, experts }) => fc.record({ tokens: fc.constant(tokens), experts: fc.constant(experts), used: fc.oneof(fc.constant(1), fc.constant(experts), fc.integer({ min: 1, max: experts })) }));
    await fc.assert(
      fc.asyncProperty(shape, fc.boolean(), fc.boolean(), arb.seed(), arb.pads(3), fc.boolean(), async ({ tokens, experts, used }, renormalize, ties, seed, pads, fold) => {
        const params = { tokens, experts, used, renormalize };
        const r = rng(seed);
        const logits = ties ? Float32Array.from({ length: tokens * experts }, () => [-1.5, 0, 0.25, 2][Math.floor(r() * 4)]!) : randomF32(seed, tokens * experts, -8, 8);
        const res = await route(gpu(), logits, params, pads, fold);
        const label = `moe_route tokens ${tokens} experts ${experts} used ${used} renormalize ${renormalize} ties ${ties}`;
        const want = oracle(logits, params);
        expect(res.hostIds, `${label}: host ids`).toEqual(want.ids);
        expectClose(res.hostWeights, want.weights, { abs: 1e-7, rel: 1e-6 }, `${label}: host weights`);
        expect(res.gpuIds, `${label}: gpu ids`).toEqual(res.hostIds);
        expectClose(res.gpuWeights, res.hostWeights, { abs: 1e-7, rel: 1e-5 }, `${label}: gpu weights`);
        if (renormalize) {
          for (let t = 0; t < tokens; t++) {
            let s = 0;
            for (let j = 0; j < used; j++) s += res.gpuWeights[t * used + j]!;
            expect(Math.abs(s - 1), `${label}: token ${t} weights sum to 1`).toBeLessThan(1e-5);
          }
        }
      }),
      fcParams(20),
    );
  });

  it('[OPS-moe-route] controls: equal logits pick experts 0..k-1 (lower index first); a worked example', async () => {
    const equal = await route(gpu(), new Float32Array(2 * 6).fill(0.5), { tokens: 2, experts: 6, used: 3, renormalize: true });
    expect(equal.gpuIds).toEqual([0, 1, 2, 0, 1, 2]);
    expectClose(equal.gpuWeights, new Array(6).fill(1 / 3), { abs: 1e-7, rel: 0 }, 'equal renormalised');
    const plain = await route(gpu(), new Float32Array(6).fill(0.5), { tokens: 1, experts: 6, used: 3, renormalize: false });
    expectClose(plain.gpuWeights, new Array(3).fill(1 / 6), { abs: 1e-7, rel: 0 }, 'equal softmax');
    // Logits [1, 3, 2, 3]: experts 1 and 3 tie for first (1 comes first), then expert 2.
    const logits = Float32Array.from([1, 3, 2, 3]);
    const z = Math.exp(-2) + 1 + Math.exp(-1) + 1;
    const top2 = await route(gpu(), logits, { tokens: 1, experts: 4, used: 2, renormalize: true });
    expect(top2.gpuIds).toEqual([1, 3]);
    expectClose(top2.gpuWeights, [0.5, 0.5], { abs: 1e-7, rel: 0 }, 'worked top-2');
    const top3 = await route(gpu(), logits, { tokens: 1, experts: 4, used: 3, renormalize: false });
    expect(top3.gpuIds).toEqual([1, 3, 2]);
    expectClose(top3.gpuWeights, [1 / z, 1 / z, Math.exp(-1) / z], { abs: 1e-7, rel: 1e-6 }, 'worked top-3 softmax');
    const top1 = await route(gpu(), logits, { tokens: 1, experts: 4, used: 1, renormalize: true });
    expect([top1.gpuIds, Array.from(top1.gpuWeights)]).toEqual([[1], [1]]);
  });

  it('[OPS-check] moe_route rejects used > experts, a non-boolean renormalize, wrong shapes and dtypes with EINVAL', async () => {
    const p = gpu();
    const logits = await zeros(p, 'f32', [3, 4]);
    const ids = await zeros(p, 'u32', [3, 2]);
    const idsF = await zeros(p, 'f32', [3, 2]);
    const weights = await zeros(p, 'f32', [3, 2]);
    const weights3 = await zeros(p, 'f32', [3, 3]);
    try {
      const params = { tokens: 3, experts: 4, used: 2, renormalize: true };
      moeRoute.check([logits, ids, weights].map(operandOf), params);
      expectCode(() => moeRoute.check([logits, ids, weights].map(operandOf), { ...params, used: 5 }), 'EINVAL', 'bad-param');
      expectCode(() => moeRoute.check([logits, ids, weights].map(operandOf), { ...params, used: 0 }), 'EINVAL', 'bad-param');
      expectCode(() => moeRoute.check([logits, ids, weights].map(operandOf), { ...params, renormalize: 1 as unknown as boolean }), 'EINVAL', 'bad-param');
      expectCode(() => moeRoute.check([logits, ids, weights3].map(operandOf), params), 'EINVAL', 'shape-mismatch');
      expectCode(() => moeRoute.check([logits, ids, weights].map(operandOf), { ...params, experts: 5 }), 'EINVAL', 'shape-mismatch');
      expectCode(() => moeRoute.check([logits, idsF, weights].map(operandOf), params), 'EINVAL', 'dtype-mismatch');
    } finally {
      for (const t of [logits, ids, idsF, weights, weights3]) t.dispose();
    }
  });
});

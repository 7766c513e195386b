// Op suite: rope's GGUF options (shaders/rope.wgsl): the NEOX pairing (qwen2) and per-pair frequency
// factors (Llama 3 `rope_freqs`), next to the llama2.c behaviour that contracts/ops/rope.test.ts covers.
// Plan: (1) property — random style, factors absent or drawn like Llama 3's (1 for fast pairs, up to 32
// for slow ones, smooth in between) or below 1, theta 1e4, 1e6 (qwen2) or random, positions up to the
// supported range, offsets with canaries, folded dispatches: WGSL equals the host twin within 4e-6
// absolute (the bound of rope.test.ts: both rotate by the same f32 angle); (2) controls against an
// independent f64 formula written from GGML's definitions (NEOX pair i is (i, i + headDim/2) and turns
// by pos / theta^(2i/headDim); a factor f divides that angle), and a vector whose only non-zero element
// shows which partner each style picks; (3) the llama2.c path is untouched: style absent, 'normal', and
// factors all 1 give bit-identical results on the GPU and on the host; (4) check() rejects an unknown
// style, factor tables of the wrong length or with non-positive / non-finite entries, and angles past
// ROPE_MAX_POSITION radians (factors below 1 speed pairs up) with EINVAL.
import { describe, expect, it } from 'vitest';
import { zeros } from '../../src/index.js';
import { ROPE_MAX_POSITION, ROPE_THETA, rope, ropeTable } from '../../src/submit/ops/index.js';
import type { RopeParams, RopeStyle } from '../../src/submit/ops/index.js';
import { expectCode } from '../support/expect-error.js';
import { fc, fcParams } from '../support/fc.js';
import { operandOf } from '../support/run-op.js';
import { arb, expectClose, foldingLimits, randomF32, rng, runBoth, useWebGPU } from './harness.js';

const TOL = { abs: 4e-6, rel: 0 };
/** qwen2's base frequency. */
const QWEN2_THETA = 1e6;

/**
 * Llama 3-like factors for headDim / 2 pairs from a seed: 1 for the fastest quarter, `scale` for the
 * slowest quarter, a smooth ramp between (what llama.cpp's converter writes into rope_freqs).
 */
function llama3Factors(pairs: number, scale: number): Float32Array {
  const out = new Float32Array(pairs);
  for (let i = 0; i < pairs; i++) {
    const s = Math.min(1, Math.max(0, (i / pairs - 0.25) * 2));
    out[i] = 1 / ((1 - s) / 1 + s / scale);
  }
  return out;
}

/** Independent f64 rope (GGML's definition): returns x rotated, as f64. */
function referenceRope(x: Float32Array, p: RopeParams): Float64Array {
  const out = Float64Array.from(x);
  const half = p.headDim / 2;
  for (let t = 0; t < p.count; t++) {
    for (let h = 0; h < p.heads; h++) {
      const head = (t * p.heads + h) * p.headDim;
      for (let i = 0; i < half; i++) {
        const angle = (p.pos0 + t) / Math.pow(p.theta, (2 * i) / p.headDim) / (p.freqFactors?.[i] ?? 1);
        const a = p.style === 'neox' ? head + i : head + 2 * i;
        const b = p.style === 'neox' ? a + half : a + 1;
        out[a] = x[a]! * Math.cos(angle) - x[b]! * Math.sin(angle);
        out[b] = x[a]! * Math.sin(angle) + x[b]! * Math.cos(angle);
      }
    }
  }
  return out;
}

describe('rope styles and frequency factors: WGSL against the host twin and an f64 reference', () => {
  const gpu = useWebGPU();

  it('[OPS-rope-neox][OPS-rope-freq-factors] random style, factors, theta and positions agree within 4e-6 absolute', async () => {
    const headDim = fc.oneof(fc.constantFrom(64, 128, 8), fc.integer({ min: 1, max: 16 }).map((h) => 2 * h));
    const theta = fc.oneof(fc.constantFrom(ROPE_THETA, QWEN2_THETA), fc.double({ min: 100, max: 1e6, noNaN: true }));
    const factors = fc.oneof(fc.constant('none' as const), fc.constant('llama3' as const), fc.constant('below-one' as const));
    const pos0 = fc.oneof(fc.integer({ min: 0, max: 600 }), fc.integer({ min: 0, max: ROPE_MAX_POSITION / 2 - 24 }));
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom<RopeStyle>('normal', 'neox'), arb.size(12), fc.integer({ min: 1, max: 4 }), headDim, pos0, theta, factors, arb.seed(), arb.pads(1), fc.boolean(),
        async (style, count, heads, hd, p0, th, kind, seed, pads, fold) => {
          const r = rng(seed);
          const freqFactors =
            kind === 'none' ? undefined : kind === 'llama3' ? llama3Factors(hd / 2, 1 + 31 * r()) : Float32Array.from({ length: hd / 2 }, () => 0.5 + 0.5 * r());
          const params: RopeParams = freqFactors === undefined ? { count, heads, headDim: hd, pos0: p0, theta: th, style } : { count, heads, headDim: hd, pos0: p0, theta: th, style, freqFactors };
          const x = randomF32(seed, count * heads * hd);
          const { gpu: g, host: h } = await runBoth(gpu(), rope, [{ dtype: 'f32', shape: [count, heads * hd], data: x }], params, pads, foldingLimits(rope, params, fold));
          const label = `rope ${style} factors ${kind} count ${count} heads ${heads} headDim ${hd} pos0 ${p0} theta ${th}`;
          expectClose(g[0]!, h[0]!, TOL, label);
          // The host twin against the f64 formula: the f32 angle differs from the exact one by a few f32
          // ulp of pos · freq (freq <= 2 here), and the result by that much times |x| <= 1.
          expectClose(h[0]!, referenceRope(x, params), { abs: 1e-6 * (p0 + count) + 1e-6, rel: 0 }, `${label} (f64 reference)`);
        },
      ),
      fcParams(15),
    );
  });

  it('[OPS-rope-neox] control: NEOX pairs element i with i + headDim/2 and turns it by pos / theta^(2i/headDim)', async () => {
    const headDim = 8;
    const heads = 2;
    const count = 3;
    // Only element 1 of each head is 1: NEOX moves it into element 1 + 4 (sin), normal into element 0 (-sin).
    const x = new Float32Array(count * heads * headDim);
    for (let t = 0; t < count; t++) for (let h = 0; h < heads; h++) x[(t * heads + h) * headDim + 1] = 1;
    const base = { count, heads, headDim, pos0: 5, theta: QWEN2_THETA };
    const neox = await runBoth(gpu(), rope, [{ dtype: 'f32', shape: [count, heads * headDim], data: x }], { ...base, style: 'neox' });
    const normal = await runBoth(gpu(), rope, [{ dtype: 'f32', shape: [count, heads * headDim], data: x }], { ...base, style: 'normal' });
    for (let t = 0; t < count; t++) {
      const angle = (5 + t) / Math.pow(QWEN2_THETA, 2 / headDim);
      for (let h = 0; h < heads; h++) {
        const head = (t * heads + h) * headDim;
        const wantNeox = new Array(headDim).fill(0);
        wantNeox[1] = Math.cos(angle);
        wantNeox[1 + headDim / 2] = Math.sin(angle);
        const angle0 = 5 + t; // normal style: element 1 is the partner of element 0 in pair 0 (frequency 1)
        const wantNormal = new Array(headDim).fill(0);
        wantNormal[0] = -Math.sin(angle0);
        wantNormal[1] = Math.cos(angle0);
        for (const [res, want, name] of [[neox, wantNeox, 'neox'], [normal, wantNormal, 'normal']] as const) {
          expectClose(res.gpu[0]!.subarray(head, head + headDim), want, TOL, `${name} gpu t ${t} h ${h}`);
          expectClose(res.host[0]!.subarray(head, head + headDim), want, { abs: 1e-6, rel: 0 }, `${name} host t ${t} h ${h}`);
        }
      }
    }
  });

  it('[OPS-rope-freq-factors] control: a factor f divides pair i\'s angle (Llama 3 rope_freqs), in both styles', async () => {
    const headDim = 16;
    const pairs = headDim / 2;
    const factors = Float32Array.from({ length: pairs }, (_, i) => 1 + i * 3);
    const x = new Float32Array(2 * headDim);
    for (let i = 0; i < x.length; i++) x[i] = ((i * 7) % 5) / 5 - 0.4;
    for (const style of ['normal', 'neox'] as const) {
      const params: RopeParams = { count: 2, heads: 1, headDim, pos0: 10, theta: 500_000, style, freqFactors: factors };
      const { gpu: g, host: h } = await runBoth(gpu(), rope, [{ dtype: 'f32', shape: [2, headDim], data: x }], params);
      const want = referenceRope(x, params);
      expectClose(h[0]!, want, { abs: 1e-5, rel: 0 }, `${style} host vs f64`);
      expectClose(g[0]!, want, { abs: 1e-5, rel: 0 }, `${style} gpu vs f64`);
      // Without the factors the result differs (pairs 1.. turn faster): the factors are applied.
      const plain = referenceRope(x, { ...params, freqFactors: undefined } as RopeParams);
      expect(Math.max(...Array.from(g[0]!, (v, i) => Math.abs(v - plain[i]!)))).toBeGreaterThan(0.05);
    }
    expect(Array.from(ropeTable({ count: 1, heads: 1, headDim, pos0: 0, theta: 500_000, freqFactors: factors }))).toEqual(
      Array.from(ropeTable({ count: 1, heads: 1, headDim, pos0: 0, theta: 500_000 }), (f, i) => Math.fround(f / factors[i]!)),
    );
  });

  it('[OPS-rope-neox] the llama2.c path is unchanged: style absent, normal, and factors all 1 give the same bits', async () => {
    const headDim = 8;
    const x = randomF32(77, 5 * 4 * headDim);
    const base = { count: 5, heads: 4, headDim, pos0: 17, theta: ROPE_THETA };
    const results = [];
    for (const params of [base, { ...base, style: 'normal' as const }, { ...base, freqFactors: new Float32Array(headDim / 2).fill(1) }]) {
      results.push(await runBoth(gpu(), rope, [{ dtype: 'f32', shape: [5, 4 * headDim], data: x }], params));
    }
    for (const r of results.slice(1)) {
      expect(Array.from(r.gpu[0]!)).toEqual(Array.from(results[0]!.gpu[0]!));
      expect(Array.from(r.host[0]!)).toEqual(Array.from(results[0]!.host[0]!));
    }
    expect(rope.constants(base)).toEqual({ WG: 64, NEOX: 0 });
    expect(rope.constants({ ...base, style: 'neox' })).toEqual({ WG: 64, NEOX: 1 });
  });

  it('[OPS-check] rope rejects an unknown style, bad factor tables and angles past the supported range with EINVAL', async () => {
    const p = gpu();
    const x = await zeros(p, 'f32', [2, 16]);
    try {
      const ok = [operandOf(x)];
      const base: RopeParams = { count: 2, heads: 2, headDim: 8, pos0: 0, theta: ROPE_THETA };
      rope.check(ok, { ...base, style: 'neox', freqFactors: [1, 2, 4, 8] });
      expectCode(() => rope.check(ok, { ...base, style: 'gptj' as RopeStyle }), 'EINVAL', 'bad-param');
      expectCode(() => rope.check(ok, { ...base, freqFactors: [1, 2, 4] }), 'EINVAL', 'bad-param');
      expectCode(() => rope.check(ok, { ...base, freqFactors: [1, 2, 0, 8] }), 'EINVAL', 'bad-param');
      expectCode(() => rope.check(ok, { ...base, freqFactors: [1, -2, 4, 8] }), 'EINVAL', 'bad-param');
      expectCode(() => rope.check(ok, { ...base, freqFactors: [1, 2, Number.NaN, 8] }), 'EINVAL', 'bad-param');
      expectCode(() => rope.check(ok, { ...base, freqFactors: [1, 2, Infinity, 8] }), 'EINVAL', 'bad-param');
      // Factors below 1 make pair 0 faster than the position: 0.5 doubles its angle.
      rope.check(ok, { ...base, pos0: ROPE_MAX_POSITION / 2 - 1, freqFactors: [0.5, 1, 1, 1] });
      expectCode(() => rope.check(ok, { ...base, pos0: ROPE_MAX_POSITION / 2, freqFactors: [0.5, 1, 1, 1] }), 'EINVAL', 'out-of-range');
      rope.check(ok, { ...base, pos0: 100, theta: 0.5 });
      expectCode(() => rope.check(ok, { ...base, pos0: 50_000, theta: 0.5 }), 'EINVAL', 'out-of-range');
    } finally {
      x.dispose();
    }
  });
});

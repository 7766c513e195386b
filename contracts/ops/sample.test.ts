// Op suite: sample (shaders/sample.wgsl; host twin in src/submit/ops/sample.ts).
// Plan:
//   - rng: the host Philox4x32-10 gives Random123's known answers; on the device, rows of equal logits
//     expose the top bits of the draw (256 tokens: the top 8 bits; 65536 tokens: the top 16, through the
//     device's walk order), which must equal the host's word for (seed, step, row).
//   - weights: the integer weight of a level is 2^31 * 2^(-t/2^24) within 2e-7 relative, and never rises.
//   - property: random logits (continuous or with many ties), temperatures (0 included), top-p, top-k,
//     seeds, steps, rows, operand offsets, folded dispatches: the device writes exactly the host twin's
//     ids, and both equal this suite's own reference (kept set found by sorting the levels, the draw walked
//     in owner order), so a threshold search that drifts from the definition fails here.
//   - greedy: temperature 0 is argmax (first maximum on ties) on both lanes.
//   - distribution: 4000 draws on a 6-token vocabulary (rows of one dispatch on the device, seeds on the
//     host) match the exact softmax restricted to the nucleus (or top-k set) by a chi-square bound at
//     p = 1e-6, with no draw outside the kept set; temperature ignored, top-p ignored or top-k ignored
//     each fail it.
//   - check(): bad params and operands are refused with EINVAL and a stable reason.
import { describe, expect, it } from 'vitest';
import { zeros } from '../../src/index.js';
import {
  SAMPLE_FRAC_BITS,
  SAMPLE_MAX_COLS,
  SAMPLE_T_MAX,
  SAMPLE_WORKGROUP,
  philox4x32,
  sample,
  sampleRandom,
  sampleRow,
  sampleScale,
  sampleWeight,
} from '../../src/submit/ops/index.js';
import type { SampleOptions, SampleParams } from '../../src/submit/ops/index.js';
import { expectCode } from '../support/expect-error.js';
import { fc, fcParams } from '../support/fc.js';
import { operandOf } from '../support/run-op.js';
import { arb, foldingLimits, randomF32, rng, runBoth, useWebGPU } from './harness.js';
import type { WebGPUProvider } from '../../src/index.js';

/** Random123 kat_vectors for philox4x32 10: counter, key, expected output. */
const PHILOX_KAT: readonly (readonly [readonly [number, number, number, number], readonly [number, number], readonly [number, number, number, number]])[] = [
  [[0, 0, 0, 0], [0, 0], [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]],
  [[0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff], [0xffffffff, 0xffffffff], [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd]],
  [[0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344], [0xa4093822, 0x299f31d0], [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1]],
];

/** Runs the op on the device and the host twin over the same logits; returns both id lists. */
async function both(p: WebGPUProvider, x: Float32Array, params: SampleParams, pads: readonly number[] = [], fold = false): Promise<{ gpu: number[]; host: number[] }> {
  const { gpu, host } = await runBoth(p, sample, [
    { dtype: 'f32', shape: [params.rows, params.cols], data: x },
    { dtype: 'u32', shape: [params.rows], data: new Uint32Array(params.rows) },
  ], params, pads, foldingLimits(sample, params, fold));
  return { gpu: Array.from(gpu[1]!), host: Array.from(host[1]!) };
}

/**
 * This suite's reference for one row: the levels of the header's definition, the kept set by sorting
 * (k-th smallest level; then the smallest level whose cumulative weight passes floor(S * topP * 2^32 / 2^32)),
 * and the draw walked owner by owner.
 */
function reference(x: Float32Array, o: SampleOptions, row: number): number {
  const n = x.length;
  let best = 0;
  for (let i = 1; i < n; i++) if (x[i]! > x[best]!) best = i;
  if (o.temperature === 0) return best;
  const { scale, limit } = sampleScale(o.temperature);
  const level = Array.from(x, (v) => {
    const d = Math.fround(x[best]! - v);
    return d >= limit ? SAMPLE_T_MAX : Math.min(Math.trunc(Math.fround(d * scale)), SAMPLE_T_MAX);
  });
  const weight = level.map((t) => (t < SAMPLE_T_MAX ? sampleWeight(t) : 0));
  const sorted = level.filter((t) => t < SAMPLE_T_MAX).sort((a, b) => a - b);
  let bound = SAMPLE_T_MAX - 1;
  const k = o.topK ?? 0;
  if (k > 0 && k <= sorted.length) bound = sorted[k - 1]!;
  const topP = o.topP ?? 1;
  if (topP < 1) {
    const kept = level.map((t, i) => [t, weight[i]!] as const).filter(([t]) => t <= bound).sort((a, b) => a[0] - b[0]);
    const mass = kept.reduce((s, [, w]) => s + w, 0);
    const target = Number((BigInt(mass) * BigInt(Math.floor(topP * 2 ** 32))) >> 32n);
    let run = 0;
    for (let i = 0; i < kept.length; i++) {
      run += kept[i]![1];
      // a level's whole tie class goes in before the test
      if (i + 1 < kept.length && kept[i + 1]![0] === kept[i]![0]) continue;
      if (run > target) {
        bound = kept[i]![0];
        break;
      }
    }
  }
  const order: number[] = [];
  for (let j = 0; j < SAMPLE_WORKGROUP; j++) for (let i = j; i < n; i += SAMPLE_WORKGROUP) order.push(i);
  const total = order.reduce((s, i) => s + (level[i]! <= bound ? weight[i]! : 0), 0);
  const u = Number((BigInt(total) * BigInt(sampleRandom(o.seed, o.step, row))) >> 32n);
  let acc = 0;
  for (const i of order) {
    if (level[i]! > bound) continue;
    acc += weight[i]!;
    if (acc > u) return i;
  }
  throw new Error('reference draw fell past the kept mass');
}

function tiedLogits(seed: number, n: number): Float32Array {
  const r = rng(seed);
  return Float32Array.from({ length: n }, () => Math.floor(r() * 4) * 0.5);
}

/** Upper 1e-6 quantile of chi-square with `df` degrees of freedom (Wilson-Hilferty; above the exact value for small df). */
function chiSquareBound(df: number): number {
  const z = 4.7534; // standard normal upper 1e-6 quantile
  const a = 2 / (9 * df);
  return df * (1 - a + z * Math.sqrt(a)) ** 3;
}

/** Exact probabilities the sampler targets: softmax(x / T), cut to the nucleus / top-k set, renormalised. */
function targetProbabilities(x: readonly number[], o: SampleOptions): number[] {
  const e = x.map((v) => Math.exp(v / o.temperature));
  const s = e.reduce((a, b) => a + b, 0);
  const p = e.map((v) => v / s);
  const order = p.map((_, i) => i).sort((a, b) => p[b]! - p[a]!);
  const k = o.topK ?? 0;
  const kept = k > 0 ? order.slice(0, k) : order;
  const keptMass = kept.reduce((a, i) => a + p[i]!, 0);
  const topP = o.topP ?? 1;
  const nucleus: number[] = [];
  let run = 0;
  for (const i of kept) {
    nucleus.push(i);
    run += p[i]! / keptMass;
    if (topP < 1 && run > topP) break;
  }
  const m = nucleus.reduce((a, i) => a + p[i]!, 0);
  return p.map((v, i) => (nucleus.includes(i) ? v / m : 0));
}

function expectDistribution(ids: readonly number[], probs: readonly number[], label: string): void {
  const counts = probs.map(() => 0);
  for (const id of ids) counts[id]!++;
  let chi = 0;
  let df = -1;
  probs.forEach((q, i) => {
    if (q === 0) {
      expect(counts[i], `${label}: token ${i} is outside the kept set`).toBe(0);
      return;
    }
    const want = q * ids.length;
    chi += (counts[i]! - want) ** 2 / want;
    df++;
  });
  expect(chi, `${label}: chi-square of counts ${counts.join(',')} against ${probs.map((q) => q.toFixed(4)).join(',')}`).toBeLessThan(chiSquareBound(df));
}

const VOCAB = [2.0, 1.6, 1.1, 0.5, -0.3, -1.2];
const DRAWS = 4000;
const DEVICE_DRAWS = 150;
const DISTRIBUTIONS: readonly { readonly name: string; readonly options: Omit<SampleOptions, 'seed' | 'step'> }[] = [
  { name: 'T 0.7, top-p 0.8', options: { temperature: 0.7, topP: 0.8 } },
  { name: 'T 0.7, top-k 4', options: { temperature: 0.7, topK: 4 } },
  { name: 'T 1.3, top-p 0.9', options: { temperature: 1.3, topP: 0.9 } },
];

describe('sample: counter-based draws, host twin and device', () => {
  const gpu = useWebGPU();

  it('[OPS-sample-rng] the host Philox4x32-10 gives Random123\'s known answers', () => {
    for (const [counter, key, want] of PHILOX_KAT) expect(philox4x32(counter, key)).toEqual([...want]);
    // the draw's word: counter (step, row, 0, 0), key = the seed's 64-bit two's complement words
    expect(sampleRandom(0, 0, 0)).toBe(0x6627e8d5);
    expect(sampleRandom(-1, 7, 3)).toBe(philox4x32([7, 3, 0, 0], [0xffffffff, 0xffffffff])[0]);
    expect(sampleRandom(2 ** 40 + 5, 1, 0)).toBe(philox4x32([1, 0, 0, 0], [5, 2 ** 8])[0]);
  });

  it('[OPS-sample-rng] on the device, equal logits expose the draw: its top 8 bits over 256 tokens, its top 12 / 16 through the walk order over 4096 / 65536', async () => {
    const p = gpu();
    // seed 0, step 0, row 0 is Random123's first vector: 0x6627e8d5, top byte 0x66
    const flat = await both(p, new Float32Array(256), { rows: 1, cols: 256, temperature: 1, seed: 0, step: 0 });
    expect(flat.gpu).toEqual([0x66]);
    expect(flat.host).toEqual([0x66]);
    // 65536 tokens: the top 16 bits (owner j holds walk positions 256 j .. 256 j + 255); 4096: the top 12
    for (const [cols, rows, seed, step] of [[65536, 1, -7, 12345], [4096, 1, 2 ** 52, 2 ** 32 - 1]] as const) {
      const perOwner = cols / SAMPLE_WORKGROUP;
      const { gpu: g, host: h } = await both(p, new Float32Array(rows * cols).fill(0.25), { rows, cols, temperature: 0.5, seed, step });
      const want = Array.from({ length: rows }, (_, row) => {
        const pos = Math.floor((sampleRandom(seed, step, row) * cols) / 2 ** 32);
        return Math.floor(pos / perOwner) + SAMPLE_WORKGROUP * (pos % perOwner);
      });
      expect(h, `host, ${cols} tokens, seed ${seed} step ${step}`).toEqual(want);
      expect(g, `device, ${cols} tokens, seed ${seed} step ${step}`).toEqual(want);
    }
  });

  it('[OPS-sample-weight] integer weights follow 2^31 * 2^(-t/2^24) within 2e-7 relative and never rise', () => {
    const r = rng(99);
    const ts = [0, 1, 2 ** 23, 2 ** 24 - 1, 2 ** 24, 2 ** 24 + 1, 5 * 2 ** 24 + 12345, SAMPLE_T_MAX - 1];
    for (let i = 0; i < 4000; i++) ts.push(Math.floor(r() * SAMPLE_T_MAX));
    expect(sampleWeight(0)).toBe(2 ** 31);
    for (const t of ts) {
      const exact = 2 ** 31 * 2 ** (-t / 2 ** SAMPLE_FRAC_BITS);
      const w = sampleWeight(t);
      expect(Number.isInteger(w) && w >= 1, `weight at ${t}`).toBe(true);
      expect(Math.abs(w - exact), `weight at ${t}: ${w} vs ${exact}`).toBeLessThanOrEqual(2e-7 * exact + 1);
    }
    const sorted = [...ts].sort((a, b) => a - b);
    for (let i = 1; i < sorted.length; i++) expect(sampleWeight(sorted[i]!)).toBeLessThanOrEqual(sampleWeight(sorted[i - 1]!));
  });

  it('[OPS-sample] random logits, temperatures, top-p, top-k, seeds, steps and rows: device ids = host twin ids = the reference', async () => {
    const p = gpu();
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 5 }),
        arb.size(3000),
        fc.boolean(),
        fc.oneof(fc.constant(0), fc.double({ min: 0.05, max: 4, noNaN: true })),
        fc.oneof(fc.constant(1), fc.double({ min: 0.01, max: 0.999, noNaN: true })),
        fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 40 })),
        fc.integer({ min: -(2 ** 40), max: 2 ** 40 }),
        fc.integer({ min: 0, max: 0xffffffff }),
        arb.seed(),
        arb.pads(2),
        fc.boolean(),
        async (rows, cols, ties, temperature, topP, topK, seed, step, dataSeed, pads, fold) => {
          const x = ties ? tiedLogits(dataSeed, rows * cols) : randomF32(dataSeed, rows * cols, -8, 8);
          const params: SampleParams = { rows, cols, temperature, topP, topK, seed, step };
          const { gpu: g, host: h } = await both(p, x, params, pads, fold);
          const want = Array.from({ length: rows }, (_, r) => reference(x.subarray(r * cols, (r + 1) * cols), params, r));
          expect(h, 'host twin vs reference').toEqual(want);
          expect(g, 'device vs host twin').toEqual(h);
          for (let r = 0; r < rows; r++) expect(sampleRow(x.subarray(r * cols, (r + 1) * cols), params, r)).toBe(h[r]);
        },
      ),
      fcParams(20),
    );
  });

  it('[OPS-sample] the kept set is exact: top-k keeps the k most likely and the k-th\'s ties, top-p the smallest set passing the mass', async () => {
    // A high temperature makes the kept tokens nearly equally likely, so 48 draws show every one of them.
    const rows = 48;
    const cases: readonly { readonly logits: readonly number[]; readonly options: Omit<SampleOptions, 'seed' | 'step'>; readonly kept: readonly number[] }[] = [
      { logits: [7, 6, 5, 4, 3, 2, 1, 0], options: { temperature: 50, topK: 3 }, kept: [0, 1, 2] },
      { logits: [5, 4, 4, 4, 3, 2, 1, 0], options: { temperature: 50, topK: 2 }, kept: [0, 1, 2, 3] },
      // probabilities about 0.134, 0.131, 0.128, ...: two pass 0.26, three 0.39 > 0.3
      { logits: [7, 6, 5, 4, 3, 2, 1, 0], options: { temperature: 50, topP: 0.3 }, kept: [0, 1, 2] },
      { logits: [0, 7, 6, 5, 4, 3, 2, 1], options: { temperature: 50, topK: 5, topP: 0.5 }, kept: [1, 2, 3] },
    ];
    for (const { logits, options, kept } of cases) {
      const x = new Float32Array(rows * logits.length);
      for (let r = 0; r < rows; r++) x.set(logits, r * logits.length);
      const { gpu: g, host: h } = await both(gpu(), x, { rows, cols: logits.length, ...options, seed: 5, step: 9 });
      expect(g, JSON.stringify(options)).toEqual(h);
      expect([...new Set(h)].sort((a, b) => a - b), JSON.stringify(options)).toEqual(kept);
    }
  });

  it('[OPS-sample-greedy] temperature 0 is argmax with the first maximum on ties, whatever the seed, top-p and top-k', async () => {
    const x = Float32Array.from([1, 3, 3, 0, /* */ -2, -2, -2, -2, /* */ 0, 0, 0, 9, /* */ 5, 4, 5, 5]);
    for (const [seed, topP, topK] of [[1, 1, 0], [99, 0.1, 1], [-5, 0.5, 3]] as const) {
      const { gpu: g, host: h } = await both(gpu(), x, { rows: 4, cols: 4, temperature: 0, topP, topK, seed, step: Math.abs(seed) + 3 });
      expect(h).toEqual([1, 0, 3, 0]);
      expect(g).toEqual([1, 0, 3, 0]);
    }
  });

  it('[OPS-sample-distribution] 4000 draws (seeds) on 6 tokens match the nucleus / top-k softmax by chi-square at p = 1e-6; none outside the kept set', () => {
    const row = Float32Array.from(VOCAB);
    for (const { name, options } of DISTRIBUTIONS) {
      const probs = targetProbabilities(VOCAB, { ...options, seed: 0, step: 0 });
      const bySeed = Array.from({ length: DRAWS }, (_, s) => sampleRow(row, { ...options, seed: s + 1, step: 0 }));
      expectDistribution(bySeed, probs, `${name} (host, seeds)`);
    }
  });

  it('[OPS-sample-distribution] on the device, draws of one dispatch (one row each: the counter\'s row word differs) equal the host twin\'s and stay in the kept set', async () => {
    // SwiftShader pays milliseconds per 256-invocation workgroup, so the device part draws fewer: its
    // counts get the same bound, and the ids equal the host twin's, whose distribution is checked above.
    const p = gpu();
    for (const { name, options } of DISTRIBUTIONS.slice(0, 2)) {
      const probs = targetProbabilities(VOCAB, { ...options, seed: 0, step: 0 });
      const x = new Float32Array(DEVICE_DRAWS * VOCAB.length);
      for (let r = 0; r < DEVICE_DRAWS; r++) x.set(VOCAB, r * VOCAB.length);
      const { gpu: g, host: h } = await both(p, x, { rows: DEVICE_DRAWS, cols: VOCAB.length, ...options, seed: 11, step: 3 });
      expect(g, `${name}: device = host`).toEqual(h);
      expectDistribution(g, probs, `${name} (device, rows)`);
    }
  });

  it('[OPS-check] sample rejects bad params and operands with EINVAL before anything runs', async () => {
    const p = gpu();
    const x = await zeros(p, 'f32', [2, 8]);
    const out = await zeros(p, 'u32', [2]);
    const outF = await zeros(p, 'f32', [2]);
    const out3 = await zeros(p, 'u32', [3]);
    const ok: SampleParams = { rows: 2, cols: 8, temperature: 0.8, topP: 0.9, topK: 5, seed: 1, step: 0 };
    const ops = [x, out].map(operandOf);
    try {
      sample.check(ops, ok);
      sample.check(ops, { ...ok, topP: 1, topK: 0, seed: -(2 ** 53) + 1, step: 2 ** 32 - 1, temperature: 0 });
      const bad: [Partial<SampleParams>, string][] = [
        [{ temperature: -1 }, 'temperature'],
        [{ temperature: Number.NaN }, 'temperature'],
        [{ temperature: Number.POSITIVE_INFINITY }, 'temperature'],
        [{ topP: 0 }, 'topP'],
        [{ topP: 1.5 }, 'topP'],
        [{ topP: Number.NaN }, 'topP'],
        [{ topK: -1 }, 'topK'],
        [{ topK: 1.5 }, 'topK'],
        [{ seed: 0.5 }, 'seed'],
        [{ seed: 2 ** 53 }, 'seed'],
        [{ step: -1 }, 'step'],
        [{ step: 2 ** 32 }, 'step'],
        [{ rows: 0 }, 'rows'],
      ];
      for (const [change, param] of bad) expect(expectCode(() => sample.check(ops, { ...ok, ...change }), 'EINVAL', 'bad-param').ids?.['param'], param).toBe(param);
      expect(expectCode(() => sample.check([{ dtype: 'f32', shape: [1, SAMPLE_MAX_COLS + 1], contiguous: true }, { dtype: 'u32', shape: [1], contiguous: true }], { ...ok, rows: 1, cols: SAMPLE_MAX_COLS + 1 }), 'EINVAL', 'bad-param').ids?.['param']).toBe('cols');
      sample.check([{ dtype: 'f32', shape: [1, SAMPLE_MAX_COLS], contiguous: true }, { dtype: 'u32', shape: [1], contiguous: true }], { ...ok, rows: 1, cols: SAMPLE_MAX_COLS });
      expectCode(() => sample.check([x, outF].map(operandOf), ok), 'EINVAL', 'dtype-mismatch');
      expectCode(() => sample.check([x, out3].map(operandOf), ok), 'EINVAL', 'shape-mismatch');
      expectCode(() => sample.check(ops, { ...ok, cols: 9 }), 'EINVAL', 'shape-mismatch');
    } finally {
      for (const t of [x, out, outF, out3]) t.dispose();
    }
  });
});

// Host reference suite (llama2.c run.c forward semantics).
// Plan: the kernels equal hand-computed values where each detail matters (rmsnorm's eps on tiny rows,
// RoPE rotating pairs (2i, 2i+1) with per-pair frequencies, softmax, row-major matvec); the whole forward
// decodes stories260K greedily from "Once upon a time" to the ids llama2.c publishes (control for the
// op-library forward later); the KV cache makes step t depend on steps before it and reset() restores
// the initial state bit for bit; bad tokens, a full cache and a wrong destination are refused without
// changing the position.
import { describe, expect, it } from 'vitest';
import {
  REFERENCE_RMSNORM_EPS,
  createReferenceModel,
  parseLlamaModel,
  parseTokenizer,
  referenceArgmax,
  referenceGreedy,
  referenceMatvec,
  referenceRmsnorm,
  referenceRope,
  referenceRopeFrequencies,
  referenceSoftmax,
} from '../../src/index.js';
import { expectCode } from '../support/expect-error.js';
import { readModelFixture } from '../support/models.js';
import { buildV0 } from './llama-files.js';
import type { HeaderFields } from './llama-files.js';

const stories = await readModelFixture('stories260K.bin');
const tok512 = await readModelFixture('tok512.bin');
const noFixtures = stories === undefined || tok512 === undefined;

/** llama2.c's greedy continuation of "Once upon a time" with stories260K (../shared/models/README.md). */
const KNOWN_CONTINUATION = [432, 383, 286, 261, 376, 298, 315, 421, 395, 317];

const SMALL: HeaderFields = { dim: 16, hiddenDim: 24, nLayers: 2, nHeads: 4, nKvHeads: 2, vocabSize: 40, seqLen: 6 };

describe('reference kernels equal hand-computed values', () => {
  it('[TS-reference-ops] rmsnorm adds eps 1e-5 to the mean square (it dominates a tiny row) and applies the weight', () => {
    const x = Float32Array.of(1e-3, -2e-3, 3e-3, 0);
    const w = Float32Array.of(1, 2, 3, 4);
    const out = new Float32Array(4);
    referenceRmsnorm(out, x, w, 4);
    expect(REFERENCE_RMSNORM_EPS).toBe(1e-5);
    const ms = (1e-6 + 4e-6 + 9e-6 + 0) / 4;
    const scale = 1 / Math.sqrt(ms + 1e-5);
    [1e-3, -2e-3, 3e-3, 0].forEach((v, j) => expect(out[j]).toBeCloseTo(w[j]! * v * scale, 6));
    // Without eps the first value would be 1e-3 / sqrt(3.5e-6) = 0.53; with it, 0.27.
    expect(out[0]).toBeCloseTo(0.2717, 3);
    // In place and at a weight offset (one layer of a stacked weight).
    const stacked = Float32Array.of(9, 9, 9, 9, 1, 2, 3, 4);
    const y = x.slice();
    referenceRmsnorm(y, y, stacked, 4, 4);
    expect([...y]).toEqual([...out]);
  });

  it('[TS-reference-ops] RoPE turns pairs (2i, 2i+1) of each head by pos / 10000^(2i / head_size)', () => {
    const headSize = 4;
    const freq = referenceRopeFrequencies(headSize);
    expect([...freq]).toEqual([1, Math.fround(1 / 100)]);
    // Two heads; each pair holds the unit vector (1, 0), so the result is (cos a, sin a).
    const v = Float32Array.of(1, 0, 1, 0, 1, 0, 1, 0);
    const pos = 3;
    referenceRope(v, 2, headSize, pos, freq);
    for (const head of [0, 1]) {
      expect(v[head * 4 + 0]).toBeCloseTo(Math.cos(3), 6);
      expect(v[head * 4 + 1]).toBeCloseTo(Math.sin(3), 6);
      expect(v[head * 4 + 2]).toBeCloseTo(Math.cos(0.03), 6);
      expect(v[head * 4 + 3]).toBeCloseTo(Math.sin(0.03), 6);
    }
    // A general pair rotates as a complex multiplication; position 0 is the identity.
    const u = Float32Array.of(0.5, -2, 3, 4);
    referenceRope(u, 1, 4, 0, freq);
    expect([...u]).toEqual([0.5, -2, 3, 4]);
    referenceRope(u, 1, 4, 1, freq);
    expect(u[0]).toBeCloseTo(0.5 * Math.cos(1) + 2 * Math.sin(1), 6);
    expect(u[1]).toBeCloseTo(0.5 * Math.sin(1) - 2 * Math.cos(1), 6);
    // head_size 8 (stories260K): the last pair turns by 1e-3 per position.
    expect(referenceRopeFrequencies(8)[3]).toBe(Math.fround(1 / Math.fround(Math.pow(10000, 0.75))));
  });

  it('[TS-reference-ops] softmax, matvec and argmax', () => {
    const s = Float32Array.of(1, 2, 3, 99);
    referenceSoftmax(s, 3);
    const z = Math.exp(-2) + Math.exp(-1) + 1;
    expect(s[0]).toBeCloseTo(Math.exp(-2) / z, 7);
    expect(s[2]).toBeCloseTo(1 / z, 7);
    expect(s[3]).toBe(99); // beyond `size`: untouched
    const out = new Float32Array(2);
    // w [2, 3] row-major at offset 1.
    referenceMatvec(out, Float32Array.of(1, 2, 3), Float32Array.of(7, 1, 0, 0, 0, 1, 0), 3, 2, 1);
    expect([...out]).toEqual([1, 2]);
    expect(referenceArgmax(Float32Array.of(0, 5, 5, -1))).toBe(1);
  });
});

describe('reference forward', () => {
  it.skipIf(noFixtures)('[TS-reference-greedy] stories260K greedily continues "Once upon a time" with llama2.c\'s known ids', () => {
    const model = parseLlamaModel(stories!);
    const tokenizer = parseTokenizer(tok512!, model.config.vocabSize);
    const prompt = tokenizer.encode('Once upon a time');
    expect(prompt).toEqual([1, 403, 407, 261, 378]);
    const ref = createReferenceModel(model);
    const t0 = performance.now();
    const ids = referenceGreedy(ref, prompt, 40);
    const ms = performance.now() - t0;
    expect(ids.slice(0, KNOWN_CONTINUATION.length)).toEqual(KNOWN_CONTINUATION);
    expect(ref.position).toBe(prompt.length + ids.length - 1);
    const text = tokenizer.decodeAll([...prompt, ...ids]);
    expect(text).toMatch(/^Once upon a time, there was a little girl named Lily\. She loved to play outside in the park\./);
    console.log(`reference greedy: ${prompt.length} prompt + ${ids.length} generated tokens in ${ms.toFixed(1)} ms; ids ${ids.join(',')}\n${text}`);
  });

  it.skipIf(noFixtures)('[TS-reference-greedy] reset() restores the initial state bit for bit; dst and onLayer see the same step', () => {
    const model = parseLlamaModel(stories!);
    const ref = createReferenceModel(model, { capacity: 16 });
    const first = [1, 403, 407].map((t) => ref.forward(t));
    ref.reset();
    expect(ref.position).toBe(0);
    const dst = new Float32Array(512);
    const layers: number[] = [];
    const again = ref.forward(1, { dst, onLayer: (l, hidden) => (expect(hidden.length).toBe(64), layers.push(l)) });
    expect(again).toBe(dst);
    expect(new Uint32Array(again.buffer)).toEqual(new Uint32Array(first[0]!.buffer));
    expect(layers).toEqual([0, 1, 2, 3, 4]);
    // The cache matters: the same token at position 1 after a different prefix gives other logits.
    ref.forward(403);
    const after403 = ref.forward(407);
    expect(new Uint32Array(after403.buffer)).toEqual(new Uint32Array(first[2]!.buffer));
    ref.reset();
    ref.forward(1);
    ref.forward(261);
    expect(new Uint32Array(ref.forward(407).buffer)).not.toEqual(new Uint32Array(first[2]!.buffer));
  });

  it('[TS-reference-greedy] bad tokens, a full cache, a wrong destination and a bad capacity are refused; the position does not move', () => {
    const model = parseLlamaModel(buildV0(SMALL));
    const ref = createReferenceModel(model, { capacity: 2 });
    for (const bad of [-1, 40, 1.5, NaN]) expectCode(() => ref.forward(bad), 'EINVAL', 'bad-token');
    expectCode(() => ref.forward(1, { dst: new Float32Array(39) }), 'EINVAL', 'bad-destination');
    expect(ref.position).toBe(0);
    ref.forward(1);
    ref.forward(2);
    expectCode(() => ref.forward(3), 'ENOSPC', 'context-full');
    expect(ref.position).toBe(2);
    for (const capacity of [0, 7, 1.5]) expectCode(() => createReferenceModel(model, { capacity }), 'EINVAL', 'bad-capacity');
    expectCode(() => referenceGreedy(createReferenceModel(model), [], 3), 'EINVAL', 'empty-prompt');
    // Greedy stops at the capacity instead of failing.
    expect(referenceGreedy(createReferenceModel(model, { capacity: 3 }), [1], 10).length).toBeLessThanOrEqual(3);
  });

  it('[TS-reference-greedy] a separate classifier is used instead of the embedding', () => {
    const shared = parseLlamaModel(buildV0(SMALL));
    // Same weights, but wcls = 2 x embedding: every logit doubles exactly (scaling by 2 is exact).
    const separate = parseLlamaModel(buildV0({ ...SMALL, vocabSize: -40 }, (name, i) => (name === 'wcls' ? 2 * shared.weights.tokenEmbedding[i]! : name.startsWith('freq') ? 0 : shared.weights[name as 'wq'][i]!)));
    const a = createReferenceModel(shared).forward(5);
    const b = createReferenceModel(separate).forward(5);
    expect(Array.from(b)).toEqual(Array.from(a, (v) => 2 * v));
  });
});

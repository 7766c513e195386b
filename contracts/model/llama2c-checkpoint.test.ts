// Model-file suite (seed 003 construction validation; DESIGN.md "src/session — Model").
// Plan: the real stories260K checkpoint parses to its documented config and to zero-copy fp32 views in
// llama2.c order (control); synthetic files cover a separate classifier, misaligned input and the
// version 1 export; every corruption (truncated header or weights, trailing bytes, non-positive or
// inconsistent fields, overflowing sizes, NaN/Inf weights, unknown versions) gives its TenonError code and
// reason, produces nothing and leaves the input bytes as they were; seeded properties truncate and
// rewrite headers at random and always get a coded error, never a partial model or a RangeError.
import { describe, expect, it } from 'vitest';
import { LLAMA_TENSOR_NAMES, TenonError, parseLlamaModel } from '../../src/index.js';
import type { LlamaModelFile } from '../../src/index.js';
import { expectCode } from '../support/expect-error.js';
import { fc, fcParams } from '../support/fc.js';
import { readModelFixture } from '../support/models.js';
import { STORIES260K, buildV0, readV0Tensors, tensorSizes, v0Offset, v0ToV1, withHeaderField } from '../session/llama-files.js';
import type { HeaderFields } from '../session/llama-files.js';

const stories = await readModelFixture('stories260K.bin');
const noModel = stories === undefined;

/** A small model with every dimension distinct, so a swapped shape cannot go unnoticed. */
const SMALL: HeaderFields = { dim: 16, hiddenDim: 24, nLayers: 2, nHeads: 4, nKvHeads: 2, vocabSize: 40, seqLen: 6 };
const SMALL_SEPARATE: HeaderFields = { ...SMALL, vocabSize: -40 };

/** Parses and expects a coded failure; the input must be byte-identical afterwards. */
function expectRejected(bytes: Uint8Array, code: TenonError['code'], reason: string): TenonError {
  const before = bytes.slice();
  let produced: LlamaModelFile | undefined;
  const err = expectCode(() => {
    produced = parseLlamaModel(bytes);
  }, code, reason);
  expect(produced).toBeUndefined();
  expect(firstDifference(bytes, before)).toBe(-1);
  return err;
}

/** Index of the first element where a and b differ (Object.is), or -1; fast on megabyte arrays. */
function firstDifference(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) return Math.min(a.length, b.length);
  for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) return i;
  return -1;
}

function expectedShapes(h: HeaderFields): Record<string, number[]> {
  const headSize = h.dim / h.nHeads;
  const kv = headSize * h.nKvHeads;
  const V = Math.abs(h.vocabSize);
  const L = h.nLayers;
  return {
    tokenEmbedding: [V, h.dim], rmsAtt: [L, h.dim], wq: [L, h.dim, h.dim], wk: [L, kv, h.dim], wv: [L, kv, h.dim], wo: [L, h.dim, h.dim],
    rmsFfn: [L, h.dim], w1: [L, h.hiddenDim, h.dim], w2: [L, h.dim, h.hiddenDim], w3: [L, h.hiddenDim, h.dim], rmsFinal: [h.dim], wcls: [V, h.dim],
  };
}

/** Every weight equals what an independent DataView reader finds in the legacy file. */
function expectSameWeights(model: LlamaModelFile, file: Uint8Array): void {
  const { tensors } = readV0Tensors(file);
  for (const name of LLAMA_TENSOR_NAMES) {
    const expected = name === 'wcls' && model.sharedClassifier ? tensors['tokenEmbedding']! : tensors[name]!;
    expect(firstDifference(model.weights[name], expected), name).toBe(-1);
  }
}

describe('loading a llama2.c checkpoint: header, views and order', () => {
  it.skipIf(noModel)('[TS-load-header][TS-load-views] stories260K parses to its documented config and zero-copy views of the file', () => {
    const file = stories!;
    const before = file.slice();
    const model = parseLlamaModel(file.buffer);
    expect(model.format).toBe('llama2c-v0');
    expect(model.config).toEqual({ dim: 64, hiddenDim: 172, nLayers: 5, nHeads: 8, nKvHeads: 4, vocabSize: 512, seqLen: 512, headSize: 8, kvDim: 32 });
    expect(model.sharedClassifier).toBe(true);
    expect(model.zeroCopy).toBe(true);
    expect(model.byteLength).toBe(1_056_540);
    expect(model.weights.wcls).toBe(model.weights.tokenEmbedding);
    expect(model.tensors.map((t) => t.name)).toEqual(LLAMA_TENSOR_NAMES.filter((n) => n !== 'wcls'));
    const shapes = expectedShapes(STORIES260K);
    for (const t of model.tensors) {
      expect(t.shape, t.name).toEqual(shapes[t.name]);
      const w = model.weights[t.name];
      expect(w.buffer).toBe(file.buffer);
      expect(w.byteOffset).toBe(t.byteOffset);
      expect(w.length).toBe(t.elements);
    }
    expect(model.tensors[0]!.byteOffset).toBe(28);
    expectSameWeights(model, file);
    expect(firstDifference(file, before)).toBe(-1);
  });

  it('[TS-load-views] a negative vocab_size means a separate classifier stored after the RoPE tables', () => {
    const file = buildV0(SMALL_SEPARATE);
    const model = parseLlamaModel(file);
    expect(model.sharedClassifier).toBe(false);
    expect(model.config.vocabSize).toBe(40);
    expect(model.weights.wcls).not.toBe(model.weights.tokenEmbedding);
    expect(model.tensors.map((t) => t.name)).toEqual([...LLAMA_TENSOR_NAMES]);
    const wcls = model.tensors.find((t) => t.name === 'wcls')!;
    expect(wcls.byteOffset).toBe(v0Offset(SMALL_SEPARATE, 'wcls', 0));
    expect(wcls.byteOffset + 4 * wcls.elements).toBe(file.byteLength);
    expectSameWeights(model, file);
  });

  it('[TS-load-views] a view that starts off a 4-byte boundary is copied once, with the same values', () => {
    const file = buildV0(SMALL);
    const holder = new Uint8Array(file.byteLength + 1);
    holder.set(file, 1);
    const model = parseLlamaModel(holder.subarray(1));
    expect(model.zeroCopy).toBe(false);
    expect(model.weights.wq.buffer).not.toBe(holder.buffer);
    expectSameWeights(model, file);
    // Aligned views of a larger buffer stay zero-copy.
    const aligned = new Uint8Array(file.byteLength + 8);
    aligned.set(file, 4);
    const view = parseLlamaModel(aligned.subarray(4, 4 + file.byteLength));
    expect(view.zeroCopy).toBe(true);
    expect(view.weights.wq.buffer).toBe(aligned.buffer);
  });

  it('[TS-load-views] a SharedArrayBuffer source gives views of that SharedArrayBuffer', () => {
    const file = buildV0(SMALL);
    const shared = new Uint8Array(new SharedArrayBuffer(file.byteLength));
    shared.set(file);
    const model = parseLlamaModel(shared.buffer);
    expect(model.weights.w2.buffer).toBe(shared.buffer);
    expectSameWeights(model, file);
  });

  it('[TS-load-views] RoPE tables are skipped, not read: odd values there do not matter', () => {
    const file = buildV0(SMALL, (name, i) => (name === 'freqCisReal' ? NaN : name === 'freqCisImag' ? Infinity : i * 1e-3));
    const model = parseLlamaModel(file);
    expect(model.weights.rmsFinal[3]).toBeCloseTo(3e-3, 6);
  });

  it('[TS-load-header] a non-array argument is EINVAL bad-argument', () => {
    expectCode(() => parseLlamaModel(42 as unknown as ArrayBuffer), 'EINVAL', 'bad-argument');
  });
});

describe('corrupt checkpoints: each fails with its code and reason, produces nothing and leaves the input alone', () => {
  const FIELDS = ['dim', 'hiddenDim', 'nLayers', 'nHeads', 'nKvHeads', 'vocabSize', 'seqLen'] as const;

  it('[TS-load-length] a header cut short (0, 1, 4, 27 bytes) is EINVAL truncated', () => {
    const file = buildV0(SMALL);
    for (const n of [0, 1, 4, 27]) expectRejected(file.subarray(0, n), 'EINVAL', 'truncated');
    // Control: the complete file loads.
    expect(parseLlamaModel(file).config.dim).toBe(16);
  });

  it('[TS-load-length] weights cut short by 1 byte, 4 bytes or a whole tensor are EINVAL truncated; extra bytes are trailing-bytes', () => {
    const file = buildV0(SMALL);
    const n = file.byteLength;
    for (const cut of [1, 4, 4 * tensorSizes(SMALL)['rmsFinal']!, n - 28]) {
      const err = expectRejected(file.subarray(0, n - cut), 'EINVAL', 'truncated');
      expect(err.ids).toEqual({ expected: n, actual: n - cut });
    }
    for (const extra of [1, 4, 4096]) {
      const longer = new Uint8Array(n + extra);
      longer.set(file);
      expectRejected(longer, 'EINVAL', 'trailing-bytes');
    }
    // A shared-classifier file that claims a separate one is short by exactly the classifier.
    expectRejected(withHeaderField(file, 5, -40), 'EINVAL', 'truncated');
    // A separate-classifier file that claims a shared one has trailing bytes.
    expectRejected(withHeaderField(buildV0(SMALL_SEPARATE), 5, 40), 'EINVAL', 'trailing-bytes');
  });

  it('[TS-load-header] zero or negative dims, layers, heads or seq_len (and a zero vocab) are EINVAL bad-field naming the field', () => {
    const file = buildV0(SMALL);
    FIELDS.forEach((field, index) => {
      const values = field === 'vocabSize' ? [0] : [0, -1, -2_147_483_648];
      for (const value of values) {
        const err = expectRejected(withHeaderField(file, index, value), 'EINVAL', 'bad-field');
        expect(err.ids).toEqual({ field, value: field === 'vocabSize' ? 0 : value });
      }
    });
  });

  it('[TS-load-header] heads that do not divide dim, kv heads that do not divide heads or exceed them, and odd head sizes are rejected', () => {
    const file = buildV0(SMALL);
    expectRejected(withHeaderField(file, 3, 3), 'EINVAL', 'inconsistent-heads'); // 16 % 3
    expectRejected(withHeaderField(file, 4, 3), 'EINVAL', 'inconsistent-heads'); // 4 % 3
    expectRejected(withHeaderField(file, 4, 8), 'EINVAL', 'inconsistent-heads'); // kv heads > heads
    // dim 16 over 16 heads: head size 1 cannot be rotated in pairs.
    expectRejected(withHeaderField(withHeaderField(file, 3, 16), 4, 16), 'EINVAL', 'odd-head-size');
  });

  it('[TS-load-length] sizes past exact integer range are EOVERFLOW; huge but exact sizes are truncated, with no allocation attempted', () => {
    const file = buildV0(SMALL);
    // dim 2^30 with 2^29 heads (head size 2) and 2^31-1 layers: wq alone is ~2^91 elements.
    let huge = withHeaderField(file, 0, 2 ** 30);
    huge = withHeaderField(huge, 3, 2 ** 29);
    huge = withHeaderField(huge, 4, 2 ** 29);
    huge = withHeaderField(huge, 2, 2 ** 31 - 1);
    const err = expectRejected(huge, 'EOVERFLOW', 'size-overflow');
    expect(err).toBeInstanceOf(TenonError);
    // 2^14 dim, 1024 layers: ~2^40 bytes of weights, exact, far beyond the file: truncated.
    let big = withHeaderField(file, 0, 2 ** 14);
    big = withHeaderField(big, 2, 1024);
    expectRejected(big, 'EINVAL', 'truncated');
    // hidden_dim and seq_len at int32 max with a small dim: still exact, still truncated.
    expectRejected(withHeaderField(withHeaderField(file, 1, 2 ** 31 - 1), 6, 2 ** 31 - 1), 'EINVAL', 'truncated');
  });

  it('[TS-load-finite] a NaN or infinite weight is EINVAL non-finite naming the tensor and index', () => {
    const cases: [string, number, number, HeaderFields][] = [
      ['tokenEmbedding', 0, NaN, SMALL],
      ['wq', 37, Infinity, SMALL],
      ['w1', 123, -Infinity, SMALL],
      ['rmsFinal', 15, NaN, SMALL],
      ['wcls', 639, Infinity, SMALL_SEPARATE],
    ];
    for (const [tensor, index, value, h] of cases) {
      const file = buildV0(h);
      new DataView(file.buffer).setFloat32(v0Offset(h, tensor, index), value, true);
      const err = expectRejected(file, 'EINVAL', 'non-finite');
      expect(err.ids).toEqual({ tensor, index });
    }
    // A signalling-NaN bit pattern is caught as well.
    const file = buildV0(SMALL);
    new DataView(file.buffer).setUint32(v0Offset(SMALL, 'w3', 5), 0x7f800001, true);
    expect(expectRejected(file, 'EINVAL', 'non-finite').ids).toEqual({ tensor: 'w3', index: 5 });
    // The scan can be turned off explicitly; then the value is just there.
    expect(Number.isNaN(parseLlamaModel(file, { checkFinite: false }).weights.w3[5])).toBe(true);
  });

  it.skipIf(noModel)('[TS-load-finite] a NaN in the last layer of stories260K w2 is found', () => {
    const file = stories!.slice();
    new DataView(file.buffer).setFloat32(v0Offset(STORIES260K, 'w2', 4 * 64 * 172 + 99), NaN, true);
    expect(expectRejected(file, 'EINVAL', 'non-finite').ids).toEqual({ tensor: 'w2', index: 4 * 64 * 172 + 99 });
  });
});

describe('version 1 ("ak42") exports load; other versions are refused', () => {
  it('[TS-load-version] the version 1 export of a shared-classifier model loads to the same config and weights', () => {
    const file = buildV0(SMALL);
    const v1 = parseLlamaModel(v0ToV1(file));
    const v0 = parseLlamaModel(file);
    expect(v1.format).toBe('llama2c-v1');
    expect(v1.config).toEqual(v0.config);
    expect(v1.sharedClassifier).toBe(true);
    expect(v1.zeroCopy).toBe(true);
    expect(v1.tensors.map((t) => t.name)).toEqual(v0.tensors.map((t) => t.name));
    expect(v1.tensors.find((t) => t.name === 'rmsAtt')!.byteOffset).toBe(256);
    expectSameWeights(v1, file);
  });

  it('[TS-load-version] the version 1 export of a separate-classifier model loads with its classifier', () => {
    const file = buildV0(SMALL_SEPARATE);
    const v1 = parseLlamaModel(v0ToV1(file));
    expect(v1.sharedClassifier).toBe(false);
    expectSameWeights(v1, file);
  });

  it.skipIf(noModel)('[TS-load-version] stories260K re-exported as version 1 loads to the same weights', () => {
    const v1 = parseLlamaModel(v0ToV1(stories!));
    expect(v1.config).toEqual(parseLlamaModel(stories!).config);
    expectSameWeights(v1, stories!);
  });

  it('[TS-load-version] version 2 (quantized) and unknown versions are ENOTSUP unsupported-version', () => {
    const file = buildV0(SMALL);
    for (const version of [2, 0, 3, -1]) {
      const err = expectRejected(v0ToV1(file, { version }), 'ENOTSUP', 'unsupported-version');
      expect(err.ids).toEqual({ version });
    }
  });

  it('[TS-load-header] a version 1 header with a bad shared flag, non-zero padding, negative vocab or cut short is rejected', () => {
    const file = buildV0(SMALL);
    expectRejected(v0ToV1(file, { sharedFlag: 2 }), 'EINVAL', 'bad-header');
    expectRejected(v0ToV1(file, { padByte: 1 }), 'EINVAL', 'bad-header');
    const negative = v0ToV1(file);
    new DataView(negative.buffer).setInt32(8 + 5 * 4, -40, true);
    expectRejected(negative, 'EINVAL', 'bad-field');
    // A flag that disagrees with the payload: the length no longer matches.
    expectRejected(v0ToV1(file, { sharedFlag: 0 }), 'EINVAL', 'truncated');
    const v1 = v0ToV1(file);
    for (const n of [4, 7, 8, 100, 255]) expectRejected(v1.subarray(0, n), 'EINVAL', 'truncated');
  });
});

describe('properties: any truncation or header rewrite gives a coded error, never a partial model', () => {
  /** Asserts `fn` either returns a model or throws a TenonError with one of `codes` (never RangeError etc.). */
  function codedOrModel(fn: () => LlamaModelFile, codes: readonly string[]): LlamaModelFile | undefined {
    try {
      return fn();
    } catch (err) {
      if (!(err instanceof TenonError)) throw err;
      expect(codes).toContain(err.code);
      return undefined;
    }
  }

  it('[TS-load-no-partial] every strict prefix of a synthetic checkpoint (v0 and v1, shared and separate) is EINVAL truncated', () => {
    const files = [buildV0(SMALL), buildV0(SMALL_SEPARATE), v0ToV1(buildV0(SMALL)), v0ToV1(buildV0(SMALL_SEPARATE))];
    fc.assert(
      fc.property(fc.nat(files.length - 1), fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }), (which, fraction) => {
        const file = files[which]!;
        const cut = Math.floor(fraction * file.byteLength);
        expectRejected(file.subarray(0, cut), 'EINVAL', 'truncated');
      }),
      fcParams(300),
    );
  });

  it.skipIf(noModel)('[TS-load-no-partial] every strict prefix of stories260K is EINVAL truncated', () => {
    const file = stories!;
    fc.assert(
      fc.property(fc.nat(file.byteLength - 1), (cut) => {
        expectRejected(file.subarray(0, cut), 'EINVAL', 'truncated');
      }),
      fcParams(200),
    );
  });

  it('[TS-load-no-partial] a header rewritten with arbitrary int32 fields loads only when it describes the file exactly', () => {
    const file = buildV0(SMALL);
    fc.assert(
      fc.property(fc.array(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), { minLength: 7, maxLength: 7 }), fc.nat(6), (values, keep) => {
        // Keep one original field, so some rewrites stay close to a valid header.
        let bytes = file;
        values.forEach((v, i) => {
          if (i !== keep) bytes = withHeaderField(bytes, i, v);
        });
        const model = codedOrModel(() => parseLlamaModel(bytes), ['EINVAL', 'EOVERFLOW', 'ENOTSUP']);
        if (model !== undefined) {
          const end = Math.max(...model.tensors.map((t) => t.byteOffset + 4 * t.elements));
          expect(end).toBeLessThanOrEqual(bytes.byteLength);
        }
      }),
      fcParams(300),
    );
  });

  it('[TS-load-no-partial] small headers with random fields over random payload lengths: coded error or an exactly sized model', () => {
    fc.assert(
      fc.property(
        fc.record({
          dim: fc.integer({ min: -2, max: 12 }),
          hiddenDim: fc.integer({ min: -2, max: 12 }),
          nLayers: fc.integer({ min: -1, max: 3 }),
          nHeads: fc.integer({ min: -1, max: 6 }),
          nKvHeads: fc.integer({ min: -1, max: 6 }),
          vocabSize: fc.integer({ min: -6, max: 6 }),
          seqLen: fc.integer({ min: -1, max: 4 }),
        }),
        fc.nat(4096),
        (h, payload) => {
          const bytes = new Uint8Array(28 + payload);
          const view = new DataView(bytes.buffer);
          [h.dim, h.hiddenDim, h.nLayers, h.nHeads, h.nKvHeads, h.vocabSize, h.seqLen].forEach((v, i) => view.setInt32(4 * i, v, true));
          const model = codedOrModel(() => parseLlamaModel(bytes), ['EINVAL', 'EOVERFLOW']);
          if (model !== undefined) {
            const sizes = tensorSizes(h);
            const total = Object.entries(sizes).reduce((n, [name, size]) => n + (name === 'wcls' && h.vocabSize > 0 ? 0 : size), 0);
            expect(28 + 4 * total).toBe(bytes.byteLength);
          }
        },
      ),
      fcParams(500),
    );
  });
});

// Lowering kinds (src/model/lowering): F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K, Q4_1, Q5_0, Q5_1.
// Plan:
// (1) geometry: each kind's block geometry is ggml's (the GGML type table agrees); valid shapes give the
//     rows, byte counts and packed sizes computed by hand; bad ranks, dimensions, rows off the block
//     grid, wrong byte counts and overflowing sizes are refused with EINVAL and their reason, and a
//     refused call writes nothing; unknown kinds are ENOTSUP;
// (2) exact dequantization of hand-built blocks against values computed by hand from the format
//     (nibble order, the 6-bit scale/min split, the Q6_K high-bit positions, the Q4_1/Q5_1 min, the
//     Q5_0/Q5_1 fifth bit of each element in qh, f16 subnormals);
// (3) repacking: the packed rows decode (through the host twins' decoder) to exactly the GGUF reference
//     values for random blocks of every kind, are never more than 2 bytes per row larger than the GGUF
//     rows (no f32 copy), split by rows into the same words, and leave the rest of a destination alone;
// (4) real fixtures: every matrix of tiny-llama-{F16,Q8_0,Q4_0,Q4_K_M,Q6_K}.gguf dequantizes to within
//     the error its kind allows of the same tensor in tiny-llama-f32.gguf (bounds below, per block). No
//     fixture holds Q4_1, Q5_0 or Q5_1: those kinds are covered by (1)-(3) only.
import { describe, expect, it } from 'vitest';
import { GGML_TYPES, LOWERING_KINDS, LOWERING_TYPE_NAMES, loweringKind, loweringKindById, parseGguf, tensorGeometry } from '../../src/model/index.js';
import type { GgufFile, GgufTensorInfo, LoweringKind, LoweringKindName } from '../../src/model/index.js';
import { halfToFloat } from '../../src/submit/ops/index.js';
import { randomGgufRows } from '../ops/qmatmul-blocks.js';
import { expectCode } from '../support/expect-error.js';
import { fc, fcParams } from '../support/fc.js';
import { writeGguf } from '../support/gguf-writer.js';
import { readGgufFixture } from '../support/gguf-fixtures.js';
import type { GgufFixture } from '../support/gguf-fixtures.js';

const KINDS = Object.keys(LOWERING_KINDS) as LoweringKindName[];

function bytesOf(...parts: (number[] | Uint8Array)[]): Uint8Array {
  return Uint8Array.from(parts.flatMap((p) => Array.from(p)));
}

function u16le(v: number): number[] {
  return [v & 0xff, (v >> 8) & 0xff];
}

function dequant(kind: LoweringKind, src: Uint8Array, elements: number): Float32Array {
  const out = new Float32Array(elements);
  kind.dequantize(src, out);
  return out;
}

describe('lowering kinds: geometry and validation', () => {
  it('[MD-lower-geometry] every kind has ggml block geometry and type id (the GGML type table agrees)', () => {
    expect(KINDS.sort()).toEqual([...LOWERING_TYPE_NAMES].sort());
    const expected: Record<LoweringKindName, [id: number, elements: number, bytes: number]> = {
      F32: [0, 1, 4],
      F16: [1, 1, 2],
      BF16: [30, 1, 2],
      Q8_0: [8, 32, 34],
      Q4_0: [2, 32, 18],
      Q4_K: [12, 256, 144],
      Q6_K: [14, 256, 210],
      Q4_1: [3, 32, 20],
      Q5_0: [6, 32, 22],
      Q5_1: [7, 32, 24],
    };
    for (const name of KINDS) {
      const kind = LOWERING_KINDS[name];
      expect([kind.ggmlTypeId, kind.blockElements, kind.blockBytes], name).toEqual(expected[name]);
      const ggml = GGML_TYPES.find((t) => t.name === name)!;
      expect([ggml.id, ggml.blockElements, ggml.blockBytes], name).toEqual(expected[name]);
      expect(loweringKind(name)).toBe(kind);
      expect(loweringKindById(kind.ggmlTypeId)).toBe(kind);
    }
  });

  it('[MD-lower-geometry] valid shapes: rows, GGUF bytes and packed words as computed by hand', () => {
    const g = (name: LoweringKindName, shape: number[], bytes?: number) => {
      const r = loweringKind(name).geometry(shape, bytes);
      return [r.rows, r.rowElements, r.blocksPerRow, r.rowBytes, r.byteLength, r.packedRowWords, r.packedWords, r.packedBytes];
    };
    // Q8_0 [3, 64]: 2 blocks of 34 bytes per row; packed 16 quant words + 1 word of two f16 scales.
    expect(g('Q8_0', [3, 64], 204)).toEqual([3, 64, 2, 68, 204, 17, 51, 204]);
    // Q8_0 [96]: 3 blocks (102 bytes); packed 24 quant words + 2 scale words (the last half is padding).
    expect(g('Q8_0', [96])).toEqual([1, 96, 3, 102, 102, 26, 26, 104]);
    // Q4_0 [2, 3, 32]: 6 rows of one 18-byte block; packed 4 quant words + 1 scale word.
    expect(g('Q4_0', [2, 3, 32])).toEqual([6, 32, 1, 18, 108, 5, 30, 120]);
    // Q4_K [4, 512]: 2 super-blocks of 144 bytes; packed 64 quant + 6 scale + 2 d/dmin words = 288 bytes.
    expect(g('Q4_K', [4, 512], 1152)).toEqual([4, 512, 2, 288, 1152, 72, 288, 1152]);
    // Q6_K [256]: one 210-byte super-block; packed 32 ql + 16 qh + 4 scale words + 1 word for d.
    expect(g('Q6_K', [256])).toEqual([1, 256, 1, 210, 210, 53, 53, 212]);
    // Q4_1 [2, 64]: 2 blocks of 20 bytes per row; packed 8 quant words + 2 d/m words (as long as GGUF).
    expect(g('Q4_1', [2, 64], 80)).toEqual([2, 64, 2, 40, 80, 10, 20, 80]);
    // Q5_0 [96]: 3 blocks of 22 bytes; packed 12 quant + 3 qh words + 2 words of f16 scales (2 bytes over).
    expect(g('Q5_0', [96], 66)).toEqual([1, 96, 3, 66, 66, 17, 17, 68]);
    // Q5_0 [2, 64]: 2 blocks (44 bytes) per row; 8 quant + 2 qh + 1 scale word = 44 bytes, no padding.
    expect(g('Q5_0', [2, 64])).toEqual([2, 64, 2, 44, 88, 11, 22, 88]);
    // Q5_1 [3, 32]: one 24-byte block per row; packed 4 quant + 1 qh + 1 d/m word.
    expect(g('Q5_1', [3, 32], 72)).toEqual([3, 32, 1, 24, 72, 6, 18, 72]);
    // F16 [5, 3]: odd rows are padded to a whole word.
    expect(g('F16', [5, 3], 30)).toEqual([5, 3, 3, 6, 30, 2, 10, 40]);
    expect(g('BF16', [2, 8])).toEqual([2, 8, 8, 16, 32, 4, 8, 32]);
    expect(g('F32', [7, 9])).toEqual([7, 9, 9, 36, 252, 9, 63, 252]);
  });

  it('[MD-lower-geometry] bad shapes, rows off the block grid, wrong byte counts and overflow are EINVAL with their reason', () => {
    const q8 = loweringKind('Q8_0');
    const q4k = loweringKind('Q4_K');
    expectCode(() => q8.geometry([]), 'EINVAL', 'bad-shape');
    expectCode(() => q8.geometry([1, 1, 1, 1, 32]), 'EINVAL', 'bad-shape');
    for (const bad of [0, -32, 1.5, Number.NaN, 2 ** 53]) expectCode(() => q8.geometry([2, bad]), 'EINVAL', 'bad-shape');
    expectCode(() => q8.geometry([0, 32]), 'EINVAL', 'bad-shape');
    expectCode(() => q8.geometry([4, 48]), 'EINVAL', 'block-misaligned');
    expectCode(() => q4k.geometry([4, 288]), 'EINVAL', 'block-misaligned');
    expectCode(() => loweringKind('Q6_K').geometry([2, 128]), 'EINVAL', 'block-misaligned');
    // Qwen2.5-0.5B's 896-wide rows are no whole number of Q4_K super-blocks but are of Q5_0 blocks.
    expectCode(() => q4k.geometry([4864, 896]), 'EINVAL', 'block-misaligned');
    expect(loweringKind('Q5_0').geometry([4864, 896], 4864 * 28 * 22).blocksPerRow).toBe(28);
    expectCode(() => loweringKind('Q5_1').geometry([2, 48]), 'EINVAL', 'block-misaligned');
    expectCode(() => loweringKind('Q4_1').geometry([2, 32], 41), 'EINVAL', 'byte-count');
    expectCode(() => q8.geometry([3, 64], 203), 'EINVAL', 'byte-count');
    expectCode(() => q8.geometry([3, 64], 205), 'EINVAL', 'byte-count');
    expectCode(() => q4k.geometry([2 ** 30, 2 ** 30, 256]), 'EINVAL', 'too-large');
    // The boundary itself is fine.
    expect(q8.geometry([3, 32], 102).byteLength).toBe(102);
    // A GGUF tensor info lists the row length first (ggml order).
    const info = { name: 'w', shape: [64, 3], type: { name: 'Q8_0' }, byteLength: 204 };
    expect(tensorGeometry(info).shape).toEqual([3, 64]);
    expectCode(() => tensorGeometry({ ...info, byteLength: 206 }), 'EINVAL', 'byte-count');
    expectCode(() => tensorGeometry({ ...info, shape: [3, 64] }), 'EINVAL', 'block-misaligned');
  });

  it('[MD-lower-geometry] dequantize/repack refuse wrong byte counts and short destinations, writing nothing', () => {
    for (const name of KINDS) {
      const kind = LOWERING_KINDS[name];
      const k = kind.blockElements * 2;
      const src = randomGgufRows(name, 2, k, 5);
      const out = new Float32Array(2 * k).fill(-7);
      expectCode(() => kind.dequantize(src.subarray(1), out), 'EINVAL', 'byte-count');
      if (kind.blockElements > 1) expectCode(() => kind.dequantize(src, new Float32Array(2 * k + 1)), 'EINVAL', 'block-misaligned');
      expect(out.every((v) => v === -7), name).toBe(true);
      const words = kind.geometry([2, k]).packedWords;
      const dst = new Uint32Array(words - 1).fill(0xdeadbeef);
      expectCode(() => kind.repack(src, k, dst), 'EINVAL', 'bad-destination');
      expectCode(() => kind.repack(src.subarray(0, src.length - 1), k, new Uint32Array(words)), 'EINVAL', 'byte-count');
      expect(dst.every((v) => v === 0xdeadbeef), name).toBe(true);
    }
  });

  it('[MD-lower-geometry] a GGUF file with llama.cpp\'s fallback kinds for 896-wide rows (Q4_1, Q5_0, Q5_1, Q8_0) parses, and each tensor lowers losslessly', async () => {
    // What Qwen2.5-0.5B's Q4_K_M file holds where a row of 896 is no whole number of 256-element
    // super-blocks: Q4_K falls back to Q5_0, Q5_K to Q5_1, Q6_K to Q8_0 (Q4_1 completes the legacy set).
    const width = 896;
    const kinds = ['Q4_1', 'Q5_0', 'Q5_1', 'Q8_0'] as const;
    const data = kinds.map((kind, i) => randomGgufRows(kind, 3, width, 40 + i));
    const { bytes } = writeGguf({ tensors: kinds.map((kind, i) => ({ name: `w.${kind}`, shape: [width, 3], type: kind, data: data[i]! })) });
    const file = await parseGguf(bytes);
    for (const [i, kind] of kinds.entries()) {
      const info = file.tensor(`w.${kind}`);
      const g = tensorGeometry(info);
      expect([g.kind, g.rows, g.rowElements, g.blocksPerRow], kind).toEqual([kind, 3, width, width / 32]);
      const raw = await file.readTensor(info);
      expect(Array.from(raw), kind).toEqual(Array.from(data[i]!));
      const lowering = loweringKind(kind);
      const want = dequant(lowering, raw, 3 * width);
      const got = new Float32Array(3 * width);
      lowering.dequantizePacked(lowering.repack(raw, width), width, got);
      expect(new Uint32Array(got.buffer), kind).toEqual(new Uint32Array(want.buffer));
    }
  });

  it('[MD-lower-geometry] kinds tenon does not lower are ENOTSUP naming the type', () => {
    expectCode(() => loweringKind('Q5_K'), 'ENOTSUP', 'unsupported-tensor-type');
    expectCode(() => loweringKind('toString'), 'ENOTSUP', 'unsupported-tensor-type');
    expectCode(() => loweringKindById(13), 'ENOTSUP', 'unsupported-tensor-type');
    expectCode(() => tensorGeometry({ name: 'w', shape: [256, 4], type: { name: 'Q5_K' }, byteLength: 704 }), 'ENOTSUP', 'unsupported-tensor-type');
  });
});

describe('lowering kinds: exact dequantization of hand-built blocks', () => {
  it('[MD-lower-dequant] F32, F16 (subnormal, max, 1/3) and BF16 bit patterns', () => {
    const f32 = new Uint8Array(new Float32Array([1.5, -2.25, 3e-39]).buffer);
    expect(Array.from(dequant(loweringKind('F32'), f32, 3))).toEqual([1.5, -2.25, Math.fround(3e-39)]);
    const halves = [0x3c00, 0xc000, 0x0001, 0x7bff, 0x3555, 0x8400];
    expect(Array.from(dequant(loweringKind('F16'), bytesOf(...halves.map(u16le)), 6))).toEqual([1, -2, 2 ** -24, 65504, 0.333251953125, -(2 ** -14)]);
    expect(halves.map(halfToFloat)).toEqual([1, -2, 2 ** -24, 65504, 0.333251953125, -(2 ** -14)]);
    expect(Array.from(dequant(loweringKind('BF16'), bytesOf(...[0x3f80, 0xc040, 0x3e80].map(u16le)), 3))).toEqual([1, -3, 0.25]);
  });

  it('[MD-lower-dequant] Q8_0: d * int8, d an f16 (0.5, then a subnormal)', () => {
    const q = Array.from({ length: 32 }, (_, j) => j * 8 - 128);
    const qs = q.map((v) => v & 0xff);
    const out = dequant(loweringKind('Q8_0'), bytesOf(u16le(0x3800), qs, u16le(0x0002), qs), 64);
    expect(Array.from(out.subarray(0, 32))).toEqual(q.map((v) => v * 0.5));
    expect(Array.from(out.subarray(32))).toEqual(q.map((v) => Math.fround(v * 2 ** -23)));
    expect([out[0], out[14], out[31]]).toEqual([-64, -8, 60]);
  });

  it('[MD-lower-dequant] Q4_0: byte j holds element j (low nibble) and j + 16 (high nibble), value (q - 8) * d', () => {
    // qs[j] = j | (15 - j) << 4, d = 2.
    const qs = Array.from({ length: 16 }, (_, j) => j | ((15 - j) << 4));
    const out = dequant(loweringKind('Q4_0'), bytesOf(u16le(0x4000), qs), 32);
    expect([out[0], out[1], out[15], out[16], out[17], out[31]]).toEqual([-16, -14, 14, 14, 12, -16]);
    expect(Array.from(out)).toEqual(Array.from({ length: 32 }, (_, e) => (e < 16 ? (e - 8) * 2 : (23 - e) * 2)));
  });

  it('[MD-lower-dequant] Q4_1: byte j holds element j (low nibble) and j + 16 (high nibble), value q * d + m', () => {
    // qs[j] = j | (15 - j) << 4, d = 2, m = -3.5 (f16 0xc300).
    const qs = Array.from({ length: 16 }, (_, j) => j | ((15 - j) << 4));
    const out = dequant(loweringKind('Q4_1'), bytesOf(u16le(0x4000), u16le(0xc300), qs), 32);
    // element 0: 0 x 2 - 3.5; element 1: 1 x 2 - 3.5; element 15: 15 x 2 - 3.5; element 16: high nibble
    // of byte 0 (15); element 17: 14; element 31: high nibble of byte 15 (0).
    expect([out[0], out[1], out[15], out[16], out[17], out[31]]).toEqual([-3.5, -1.5, 26.5, 26.5, 24.5, -3.5]);
    expect(Array.from(out)).toEqual(Array.from({ length: 32 }, (_, e) => (e < 16 ? e : 31 - e) * 2 - 3.5));
  });

  // Q5_0/Q5_1 blocks: qs[j] = j | (15 - j) << 4 (element e has low bits e for e < 16, 31 - e above), and
  // fifth bits set for elements 0, 3, 9, 16, 17, 26 and 31: qh bytes 0x09 (bits 0, 3), 0x02 (bit 9),
  // 0x03 (bits 16, 17), 0x84 (bits 26, 31).
  const Q5_QS = Array.from({ length: 16 }, (_, j) => j | ((15 - j) << 4));
  const Q5_QH = [0x09, 0x02, 0x03, 0x84];
  const Q5_SPOTS = [0, 1, 3, 9, 15, 16, 17, 18, 26, 30, 31];
  /** The 5-bit quant of element e of those blocks, from the qh bytes (byte e / 8, bit e % 8). */
  const q5Quant = (qh: number[], e: number): number => (e < 16 ? e : 31 - e) | (((qh[e >> 3]! >> (e & 7)) & 1) << 4);

  it('[MD-lower-q5-bits] Q5_0: element e takes its fifth bit from bit e of the little-endian qh word, value (q - 16) * d', () => {
    // Block 0: d = 0.5; block 1: d = -2 (f16 0xc000) with the qh bytes reversed (0x84, 0x03, 0x02, 0x09:
    // fifth bits 2, 7, 8, 9, 17, 24, 27).
    const qhB = [...Q5_QH].reverse();
    const out = dequant(loweringKind('Q5_0'), bytesOf(u16le(0x3800), Q5_QH, Q5_QS, u16le(0xc000), qhB, Q5_QS), 64);
    // Worked by hand: element 0: 0 | 16 -> 0; 1: 1 -> -7.5; 3: 3 | 16 -> 1.5; 9: 9 | 16 -> 4.5; 15: 15 ->
    // -0.5; 16: 15 | 16 -> 7.5; 17: 14 | 16 -> 7; 18: 13 -> -1.5; 26: 5 | 16 -> 2.5; 30: 1 -> -7.5; 31: 0 | 16 -> 0.
    expect(Q5_SPOTS.map((e) => out[e])).toEqual([0, -7.5, 1.5, 4.5, -0.5, 7.5, 7, -1.5, 2.5, -7.5, 0]);
    // Block 1: element 2: 2 | 16 -> -2 x 2 = -4; 16: 15 -> -2 x -1 = 2; 17: 14 | 16 -> -28; 24: 7 | 16 -> -14.
    expect([out[32 + 2], out[32 + 16], out[32 + 17], out[32 + 24]]).toEqual([-4, 2, -28, -14]);
    expect(Array.from(out)).toEqual([
      ...Array.from({ length: 32 }, (_, e) => (q5Quant(Q5_QH, e) - 16) * 0.5),
      ...Array.from({ length: 32 }, (_, e) => (q5Quant(qhB, e) - 16) * -2),
    ]);
  });

  it('[MD-lower-q5-bits] Q5_1: the same fifth bits, value q * d + m', () => {
    // d = 0.25 (f16 0x3400), m = 1 (0x3c00).
    const out = dequant(loweringKind('Q5_1'), bytesOf(u16le(0x3400), u16le(0x3c00), Q5_QH, Q5_QS), 32);
    // element 0: 16 -> 5; 1: 1 -> 1.25; 3: 19 -> 5.75; 9: 25 -> 7.25; 15: 15 -> 4.75; 16: 31 -> 8.75;
    // 17: 30 -> 8.5; 18: 13 -> 4.25; 26: 21 -> 6.25; 30: 1 -> 1.25; 31: 16 -> 5.
    expect(Q5_SPOTS.map((e) => out[e])).toEqual([5, 1.25, 5.75, 7.25, 4.75, 8.75, 8.5, 4.25, 6.25, 1.25, 5]);
    expect(Array.from(out)).toEqual(Array.from({ length: 32 }, (_, e) => q5Quant(Q5_QH, e) * 0.25 + 1));
  });

  it('[MD-lower-q4k-scales] Q4_K: the 6-bit scales and mins of all 8 sub-blocks, nibble order, d and dmin', () => {
    const sc = [1, 2, 3, 4, 33, 45, 62, 63];
    const mn = [0, 5, 10, 63, 17, 40, 1, 2];
    // Packing by the format: bytes 0..3 scale s | top 2 bits of scale s+4; 4..7 min s | top of min s+4;
    // 8..11 the low nibbles of scale s+4 and (high nibble) min s+4.
    const scales: number[] = [];
    for (let s = 0; s < 4; s++) scales[s] = sc[s]! | ((sc[s + 4]! >> 4) << 6);
    for (let s = 0; s < 4; s++) scales[s + 4] = mn[s]! | ((mn[s + 4]! >> 4) << 6);
    for (let s = 0; s < 4; s++) scales[s + 8] = (sc[s + 4]! & 15) | ((mn[s + 4]! & 15) << 4);
    const qs = Array.from({ length: 128 }, (_, i) => (i & 15) | ((15 - (i & 15)) << 4));
    // d = 1, dmin = 0.5.
    const out = dequant(loweringKind('Q4_K'), bytesOf(u16le(0x3c00), u16le(0x3800), scales, qs), 256);
    // element 33: chunk 0, high nibble 14, sub-block 1 (2 x 14 - 0.5 x 5); element 129: chunk 2, low
    // nibble 1, sub-block 4 (33 - 8.5); element 200: chunk 3, low nibble 8, sub-block 6 (62 x 8 - 0.5);
    // element 255: sub-block 7, nibble 0 (0 - 1).
    expect([out[0], out[33], out[129], out[200], out[255]]).toEqual([0, 25.5, 24.5, 495.5, -1]);
    const want = Array.from({ length: 256 }, (_, e) => {
      const s = e >> 5;
      const l = e & 31;
      const nibble = s % 2 === 0 ? l & 15 : 15 - (l & 15);
      return sc[s]! * nibble - 0.5 * mn[s]!;
    });
    expect(Array.from(out)).toEqual(want);
  });

  it('[MD-lower-q6k-bits] Q6_K: low nibbles from ql, bit pairs 0-1/2-3/4-5/6-7 of qh, int8 group scales, d', () => {
    const ql = Array.from({ length: 128 }, (_, i) => (i * 7 + 3) & 0xff);
    const qh = Array.from({ length: 64 }, (_, i) => (i * 37 + 11) & 0xff);
    const sc = Array.from({ length: 16 }, (_, s) => (s + 1) * (s % 2 === 0 ? 1 : -1));
    const out = dequant(loweringKind('Q6_K'), bytesOf(ql, qh, sc.map((v) => v & 0xff), u16le(0x3800)), 256);
    // Worked by hand from the format (element 0: ql[0] = 3, qh[0] = 0b1011 -> q = 3 | 3 << 4 = 51,
    // (51 - 32) x 1 x 0.5 = 9.5), the others by the same rule.
    const spots = [0, 17, 40, 70, 101, 127, 128, 150, 200, 255];
    expect(spots.map((e) => out[e])).toEqual([9.5, 22, -31.5, 5, 56, -44, 85.5, 15, -6.5, 200]);
    const want = Array.from({ length: 256 }, (_, e) => {
      const h = e >> 7;
      const g = (e >> 5) & 3;
      const l = e & 31;
      const byte = ql[64 * h + 32 * (g & 1) + l]!;
      const nibble = g < 2 ? byte & 15 : byte >> 4;
      const q = nibble | (((qh[32 * h + l]! >> (2 * g)) & 3) << 4);
      return 0.5 * sc[8 * h + (l >> 4) + 2 * g]! * (q - 32);
    });
    expect(Array.from(out)).toEqual(want);
  });
});

describe('lowering kinds: repacking into the packed row layout', () => {
  it('[MD-lower-repack] packed rows decode to exactly the GGUF reference values (every kind, random blocks and shapes)', () => {
    for (const name of KINDS) {
      const kind = LOWERING_KINDS[name];
      fc.assert(
        fc.property(fc.integer({ min: 1, max: 5 }), fc.integer({ min: 1, max: kind.blockElements === 1 ? 33 : 5 }), fc.integer({ min: 1, max: 0x7fffffff }), (rows, blocks, seed) => {
          const k = blocks * kind.blockElements;
          const src = randomGgufRows(name, rows, k, seed);
          const g = kind.geometry([rows, k], src.length);
          const packed = kind.repack(src, k);
          expect(packed.length).toBe(g.packedWords);
          // Padding only: at most 2 bytes per row beyond the GGUF bytes, never an f32 expansion.
          expect(g.packedBytes - g.byteLength).toBeGreaterThanOrEqual(0);
          expect(g.packedBytes - g.byteLength).toBeLessThanOrEqual(2 * rows);
          const want = dequant(kind, src, rows * k);
          const got = new Float32Array(rows * k);
          kind.dequantizePacked(packed, k, got);
          expect(Array.from(got).map((v) => Object.is(v, -0) ? 0 : v), name).toEqual(Array.from(want).map((v) => Object.is(v, -0) ? 0 : v));
          expect(new Uint32Array(got.buffer), name).toEqual(new Uint32Array(want.buffer));
        }),
        fcParams(25),
      );
    }
  });

  it('[MD-lower-repack] rows repack independently (a row range gives the same words) and the rest of a destination is left alone', () => {
    for (const name of KINDS) {
      const kind = LOWERING_KINDS[name];
      const k = kind.blockElements === 1 ? 7 : 3 * kind.blockElements;
      const g = kind.geometry([4, k]);
      const src = randomGgufRows(name, 4, k, 99);
      const whole = kind.repack(src, k);
      const dst = new Uint32Array(2 * g.packedRowWords + 3).fill(0xa5a5a5a5);
      kind.repack(src.subarray(g.rowBytes, 3 * g.rowBytes), k, dst);
      expect(Array.from(dst.subarray(0, 2 * g.packedRowWords)), name).toEqual(Array.from(whole.subarray(g.packedRowWords, 3 * g.packedRowWords)));
      expect(Array.from(dst.subarray(2 * g.packedRowWords)), name).toEqual([0xa5a5a5a5, 0xa5a5a5a5, 0xa5a5a5a5]);
    }
  });

  it('[MD-lower-repack] packed planes keep GGUF bytes in order (Q8_0 quants, Q4_K d/dmin word, F16 pairs)', () => {
    const q8 = randomGgufRows('Q8_0', 1, 64, 3);
    const p8 = loweringKind('Q8_0').repack(q8, 64);
    const quants = new Uint8Array(p8.buffer, 0, 64);
    expect(Array.from(quants)).toEqual([...q8.subarray(2, 34), ...q8.subarray(36, 68)]);
    expect(p8[16]).toBe((q8[0]! | (q8[1]! << 8) | (q8[34]! << 16) | (q8[35]! << 24)) >>> 0);
    const q4k = randomGgufRows('Q4_K', 1, 256, 4);
    const p4k = loweringKind('Q4_K').repack(q4k, 256);
    expect(p4k[35]).toBe((q4k[0]! | (q4k[1]! << 8) | (q4k[2]! << 16) | (q4k[3]! << 24)) >>> 0);
    // Q4_1 and Q5_1: the d/m word is the block's first 4 GGUF bytes; Q5_0: the qh word is bytes 2..5 of
    // each (unaligned) 22-byte block, the nibbles follow from byte 6, d goes to the half plane.
    const word = (b: Uint8Array, o: number) => (b[o]! | (b[o + 1]! << 8) | (b[o + 2]! << 16) | (b[o + 3]! << 24)) >>> 0;
    const q41 = randomGgufRows('Q4_1', 1, 64, 6);
    const p41 = loweringKind('Q4_1').repack(q41, 64);
    expect(Array.from(new Uint8Array(p41.buffer, 0, 32))).toEqual([...q41.subarray(4, 20), ...q41.subarray(24, 40)]);
    expect([p41[8], p41[9]]).toEqual([word(q41, 0), word(q41, 20)]);
    const q50 = randomGgufRows('Q5_0', 1, 64, 7);
    const p50 = loweringKind('Q5_0').repack(q50, 64);
    expect(Array.from(new Uint8Array(p50.buffer, 0, 32))).toEqual([...q50.subarray(6, 22), ...q50.subarray(28, 44)]);
    expect([p50[8], p50[9], p50[10]]).toEqual([word(q50, 2), word(q50, 24), (q50[0]! | (q50[1]! << 8) | (q50[22]! << 16) | (q50[23]! << 24)) >>> 0]);
    const q51 = randomGgufRows('Q5_1', 1, 32, 8);
    const p51 = loweringKind('Q5_1').repack(q51, 32);
    expect(Array.from(p51)).toEqual([word(q51, 8), word(q51, 12), word(q51, 16), word(q51, 20), word(q51, 4), word(q51, 0)]);
    const f16 = randomGgufRows('F16', 1, 3, 5);
    const p16 = loweringKind('F16').repack(f16, 3);
    expect(Array.from(p16)).toEqual([(f16[0]! | (f16[1]! << 8) | (f16[2]! << 16) | (f16[3]! << 24)) >>> 0, f16[4]! | (f16[5]! << 8)]);
  });
});

/** A parsed fixture and its bytes; each is loaded once per test file. */
interface Fixture {
  readonly file: GgufFile;
}

const fixtures = new Map<GgufFixture, Promise<Fixture | undefined>>();

function loadFixture(name: GgufFixture): Promise<Fixture | undefined> {
  let pending = fixtures.get(name);
  if (pending === undefined) {
    pending = readGgufFixture(name).then(async (bytes) => (bytes === undefined ? undefined : { file: await parseGguf(bytes) }));
    fixtures.set(name, pending);
  }
  return pending;
}

/**
 * The quantization step of each element (what one unit of its quant is worth), read from the GGUF block
 * fields directly: d for Q8_0 and Q4_0, d * sc of the sub-block for Q4_K, d * |scale| of the group for
 * Q6_K. Undefined for the float kinds.
 */
function steps(kind: LoweringKindName, raw: Uint8Array, elements: number): Float32Array | undefined {
  const step = new Float32Array(elements);
  const half = (o: number) => Math.abs(halfToFloat(raw[o]! | (raw[o + 1]! << 8)));
  if (kind === 'Q8_0' || kind === 'Q4_0') {
    const bytes = kind === 'Q8_0' ? 34 : 18;
    for (let b = 0; b < elements / 32; b++) step.fill(half(b * bytes), b * 32, b * 32 + 32);
    return step;
  }
  if (kind === 'Q6_K') {
    for (let b = 0; b < elements / 256; b++) {
      const d = half(b * 210 + 208);
      for (let e = 0; e < 256; e++) {
        const s = 8 * (e >> 7) + ((e & 31) >> 4) + 2 * ((e >> 5) & 3);
        step[b * 256 + e] = d * Math.abs((raw[b * 210 + 192 + s]! << 24) >> 24);
      }
    }
    return step;
  }
  if (kind === 'Q4_K') {
    for (let b = 0; b < elements / 256; b++) {
      const o = b * 144;
      const d = half(o);
      for (let s = 0; s < 8; s++) {
        const sc = s < 4 ? raw[o + 4 + s]! & 63 : (raw[o + 4 + s + 4]! & 15) | ((raw[o + 4 + s - 4]! >> 6) << 4);
        step.fill(d * sc, b * 256 + 32 * s, b * 256 + 32 * s + 32);
      }
    }
    return step;
  }
  return undefined;
}

/**
 * Allowed |dequantized - f32| per element, in quantization steps. Q8_0 rounds to the nearest step (1/2);
 * Q4_0 also clips the side opposite its block maximum by up to one step (1); the k-quants pick scales by
 * a search that may clip extreme elements, so they get 1 step too (measured worst on these fixtures, in
 * steps: printed by the test). Each also gets SCALE_SLACK steps for the f16 rounding of its block scale
 * (relative 2^-11 of up to 127 steps) and f32 arithmetic. F16 keeps 11 significant bits: relative 2^-11,
 * or half the subnormal spacing (2^-25) below the normal range.
 */
const STEP_BOUND: Partial<Record<LoweringKindName, number>> = { Q8_0: 0.5, Q4_0: 1, Q4_K: 1, Q6_K: 1 };
const SCALE_SLACK = 0.07;
const F16_REL = 2 ** -11;
const F16_SUBNORMAL_HALF_STEP = 2 ** -25;

describe('lowering kinds: the real fixtures against tiny-llama-f32', () => {
  const QUANTIZED: readonly GgufFixture[] = ['tiny-llama-F16.gguf', 'tiny-llama-Q8_0.gguf', 'tiny-llama-Q4_0.gguf', 'tiny-llama-Q4_K_M.gguf', 'tiny-llama-Q6_K.gguf'];
  const KINDS_IN: Record<string, string[]> = {
    'tiny-llama-F16.gguf': ['F16', 'F32'],
    'tiny-llama-Q8_0.gguf': ['F32', 'Q8_0'],
    'tiny-llama-Q4_0.gguf': ['F32', 'Q4_0', 'Q6_K'],
    'tiny-llama-Q4_K_M.gguf': ['F32', 'Q4_K', 'Q6_K'],
    'tiny-llama-Q6_K.gguf': ['F32', 'Q6_K'],
  };

  for (const fixture of QUANTIZED) {
    it(`[MD-lower-fixtures] ${fixture}: every tensor dequantizes (directly and through its packed rows) to within its kind's error of the f32 file`, async (ctx) => {
      const reference = await loadFixture('tiny-llama-f32.gguf');
      const quantized = await loadFixture(fixture);
      if (reference === undefined || quantized === undefined) {
        ctx.skip();
        return;
      }
      const seen = new Set<string>();
      const worst: Record<string, number> = {};
      for (const info of quantized.file.tensors) {
        const kind = loweringKind(info.type.name);
        seen.add(kind.name);
        const rowElements = info.shape[0]!;
        const geometry = tensorGeometry(info);
        expect([geometry.kind, geometry.rows, geometry.rowElements, geometry.rowBytes, geometry.byteLength], info.name).toEqual([kind.name, info.rows, rowElements, info.rowBytes, info.byteLength]);
        const raw = await quantized.file.readTensor(info);
        const got = new Float32Array(info.elements);
        kind.dequantize(raw, got);
        const viaPacked = new Float32Array(info.elements);
        const packed = kind.repack(raw, rowElements);
        expect(packed.length, info.name).toBe(geometry.packedWords);
        kind.dequantizePacked(packed, rowElements, viaPacked);
        const refInfo: GgufTensorInfo = reference.file.tensor(info.name);
        expect(refInfo.shape, info.name).toEqual(info.shape);
        const want: Float32Array = new Float32Array(refInfo.elements);
        loweringKind(refInfo.type.name).dequantize(await reference.file.readTensor(refInfo), want);
        const step = steps(kind.name, raw, info.elements);
        const bound = (STEP_BOUND[kind.name] ?? 0) + SCALE_SLACK;
        let worstSteps = 0;
        const gotBits = new Uint32Array(got.buffer);
        const packedBits = new Uint32Array(viaPacked.buffer);
        for (let e = 0; e < info.elements; e++) {
          if (gotBits[e] !== packedBits[e]) expect.fail(`${info.name} element ${e}: packed rows give ${viaPacked[e]}, GGUF blocks ${got[e]}`);
          const err = Math.abs(got[e]! - want[e]!);
          const allowed =
            kind.name === 'F32' ? 0 : step === undefined ? Math.max(F16_REL * Math.abs(want[e]!), F16_SUBNORMAL_HALF_STEP) : bound * step[e]!;
          if (!(err <= allowed)) expect.fail(`${info.name} (${kind.name}) element ${e}: ${got[e]} vs f32 ${want[e]}, allowed ${allowed}`);
          if (step !== undefined && step[e]! > 0) worstSteps = Math.max(worstSteps, err / step[e]!);
        }
        if (step !== undefined) worst[kind.name] = Math.max(worst[kind.name] ?? 0, worstSteps);
      }
      // The fixture really holds the kinds it is named for.
      expect([...seen].sort()).toEqual(KINDS_IN[fixture]);
      console.info(`${fixture}: worst error per kind, in quantization steps: ${JSON.stringify(worst)}`);
    }, 180_000);
  }
});

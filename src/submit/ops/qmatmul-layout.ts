// Packed weight layouts: the form in which a GGUF weight matrix lives once it is loaded, on the GPU (a
// u32 storage buffer the qmatmul kernels read, shaders/qmatmul_*.wgsl) and on the host (a Uint32Array the
// host twins read). src/model/lowering repacks GGUF blocks into it; this module says what the words mean
// and decodes them on the host. Nothing here allocates weights: decodePackedRow writes one row into a
// caller's scratch array, so no f32 copy of a matrix ever exists.
//
// Why repack at all: GGUF blocks of Q8_0 (34 bytes), Q4_0 (18 bytes), Q5_0 (22 bytes) and Q6_K (210
// bytes) are not a multiple of 4 bytes, so their fields sit at arbitrary byte offsets and WGSL (u32 loads only) cannot read
// them without unaligned byte gathering. The packed form splits each row's blocks into planes of whole
// u32 words, one plane per field, so that every field of every block is word-aligned, and invocation i of
// a workgroup that walks a row reads word i of the quant plane (adjacent invocations, adjacent words).
// Within a word the bytes keep GGUF's order and bit packing (no nibble or bit is moved), so a plane is the
// concatenation of the same field of consecutive blocks.
//
// Row layout (rows are independent: rows [r0, r1) are the words [r0 * rowWords, r1 * rowWords), so a
// matrix can be split by rows across bindings). K = elements per row, B = K / block elements. A "half
// plane" holds one f16 per block, two per word (block 2i in the low 16 bits of word i, block 2i+1 in the
// high bits; an odd B leaves the last high half zero).
//
//   kind  block  plane 0 (word 0)              plane 1            plane 2                plane 3        rowWords
//   F32   1      K f32 values                  -                  -                      -              K
//   F16   1      K halves, two per word        -                  -                      -              ceil(K/2)
//   BF16  1      K bfloat16, two per word      -                  -                      -              ceil(K/2)
//   Q8_0  32     8B words: 32 int8 per block   d: half plane      -                      -              8B + ceil(B/2)
//   Q4_0  32     4B words: 16 nibble bytes     d: half plane      -                      -              4B + ceil(B/2)
//   Q4_K  256    32B words: 128 nibble bytes   3B words: 12       B words: d (low half)  -              36B
//                                              packed scale bytes and dmin (high half)
//   Q6_K  256    32B words: 128 ql bytes       16B words: 64 qh   4B words: 16 int8      d: half plane  52B + ceil(B/2)
//                                              bytes              scales
//   Q4_1  32     4B words: 16 nibble bytes     B words: d (low    -                      -              5B
//                                              half), m (high)
//   Q5_0  32     4B words: 16 nibble bytes     B words: qh (the   d: half plane          -              5B + ceil(B/2)
//                                              32 high bits)
//   Q5_1  32     4B words: 16 nibble bytes     B words: qh        B words: d (low half)  -              6B
//                                                                 and m (high half)
//
// Element order inside a block is GGUF's (see decodePackedRow): Q4_0, Q4_1, Q5_0 and Q5_1 byte j holds
// element j (low nibble) and j + 16 (high nibble), and Q5_0/Q5_1 bit e of qh is the fifth bit of element e; Q4_K byte 32c + l holds element 64c + l (low nibble, sub-block 2c) and
// 64c + 32 + l (high nibble, sub-block 2c + 1); Q6_K follows GGML's two 128-element halves.
//
// A "unit" is what one invocation handles per step of its walk along a row: one word of plane 0 (F32:
// one element; Q6_K: one qh word and the two ql words it completes, 16 elements; Q5_0/Q5_1: one nibble
// word, whose 8 high bits sit in the block's qh word).
import { TenonError } from '../../errors.js';

/** The weight kinds the kernels read (GGML type names; src/model/ggml-types.ts lists their ids). */
export type PackedKind = 'F32' | 'F16' | 'BF16' | 'Q8_0' | 'Q4_0' | 'Q4_K' | 'Q6_K' | 'Q4_1' | 'Q5_0' | 'Q5_1';

export const PACKED_KINDS: readonly PackedKind[] = ['F32', 'F16', 'BF16', 'Q8_0', 'Q4_0', 'Q4_K', 'Q6_K', 'Q4_1', 'Q5_0', 'Q5_1'];

/** Elements per block of the classic quant formats (GGML QK8_0, QK4_0, QK4_1, QK5_0, QK5_1). */
export const QK32 = 32;
/** Elements per super-block of the k-quants (GGML QK_K). */
export const QK_K = 256;

/** Elements per block of each kind (a row is a whole number of blocks). */
export const PACKED_BLOCK: Readonly<Record<PackedKind, number>> = {
  F32: 1,
  F16: 1,
  BF16: 1,
  Q8_0: QK32,
  Q4_0: QK32,
  Q4_K: QK_K,
  Q6_K: QK_K,
  Q4_1: QK32,
  Q5_0: QK32,
  Q5_1: QK32,
};

/** Words per block of the quant planes (see the table above). */
const Q8_0_QUANT_WORDS = QK32 / 4;
const Q4_0_QUANT_WORDS = QK32 / 8;
/** Q4_1, Q5_0 and Q5_1 share Q4_0's nibble plane (the 16 nibble bytes of a block are 4 words). */
const NIBBLE_WORDS = QK32 / 8;
/** Q5_0's quants are stored offset by 16 (0..31 for -16..15). */
const Q5_OFFSET = 16;
const Q4_K_QUANT_WORDS = QK_K / 8;
const Q4_K_SCALE_WORDS = 3;
const Q6_K_QL_WORDS = QK_K / 8;
const Q6_K_QH_WORDS = QK_K / 16;
const Q6_K_SCALE_WORDS = 4;

/** Largest word index a kernel reaches (WGSL indices are u32). */
const MAX_U32_INDEX = 0xffff_ffff;

/** Where each plane of one packed row starts, and how a kernel walks it. */
export interface PackedRowLayout {
  readonly kind: PackedKind;
  /** Elements per row (K). */
  readonly k: number;
  /** Blocks per row (K / block elements). */
  readonly blocks: number;
  /** u32 words per packed row. */
  readonly rowWords: number;
  /** Word offsets of planes 1, 2 and 3 inside a row (0 for a plane the kind lacks). */
  readonly planes: readonly [number, number, number];
  /** Work units per row (see the header). */
  readonly units: number;
}

function halfPlaneWords(blocks: number): number {
  return Math.ceil(blocks / 2);
}

/**
 * The packed row layout of `kind` for rows of `k` elements. EINVAL `bad-param` when k is not a positive
 * integer or not a whole number of blocks, `shape-mismatch` when a row would pass the u32 word range.
 */
export function packedRowLayout(kind: PackedKind, k: number, op = 'packedRowLayout'): PackedRowLayout {
  const block = PACKED_BLOCK[kind];
  if (block === undefined) throw new TenonError('EINVAL', `unknown packed kind ${String(kind)}`, { op, reason: 'bad-param', ids: { kind: String(kind) } });
  if (!Number.isSafeInteger(k) || k < 1) throw new TenonError('EINVAL', `row length ${k} is not a positive integer`, { op, reason: 'bad-param', ids: { kind } });
  if (k % block !== 0) {
    throw new TenonError('EINVAL', `row length ${k} is not a whole number of ${kind} blocks of ${block}`, { op, reason: 'bad-param', ids: { kind, k } });
  }
  const b = k / block;
  let layout: PackedRowLayout;
  switch (kind) {
    case 'F32':
      layout = { kind, k, blocks: b, rowWords: k, planes: [0, 0, 0], units: k };
      break;
    case 'F16':
    case 'BF16':
      layout = { kind, k, blocks: b, rowWords: Math.ceil(k / 2), planes: [0, 0, 0], units: Math.ceil(k / 2) };
      break;
    case 'Q8_0':
      layout = { kind, k, blocks: b, rowWords: Q8_0_QUANT_WORDS * b + halfPlaneWords(b), planes: [Q8_0_QUANT_WORDS * b, 0, 0], units: Q8_0_QUANT_WORDS * b };
      break;
    case 'Q4_0':
      layout = { kind, k, blocks: b, rowWords: Q4_0_QUANT_WORDS * b + halfPlaneWords(b), planes: [Q4_0_QUANT_WORDS * b, 0, 0], units: Q4_0_QUANT_WORDS * b };
      break;
    case 'Q4_K': {
      const scales = Q4_K_QUANT_WORDS * b;
      const dm = scales + Q4_K_SCALE_WORDS * b;
      layout = { kind, k, blocks: b, rowWords: dm + b, planes: [scales, dm, 0], units: Q4_K_QUANT_WORDS * b };
      break;
    }
    case 'Q6_K': {
      const qh = Q6_K_QL_WORDS * b;
      const scales = qh + Q6_K_QH_WORDS * b;
      const d = scales + Q6_K_SCALE_WORDS * b;
      layout = { kind, k, blocks: b, rowWords: d + halfPlaneWords(b), planes: [qh, scales, d], units: Q6_K_QH_WORDS * b };
      break;
    }
    case 'Q4_1': {
      const dm = NIBBLE_WORDS * b;
      layout = { kind, k, blocks: b, rowWords: dm + b, planes: [dm, 0, 0], units: NIBBLE_WORDS * b };
      break;
    }
    case 'Q5_0': {
      const qh = NIBBLE_WORDS * b;
      const d = qh + b;
      layout = { kind, k, blocks: b, rowWords: d + halfPlaneWords(b), planes: [qh, d, 0], units: NIBBLE_WORDS * b };
      break;
    }
    case 'Q5_1': {
      const qh = NIBBLE_WORDS * b;
      const dm = qh + b;
      layout = { kind, k, blocks: b, rowWords: dm + b, planes: [qh, dm, 0], units: NIBBLE_WORDS * b };
      break;
    }
  }
  if (layout.rowWords > MAX_U32_INDEX) {
    throw new TenonError('EINVAL', `a packed ${kind} row of ${k} elements passes the u32 word range`, { op, reason: 'shape-mismatch', ids: { kind, k } });
  }
  return layout;
}

/** f16 bits -> f32 value, for every bit pattern (subnormals, infinities and NaN included). */
const HALF_TABLE = /* @__PURE__ */ (() => {
  const table = new Float32Array(1 << 16);
  for (let h = 0; h < table.length; h++) {
    const sign = h & 0x8000 ? -1 : 1;
    const exponent = (h >> 10) & 0x1f;
    const mantissa = h & 0x3ff;
    if (exponent === 0) table[h] = sign * mantissa * 2 ** -24;
    else if (exponent === 0x1f) table[h] = mantissa === 0 ? sign * Infinity : NaN;
    else table[h] = sign * (1 + mantissa / 1024) * 2 ** (exponent - 15);
  }
  return table;
})();

/** The f32 value of IEEE binary16 bits (exact: every half is an f32). */
export function halfToFloat(bits: number): number {
  return HALF_TABLE[bits & 0xffff]!;
}

const BF16_SCRATCH = new Float32Array(1);
const BF16_SCRATCH_BITS = new Uint32Array(BF16_SCRATCH.buffer);

/** The f32 value of bfloat16 bits (the top half of an f32). */
export function bf16ToFloat(bits: number): number {
  BF16_SCRATCH_BITS[0] = (bits & 0xffff) << 16;
  return BF16_SCRATCH[0]!;
}

/** Sign-extends byte `i` (0..3) of `word`. */
function int8At(word: number, i: number): number {
  return (word << (24 - 8 * i)) >> 24;
}

/** Byte `i` of a run of little-endian words starting at `base`. */
function byteAt(words: Uint32Array, base: number, i: number): number {
  return (words[base + (i >> 2)]! >>> (8 * (i & 3))) & 0xff;
}

/** The f16 of block `b` in the half plane at word `plane`. */
function halfOfBlock(words: Uint32Array, plane: number, b: number): number {
  return halfToFloat(words[plane + (b >> 1)]! >>> (16 * (b & 1)));
}

/**
 * Q4_K's 6-bit scale and min of sub-block `s` (0..7) from the 12 packed bytes at word `base`: sub-blocks
 * 0..3 keep theirs in the low 6 bits of bytes s and s + 4; sub-blocks 4..7 keep the low 4 bits in byte
 * s + 4 (scale in its low nibble, min in its high nibble) and the top 2 bits in the top bits of bytes s - 4
 * (scale) and s (min).
 */
export function q4kScaleMin(words: Uint32Array, base: number, s: number): [scale: number, min: number] {
  if (s < 4) return [byteAt(words, base, s) & 63, byteAt(words, base, s + 4) & 63];
  const low = byteAt(words, base, s + 4);
  return [(low & 0xf) | ((byteAt(words, base, s - 4) >> 6) << 4), (low >> 4) | ((byteAt(words, base, s) >> 6) << 4)];
}

/**
 * Dequantizes packed row `row` (its first word at `rowStart` in `words`) into out[0..k), with GGML's f32
 * arithmetic (each product rounded to f32 as ggml's dequantize_row_* rounds it). `out` is the caller's
 * scratch of at least k elements.
 */
export function decodePackedRow(layout: PackedRowLayout, words: Uint32Array, rowStart: number, out: Float32Array): void {
  const { k, blocks } = layout;
  const f = Math.fround;
  switch (layout.kind) {
    case 'F32': {
      const values = new Float32Array(words.buffer, words.byteOffset + rowStart * 4, k);
      out.set(values);
      return;
    }
    case 'F16':
    case 'BF16': {
      const decode = layout.kind === 'F16' ? halfToFloat : bf16ToFloat;
      for (let e = 0; e < k; e++) out[e] = decode(words[rowStart + (e >> 1)]! >>> (16 * (e & 1)));
      return;
    }
    case 'Q8_0': {
      const dPlane = rowStart + layout.planes[0];
      for (let b = 0; b < blocks; b++) {
        const d = halfOfBlock(words, dPlane, b);
        for (let j = 0; j < Q8_0_QUANT_WORDS; j++) {
          const word = words[rowStart + b * Q8_0_QUANT_WORDS + j]!;
          for (let i = 0; i < 4; i++) out[b * QK32 + 4 * j + i] = f(int8At(word, i) * d);
        }
      }
      return;
    }
    case 'Q4_0': {
      const dPlane = rowStart + layout.planes[0];
      const half = QK32 / 2;
      for (let b = 0; b < blocks; b++) {
        const d = halfOfBlock(words, dPlane, b);
        for (let j = 0; j < Q4_0_QUANT_WORDS; j++) {
          const word = words[rowStart + b * Q4_0_QUANT_WORDS + j]!;
          for (let i = 0; i < 4; i++) {
            const byte = (word >>> (8 * i)) & 0xff;
            out[b * QK32 + 4 * j + i] = f(((byte & 0xf) - 8) * d);
            out[b * QK32 + half + 4 * j + i] = f(((byte >> 4) - 8) * d);
          }
        }
      }
      return;
    }
    case 'Q4_1':
    case 'Q5_0':
    case 'Q5_1':
      decodeLegacyRow(layout, words, rowStart, out);
      return;
    case 'Q4_K': {
      const [scalePlane, dmPlane] = layout.planes;
      for (let b = 0; b < blocks; b++) {
        const dm = words[rowStart + dmPlane + b]!;
        const d = halfToFloat(dm);
        const dmin = halfToFloat(dm >>> 16);
        const scaleBase = rowStart + scalePlane + b * Q4_K_SCALE_WORDS;
        const quantBase = rowStart + b * Q4_K_QUANT_WORDS;
        for (let c = 0; c < 4; c++) {
          const [scLo, mLo] = q4kScaleMin(words, scaleBase, 2 * c);
          const [scHi, mHi] = q4kScaleMin(words, scaleBase, 2 * c + 1);
          const d1 = f(d * scLo);
          const m1 = f(dmin * mLo);
          const d2 = f(d * scHi);
          const m2 = f(dmin * mHi);
          for (let l = 0; l < 32; l++) {
            const byte = byteAt(words, quantBase, 32 * c + l);
            out[b * QK_K + 64 * c + l] = f(f(d1 * (byte & 0xf)) - m1);
            out[b * QK_K + 64 * c + 32 + l] = f(f(d2 * (byte >> 4)) - m2);
          }
        }
      }
      return;
    }
    case 'Q6_K': {
      const [qhPlane, scalePlane, dPlane] = layout.planes;
      for (let b = 0; b < blocks; b++) {
        const d = halfOfBlock(words, rowStart + dPlane, b);
        const ql = rowStart + b * Q6_K_QL_WORDS;
        const qh = rowStart + qhPlane + b * Q6_K_QH_WORDS;
        const sc = rowStart + scalePlane + b * Q6_K_SCALE_WORDS;
        for (let h = 0; h < 2; h++) {
          for (let l = 0; l < 32; l++) {
            const a = byteAt(words, ql, 64 * h + l);
            const c = byteAt(words, ql, 64 * h + 32 + l);
            const hi = byteAt(words, qh, 32 * h + l);
            const s = 8 * h + (l >> 4);
            const base = b * QK_K + 128 * h + l;
            out[base] = f(f(d * scaleAt(words, sc, s)) * (((a & 0xf) | ((hi & 3) << 4)) - 32));
            out[base + 32] = f(f(d * scaleAt(words, sc, s + 2)) * (((c & 0xf) | (((hi >> 2) & 3) << 4)) - 32));
            out[base + 64] = f(f(d * scaleAt(words, sc, s + 4)) * (((a >> 4) | (((hi >> 4) & 3) << 4)) - 32));
            out[base + 96] = f(f(d * scaleAt(words, sc, s + 6)) * (((c >> 4) | (((hi >> 6) & 3) << 4)) - 32));
          }
        }
      }
      return;
    }
  }
}

/**
 * Q4_1, Q5_0 and Q5_1 rows (the 32-element formats with a min or a fifth bit). Per block: a quant word j
 * (0..3) holds elements 4j..4j+3 in its low nibbles and 16+4j..16+4j+3 in its high nibbles; for the
 * 5-bit kinds bit e of the block's qh word is the high bit of element e. Values with ggml's f32
 * operations: Q4_1 and Q5_1 q * d + m (the product rounded, then the sum), Q5_0 (q - 16) * d.
 */
function decodeLegacyRow(layout: PackedRowLayout, words: Uint32Array, rowStart: number, out: Float32Array): void {
  const f = Math.fround;
  const { kind, blocks, planes } = layout;
  const half = QK32 / 2;
  const fiveBits = kind !== 'Q4_1';
  for (let b = 0; b < blocks; b++) {
    let d: number;
    let m = 0;
    let qh = 0;
    if (kind === 'Q4_1') {
      const dm = words[rowStart + planes[0] + b]!;
      d = halfToFloat(dm);
      m = halfToFloat(dm >>> 16);
    } else {
      qh = words[rowStart + planes[0] + b]!;
      if (kind === 'Q5_0') d = halfOfBlock(words, rowStart + planes[1], b);
      else {
        const dm = words[rowStart + planes[1] + b]!;
        d = halfToFloat(dm);
        m = halfToFloat(dm >>> 16);
      }
    }
    for (let j = 0; j < NIBBLE_WORDS; j++) {
      const word = words[rowStart + b * NIBBLE_WORDS + j]!;
      for (let i = 0; i < 4; i++) {
        const e = 4 * j + i;
        let lo = (word >>> (8 * i)) & 0xf;
        let hi = (word >>> (8 * i + 4)) & 0xf;
        if (fiveBits) {
          lo |= ((qh >>> e) & 1) << 4;
          hi |= ((qh >>> (e + half)) & 1) << 4;
        }
        if (kind === 'Q5_0') {
          out[b * QK32 + e] = f((lo - Q5_OFFSET) * d);
          out[b * QK32 + half + e] = f((hi - Q5_OFFSET) * d);
        } else {
          out[b * QK32 + e] = f(f(lo * d) + m);
          out[b * QK32 + half + e] = f(f(hi * d) + m);
        }
      }
    }
  }
}

/** Q6_K's int8 scale `s` (0..15) from the scale words at `base`. */
function scaleAt(words: Uint32Array, base: number, s: number): number {
  return int8At(words[base + (s >> 2)]!, s & 3);
}

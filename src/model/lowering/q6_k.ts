// Q6_K: super-blocks of 256 elements in 16 groups of 16, each group with a signed 8-bit scale; element
// value (d * sc) * (q - 32), q a 6-bit quant split into a low nibble (ql) and a high 2-bit pair (qh).
//
// GGUF super-block (210 bytes, so super-blocks after the first are not 4-byte aligned):
//   offset 0    QL      128 bytes of low nibbles
//   offset 128  QH      64 bytes of high bit pairs
//   offset 192  SCALES  16 x int8 group scales
//   offset 208  D       f16 d
// The super-block is two halves of 128 elements; half h uses ql bytes 64h..64h+63, qh bytes 32h..32h+31
// and scales 8h..8h+7. For l in 0..31, element 128h + 32g + l (g = 0..3) takes:
//   g = 0: low nibble of ql[64h + l],       qh[32h + l] bits 0-1, scale 8h + l/16
//   g = 1: low nibble of ql[64h + 32 + l],  qh[32h + l] bits 2-3, scale 8h + l/16 + 2
//   g = 2: high nibble of ql[64h + l],      qh[32h + l] bits 4-5, scale 8h + l/16 + 4
//   g = 3: high nibble of ql[64h + 32 + l], qh[32h + l] bits 6-7, scale 8h + l/16 + 6
// Packed row (src/submit/ops/qmatmul-layout.ts): ql of super-block b in words 32b..32b+31, then the qh
// plane (16 words per super-block), the scale plane (4 words each) and d in the half plane.
import { halfToFloat } from '../../submit/ops/qmatmul-layout.js';
import { copyWords, defineKind, int8, putHalf, u16At } from './kind.js';

const BLOCK = 256;
const HALF = 128;
const QL = 0;
const QH = QL + BLOCK / 2;
const SCALES = QH + BLOCK / 4;
const D = SCALES + BLOCK / 16;
const BYTES = D + 2;
/** The quants are stored offset by 32 (0..63 for -32..31). */
const OFFSET = 32;
const LOW_NIBBLE = 0xf;
const TWO_BITS = 3;

export const q6_k = defineKind({
  name: 'Q6_K',
  ggmlTypeId: 14,
  blockElements: BLOCK,
  blockBytes: BYTES,
  packedLayout: 'Q6_K/planes-v1',
  dequantizeBlock(src, o, out, at) {
    const f = Math.fround;
    const d = halfToFloat(u16At(src, o + D));
    for (let h = 0; h < 2; h++) {
      const ql = o + QL + 64 * h;
      const qh = o + QH + 32 * h;
      const sc = o + SCALES + 8 * h;
      for (let l = 0; l < 32; l++) {
        const high = src[qh + l]!;
        const s = l >> 4;
        const q = [
          (src[ql + l]! & LOW_NIBBLE) | ((high & TWO_BITS) << 4),
          (src[ql + 32 + l]! & LOW_NIBBLE) | (((high >> 2) & TWO_BITS) << 4),
          (src[ql + l]! >> 4) | (((high >> 4) & TWO_BITS) << 4),
          (src[ql + 32 + l]! >> 4) | (((high >> 6) & TWO_BITS) << 4),
        ];
        for (let g = 0; g < 4; g++) {
          out[at + HALF * h + 32 * g + l] = f(f(d * int8(src[sc + s + 2 * g]!)) * (q[g]! - OFFSET));
        }
      }
    }
  },
  repackRow(src, o, layout, dst, at) {
    const [qhPlane, scalePlane, dPlane] = layout.planes;
    const qlWords = BLOCK / 2 / 4;
    const qhWords = BLOCK / 4 / 4;
    const scaleWords = BLOCK / 16 / 4;
    for (let b = 0; b < layout.blocks; b++) {
      const block = o + b * BYTES;
      copyWords(src, block + QL, qlWords, dst, at + b * qlWords);
      copyWords(src, block + QH, qhWords, dst, at + qhPlane + b * qhWords);
      copyWords(src, block + SCALES, scaleWords, dst, at + scalePlane + b * scaleWords);
      putHalf(dst, at + dPlane, b, u16At(src, block + D));
    }
  },
});

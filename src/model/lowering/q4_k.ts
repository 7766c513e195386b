// Q4_K: super-blocks of 256 elements in 8 sub-blocks of 32. Each sub-block s has a 6-bit scale sc_s and
// a 6-bit min m_s; element value (d * sc_s) * q - (dmin * m_s), q an unsigned 4-bit quant.
//
// GGUF super-block (144 bytes):
//   offset 0   D       f16 d, the scale of the sub-block scales
//   offset 2   DMIN    f16 dmin, the scale of the sub-block mins
//   offset 4   SCALES  12 bytes packing 8 scales and 8 mins of 6 bits: for s < 4, scale s is the low 6
//                      bits of byte s and min s the low 6 bits of byte s + 4; for s >= 4, byte s + 4 holds
//                      the low 4 bits of scale s (low nibble) and of min s (high nibble), and their top 2
//                      bits are the top 2 bits of byte s - 4 (scale) and byte s (min)
//   offset 16  QS      128 bytes in 4 chunks of 32: byte 32c + l holds element 64c + l (low nibble,
//                      sub-block 2c) and element 64c + 32 + l (high nibble, sub-block 2c + 1)
// 144 bytes is a whole number of words, but the packed row still splits the fields into planes
// (src/submit/ops/qmatmul-layout.ts) so that a walk along a row reads consecutive quant words: quants
// 32b..32b+31, then the 3 scale words of every super-block, then one word per super-block holding d
// (low half) and dmin (high half), exactly GGUF's first 4 bytes.
import { halfToFloat } from '../../submit/ops/qmatmul-layout.js';
import { copyWords, defineKind, u16At, u32At } from './kind.js';

const BLOCK = 256;
const SUB = 32;
const D = 0;
const DMIN = 2;
const SCALES = 4;
const SCALE_BYTES = 12;
const QS = SCALES + SCALE_BYTES;
const BYTES = QS + BLOCK / 2;
const SIX_BITS = 63;
const LOW_NIBBLE = 0xf;

/** The 6-bit scale and min of sub-block s from the 12 packed bytes at `o` (see the layout above). */
export function scaleMin(src: Uint8Array, o: number, s: number): [scale: number, min: number] {
  if (s < 4) return [src[o + s]! & SIX_BITS, src[o + s + 4]! & SIX_BITS];
  const low = src[o + s + 4]!;
  return [(low & LOW_NIBBLE) | ((src[o + s - 4]! >> 6) << 4), (low >> 4) | ((src[o + s]! >> 6) << 4)];
}

export const q4_k = defineKind({
  name: 'Q4_K',
  ggmlTypeId: 12,
  blockElements: BLOCK,
  blockBytes: BYTES,
  packedLayout: 'Q4_K/planes-v1',
  dequantizeBlock(src, o, out, at) {
    const f = Math.fround;
    const d = halfToFloat(u16At(src, o + D));
    const dmin = halfToFloat(u16At(src, o + DMIN));
    for (let s = 0; s < BLOCK / SUB; s++) {
      const [sc, m] = scaleMin(src, o + SCALES, s);
      const scale = f(d * sc);
      const min = f(dmin * m);
      const chunk = o + QS + (s >> 1) * SUB;
      const shift = (s & 1) * 4;
      for (let l = 0; l < SUB; l++) out[at + s * SUB + l] = f(f(scale * ((src[chunk + l]! >> shift) & LOW_NIBBLE)) - min);
    }
  },
  repackRow(src, o, layout, dst, at) {
    const [scalePlane, dmPlane] = layout.planes;
    const quantWords = (BLOCK / 2) / 4;
    const scaleWords = SCALE_BYTES / 4;
    for (let b = 0; b < layout.blocks; b++) {
      const block = o + b * BYTES;
      copyWords(src, block + QS, quantWords, dst, at + b * quantWords);
      copyWords(src, block + SCALES, scaleWords, dst, at + scalePlane + b * scaleWords);
      dst[at + dmPlane + b] = u32At(src, block + D);
    }
  },
});

// Q5_0: blocks of 32 elements, each a scale d and 32 unsigned 5-bit quants split into a low nibble and a
// high bit; element value (q - 16) * d.
//
// GGUF block (22 bytes, so blocks after the first are not 4-byte aligned):
//   offset 0  D   f16 scale d
//   offset 2  QH  4 bytes read as one little-endian u32: bit e is the high (fifth) bit of element e
//                 (bits 0..15 for the low-nibble elements 0..15, bits 16..31 for elements 16..31)
//   offset 6  QS  16 bytes; byte j holds the low 4 bits of element j (low nibble) and of element j + 16
//                 (high nibble)
// Packed row (src/submit/ops/qmatmul-layout.ts): the 16 nibble bytes of block b become words 4b..4b+3,
// then one qh word per block (the 4 GGUF bytes as they are), then d in a half plane.
import { halfToFloat } from '../../submit/ops/qmatmul-layout.js';
import { copyWords, defineKind, putHalf, u16At, u32At } from './kind.js';

const BLOCK = 32;
const HALF = BLOCK / 2;
const D = 0;
const QH = 2;
const QS = 6;
const BYTES = QS + HALF;
const QUANT_WORDS = HALF / 4;
/** The 5-bit quants are stored offset by 16 (0..31 for -16..15). */
const OFFSET = 16;
const LOW_NIBBLE = 0xf;

export const q5_0 = defineKind({
  name: 'Q5_0',
  ggmlTypeId: 6,
  blockElements: BLOCK,
  blockBytes: BYTES,
  packedLayout: 'Q5_0/planes-v1',
  dequantizeBlock(src, o, out, at) {
    const d = halfToFloat(u16At(src, o + D));
    const qh = u32At(src, o + QH);
    for (let j = 0; j < HALF; j++) {
      const byte = src[o + QS + j]!;
      const lo = (byte & LOW_NIBBLE) | (((qh >>> j) & 1) << 4);
      const hi = (byte >> 4) | (((qh >>> (j + HALF)) & 1) << 4);
      out[at + j] = Math.fround((lo - OFFSET) * d);
      out[at + HALF + j] = Math.fround((hi - OFFSET) * d);
    }
  },
  repackRow(src, o, layout, dst, at) {
    const [qhPlane, dPlane] = layout.planes;
    for (let b = 0; b < layout.blocks; b++) {
      const block = o + b * BYTES;
      copyWords(src, block + QS, QUANT_WORDS, dst, at + b * QUANT_WORDS);
      dst[at + qhPlane + b] = u32At(src, block + QH);
      putHalf(dst, at + dPlane, b, u16At(src, block + D));
    }
  },
});

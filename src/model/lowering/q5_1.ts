// Q5_1: blocks of 32 elements, each a scale d, a min m and 32 unsigned 5-bit quants split into a low
// nibble and a high bit; element value q * d + m (ggml rounds the product to f32, then the sum).
//
// GGUF block (24 bytes):
//   offset 0  D   f16 scale d
//   offset 2  M   f16 min m
//   offset 4  QH  4 bytes read as one little-endian u32: bit e is the high (fifth) bit of element e
//   offset 8  QS  16 bytes; byte j holds the low 4 bits of element j (low nibble) and of element j + 16
//                 (high nibble)
// Packed row (src/submit/ops/qmatmul-layout.ts): the 16 nibble bytes of block b become words 4b..4b+3,
// then one qh word per block, then one word per block holding d (low half) and m (high half), exactly
// the block's first 4 GGUF bytes. The packed row is as long as the GGUF row.
import { halfToFloat } from '../../submit/ops/qmatmul-layout.js';
import { copyWords, defineKind, u16At, u32At } from './kind.js';

const BLOCK = 32;
const HALF = BLOCK / 2;
const D = 0;
const M = 2;
const QH = 4;
const QS = 8;
const BYTES = QS + HALF;
const QUANT_WORDS = HALF / 4;
const LOW_NIBBLE = 0xf;

export const q5_1 = defineKind({
  name: 'Q5_1',
  ggmlTypeId: 7,
  blockElements: BLOCK,
  blockBytes: BYTES,
  packedLayout: 'Q5_1/planes-v1',
  dequantizeBlock(src, o, out, at) {
    const f = Math.fround;
    const d = halfToFloat(u16At(src, o + D));
    const m = halfToFloat(u16At(src, o + M));
    const qh = u32At(src, o + QH);
    for (let j = 0; j < HALF; j++) {
      const byte = src[o + QS + j]!;
      const lo = (byte & LOW_NIBBLE) | (((qh >>> j) & 1) << 4);
      const hi = (byte >> 4) | (((qh >>> (j + HALF)) & 1) << 4);
      out[at + j] = f(f(lo * d) + m);
      out[at + HALF + j] = f(f(hi * d) + m);
    }
  },
  repackRow(src, o, layout, dst, at) {
    const [qhPlane, dmPlane] = layout.planes;
    for (let b = 0; b < layout.blocks; b++) {
      const block = o + b * BYTES;
      copyWords(src, block + QS, QUANT_WORDS, dst, at + b * QUANT_WORDS);
      dst[at + qhPlane + b] = u32At(src, block + QH);
      dst[at + dmPlane + b] = u32At(src, block + D);
    }
  },
});

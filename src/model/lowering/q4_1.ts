// Q4_1: blocks of 32 elements, each a scale d, a min m and 32 unsigned 4-bit quants; element value
// q * d + m (ggml rounds the product to f32, then the sum).
//
// GGUF block (20 bytes):
//   offset 0  D   f16 scale d
//   offset 2  M   f16 min m
//   offset 4  QS  16 bytes; byte j holds element j in its low nibble and element j + 16 in its high nibble
// Packed row (src/submit/ops/qmatmul-layout.ts): the 16 nibble bytes of block b become words 4b..4b+3
// (bytes and nibbles untouched), and after all quant words comes one word per block holding d (low half)
// and m (high half), exactly the block's first 4 GGUF bytes. The packed row is as long as the GGUF row.
import { halfToFloat } from '../../submit/ops/qmatmul-layout.js';
import { copyWords, defineKind, u16At, u32At } from './kind.js';

const BLOCK = 32;
const HALF = BLOCK / 2;
const D = 0;
const M = 2;
const QS = 4;
const BYTES = QS + HALF;
const QUANT_WORDS = HALF / 4;
const LOW_NIBBLE = 0xf;

export const q4_1 = defineKind({
  name: 'Q4_1',
  ggmlTypeId: 3,
  blockElements: BLOCK,
  blockBytes: BYTES,
  packedLayout: 'Q4_1/planes-v1',
  dequantizeBlock(src, o, out, at) {
    const f = Math.fround;
    const d = halfToFloat(u16At(src, o + D));
    const m = halfToFloat(u16At(src, o + M));
    for (let j = 0; j < HALF; j++) {
      const byte = src[o + QS + j]!;
      out[at + j] = f(f((byte & LOW_NIBBLE) * d) + m);
      out[at + HALF + j] = f(f((byte >> 4) * d) + m);
    }
  },
  repackRow(src, o, layout, dst, at) {
    const dmPlane = at + layout.planes[0];
    for (let b = 0; b < layout.blocks; b++) {
      const block = o + b * BYTES;
      copyWords(src, block + QS, QUANT_WORDS, dst, at + b * QUANT_WORDS);
      dst[dmPlane + b] = u32At(src, block + D);
    }
  },
});

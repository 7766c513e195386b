// Q4_0: blocks of 32 elements, each a scale and 32 unsigned 4-bit quants; element value (q - 8) * d.
//
// GGUF block (18 bytes, so blocks after the first are not 4-byte aligned):
//   offset 0  D   f16 scale d
//   offset 2  QS  16 bytes; byte j holds element j in its low nibble and element j + 16 in its high nibble
// Packed row (src/submit/ops/qmatmul-layout.ts): the 16 nibble bytes of block b become words 4b..4b+3
// (bytes and nibbles untouched), and d goes to the half plane after all quant words.
import { halfToFloat } from '../../submit/ops/qmatmul-layout.js';
import { copyWords, defineKind, putHalf, u16At } from './kind.js';

const BLOCK = 32;
const HALF = BLOCK / 2;
const D = 0;
const QS = 2;
const BYTES = QS + HALF;
const QUANT_WORDS = HALF / 4;
/** The quants are stored offset by 8 (0..15 for -8..7). */
const OFFSET = 8;
const LOW_NIBBLE = 0xf;

export const q4_0 = defineKind({
  name: 'Q4_0',
  ggmlTypeId: 2,
  blockElements: BLOCK,
  blockBytes: BYTES,
  packedLayout: 'Q4_0/planes-v1',
  dequantizeBlock(src, o, out, at) {
    const d = halfToFloat(u16At(src, o + D));
    for (let j = 0; j < HALF; j++) {
      const byte = src[o + QS + j]!;
      out[at + j] = Math.fround(((byte & LOW_NIBBLE) - OFFSET) * d);
      out[at + HALF + j] = Math.fround(((byte >> 4) - OFFSET) * d);
    }
  },
  repackRow(src, o, layout, dst, at) {
    const dPlane = at + layout.planes[0];
    for (let b = 0; b < layout.blocks; b++) {
      const block = o + b * BYTES;
      copyWords(src, block + QS, QUANT_WORDS, dst, at + b * QUANT_WORDS);
      putHalf(dst, dPlane, b, u16At(src, block + D));
    }
  },
});

// Q8_0: blocks of 32 elements, each a scale and 32 signed bytes; element j of a block is d * q[j].
//
// GGUF block (34 bytes; blocks follow each other with no padding, so after the first one nothing is
// 4-byte aligned):
//   offset 0  D   f16 scale d
//   offset 2  QS  32 x int8 quants, element order
// Packed row (src/submit/ops/qmatmul-layout.ts): the 32 quant bytes of block b become words 8b..8b+7
// (bytes in the same order), and d goes to the half plane after all quant words.
import { halfToFloat } from '../../submit/ops/qmatmul-layout.js';
import { copyWords, defineKind, int8, putHalf, u16At } from './kind.js';

const BLOCK = 32;
const D = 0;
const QS = 2;
const BYTES = QS + BLOCK;
const QUANT_WORDS = BLOCK / 4;

export const q8_0 = defineKind({
  name: 'Q8_0',
  ggmlTypeId: 8,
  blockElements: BLOCK,
  blockBytes: BYTES,
  packedLayout: 'Q8_0/planes-v1',
  dequantizeBlock(src, o, out, at) {
    const d = halfToFloat(u16At(src, o + D));
    for (let j = 0; j < BLOCK; j++) out[at + j] = Math.fround(int8(src[o + QS + j]!) * d);
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

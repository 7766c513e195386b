// The unquantized kinds: F32 (4-byte IEEE floats), F16 (IEEE binary16) and BF16 (the top 16 bits of an
// f32). Each "block" is one element; a GGUF row is the elements in order, little-endian.
// Packed rows (src/submit/ops/qmatmul-layout.ts): F32 is one word per element (the GGUF bytes as they
// are); F16 and BF16 pack elements 2i and 2i + 1 into word i (low half, high half), so an odd row length
// leaves the last high half zero. For even row lengths the packed form is the GGUF bytes themselves.
import { bf16ToFloat, halfToFloat } from '../../submit/ops/qmatmul-layout.js';
import { copyWords, defineKind, u16At, u32At } from './kind.js';

const F32_BYTES = 4;
const HALF_BYTES = 2;

const f32Scratch = new Float32Array(1);
const f32ScratchBits = new Uint32Array(f32Scratch.buffer);

export const f32 = defineKind({
  name: 'F32',
  ggmlTypeId: 0,
  blockElements: 1,
  blockBytes: F32_BYTES,
  packedLayout: 'F32/words-v1',
  dequantizeBlock(src, o, out, at) {
    f32ScratchBits[0] = u32At(src, o);
    out[at] = f32Scratch[0]!;
  },
  repackRow(src, o, layout, dst, at) {
    copyWords(src, o, layout.k, dst, at);
  },
});

function repackHalves(src: Uint8Array, o: number, k: number, dst: Uint32Array, at: number): void {
  const pairs = k >> 1;
  copyWords(src, o, pairs, dst, at);
  if ((k & 1) === 1) dst[at + pairs] = u16At(src, o + pairs * 4);
}

export const f16 = defineKind({
  name: 'F16',
  ggmlTypeId: 1,
  blockElements: 1,
  blockBytes: HALF_BYTES,
  packedLayout: 'F16/pairs-v1',
  dequantizeBlock(src, o, out, at) {
    out[at] = halfToFloat(u16At(src, o));
  },
  repackRow(src, o, layout, dst, at) {
    repackHalves(src, o, layout.k, dst, at);
  },
});

export const bf16 = defineKind({
  name: 'BF16',
  ggmlTypeId: 30,
  blockElements: 1,
  blockBytes: HALF_BYTES,
  packedLayout: 'BF16/pairs-v1',
  dequantizeBlock(src, o, out, at) {
    out[at] = bf16ToFloat(u16At(src, o));
  },
  repackRow(src, o, layout, dst, at) {
    repackHalves(src, o, layout.k, dst, at);
  },
});

// Synthetic GGUF weight bytes for the qmatmul and lowering suites: seeded, every kind, every bit of the
// quant fields random (so top scale bits, sign bits and all nibble values occur), block scales drawn as
// f16/bf16 bit patterns of a moderate magnitude so that products stay well inside f32 range and the sums
// are comparable across kernels. Pure functions; no GPU.
import type { PackedKind } from '../../src/submit/ops/index.js';
import { rng } from './harness.js';

/** GGUF block geometry of each kind (elements, bytes), as ggml defines it. */
export const GGUF_BLOCK: Readonly<Record<PackedKind, readonly [elements: number, bytes: number]>> = {
  F32: [1, 4],
  F16: [1, 2],
  BF16: [1, 2],
  Q8_0: [32, 34],
  Q4_0: [32, 18],
  Q4_K: [256, 144],
  Q6_K: [256, 210],
  Q4_1: [32, 20],
  Q5_0: [32, 22],
  Q5_1: [32, 24],
};

/** f16 exponent field of 1.0 (bias 15). */
const HALF_BIAS = 15;
/** bfloat16 exponent field of 1.0 (bias 127). */
const BF16_BIAS = 127;

/** Random normal f16 bits with |value| in [2^lo, 2^(hi+1)) and a random sign (lo >= -14). */
function randomHalf(r: () => number, lo: number, hi: number): number {
  const exponent = HALF_BIAS + lo + Math.floor(r() * (hi - lo + 1));
  const mantissa = Math.floor(r() * 1024);
  const sign = r() < 0.5 ? 0x8000 : 0;
  return sign | (exponent << 10) | mantissa;
}

function randomBf16(r: () => number, lo: number, hi: number): number {
  const exponent = BF16_BIAS + lo + Math.floor(r() * (hi - lo + 1));
  const mantissa = Math.floor(r() * 128);
  const sign = r() < 0.5 ? 0x8000 : 0;
  return sign | (exponent << 7) | mantissa;
}

function putU16(bytes: Uint8Array, o: number, v: number): void {
  bytes[o] = v & 0xff;
  bytes[o + 1] = (v >> 8) & 0xff;
}

/**
 * `rows` GGUF rows of `k` elements of `kind` (k a whole number of blocks), from `seed`. Element values are
 * of order 1 for the float kinds and of order 0.01-1 for the quantized ones.
 */
export function randomGgufRows(kind: PackedKind, rows: number, k: number, seed: number): Uint8Array {
  const [elements, bytes] = GGUF_BLOCK[kind];
  const blocks = (rows * k) / elements;
  const out = new Uint8Array(blocks * bytes);
  const r = rng(seed);
  for (let i = 0; i < out.length; i++) out[i] = Math.floor(r() * 256);
  const view = new DataView(out.buffer);
  for (let b = 0; b < blocks; b++) {
    const o = b * bytes;
    switch (kind) {
      case 'F32':
        view.setFloat32(o, 2 * r() - 1, true);
        break;
      case 'F16':
        putU16(out, o, randomHalf(r, -6, 0));
        break;
      case 'BF16':
        putU16(out, o, randomBf16(r, -6, 0));
        break;
      case 'Q8_0':
        putU16(out, o, randomHalf(r, -10, -6));
        break;
      case 'Q4_0':
        putU16(out, o, randomHalf(r, -7, -3));
        break;
      case 'Q4_K':
        putU16(out, o, randomHalf(r, -13, -9));
        putU16(out, o + 2, randomHalf(r, -13, -9));
        break;
      case 'Q6_K':
        putU16(out, o + 208, randomHalf(r, -14, -11));
        break;
      case 'Q4_1':
      case 'Q5_1':
        // d and m (qh, for Q5_1, stays random bytes).
        putU16(out, o, randomHalf(r, -8, -4));
        putU16(out, o + 2, randomHalf(r, -5, -1));
        break;
      case 'Q5_0':
        // d (qh stays random bytes).
        putU16(out, o, randomHalf(r, -8, -4));
        break;
    }
  }
  return out;
}

// Packed weights for the suites of the kernels that read them through the unit walk (qgather,
// qmatmul_expert, the MoE block): synthetic GGUF rows (contracts/ops/qmatmul-blocks.ts: every quant bit
// random) repacked by the model layer's lowering kinds exactly as a model load repacks them, plus the
// rows dequantized by the lowering's GGUF reference dequantizer (the independent reference). Pure.
import { LOWERING_KINDS } from '../../src/model/index.js';
import type { PackedKind } from '../../src/submit/ops/index.js';
import { GGUF_BLOCK, randomGgufRows } from './qmatmul-blocks.js';

export interface PackedWeights {
  /** The packed rows (an f32 view for F32, as a model binds them). */
  readonly packed: Uint32Array | Float32Array;
  /** The same rows dequantized from the GGUF bytes by the lowering's reference dequantizer. */
  readonly rows: Float32Array;
}

/** `rows` packed rows of `k` elements of `kind` from `seed`. */
export function packedWeights(kind: PackedKind, rows: number, k: number, seed: number): PackedWeights {
  const lowering = LOWERING_KINDS[kind];
  const gguf = randomGgufRows(kind, rows, k, seed);
  const packed = lowering.repack(gguf, k);
  const deq = new Float32Array(rows * k);
  lowering.dequantize(gguf, deq);
  return { packed: kind === 'F32' ? new Float32Array(packed.buffer, packed.byteOffset, packed.length) : packed, rows: deq };
}

/** K for `blocks` blocks of `kind` (float kinds: `blocks` elements, odd counts included). */
export function kOf(kind: PackedKind, blocks: number): number {
  return GGUF_BLOCK[kind][0] * blocks;
}

/**
 * Block counts per kind that make a row longer than 256 units of the walk (so one invocation takes
 * several units and the last round is partial); rows stay under ~4,500 elements.
 */
export const MANY_UNIT_BLOCKS: Readonly<Record<PackedKind, number>> = { F32: 1100, F16: 1030, BF16: 1030, Q8_0: 67, Q4_0: 69, Q4_K: 9, Q6_K: 17, Q4_1: 69, Q5_0: 71, Q5_1: 69 };

/** Upper block counts for random rows of each kind (K up to ~1,000 for the float kinds, a few blocks else). */
export const MAX_BLOCKS: Readonly<Record<PackedKind, number>> = { F32: 300, F16: 300, BF16: 300, Q8_0: 12, Q4_0: 12, Q4_K: 4, Q6_K: 4, Q4_1: 12, Q5_0: 12, Q5_1: 12 };

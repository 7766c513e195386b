// The operand shapes of the q8-activation kernel suites (contracts/ops/wasm-q8-activation.test.ts and
// wasm-quant-relaxed-dot.test.ts): one arbitrary of (m, n, k) per weight kind, so both suites draw the
// same kinds of shapes. M is the decode row (1) or a small prefill; N is any count up to 40 or one of the
// sizes that matter to the kernels' row groups (Q4_0 four rows per step, Q8_0 and Q6_K two: 1, the group
// sizes, one past and one short of them, primes); K is whole weight blocks from one (Q4_0 / Q8_0 also K
// not a multiple of 256; Q4_K / Q6_K one or two super-blocks).
import { fc } from './fc.js';

/** The kinds with a q8-activation kernel. */
export const Q8_KINDS = ['Q8_0', 'Q4_0', 'Q4_K', 'Q6_K'] as const;
export type Q8Kind = (typeof Q8_KINDS)[number];
/** Elements per weight block of each kind (x is always quantized in blocks of 32). */
export const WEIGHT_BLOCK: Readonly<Record<Q8Kind, number>> = { Q8_0: 32, Q4_0: 32, Q4_K: 256, Q6_K: 256 };
/** N at and around the kernels' row groups, and primes. */
export const ROW_GROUP_SIZES = [1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 13, 17, 31, 37];

/** One qmatmul shape for `kind`: Q4_0 / Q8_0 rows of 1 .. maxBlocks blocks, Q4_K / Q6_K of 256 or 512. */
export function q8Shape(kind: Q8Kind, maxBlocks: number): fc.Arbitrary<{ m: number; n: number; k: number }> {
  return fc
    .tuple(
      fc.oneof(fc.constant(1), fc.integer({ min: 2, max: 4 })),
      fc.oneof(fc.integer({ min: 1, max: 40 }), fc.constantFrom(...ROW_GROUP_SIZES)),
      fc.integer({ min: 1, max: maxBlocks }),
    )
    .map(([m, n, blocks]) => ({ m, n, k: WEIGHT_BLOCK[kind] * (WEIGHT_BLOCK[kind] === 256 ? 1 + (blocks % 2) : blocks) }));
}

// Suite: the q8-activation kernels (hostKernels 'wasm-q8', issue 12) on every f16 scale pattern and on
// rows long enough for their eight-scales-at-once step.
//
// Plan. Packed rows of random words (every quant byte pattern) with the f16 scale planes overwritten:
// Q8_0 / Q4_0 block scales (8, 9, 16, 17 and 25 blocks, so the eight-per-step decode of the block factors
// runs with and without a remainder), Q4_K d / dmin and Q6_K d (1 to 3 super-blocks). Each scale is a
// normal half, or, where the case asks for them, also zero, negative zero, subnormal, infinite or NaN
// (the eight-per-step decode takes its exact slow path for a step holding any of the last three), or
// also subnormal ones alone (so a step must leave its fast path for them, not only for a zero or a
// special beside them: Q4_0's four-row decode checks its 32 scales per step at once). Through
// a real runtime on a host provider, the output equals the scalar twin qmatmulQ8Reference bit for bit
// (NaN where the twin has NaN). The twin decodes each half with halfToFloat, so a wrong fast path (a
// subnormal or special scale decoded as a normal one) shows up as different bits.
import { describe, expect, it } from 'vitest';
import { createHostProvider, createRuntime } from '../../src/index.js';
import { QMATMUL, packedRowLayout } from '../../src/submit/ops/index.js';
import { qmatmulQ8Reference } from '../../src/submit/wasm/q8-activation.js';
import { fc, fcParams } from '../support/fc.js';
import { runHostOp } from '../support/run-host.js';
import type { HostOperand } from '../support/run-host.js';
import { arb, randomF32, rng } from './harness.js';

type Kind = 'Q8_0' | 'Q4_0' | 'Q4_K' | 'Q6_K';

/** Row lengths per kind: Q8_0 / Q4_0 in blocks of 32, the k-quants in super-blocks of 256. */
const LENGTHS: Readonly<Record<Kind, readonly number[]>> = {
  Q8_0: [8, 9, 16, 17, 25].map((b) => 32 * b),
  Q4_0: [8, 9, 16, 17, 25].map((b) => 32 * b),
  Q4_K: [256, 512, 768],
  Q6_K: [256, 512, 768],
};
/** f16 bit patterns other than normal numbers. */
const ODD_HALVES = [0x0000, 0x8000, 0x0001, 0x83ff, 0x0200, 0x7c00, 0xfc00, 0x7e01];
/** Subnormal halves only (no zero, infinity or NaN beside them to force a slow path on their own). */
const SUBNORMAL_HALVES = [0x0001, 0x83ff, 0x0200, 0x03ff, 0x8001];
/** Which scales besides normal ones a case draws (a quarter of them): none, any odd half, or subnormals. */
type Odd = 'none' | 'any' | 'subnormal';
/** Normal halves of scale-like size (2^-10 .. 2^-3), either sign. */
function normalHalf(r: () => number): number {
  return (r() < 0.5 ? 0 : 0x8000) | ((5 + Math.floor(r() * 8)) << 10) | Math.floor(r() * 1024);
}

/** Byte offset in a row and count of the f16 scales of a kind (Q4_K: d and dmin of each super-block). */
function halfPlane(kind: Kind, k: number): { at: number; count: number } {
  const layout = packedRowLayout(kind, k);
  if (kind === 'Q8_0' || kind === 'Q4_0') return { at: layout.planes[0] * 4, count: k / 32 };
  if (kind === 'Q4_K') return { at: layout.planes[1] * 4, count: 2 * (k / 256) };
  return { at: layout.planes[2] * 4, count: k / 256 };
}

/** n packed rows of random words with their scales drawn as described in the plan. */
function packedRows(kind: Kind, n: number, k: number, seed: number, odd: Odd): Uint32Array {
  const r = rng(seed);
  const layout = packedRowLayout(kind, k);
  const words = new Uint32Array(n * layout.rowWords);
  for (let i = 0; i < words.length; i++) words[i] = Math.floor(r() * 2 ** 32);
  const view = new DataView(words.buffer);
  const { at, count } = halfPlane(kind, k);
  for (let j = 0; j < n; j++) {
    for (let h = 0; h < count; h++) {
      const pool = odd === 'subnormal' ? SUBNORMAL_HALVES : ODD_HALVES;
      const bits = odd !== 'none' && r() < 0.25 ? pool[Math.floor(r() * pool.length)]! : normalHalf(r);
      view.setUint16(j * layout.rowWords * 4 + at + 2 * h, bits, true);
    }
  }
  return words;
}

const f32 = (shape: number[], data: Float32Array): HostOperand => ({ dtype: 'f32', shape, data });

describe.each([false, true])('q8-activation kernels on every scale pattern (shared memory: %s)', (shared) => {
  const q8 = createRuntime(createHostProvider({ shared }), { hostKernels: 'wasm-q8' });
  for (const kind of ['Q8_0', 'Q4_0', 'Q4_K', 'Q6_K'] as const) {
    it(`[OPS-wasm-q8-activation] ${kind}: zero, subnormal, infinite and NaN scales and long rows give the scalar twin's bits`, async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 3 }),
          fc.integer({ min: 1, max: 9 }),
          fc.constantFrom(...LENGTHS[kind]),
          fc.constantFrom<Odd>('none', 'any', 'subnormal'),
          arb.seed(),
          arb.pads(3),
          async (m, n, k, odd, seed, pads) => {
            const x = randomF32(seed, m * k);
            const packed = packedRows(kind, n, k, seed + 1, odd);
            const w: HostOperand = { dtype: 'u32', shape: [n, packedRowLayout(kind, k).rowWords], data: packed };
            const got = await runHostOp(q8, QMATMUL[kind].plain, [f32([m, k], x), w, f32([m, n], new Float32Array(m * n))], { m, n, k }, pads);
            expect(got.wasm, 'the q8 kernel ran').toBe(1);
            const twin = new Float32Array(m * n);
            qmatmulQ8Reference(kind, x, packed, twin, m, n, k);
            expect(Array.from(got.arrays[2]!), `${kind} ${m}x${n}x${k}`).toEqual(Array.from(twin));
          },
        ),
        fcParams(20),
      );
    });
  }
});

// Suite: the F16 qmatmul kernel of the host provider (wasm/quant.wat, issue 12) takes a weight's rows four
// at a time in quarter order (with x scaled once per four rows) when every |x| is below 2^16, and one at
// a time otherwise (the N mod 4 last rows, larger x). A row's result must not depend on which way it went.
//
// Plan. Random finite halves of every exponent (subnormals, zeros of both signs, the largest values), K
// with 16-half trips, 8-half trips and single halves left over (odd K included), 1 to 3 rows of x, placed
// at element offsets in their claims. Through a real runtime on a host provider (ordinary and shared
// memory; the WebAssembly path counted):
//   - the whole N-row call equals N one-row calls (each row alone takes the one-row path) bit for bit;
//   - with one element of x at 2^17 (2^112 times it is past f32's range, so the four-row path must not
//     run), the same holds and every output is finite and matches the host() twin within its dot bound.
import { describe, expect, it } from 'vitest';
import { createHostProvider, createRuntime } from '../../src/index.js';
import { QMATMUL } from '../../src/submit/ops/index.js';
import { halfToFloat } from '../../src/submit/ops/qmatmul-layout.js';
import { fc, fcParams } from '../support/fc.js';
import { runHostOp } from '../support/run-host.js';
import type { HostOperand } from '../support/run-host.js';
import { arb, randomF32, rng } from './harness.js';

/** The first half bit pattern with the exponent of all ones (infinity); finite halves are below it once the sign is cleared. */
const HALF_SPECIAL = 0x7c00;
const HALF_SIGN = 0x8000;
/** An element of x whose product with 2^112 overflows f32 (the four-row path's bound is 2^16). */
const BIG_X = 2 ** 17;
/** |wasm - twin| <= REL_L1 · sum_k |x_k · w_k| (f32 lanes against the twin's f64 sum), as the other host suites. */
const REL_L1 = 2e-5;

const f32 = (shape: number[], data: Float32Array): HostOperand => ({ dtype: 'f32', shape, data });

/** n rows of k finite halves (any exponent but all ones, either sign), each row padded to whole words. */
function halfRows(n: number, k: number, seed: number): { words: Uint32Array; rowHalves: number } {
  const r = rng(seed);
  const rowHalves = k + (k % 2);
  const halves = new Uint16Array(n * rowHalves);
  for (let j = 0; j < n; j++) {
    for (let e = 0; e < k; e++) halves[j * rowHalves + e] = (r() < 0.5 ? HALF_SIGN : 0) | Math.floor(r() * HALF_SPECIAL);
  }
  return { words: new Uint32Array(halves.buffer), rowHalves };
}

describe.each([false, true])('F16 qmatmul rows four at a time or one at a time (shared memory: %s)', (shared) => {
  const runtime = createRuntime(createHostProvider({ shared }));

  /** The whole call's output, and each row of w run alone (m x 1 outputs gathered into m x n). */
  async function wholeAndAlone(m: number, n: number, k: number, x: Float32Array, words: Uint32Array, rowHalves: number, pads: readonly number[]) {
    const rowWords = rowHalves / 2;
    const whole = await runHostOp(runtime, QMATMUL.F16.plain, [f32([m, k], x), { dtype: 'u32', shape: [n, rowWords], data: words }, f32([m, n], new Float32Array(m * n))], { m, n, k }, pads);
    expect(whole.wasm, 'the F16 kernel ran').toBe(1);
    const alone = new Float32Array(m * n);
    for (let j = 0; j < n; j++) {
      const row = words.slice(j * rowWords, (j + 1) * rowWords);
      const one = await runHostOp(runtime, QMATMUL.F16.plain, [f32([m, k], x), { dtype: 'u32', shape: [1, rowWords], data: row }, f32([m, 1], new Float32Array(m))], { m, n: 1, k }, pads);
      for (let i = 0; i < m; i++) alone[i * n + j] = one.arrays[2]![i]!;
    }
    return { whole: whole.arrays[2]! as Float32Array, alone };
  }

  it('[OPS-wasm-qmatmul] F16: every row of an N-row call equals that row run alone, bit for bit (four-row quarters and single rows agree)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 3 }), fc.integer({ min: 4, max: 13 }), fc.integer({ min: 1, max: 70 }), arb.seed(), arb.pads(3), async (m, n, k, seed, pads) => {
        const x = randomF32(seed, m * k);
        const { words, rowHalves } = halfRows(n, k, seed + 1);
        const { whole, alone } = await wholeAndAlone(m, n, k, x, words, rowHalves, pads);
        expect(Array.from(whole), `F16 ${m}x${n}x${k}`).toEqual(Array.from(alone));
      }),
      fcParams(12),
    );
  });

  it('[OPS-wasm-qmatmul] F16 with an element of x past 2^16: finite, within the dot bound of the twin, and equal to each row run alone', async () => {
    const [m, n, k] = [2, 9, 40];
    const x = randomF32(7, m * k);
    x[k + 5] = BIG_X;
    const { words, rowHalves } = halfRows(n, k, 8);
    const halves = new Uint16Array(words.buffer);
    const { whole, alone } = await wholeAndAlone(m, n, k, x, words, rowHalves, [1, 2, 3]);
    expect(Array.from(whole)).toEqual(Array.from(alone));
    const twin = [x.slice(), words.slice(), new Float32Array(m * n)];
    QMATMUL.F16.plain.host({ m, n, k }, twin as never);
    for (let i = 0; i < m; i++) {
      for (let j = 0; j < n; j++) {
        let l1 = 0;
        for (let e = 0; e < k; e++) l1 += Math.abs(x[i * k + e]! * halfToFloat(halves[j * rowHalves + e]!));
        const got = whole[i * n + j]!;
        expect(Number.isFinite(got), `out[${i}, ${j}] is finite`).toBe(true);
        expect(Math.abs(got - twin[2]![i * n + j]!), `out[${i}, ${j}]`).toBeLessThanOrEqual(REL_L1 * l1);
      }
    }
  });
});

// Suite: the q8-activation kernels of the host provider (issue 12), chosen with hostKernels 'wasm-q8'.
//
// Plan. Q8_0, Q4_0, Q4_K and Q6_K qmatmuls run through real runtimes on host providers (ordinary and shared memory,
// operands at element offsets with canaries, contracts/support/run-host.ts):
//   - seeded properties over M (decode 1 and small prefill), N (1, the kernels' row groups and their tails,
//     primes) and K from one block (contracts/support/q8-shapes.ts):
//     the 'wasm-q8' runtime's output equals the scalar twin qmatmulQ8Reference bit for bit, and stays
//     within the quantization bound of the exact product (each x element is off by at most half its
//     block's scale: |err| <= sum_b d_b / 2 * sum_e |w_e| plus the f32 lanes' 2e-5 * sum|x w|);
//   - the default runtime ('wasm') on the same operands keeps its f32-activation kernel: its output
//     differs from the q8 output somewhere for x whose values do not sit on the 8-bit grid, and the
//     stats say which activations each runtime used;
//   - x exactly on each block's 8-bit grid (every value an integer multiple of amax / 127 with amax
//     reached): the q8 kernel's integer sums are then the exact ones, so it agrees with the f32 kernel
//     within the f32 lanes' bound.
import { describe, expect, it } from 'vitest';
import { LOWERING_KINDS } from '../../src/model/index.js';
import { createHostProvider, createRuntime } from '../../src/index.js';
import { QMATMUL, packedRowLayout } from '../../src/submit/ops/index.js';
import { qmatmulQ8Reference } from '../../src/submit/wasm/q8-activation.js';
import { fc, fcParams } from '../support/fc.js';
import { Q8_KINDS, WEIGHT_BLOCK, q8Shape } from '../support/q8-shapes.js';
import { runHostOp } from '../support/run-host.js';
import type { HostOperand } from '../support/run-host.js';
import { arb, randomF32 } from './harness.js';
import { randomGgufRows } from './qmatmul-blocks.js';

const KINDS = Q8_KINDS;
const BLOCK = 32;
const REL_L1 = 2e-5;
const ABS = 1e-6;

const f32 = (shape: number[], data: Float32Array): HostOperand => ({ dtype: 'f32', shape, data });

describe.each([false, true])('q8-activation kernels (shared memory: %s)', (shared) => {
  const q8 = createRuntime(createHostProvider({ shared }), { hostKernels: 'wasm-q8' });
  const plain = createRuntime(createHostProvider({ shared }), { hostKernels: 'wasm' });

  it('[OPS-wasm-q8-activation] the runtimes report their activations: q8 only when asked for', () => {
    expect(q8.hostKernels()!.kind).toBe('wasm-simd');
    expect(q8.hostKernels()!.activations).toBe('q8');
    expect(plain.hostKernels()!.activations).toBe('f32');
  });

  for (const kind of KINDS) {
    it(`[OPS-wasm-q8-activation] ${kind}: equals the scalar twin bit for bit and the exact product within the quantization bound; the default kernel is unchanged`, async () => {
      let differs = false;
      await fc.assert(
        fc.asyncProperty(q8Shape(kind, 6), arb.seed(), arb.pads(3), async ({ m, n, k }, seed, pads) => {
          const xBlocks = k / BLOCK;
          const x = randomF32(seed, m * k);
          const gguf = randomGgufRows(kind, n, k, seed + 1);
          const packed = LOWERING_KINDS[kind].repack(gguf, k);
          const rows = new Float32Array(n * k);
          LOWERING_KINDS[kind].dequantize(gguf, rows);
          const w: HostOperand = { dtype: 'u32', shape: [n, packedRowLayout(kind, k).rowWords], data: packed };
          const operands = [f32([m, k], x), w, f32([m, n], new Float32Array(m * n))];
          const got = await runHostOp(q8, QMATMUL[kind].plain, operands, { m, n, k }, pads);
          expect(got.wasm, 'the q8 kernel ran').toBe(1);
          expect(got.scalar).toBe(0);
          expect(Array.from(got.arrays[0]!), 'x is read-only').toEqual(Array.from(x));
          const twin = new Float32Array(m * n);
          qmatmulQ8Reference(kind, x, packed, twin, m, n, k);
          expect(Array.from(got.arrays[2]!), `${kind} ${m}x${n}x${k} against the twin`).toEqual(Array.from(twin));
          const base = await runHostOp(plain, QMATMUL[kind].plain, operands, { m, n, k }, pads);
          for (let i = 0; i < m; i++) {
            for (let j = 0; j < n; j++) {
              let exact = 0;
              let l1 = 0;
              let bound = 0;
              for (let b = 0; b < xBlocks; b++) {
                let amax = 0;
                let wl1 = 0;
                for (let e = b * BLOCK; e < (b + 1) * BLOCK; e++) {
                  const xv = x[i * k + e]!;
                  const wv = rows[j * k + e]!;
                  exact += xv * wv;
                  l1 += Math.abs(xv * wv);
                  amax = Math.max(amax, Math.abs(xv));
                  wl1 += Math.abs(wv);
                }
                bound += ((amax / 127) * 0.5 + 1e-7 * amax) * wl1;
              }
              const g = got.arrays[2]![i * n + j]!;
              const limit = bound + REL_L1 * l1 + ABS;
              if (!(Math.abs(g - exact) <= limit)) expect.fail(`${kind} out[${i}, ${j}] = ${g}, exact ${exact}, allowed ${limit}`);
              if (g !== base.arrays[2]![i * n + j]) differs = true;
            }
          }
        }),
        fcParams(12),
      );
      expect(differs, 'the default runtime kept its f32-activation kernel (some output differs from the q8 one)').toBe(true);
    });

    it(`[OPS-wasm-q8-activation] ${kind}: x on each block's 8-bit grid gives the f32 kernel's sums within the f32 lanes' bound`, async () => {
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 1, max: 19 }), fc.integer({ min: 1, max: 4 }), arb.seed(), async (n, wBlocks, seed) => {
          const k = WEIGHT_BLOCK[kind] * (WEIGHT_BLOCK[kind] === 256 ? 1 + (wBlocks % 2) : wBlocks);
          const blocks = k / BLOCK;
          const noise = randomF32(seed, k);
          const x = new Float32Array(k);
          for (let b = 0; b < blocks; b++) {
            const step = 2 ** ((b % 5) - 8);
            for (let e = 0; e < BLOCK; e++) x[b * BLOCK + e] = Math.round(noise[b * BLOCK + e]! * 127) * step;
            x[b * BLOCK + (seed + b) % BLOCK] = 127 * step;
          }
          const packed = LOWERING_KINDS[kind].repack(randomGgufRows(kind, n, k, seed + 1), k);
          const rows = new Float32Array(n * k);
          LOWERING_KINDS[kind].dequantize(randomGgufRows(kind, n, k, seed + 1), rows);
          const w: HostOperand = { dtype: 'u32', shape: [n, packedRowLayout(kind, k).rowWords], data: packed };
          const operands = [f32([1, k], x), w, f32([1, n], new Float32Array(n))];
          const got = await runHostOp(q8, QMATMUL[kind].plain, operands, { m: 1, n, k });
          const base = await runHostOp(plain, QMATMUL[kind].plain, operands, { m: 1, n, k });
          for (let j = 0; j < n; j++) {
            let l1 = 0;
            for (let e = 0; e < k; e++) l1 += Math.abs(x[e]! * rows[j * k + e]!);
            const g = got.arrays[2]![j]!;
            const h = base.arrays[2]![j]!;
            if (!(Math.abs(g - h) <= 2 * REL_L1 * l1 + ABS)) expect.fail(`${kind} 1x${n}x${k} out[${j}] = ${g}, f32 kernel ${h}`);
          }
        }),
        fcParams(8),
      );
    });
  }
});

// Shared body of the qmatmul op suites (contracts/ops/qmatmul*.test.ts): one describe block per weight
// kind, so that each kind's suite is its own test file (a mutant of one kind's kernel runs one file).
// Weights are synthetic GGUF rows (every quant bit random, contracts/ops/qmatmul-blocks.ts) repacked by
// the model layer's lowering kinds, exactly as a model load does.
// Plan, for one kind and every variant this device can run (plain always; subgroups where the device has
// `subgroups` and WGSL `subgroup_id`):
// (1) property: random M (half the runs M = 1, the decode shape; otherwise 2..9, so TM = 2 and 4 and M
//     not a multiple of TM), N in 1..40 (odd, not a multiple of the two rows a workgroup owns), K from the
//     minimum block count up, element offsets with canaries: WGSL equals the host twin within
//     2e-5 · sum_k |x_k · w_nk| + 1e-6 (f32 accumulation in another order than the host's f64 sum; the
//     bound scales with the magnitude of the terms, not of the result, which can cancel);
// (2) every tiling (TM = 1, 2, 4) at the minimum K and a few blocks, N = 1, 2 and 37; and both shapes
//     of a workgroup: many short rows per workgroup (row groups smaller than the workgroup) and one row
//     group as wide as the workgroup (K long enough, so the subgroups variant takes its subgroupAdd path);
// (3) folded dispatches (workgroup counts past a small maxComputeWorkgroupsPerDimension go to y);
// (4) the host twin equals the GGUF reference dequantizer (src/model/lowering) followed by an f64 dot,
//     exactly.
import { describe, expect, it } from 'vitest';
import { LOWERING_KINDS } from '../../src/model/index.js';
import { QMATMUL, packedRowLayout, qmatmulOp, qmatmulTiling, qmatmulVariant } from '../../src/submit/ops/index.js';
import type { PackedKind, QMatmulVariant } from '../../src/submit/ops/index.js';
import { fc, fcParams } from '../support/fc.js';
import { arb, foldingLimits, randomF32, runBoth, useWebGPU } from './harness.js';
import { GGUF_BLOCK, randomGgufRows } from './qmatmul-blocks.js';

/** |gpu - host| <= REL_L1 · sum_k |x_k w_nk| + ABS. */
const REL_L1 = 2e-5;
const ABS = 1e-6;

interface Case {
  readonly m: number;
  readonly n: number;
  readonly k: number;
  readonly seed: number;
  readonly pads?: readonly number[];
}

/** Packed weights of a case, and the dequantized rows for the error bound. */
function weights(kind: PackedKind, c: Case): { packed: Uint32Array | Float32Array; rows: Float32Array } {
  const lowering = LOWERING_KINDS[kind];
  const gguf = randomGgufRows(kind, c.n, c.k, c.seed + 1);
  const packed = lowering.repack(gguf, c.k);
  const rows = new Float32Array(c.n * c.k);
  lowering.dequantize(gguf, rows);
  return { packed: kind === 'F32' ? new Float32Array(packed.buffer) : packed, rows };
}

function expectWithinL1(got: Float32Array, want: Float32Array, x: Float32Array, rows: Float32Array, c: Case, label: string): void {
  for (let i = 0; i < c.m; i++) {
    for (let j = 0; j < c.n; j++) {
      let l1 = 0;
      for (let kk = 0; kk < c.k; kk++) l1 += Math.abs(x[i * c.k + kk]! * rows[j * c.k + kk]!);
      const g = got[i * c.n + j]!;
      const h = want[i * c.n + j]!;
      if (!(Math.abs(g - h) <= REL_L1 * l1 + ABS)) {
        expect.fail(`${label}: out[${i}, ${j}] is ${g}, host ${h}, allowed ${REL_L1}·${l1} + ${ABS}`);
      }
    }
  }
}

async function compare(provider: ReturnType<ReturnType<typeof useWebGPU>>, kind: PackedKind, variant: QMatmulVariant, c: Case, fold = false): Promise<void> {
  const op = qmatmulOp(kind, variant);
  const layout = packedRowLayout(kind, c.k);
  const x = randomF32(c.seed, c.m * c.k);
  const { packed, rows } = weights(kind, c);
  const params = { m: c.m, n: c.n, k: c.k };
  const { gpu: g, host: h } = await runBoth(
    provider,
    op,
    [
      { dtype: 'f32', shape: [c.m, c.k], data: x },
      { dtype: kind === 'F32' ? 'f32' : 'u32', shape: [c.n, layout.rowWords], data: packed },
      { dtype: 'f32', shape: [c.m, c.n], data: new Float32Array(c.m * c.n) },
    ],
    params,
    c.pads ?? [],
    foldingLimits(op, params, fold),
  );
  expectWithinL1(g[2] as Float32Array, h[2] as Float32Array, x, rows, c, `${op.name} M=${c.m} N=${c.n} K=${c.k}`);
}

/** K for `blocks` blocks of `kind` (float kinds: `blocks` elements, odd counts included). */
function kOf(kind: PackedKind, blocks: number): number {
  return GGUF_BLOCK[kind][0] * blocks;
}

/** Units per row that make a row group as wide as its workgroup (qmatmulTiling: 8 units per invocation, 32+ invocations). */
const LONG_ROW_UNITS = 8 * 64;

/** Largest block count drawn per kind (keeps K <= ~1000). */
const MAX_BLOCKS: Readonly<Record<PackedKind, number>> = { F32: 80, F16: 80, BF16: 80, Q8_0: 12, Q4_0: 12, Q4_K: 4, Q6_K: 4, Q4_1: 12, Q5_0: 12, Q5_1: 12 };

const caseArb = (kind: PackedKind) =>
  fc.record({
    m: fc.oneof(fc.constant(1), fc.integer({ min: 2, max: 9 })),
    n: arb.size(40),
    k: fc.oneof(fc.constant(1), fc.integer({ min: 1, max: MAX_BLOCKS[kind] })).map((b) => kOf(kind, b)),
    seed: arb.seed(),
    pads: arb.pads(3),
  });

/** The suite of one kind (see the plan above). */
export function describeQMatmul(kind: PackedKind): void {
  describe(`qmatmul ${kind}: WGSL against the host twin, every variant this device runs`, () => {
    const gpu = useWebGPU();

    for (const variant of ['plain', 'subgroups'] as const) {
      const id = '[OPS-qmatmul]';
      it(`${id} ${kind} ${variant}: random M (half decode), N, K from one block, offsets: within 2e-5·Σ|x·w|`, async (ctx) => {
        if (variant === 'subgroups' && qmatmulVariant(gpu()) !== 'subgroups') {
          ctx.skip();
          return;
        }
        await fc.assert(
          fc.asyncProperty(caseArb(kind), async (c) => {
            await compare(gpu(), kind, variant, c);
          }),
          fcParams(8),
        );
      });
    }

    it(`[OPS-qmatmul] ${kind}: every tiling (M = 1, 2, 3, 4, 5 -> TM 1, 2, 4) at the minimum K and at 3 blocks, N = 1 and 2 and 37`, async () => {
      const p = gpu();
      const variant = qmatmulVariant(p);
      const ms = [1, 2, 3, 4, 5];
      expect(new Set(ms.map((m) => qmatmulTiling(m, 1).TM))).toEqual(new Set([1, 2, 4]));
      let seed = 101;
      for (const m of ms) {
        for (const n of [1, 2, 37]) {
          for (const blocks of [1, 3]) await compare(p, kind, variant, { m, n, k: kOf(kind, blocks), seed: seed++ });
        }
      }
    });

    it(`[OPS-qmatmul] ${kind}: row groups narrower than the workgroup (short rows) and as wide as it (long rows), M = 1 and 5`, async () => {
      const p = gpu();
      const variant = qmatmulVariant(p);
      const unitsPerBlock = packedRowLayout(kind, kOf(kind, 1)).units;
      const shortK = kOf(kind, 1);
      // Enough blocks that the row group reaches the workgroup's full width.
      const longBlocks = Math.ceil(LONG_ROW_UNITS / unitsPerBlock);
      const longK = kOf(kind, longBlocks);
      const short = qmatmulTiling(1, packedRowLayout(kind, shortK).units);
      const long = qmatmulTiling(1, packedRowLayout(kind, longK).units);
      expect(short.SEG).toBeLessThan(short.WG);
      expect(long.SEG).toBe(long.WG);
      let seed = 301;
      for (const m of [1, 5]) {
        await compare(p, kind, variant, { m, n: 37, k: shortK, seed: seed++ });
        await compare(p, kind, variant, { m, n: 3, k: longK, seed: seed++ });
      }
    });

    it(`[OPS-qmatmul] ${kind}: folded dispatches (workgroups past the per-dimension limit go to y)`, async () => {
      const p = gpu();
      await compare(p, kind, 'plain', { m: 3, n: 29, k: kOf(kind, 2), seed: 7 }, true);
      await compare(p, kind, qmatmulVariant(p), { m: 1, n: 33, k: kOf(kind, 1), seed: 8 }, true);
    });

    it(`[OPS-qmatmul] ${kind}: the host twin equals the GGUF reference dequantizer and an f64 dot, exactly`, () => {
      fc.assert(
        fc.property(fc.integer({ min: 1, max: 3 }), fc.integer({ min: 1, max: 5 }), fc.integer({ min: 1, max: 3 }), arb.seed(), (m, n, blocks, seed) => {
          const k = kOf(kind, blocks);
          const x = randomF32(seed, m * k);
          const { packed, rows } = weights(kind, { m, n, k, seed });
          const out = new Float32Array(m * n);
          QMATMUL[kind].plain.host({ m, n, k }, [x, packed, out]);
          const want = new Float32Array(m * n);
          for (let i = 0; i < m; i++) {
            for (let j = 0; j < n; j++) {
              let s = 0;
              for (let kk = 0; kk < k; kk++) s += x[i * k + kk]! * rows[j * k + kk]!;
              want[i * n + j] = s;
            }
          }
          expect(Array.from(out)).toEqual(Array.from(want));
        }),
        fcParams(20),
      );
    });
  });
}

// Suite: the host provider's WebAssembly SIMD kernels (issue 12) against their scalar twins.
//
// Plan. Each op with a WebAssembly kernel runs through a real runtime on a host provider (ordinary and
// shared memory), operands placed at element offsets inside their claims with canaries around them
// (contracts/support/run-host.ts); the run must take the WebAssembly path (counted by the runtime) and
// agree with the op's host() twin on copies of the same data:
//   - seeded properties over shapes that include 1 x N, N x 1, primes, and K / widths that are not a
//     multiple of the vector width (tails), within a tolerance stated per op: the kernels accumulate in
//     f32 lanes where the twins accumulate in f64, so dot-shaped ops are bounded by 2e-5 · sum|x·w|
//     (the bound the GPU suites use), elementwise ops by a few f32 ulps, `add` is exact;
//   - the packed-weight dequantizer of every lowering kind (the groups form qmatmul decodes each weight row
//     into, expanded) equals decodePackedRow bit for bit (f16 scales and values include subnormals,
//     infinities, NaN and -0), so every difference in qmatmul is the order of its f32 operations (lanes,
//     and each group's scale applied to its dot product) only;
//   - row i of an M-row qmatmul equals the same row run alone, bit for bit, for every kind;
//   - read-only operands come back unchanged, canaries intact.
import { describe, expect, it } from 'vitest';
import { LOWERING_KINDS } from '../../src/model/index.js';
import { createHostProvider, createRuntime, hostKernelFaults } from '../../src/index.js';
import type { AnyTypedArray, Runtime } from '../../src/index.js';
import {
  PACKED_KINDS,
  QMATMUL,
  add,
  addInplace,
  attention,
  decodePackedRow,
  matmul,
  matmulBatched,
  matmulNT,
  packedRowLayout,
  rmsnorm,
  rope,
  siluMul,
  softmax,
} from '../../src/submit/ops/index.js';
import type { OpDef, PackedKind } from '../../src/submit/ops/index.js';
import { PACKED_KIND_ID } from '../../src/submit/ops/qunit.js';
import { wasmKernelsFor } from '../../src/submit/wasm/kernels.js';
import f32Sources from '../../wasm/f32.wat?wasm';
import quantSources from '../../wasm/quant.wat?wasm';
import { groupsScratchBytes } from '../../src/submit/wasm/ops.js';
import { fc, fcParams } from '../support/fc.js';
import { runHostOp } from '../support/run-host.js';
import type { HostOperand } from '../support/run-host.js';
import { arb, expectClose, randomF32, rng } from './harness.js';
import type { Tolerance } from './harness.js';
import { GGUF_BLOCK, randomGgufRows } from './qmatmul-blocks.js';

const KINDS = [
  { name: 'ordinary', shared: false },
  { name: 'shared', shared: true },
] as const;

/** Dot-shaped outputs: |wasm - twin| <= REL_L1 · sum_k |a_k · b_k| + ABS (f32 lanes against an f64 sum). */
const REL_L1 = 2e-5;
const ABS = 1e-6;

/** Sizes that stress the tails: 1, vector widths and their neighbours, primes. */
const TAIL_SIZES = [1, 2, 3, 4, 5, 7, 8, 9, 11, 13, 16, 17, 31, 33, 37];
const size = (max: number) => fc.oneof(arb.size(max), fc.constantFrom(...TAIL_SIZES.filter((v) => v <= max)));

interface Checked {
  readonly wasm: AnyTypedArray[];
  readonly twin: AnyTypedArray[];
}

/** Runs `op` on the host runtime (must take the WebAssembly path) and the host() twin on copies. */
async function both<P>(runtime: Runtime, op: OpDef<P, never>, operands: readonly HostOperand[], params: P, pads: readonly number[]): Promise<Checked> {
  const twin = operands.map((o) => o.data.slice() as AnyTypedArray);
  op.host(params, twin as never);
  const run = await runHostOp(runtime, op, operands, params, pads);
  expect(run.wasm, `${op.name} ran its WebAssembly kernel`).toBe(1);
  expect(run.scalar).toBe(0);
  operands.forEach((o, i) => {
    if (op.bindings[i]!.access === 'read') expect(Array.from(run.arrays[i]!), `${op.bindings[i]!.name} is read-only`).toEqual(Array.from(o.data));
  });
  return { wasm: run.arrays, twin };
}

/** Asserts the dot-shaped bound for out[i, j] = sum_k a(i, k) b(j, k). */
function expectDotClose(got: ArrayLike<number>, want: ArrayLike<number>, l1: (i: number, j: number) => number, m: number, n: number, label: string): void {
  for (let i = 0; i < m; i++) {
    for (let j = 0; j < n; j++) {
      const g = got[i * n + j]!;
      const h = want[i * n + j]!;
      const bound = REL_L1 * l1(i, j) + ABS;
      if (!(Math.abs(g - h) <= bound)) expect.fail(`${label}: out[${i}, ${j}] is ${g}, twin ${h}, allowed ${bound}`);
    }
  }
}

const f32 = (shape: number[], data: Float32Array): HostOperand => ({ dtype: 'f32', shape, data });

/** The node lane runs Node without --experimental-wasm-relaxed-simd; Chromium has relaxed SIMD by default. */
const RELAXED_FLAG = '--experimental-wasm-relaxed-simd';
const inNode = typeof window === 'undefined';
const nodeHasFlag = inNode && (process.execArgv.includes(RELAXED_FLAG) || (process.env['NODE_OPTIONS'] ?? '').includes(RELAXED_FLAG));
const EXPECTED_SET = inNode && !nodeHasFlag ? 'simd' : 'relaxed-simd';

describe.each(KINDS)('WebAssembly kernels on a host provider ($name memory)', ({ shared }) => {
  const runtime = createRuntime(createHostProvider({ shared }), { hostKernels: 'wasm' });
  /** A runtime made as on an engine without relaxed SIMD (the seam, reset afterwards): the plain SIMD set. */
  const plainSetRuntime = (): Runtime => {
    hostKernelFaults.noRelaxedSimd = true;
    try {
      return createRuntime(createHostProvider({ shared }), { hostKernels: 'wasm' });
    } finally {
      hostKernelFaults.noRelaxedSimd = false;
    }
  };

  it('[OPS-wasm-kernels] the runtime selected the SIMD kernels: relaxed SIMD in Chromium, plain SIMD in Node without the flag', () => {
    expect(runtime.hostKernels()!.kind).toBe('wasm-simd');
    expect(runtime.hostKernels()!.kernelSet).toBe(EXPECTED_SET);
    // The relaxed binaries really use relaxed SIMD: an engine without the proposal refuses them.
    for (const sources of [f32Sources, quantSources]) {
      expect(WebAssembly.validate(sources[shared ? 'shared' : 'plain'])).toBe(true);
      expect(WebAssembly.validate(sources.relaxed[shared ? 'shared' : 'plain'])).toBe(EXPECTED_SET === 'relaxed-simd');
    }
  });

  it('[OPS-wasm-kernels] an engine without relaxed SIMD (the seam) gets the plain SIMD set, with the same results within the dot bound', async () => {
    const plain = plainSetRuntime();
    expect(plain.hostKernels()!.kernelSet).toBe('simd');
    const [m, n, k] = [3, 37, 133];
    const a = randomF32(12, m * k);
    const w = randomF32(13, n * k);
    const operands = [f32([m, k], a), f32([n, k], w), f32([m, n], new Float32Array(m * n))];
    const viaPlain = await both(plain, matmulNT, operands, { m, n, k }, [0, 0, 0]);
    const viaDefault = await both(runtime, matmulNT, operands, { m, n, k }, [0, 0, 0]);
    const l1 = (i: number, j: number): number => {
      let t = 0;
      for (let e = 0; e < k; e++) t += Math.abs(a[i * k + e]! * w[j * k + e]!);
      return t;
    };
    // Each set is within the bound of the twin, so the two are within twice the bound of each other.
    expectDotClose(viaPlain.wasm[2]!, viaDefault.wasm[2]!, (i, j) => 2 * l1(i, j), m, n, 'plain against default set');
    expectDotClose(viaDefault.wasm[2]!, viaDefault.twin[2]!, l1, m, n, 'default set against twin');
    expectDotClose(viaPlain.wasm[2]!, viaPlain.twin[2]!, l1, m, n, 'plain against twin');
  });

  it('[OPS-wasm-matmul] matmul_nt: random M x N x K incl. 1 x N, N x 1, primes, K mod 4 != 0, within 2e-5·Σ|a·w|', async () => {
    await fc.assert(
      fc.asyncProperty(size(9), size(40), size(70), arb.seed(), arb.pads(3), async (m, n, k, seed, pads) => {
        const a = randomF32(seed, m * k);
        const w = randomF32(seed + 1, n * k);
        const r = await both(runtime, matmulNT, [f32([m, k], a), f32([n, k], w), f32([m, n], new Float32Array(m * n))], { m, n, k }, pads);
        const l1 = (i: number, j: number) => {
          let s = 0;
          for (let kk = 0; kk < k; kk++) s += Math.abs(a[i * k + kk]! * w[j * k + kk]!);
          return s;
        };
        expectDotClose(r.wasm[2]!, r.twin[2]!, l1, m, n, `matmul_nt ${m}x${n}x${k}`);
      }),
      fcParams(40),
    );
  });

  it('[OPS-wasm-matmul] matmul_nt in both kernel sets: every row of an N-row call equals that row run alone, bit for bit (four-row quarters and single rows share one arithmetic: two accumulator chains per row in the relaxed set)', async () => {
    const plain = plainSetRuntime();
    const sets = [runtime, plain];
    expect(sets.map((r) => r.hostKernels()!.kernelSet)).toEqual([EXPECTED_SET, 'simd']);
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 3 }), fc.integer({ min: 4, max: 13 }), fc.integer({ min: 1, max: 70 }), arb.seed(), async (m, n, k, seed) => {
        const a = randomF32(seed, m * k);
        const w = randomF32(seed + 1, n * k);
        for (const rt of sets) {
          const whole = await runHostOp(rt, matmulNT, [f32([m, k], a), f32([n, k], w), f32([m, n], new Float32Array(m * n))], { m, n, k }, [0, 0, 0]);
          expect(whole.wasm).toBe(1);
          const alone = new Float32Array(m * n);
          for (let j = 0; j < n; j++) {
            const one = await runHostOp(rt, matmulNT, [f32([m, k], a), f32([1, k], w.slice(j * k, (j + 1) * k)), f32([m, 1], new Float32Array(m))], { m, n: 1, k }, [0, 0, 0]);
            for (let i = 0; i < m; i++) alone[i * n + j] = one.arrays[2]![i]!;
          }
          expect(Array.from(whole.arrays[2]!), `${rt.hostKernels()!.kernelSet} ${m}x${n}x${k}`).toEqual(Array.from(alone));
        }
      }),
      fcParams(12),
    );
  });

  it('[OPS-wasm-matmul] matmul and matmul_batched: random shapes across the 4 x 8 tiles, their row and column tails and panels', async () => {
    await fc.assert(
      fc.asyncProperty(size(70), size(40), size(40), arb.seed(), arb.pads(3), async (m, n, k, seed, pads) => {
        const a = randomF32(seed, m * k);
        const b = randomF32(seed + 1, k * n);
        const r = await both(runtime, matmul, [f32([m, k], a), f32([k, n], b), f32([m, n], new Float32Array(m * n))], { m, n, k }, pads);
        const l1 = (i: number, j: number) => {
          let s = 0;
          for (let kk = 0; kk < k; kk++) s += Math.abs(a[i * k + kk]! * b[kk * n + j]!);
          return s;
        };
        expectDotClose(r.wasm[2]!, r.twin[2]!, l1, m, n, `matmul ${m}x${n}x${k}`);
      }),
      fcParams(40),
    );
    const [batch, m, n, k] = [3, 5, 9, 7];
    const a = randomF32(5, batch * m * k);
    const b = randomF32(6, batch * k * n);
    const r = await both(runtime, matmulBatched, [f32([batch, m, k], a), f32([batch, k, n], b), f32([batch, m, n], new Float32Array(batch * m * n))], { batch, m, n, k }, [1, 2, 3]);
    expectClose(r.wasm[2]!, r.twin[2]!, { abs: 1e-5, rel: 1e-5 }, 'matmul_batched');
  });

  it('[OPS-wasm-matmul] matmul at 64 x 72 x 33: several row panels and every tile of a strip', async () => {
    const [m, n, k] = [131, 72, 33];
    const a = randomF32(11, m * k);
    const b = randomF32(12, k * n);
    const r = await both(runtime, matmul, [f32([m, k], a), f32([k, n], b), f32([m, n], new Float32Array(m * n))], { m, n, k }, [0, 0, 0]);
    expectClose(r.wasm[2]!, r.twin[2]!, { abs: 1e-5, rel: 1e-5 }, 'matmul 131x72x33');
  });

  it('[OPS-wasm-norm] rmsnorm: random rows x cols (tails), magnitudes 1e-3..1e3, within 1e-5 relative', async () => {
    await fc.assert(
      fc.asyncProperty(size(9), size(70), fc.constantFrom(1e-3, 1, 1e3), arb.seed(), arb.pads(3), async (rows, cols, mag, seed, pads) => {
        const x = randomF32(seed, rows * cols, -mag, mag);
        const w = randomF32(seed + 1, cols);
        const p = { rows, cols, eps: 1e-5 };
        const r = await both(runtime, rmsnorm, [f32([rows, cols], x), f32([cols], w), f32([rows, cols], new Float32Array(rows * cols))], p, pads);
        expectClose(r.wasm[2]!, r.twin[2]!, { abs: 1e-6, rel: 1e-5 }, `rmsnorm ${rows}x${cols}`);
      }),
      fcParams(30),
    );
  });

  it('[OPS-wasm-softmax] softmax: random rows x cols (tails), spreads up to 80, within 1e-6 + 1e-5 relative', async () => {
    await fc.assert(
      fc.asyncProperty(size(9), size(70), fc.constantFrom(1, 10, 80), arb.seed(), arb.pads(2), async (rows, cols, spread, seed, pads) => {
        const x = randomF32(seed, rows * cols, -spread, spread);
        const r = await both(runtime, softmax, [f32([rows, cols], x), f32([rows, cols], new Float32Array(rows * cols))], { rows, cols }, pads);
        expectClose(r.wasm[1]!, r.twin[1]!, { abs: 1e-6, rel: 1e-5 }, `softmax ${rows}x${cols}`);
      }),
      fcParams(30),
    );
  });

  it('[OPS-wasm-elementwise] silu_mul within 1e-5 relative, add and add_inplace exact, lengths with tails', async () => {
    await fc.assert(
      fc.asyncProperty(size(70), arb.seed(), arb.pads(3), async (n, seed, pads) => {
        const a = randomF32(seed, n, -12, 12);
        const b = randomF32(seed + 1, n);
        const s = await both(runtime, siluMul, [f32([n], a), f32([n], b), f32([n], new Float32Array(n))], { n }, pads);
        expectClose(s.wasm[2]!, s.twin[2]!, { abs: 1e-7, rel: 1e-5 }, `silu_mul ${n}`);
        const sum = await both(runtime, add, [f32([n], a), f32([n], b), f32([n], new Float32Array(n))], { n }, pads);
        expect(Array.from(sum.wasm[2]!)).toEqual(Array.from(sum.twin[2]!));
        const acc = await both(runtime, addInplace, [f32([n], a), f32([n], b)], { n }, pads);
        expect(Array.from(acc.wasm[0]!)).toEqual(Array.from(acc.twin[0]!));
      }),
      fcParams(30),
    );
  });

  it('[OPS-wasm-rope] rope: both pairings, head dims with and without a 4-element tail, positions up to 4096, within 1e-5', async () => {
    await fc.assert(
      fc.asyncProperty(
        size(5),
        size(5),
        fc.constantFrom(2, 4, 6, 8, 10, 32, 64),
        fc.integer({ min: 0, max: 4096 }),
        fc.constantFrom('normal' as const, 'neox' as const),
        arb.seed(),
        arb.pads(1),
        async (count, heads, headDim, pos0, style, seed, pads) => {
          const x = randomF32(seed, count * heads * headDim);
          const p = { count, heads, headDim, pos0, theta: 10000, style };
          const r = await both(runtime, rope, [f32([count, heads * headDim], x)], p, pads);
          expectClose(r.wasm[0]!, r.twin[0]!, { abs: 1e-5, rel: 1e-5 }, `rope ${style} ${count}x${heads}x${headDim} @${pos0}`);
        },
      ),
      fcParams(30),
    );
  });

  it('[OPS-wasm-attention] attention: decode and prefill, GQA groups, head dims with tails, within 1e-5 + 1e-4 relative', async () => {
    await fc.assert(
      fc.asyncProperty(
        size(4),
        fc.constantFrom([1, 1], [2, 1], [4, 2], [8, 4], [3, 3]),
        fc.constantFrom(1, 3, 4, 8, 9, 32),
        fc.integer({ min: 0, max: 40 }),
        arb.seed(),
        arb.pads(4),
        async (count, [heads, kvHeads], headDim, pos0, seed, pads) => {
          const maxSeq = pos0 + count + 2;
          const q = randomF32(seed, count * heads * headDim, -2, 2);
          const k = randomF32(seed + 1, maxSeq * kvHeads * headDim, -2, 2);
          const v = randomF32(seed + 2, maxSeq * kvHeads * headDim);
          const p = { count, heads: heads!, kvHeads: kvHeads!, headDim, maxSeq, pos0 };
          const r = await both(
            runtime,
            attention,
            [f32([count, heads! * headDim], q), f32([maxSeq, kvHeads! * headDim], k), f32([maxSeq, kvHeads! * headDim], v), f32([count, heads! * headDim], new Float32Array(count * heads! * headDim))],
            p,
            pads,
          );
          expectClose(r.wasm[3]!, r.twin[3]!, { abs: 1e-5, rel: 1e-4 }, `attention ${count} ${heads}/${kvHeads} d${headDim} @${pos0}`);
        },
      ),
      fcParams(30),
    );
  });

  for (const kind of PACKED_KINDS) {
    it(`[OPS-wasm-qmatmul] qmatmul ${kind}: random M (half decode), N, K from one block: within 2e-5·Σ|x·w|`, async () => {
      const maxBlocks = GGUF_BLOCK[kind][0] === 1 ? 70 : GGUF_BLOCK[kind][0] === 32 ? 9 : 3;
      await fc.assert(
        fc.asyncProperty(fc.oneof(fc.constant(1), size(6)), size(40), fc.integer({ min: 1, max: maxBlocks }), arb.seed(), arb.pads(3), async (m, n, blocks, seed, pads) => {
          const k = GGUF_BLOCK[kind][0] * blocks;
          const x = randomF32(seed, m * k);
          const gguf = randomGgufRows(kind, n, k, seed + 1);
          const packed = LOWERING_KINDS[kind].repack(gguf, k);
          const rows = new Float32Array(n * k);
          LOWERING_KINDS[kind].dequantize(gguf, rows);
          const layout = packedRowLayout(kind, k);
          const w: HostOperand = kind === 'F32' ? f32([n, k], new Float32Array(packed.buffer)) : { dtype: 'u32', shape: [n, layout.rowWords], data: packed };
          const r = await both(runtime, QMATMUL[kind].plain, [f32([m, k], x), w, f32([m, n], new Float32Array(m * n))], { m, n, k }, pads);
          const l1 = (i: number, j: number) => {
            let s = 0;
            for (let kk = 0; kk < k; kk++) s += Math.abs(x[i * k + kk]! * rows[j * k + kk]!);
            return s;
          };
          expectDotClose(r.wasm[2]!, r.twin[2]!, l1, m, n, `qmatmul ${kind} ${m}x${n}x${k}`);
        }),
        fcParams(12),
      );
    });
  }

  it('[OPS-wasm-qmatmul] Q4_K and Q6_K rows whose super-block scales are subnormal halves (as in real Q6_K files): within 2e-5·Σ|x·w|', async () => {
    // Byte offsets of the f16 scales in a GGUF block: Q4_K d and dmin lead its 144 bytes, Q6_K's d ends its 210.
    const SCALE_AT: Record<'Q4_K' | 'Q6_K', readonly number[]> = { Q4_K: [0, 2], Q6_K: [208] };
    const SUBNORMAL_MAX = 0x3ff;
    for (const kind of ['Q4_K', 'Q6_K'] as const) {
      const [elements, bytes] = GGUF_BLOCK[kind];
      const [m, n, k] = [2, 7, elements * 2];
      const x = randomF32(31, m * k);
      const gguf = randomGgufRows(kind, n, k, 32);
      const r = rng(33);
      for (let b = 0; b < (n * k) / elements; b++) {
        for (const at of SCALE_AT[kind]) {
          const half = 1 + Math.floor(r() * SUBNORMAL_MAX);
          gguf[b * bytes + at] = half & 0xff;
          gguf[b * bytes + at + 1] = half >> 8;
        }
      }
      const rows = new Float32Array(n * k);
      LOWERING_KINDS[kind].dequantize(gguf, rows);
      expect(rows.some((v) => v !== 0), `${kind}: the rows are not all zero`).toBe(true);
      const layout = packedRowLayout(kind, k);
      const w: HostOperand = { dtype: 'u32', shape: [n, layout.rowWords], data: LOWERING_KINDS[kind].repack(gguf, k) };
      const got = await both(runtime, QMATMUL[kind].plain, [f32([m, k], x), w, f32([m, n], new Float32Array(m * n))], { m, n, k }, [0, 0, 0]);
      const l1 = (i: number, j: number): number => {
        let t = 0;
        for (let e = 0; e < k; e++) t += Math.abs(x[i * k + e]! * rows[j * k + e]!);
        return t;
      };
      expectDotClose(got.wasm[2]!, got.twin[2]!, l1, m, n, `${kind} with subnormal scales`);
    }
  });

  it('[OPS-wasm-qmatmul] F16 rows with an infinity or NaN anywhere (inside the 16-half fast trips too) give the twin\'s infinity or NaN', async () => {
    const specials = [0x7c00, 0xfc00, 0x7e00];
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 9 }), fc.integer({ min: 1, max: 5 }), arb.seed(), async (n, trips, seed) => {
        const k = 16 * trips + (seed % 3);
        const r = rng(seed);
        const halves = new Uint16Array(n * (k + (k % 2)));
        const rowHalves = k + (k % 2);
        for (let j = 0; j < n; j++) {
          for (let e = 0; e < k; e++) halves[j * rowHalves + e] = 0x3000 | Math.floor(r() * 0x3ff);
          halves[j * rowHalves + Math.floor(r() * k)] = specials[j % specials.length]!;
        }
        // x > 0 everywhere: a row's one infinity cannot meet an infinity of the other sign.
        const x = randomF32(seed + 1, k, 0.5, 1);
        const w: HostOperand = { dtype: 'u32', shape: [n, rowHalves / 2], data: new Uint32Array(halves.buffer) };
        const got = await both(runtime, QMATMUL.F16.plain, [f32([1, k], x), w, f32([1, n], new Float32Array(n))], { m: 1, n, k }, [0, 0, 0]);
        for (let j = 0; j < n; j++) {
          const g = got.wasm[2]![j]!;
          const h = got.twin[2]![j]!;
          expect(Number.isFinite(h), `row ${j} of the twin is not finite`).toBe(false);
          if (!Object.is(g, h)) expect.fail(`F16 1x${n}x${k} out[${j}] is ${g}, twin ${h}`);
        }
      }),
      fcParams(10),
    );
  });

  it('[OPS-wasm-qmatmul] every kind: row i of an M-row qmatmul equals the same row run alone, bit for bit (one decoded weight row serves all M)', async () => {
    for (const kind of PACKED_KINDS) {
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 2, max: 5 }), size(9), fc.integer({ min: 1, max: GGUF_BLOCK[kind][0] === 256 ? 2 : 4 }), arb.seed(), async (m, n, blocks, seed) => {
          const k = GGUF_BLOCK[kind][0] === 1 ? 32 * blocks + 3 : GGUF_BLOCK[kind][0] * blocks;
          const x = randomF32(seed, m * k);
          const packed = LOWERING_KINDS[kind].repack(randomGgufRows(kind, n, k, seed + 1), k);
          const layout = packedRowLayout(kind, k);
          const w: HostOperand = kind === 'F32' ? f32([n, k], new Float32Array(packed.buffer)) : { dtype: 'u32', shape: [n, layout.rowWords], data: packed };
          const all = await runHostOp(runtime, QMATMUL[kind].plain, [f32([m, k], x), w, f32([m, n], new Float32Array(m * n))], { m, n, k });
          expect(all.wasm).toBe(1);
          for (let i = 0; i < m; i++) {
            const one = await runHostOp(runtime, QMATMUL[kind].plain, [f32([1, k], x.slice(i * k, (i + 1) * k)), w, f32([1, n], new Float32Array(n))], { m: 1, n, k });
            expect(Array.from(one.arrays[2]!), `${kind} ${m}x${n}x${k} row ${i}`).toEqual(Array.from(all.arrays[2]!.subarray(i * n, (i + 1) * n)));
          }
        }),
        fcParams(4),
      );
    }
  });
});

/** f16 bit patterns every decoder must get right: zeros, subnormals, the largest values, infinities, NaN. */
const SPECIAL_HALVES = [0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x0400, 0x3c00, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7e00, 0x7c01, 0xffff];

describe('WebAssembly dequantization of packed rows', () => {
  const provider = createHostProvider();
  const memory = provider.wasmMemory()!;
  const kernels = wasmKernelsFor(memory)!;

  /** Dequantizes `packed` row by row in the kernel and returns the floats. */
  function wasmRows(kind: PackedKind, packed: Uint32Array, n: number, k: number): Float32Array {
    const layout = packedRowLayout(kind, k);
    const w = memory.allocate(packed.byteLength, 'test');
    const out = memory.allocate(n * k * 4, 'test');
    const scratchBytes = groupsScratchBytes(0, k);
    const scratch = memory.allocate(scratchBytes, 'test');
    try {
      new Uint32Array(memory.buffer, w, packed.length).set(packed);
      const [p0, p1, p2] = layout.planes;
      for (let j = 0; j < n; j++) {
        kernels.quant.dequant_row(PACKED_KIND_ID[kind], w + j * layout.rowWords * 4, out + j * k * 4, k, p0 * 4, p1 * 4, p2 * 4, scratch);
      }
      return new Float32Array(memory.buffer, out, n * k).slice();
    } finally {
      memory.free(scratch, scratchBytes);
      memory.free(out, n * k * 4);
      memory.free(w, packed.byteLength);
    }
  }

  function referenceRows(kind: PackedKind, packed: Uint32Array, n: number, k: number): Float32Array {
    const layout = packedRowLayout(kind, k);
    const out = new Float32Array(n * k);
    const row = new Float32Array(k);
    for (let j = 0; j < n; j++) {
      decodePackedRow(layout, packed, j * layout.rowWords, row);
      out.set(row, j * k);
    }
    return out;
  }

  /** Equal as f32 bit patterns, except that any NaN equals any NaN. */
  function expectSameFloats(got: Float32Array, want: Float32Array, label: string): void {
    for (let i = 0; i < want.length; i++) {
      if (Number.isNaN(want[i]!) && Number.isNaN(got[i]!)) continue;
      if (!Object.is(got[i], want[i])) expect.fail(`${label}: element ${i} is ${got[i]}, reference ${want[i]}`);
    }
  }

  for (const kind of PACKED_KINDS) {
    it(`[OPS-wasm-dequant] ${kind}: every dequantized element equals decodePackedRow bit for bit`, () => {
      fc.assert(
        fc.property(size(6), fc.integer({ min: 1, max: GGUF_BLOCK[kind][0] === 1 ? 41 : 5 }), arb.seed(), (n, blocks, seed) => {
          const k = GGUF_BLOCK[kind][0] * blocks;
          const packed = LOWERING_KINDS[kind].repack(randomGgufRows(kind, n, k, seed), k);
          expectSameFloats(wasmRows(kind, packed, n, k), referenceRows(kind, packed, n, k), `${kind} ${n}x${k}`);
        }),
        fcParams(25),
      );
    });
  }

  it('[OPS-wasm-dequant] F16 and BF16 values and Q8_0 / Q4_K scales with special bit patterns decode exactly', () => {
    const r = rng(3);
    for (const kind of ['F16', 'BF16'] as const) {
      const k = SPECIAL_HALVES.length * 3 + 1;
      const halves = Uint16Array.from({ length: k + 1 }, (_, i) => SPECIAL_HALVES[i % SPECIAL_HALVES.length]! ^ (i >= SPECIAL_HALVES.length ? Math.floor(r() * 16) : 0));
      const packed = new Uint32Array(halves.buffer, 0, Math.ceil(k / 2));
      expectSameFloats(wasmRows(kind, packed, 1, k), referenceRows(kind, packed, 1, k), `${kind} specials`);
    }
    for (const kind of ['Q8_0', 'Q4_0', 'Q4_K', 'Q6_K'] as const) {
      const k = GGUF_BLOCK[kind][0] * 2;
      const layout = packedRowLayout(kind, k);
      const packed = LOWERING_KINDS[kind].repack(randomGgufRows(kind, 1, k, 9), k);
      // Overwrite every f16 the row holds with special patterns: the half plane, or Q4_K's d/dmin words.
      const halves = new Uint16Array(packed.buffer);
      const from = kind === 'Q4_K' ? layout.planes[1] * 2 : (kind === 'Q6_K' ? layout.planes[2] : layout.planes[0]) * 2;
      for (let i = from, s = 0; i < layout.rowWords * 2; i++, s++) halves[i] = SPECIAL_HALVES[s % SPECIAL_HALVES.length]!;
      expectSameFloats(wasmRows(kind, packed, 1, k), referenceRows(kind, packed, 1, k), `${kind} special scales`);
    }
  });
});

// Op suite: qgather (quantized embedding lookup, shaders/qgather.wgsl specialized by KIND), every kind.
// Weights are synthetic GGUF rows (every quant bit random) repacked by the lowering kinds, as a model
// load does (contracts/ops/packed-weights.ts).
// Plan, per kind: (1) property — ids u32 or i32 [count 1..12] into a packed table [vocab 1..20, dim]
// (one block up to a few; float kinds with odd dims), about 1 id in 10 out of range (>= vocab, or
// negative for i32), offsets with canaries, folded dispatches: WGSL equals the host twin exactly, except
// Q4_K, whose multiply-then-subtract a GPU compiler may fuse into one rounding (allowed: 2^-22 of the
// row's largest magnitude); out-of-range ids give zero rows on both; (2) rows longer than 256 units (an
// invocation walks several units, the last round partial); (3) a table split by rows across bindings,
// gathered by one dispatch per part (rowBase; the first part zeroes rows of ids outside it, the others
// keep them), equals the unsplit gather, and each step writes exactly its part's rows; (4) the host twin
// equals the GGUF reference dequantizer of the lowering kind, exactly; (5) check() rejects dims off the
// block grid, a table of the wrong row width or dtype, float ids, bad rowBase / keepOutside and unknown
// kinds with EINVAL.
import { describe, expect, it } from 'vitest';
import { zeros } from '../../src/index.js';
import { loweringKind } from '../../src/model/index.js';
import { PACKED_KINDS, QGATHER, packedRowLayout, qgatherOp } from '../../src/submit/ops/index.js';
import type { PackedKind } from '../../src/submit/ops/index.js';
import { expectCode } from '../support/expect-error.js';
import { fc, fcParams } from '../support/fc.js';
import { operandOf } from '../support/run-op.js';
import { arb, foldingLimits, rng, runBoth, useWebGPU } from './harness.js';
import { MANY_UNIT_BLOCKS, MAX_BLOCKS, kOf, packedWeights } from './packed-weights.js';

/** Q4_K's fused-rounding allowance, relative to the largest magnitude of the row. */
const Q4_K_FUSED_REL = 2 ** -22;

interface Case {
  readonly dtype: 'u32' | 'i32';
  readonly count: number;
  readonly vocab: number;
  readonly dim: number;
  readonly seed: number;
  readonly pads?: readonly number[];
}

/** Ids for a case: mostly in range, about 1 in 10 out of range. */
function idsOf(c: Case): { raw: number[]; ids: Uint32Array | Int32Array } {
  const r = rng(c.seed + 7);
  const raw = Array.from({ length: c.count }, () => {
    const u = r();
    if (u < 0.05) return c.vocab + Math.floor(r() * 5);
    if (u < 0.1) return c.dtype === 'i32' ? -1 - Math.floor(r() * 5) : c.vocab;
    return Math.floor(r() * c.vocab);
  });
  return { raw, ids: c.dtype === 'u32' ? Uint32Array.from(raw) : Int32Array.from(raw) };
}

async function compare(provider: ReturnType<ReturnType<typeof useWebGPU>>, kind: PackedKind, c: Case, fold = false): Promise<void> {
  const op = qgatherOp(kind);
  const layout = packedRowLayout(kind, c.dim);
  const { raw, ids } = idsOf(c);
  const { packed, rows } = packedWeights(kind, c.vocab, c.dim, c.seed);
  const params = { count: c.count, vocab: c.vocab, dim: c.dim };
  const { gpu: g, host: h } = await runBoth(provider, op, [
    { dtype: c.dtype, shape: [c.count], data: ids },
    { dtype: kind === 'F32' ? 'f32' : 'u32', shape: [c.vocab, layout.rowWords], data: packed },
    { dtype: 'f32', shape: [c.count, c.dim], data: new Float32Array(c.count * c.dim).fill(Number.NaN) },
  ], params, c.pads ?? [], foldingLimits(op, params, fold));
  const label = `${op.name} count ${c.count} vocab ${c.vocab} dim ${c.dim} (${c.dtype})`;
  raw.forEach((id, t) => {
    const want = id >= 0 && id < c.vocab ? Array.from(rows.subarray(id * c.dim, (id + 1) * c.dim)) : new Array<number>(c.dim).fill(0);
    expect(Array.from(h[2]!.subarray(t * c.dim, (t + 1) * c.dim)), `${label}: host row ${t} (id ${id})`).toEqual(want);
  });
  if (kind !== 'Q4_K') {
    expect(Array.from(g[2]!), label).toEqual(Array.from(h[2]!));
    return;
  }
  for (let t = 0; t < c.count; t++) {
    const host = h[2]!.subarray(t * c.dim, (t + 1) * c.dim);
    const dev = g[2]!.subarray(t * c.dim, (t + 1) * c.dim);
    let rowMax = 0;
    for (const v of host) rowMax = Math.max(rowMax, Math.abs(v));
    for (let i = 0; i < c.dim; i++) {
      if (!(Math.abs(dev[i]! - host[i]!) <= Q4_K_FUSED_REL * rowMax)) expect.fail(`${label}: row ${t} element ${i} is ${dev[i]}, host ${host[i]}`);
    }
  }
}

const caseArb = (kind: PackedKind) =>
  fc.record({
    dtype: fc.constantFrom('u32' as const, 'i32' as const),
    count: arb.size(12),
    vocab: arb.size(20),
    dim: fc.oneof(fc.constant(1), fc.integer({ min: 1, max: MAX_BLOCKS[kind] })).map((b) => kOf(kind, b)),
    seed: arb.seed(),
    pads: arb.pads(3),
  });

describe('qgather: WGSL against the host twin, every kind', () => {
  const gpu = useWebGPU();

  for (const kind of PACKED_KINDS) {
    it(`[OPS-qgather] ${kind}: random ids (u32 and i32, some out of range), vocab and dims, offsets, folded dispatches`, async () => {
      await fc.assert(
        fc.asyncProperty(caseArb(kind), fc.boolean(), async (c, fold) => {
          await compare(gpu(), kind, c, fold);
        }),
        fcParams(6),
      );
    });

    it(`[OPS-qgather] ${kind}: a row of more than 256 units (several units per invocation, a partial last round)`, async () => {
      await compare(gpu(), kind, { dtype: 'u32', count: 3, vocab: 4, dim: kOf(kind, MANY_UNIT_BLOCKS[kind]), seed: 31 });
    });
  }

  it('[OPS-qgather] control: rows come from the table in id order, repeats included, and an id past the table is a zero row', async () => {
    const kind = 'Q8_0';
    const dim = 32;
    const { packed, rows } = packedWeights(kind, 3, dim, 5);
    const { gpu: g } = await runBoth(gpu(), QGATHER.Q8_0, [
      { dtype: 'u32', shape: [5], data: Uint32Array.from([2, 0, 2, 3, 1]) },
      { dtype: 'u32', shape: [3, packedRowLayout(kind, dim).rowWords], data: packed },
      { dtype: 'f32', shape: [5, dim], data: new Float32Array(5 * dim) },
    ], { count: 5, vocab: 3, dim });
    const row = (i: number) => Array.from(rows.subarray(i * dim, (i + 1) * dim));
    expect(Array.from(g[2]!)).toEqual([...row(2), ...row(0), ...row(2), ...new Array<number>(dim).fill(0), ...row(1)]);
  });

  it('[OPS-qgather] a table split by rows across bindings: one dispatch per part (rowBase; the first zeroes, the rest keep) equals the unsplit gather', async () => {
    for (const kind of ['Q6_K', 'Q8_0', 'F16'] as const) {
      const dim = kOf(kind, 1);
      const vocab = 11;
      const layout = packedRowLayout(kind, dim);
      const { packed, rows } = packedWeights(kind, vocab, dim, 41);
      const words = packed instanceof Uint32Array ? packed : new Uint32Array(packed.buffer, packed.byteOffset, packed.length);
      const ids = Uint32Array.from([10, 0, 4, 5, 11, 3, 7, 4, 9, 12]);
      const parts = [[0, 4], [4, 3], [7, 4]] as const;
      let out: Float32Array = new Float32Array(ids.length * dim).fill(Number.NaN);
      for (const [p, [rowBase, partRows]] of parts.entries()) {
        const part = words.slice(rowBase * layout.rowWords, (rowBase + partRows) * layout.rowWords);
        const params = { count: ids.length, vocab: partRows, dim, rowBase, keepOutside: p > 0 };
        const { gpu: g, host: h } = await runBoth(gpu(), QGATHER[kind], [
          { dtype: 'u32', shape: [ids.length], data: ids },
          { dtype: 'u32', shape: [partRows, layout.rowWords], data: part },
          { dtype: 'f32', shape: [ids.length, dim], data: out },
        ], params);
        expect(Array.from(g[2]!), `${kind} part ${p}`).toEqual(Array.from(h[2]!));
        ids.forEach((id, t) => {
          const inside = id >= rowBase && id < rowBase + partRows;
          const before = Array.from(out.subarray(t * dim, (t + 1) * dim));
          const after = Array.from(g[2]!.subarray(t * dim, (t + 1) * dim));
          if (inside) expect(after, `${kind} part ${p} id ${id}`).toEqual(Array.from(rows.subarray(id * dim, (id + 1) * dim)));
          else expect(after, `${kind} part ${p} id ${id} (outside)`).toEqual(p === 0 ? new Array<number>(dim).fill(0) : before);
        });
        out = g[2]! as Float32Array;
      }
      ids.forEach((id, t) => {
        const want = id < vocab ? Array.from(rows.subarray(id * dim, (id + 1) * dim)) : new Array<number>(dim).fill(0);
        expect(Array.from(out.subarray(t * dim, (t + 1) * dim)), `${kind} split result row ${t}`).toEqual(want);
      });
    }
  });

  it('[OPS-qgather] the host twin equals the GGUF reference dequantizer of every kind, exactly', () => {
    for (const kind of PACKED_KINDS) {
      fc.assert(
        fc.property(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 3 }), arb.seed(), (vocab, blocks, seed) => {
          const dim = kOf(kind, blocks);
          const { packed, rows } = packedWeights(kind, vocab, dim, seed);
          const ids = Uint32Array.from({ length: vocab }, (_, i) => vocab - 1 - i);
          const out = new Float32Array(vocab * dim);
          QGATHER[kind].host({ count: vocab, vocab, dim }, [ids, packed, out]);
          for (let t = 0; t < vocab; t++) {
            expect(Array.from(out.subarray(t * dim, (t + 1) * dim))).toEqual(Array.from(rows.subarray((vocab - 1 - t) * dim, (vocab - t) * dim)));
          }
        }),
        fcParams(10),
      );
    }
  });

  it('[OPS-check] qgather rejects dims off the block grid, a table of the wrong row width or dtype, float ids and unknown kinds with EINVAL', async () => {
    const p = gpu();
    const geometry = loweringKind('Q4_K').geometry([4, 256]);
    const ids = await zeros(p, 'u32', [2]);
    const idsF = await zeros(p, 'f32', [2]);
    const w = await zeros(p, 'u32', [4, geometry.packedRowWords]);
    const wWide = await zeros(p, 'u32', [4, geometry.packedRowWords + 1]);
    const wF32 = await zeros(p, 'f32', [4, geometry.packedRowWords]);
    const out = await zeros(p, 'f32', [2, 256]);
    const op = QGATHER.Q4_K;
    try {
      const params = { count: 2, vocab: 4, dim: 256 };
      op.check([ids, w, out].map(operandOf), params);
      expectCode(() => op.check([ids, w, out].map(operandOf), { ...params, dim: 128 }), 'EINVAL', 'bad-param');
      expectCode(() => op.check([ids, wWide, out].map(operandOf), params), 'EINVAL', 'shape-mismatch');
      expectCode(() => op.check([ids, wF32, out].map(operandOf), params), 'EINVAL', 'dtype-mismatch');
      expectCode(() => op.check([idsF, w, out].map(operandOf), params), 'EINVAL', 'dtype-mismatch');
      expectCode(() => op.check([ids, w, out].map(operandOf), { ...params, vocab: 5 }), 'EINVAL', 'shape-mismatch');
      expectCode(() => op.check([ids, w, out].map(operandOf), { ...params, count: 0 }), 'EINVAL', 'bad-param');
      op.check([ids, w, out].map(operandOf), { ...params, rowBase: 100, keepOutside: true });
      expectCode(() => op.check([ids, w, out].map(operandOf), { ...params, rowBase: -1 }), 'EINVAL', 'bad-param');
      expectCode(() => op.check([ids, w, out].map(operandOf), { ...params, rowBase: 1.5 }), 'EINVAL', 'bad-param');
      expectCode(() => op.check([ids, w, out].map(operandOf), { ...params, keepOutside: 1 as unknown as boolean }), 'EINVAL', 'bad-param');
      expectCode(() => op.check([ids, w, out].map(operandOf), { ...params, rowBase: 0xffff_fffe }), 'EINVAL', 'out-of-range');
      expectCode(() => qgatherOp('Q5_K' as PackedKind), 'EINVAL', 'bad-param');
    } finally {
      for (const t of [ids, idsF, w, wWide, wF32, out]) t.dispose();
    }
  });
});

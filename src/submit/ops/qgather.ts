// qgather (quantized embedding lookup): out[t, :] = dequant(W[ids[t], :]) for ids u32|i32 [count], W
// [vocab, dim] as packed rows of one kind (a u32 tensor [vocab, rowWords]; F32 also as an f32 tensor
// [vocab, dim]; src/submit/ops/qmatmul-layout.ts), out f32 [count, dim] (shaders/qgather.wgsl). An id
// outside 0..vocab-1 (negative i32 ids included) yields a row of zeros on both implementations, as gather
// does. A table split by rows across bindings (a binding limit below the embedding's size) is gathered by
// one dispatch per part, each with its part's rowBase; the first zeroes the rows of ids outside it, the
// others keep them (keepOutside). The token embedding of a GGUF model stays packed (Q6_K, Q4_K, Q8_0,
// F16, ...): only the rows of the tokens in flight are ever dequantized.
//
// One op per kind, all sharing one shader specialized by the override constant KIND (qunit.ts): the
// dequantization of a unit is the only part that differs, and a gather has no reduction to vary. A
// workgroup per output row walks the row's units with adjacent invocations on adjacent words.
import { TenonError } from '../../errors.js';
import shader from '../../../shaders/qgather.wgsl?raw';
import { F32, INDEX_TYPES, U32, checkIndex, checkOperands, checkShape, checkSize, linearWorkgroups, packParams, rejectParam, rejectRange } from './common.js';
import { PACKED_KINDS, decodePackedRow, packedRowLayout } from './qmatmul-layout.js';
import type { PackedKind, PackedRowLayout } from './qmatmul-layout.js';
import { PACKED_KIND_ID, unitWorkgroup, walkUnits } from './qunit.js';
import type { OpBinding, OpDef } from './types.js';

export interface QGatherParams {
  /** Number of ids (output rows). */
  readonly count: number;
  /** Rows of the bound packed table. */
  readonly vocab: number;
  /** Elements per row (a whole number of the kind's blocks). */
  readonly dim: number;
  /**
   * Id of the bound table's first row (0 unless the table is split by rows across bindings: then one
   * dispatch per part, each with its part's first row).
   */
  readonly rowBase?: number;
  /**
   * Ids outside rowBase..rowBase+vocab-1 leave their output rows as they were (true) instead of zeroing
   * them (false, the default). A split table: the first part's dispatch zeroes, the later ones keep.
   */
  readonly keepOutside?: boolean;
}

export type QGatherArrays = readonly [ids: Uint32Array | Int32Array, w: Uint32Array | Float32Array, out: Float32Array];

/** Bytes of the uniform params struct (16 u32 fields). */
const PARAMS_BYTES = 64;

function makeQGather(kind: PackedKind): OpDef<QGatherParams, QGatherArrays> {
  const name = `qgather_${kind.toLowerCase()}`;
  const bindings: readonly OpBinding[] = [
    { name: 'ids', access: 'read', dtypes: INDEX_TYPES },
    { name: 'w', access: 'read', dtypes: kind === 'F32' ? ['f32', 'u32'] : U32 },
    { name: 'out', access: 'read_write', dtypes: F32 },
  ];
  // The last layout derived (a model gathers rows of one length): found again without deriving it.
  let last: PackedRowLayout | undefined;
  const layoutOf = (p: QGatherParams): PackedRowLayout => {
    if (last !== undefined && last.k === p.dim) return last;
    try {
      last = packedRowLayout(kind, p.dim, `ops.${name}`);
      return last;
    } catch (err) {
      if (err instanceof TenonError && err.reason === 'bad-param') rejectParam(name, 'dim', `dim = ${String(p.dim)} is not a whole number of ${kind} blocks`);
      throw err;
    }
  };
  return {
    name,
    shader,
    entryPoint: 'main',
    bindings,
    paramsBytes: PARAMS_BYTES,
    check(operands, p) {
      checkOperands(name, bindings, operands);
      checkSize(name, 'count', p.count);
      checkSize(name, 'vocab', p.vocab);
      checkSize(name, 'dim', p.dim);
      if (p.rowBase !== undefined) checkIndex(name, 'rowBase', p.rowBase);
      if (p.keepOutside !== undefined && typeof p.keepOutside !== 'boolean') rejectParam(name, 'keepOutside', 'keepOutside must be a boolean');
      if ((p.rowBase ?? 0) + p.vocab > 0xffff_ffff) rejectRange(name, 'row ids pass the u32 range', { vocab: p.vocab });
      const layout = layoutOf(p);
      checkShape(name, 'ids', operands[0]!, [p.count]);
      checkShape(name, 'w', operands[1]!, [p.vocab, layout.rowWords]);
      checkShape(name, 'out', operands[2]!, [p.count, p.dim]);
    },
    params(p, offsets) {
      const layout = layoutOf(p);
      return packParams(PARAMS_BYTES, [
        { u32: offsets[0]! },
        { u32: offsets[1]! },
        { u32: offsets[2]! },
        { u32: p.count },
        { u32: p.vocab },
        { u32: p.dim },
        { u32: layout.rowWords },
        { u32: walkUnits(layout) },
        { u32: layout.planes[0] },
        { u32: layout.planes[1] },
        { u32: layout.planes[2] },
        { u32: p.rowBase ?? 0 },
        { u32: p.keepOutside === true ? 1 : 0 },
      ]);
    },
    constants(p) {
      return { KIND: PACKED_KIND_ID[kind], WG: unitWorkgroup(walkUnits(layoutOf(p))) };
    },
    workgroups(p, limits) {
      return linearWorkgroups(name, p.count, limits);
    },
    host(p, [ids, w, out]) {
      // Each row is decoded straight into its output row: no other copy of the weights exists.
      const { count, vocab, dim } = p;
      const base = p.rowBase ?? 0;
      const layout = layoutOf(p);
      const words = w instanceof Uint32Array ? w : new Uint32Array(w.buffer, w.byteOffset, w.length);
      for (let t = 0; t < count; t++) {
        const row = ids[t]! - base;
        if (row >= 0 && row < vocab) decodePackedRow(layout, words, row * layout.rowWords, out.subarray(t * dim, (t + 1) * dim));
        else if (p.keepOutside !== true) out.fill(0, t * dim, (t + 1) * dim);
      }
    },
  };
}

function table(): Readonly<Record<PackedKind, OpDef<QGatherParams, QGatherArrays>>> {
  return Object.freeze(Object.fromEntries(PACKED_KINDS.map((kind) => [kind, makeQGather(kind)])) as Record<PackedKind, OpDef<QGatherParams, QGatherArrays>>);
}

/** Every qgather op, by kind. */
export const QGATHER = table();

/** The qgather op of one kind; EINVAL `bad-param` for an unknown kind. */
export function qgatherOp(kind: PackedKind): OpDef<QGatherParams, QGatherArrays> {
  const op = (QGATHER as Partial<Record<string, OpDef<QGatherParams, QGatherArrays>>>)[kind];
  if (op === undefined) throw new TenonError('EINVAL', `no qgather for ${String(kind)}`, { op: 'ops.qgather', reason: 'bad-param', ids: { kind: String(kind) } });
  return op;
}

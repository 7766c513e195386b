// gather (embedding lookup): out[t, :] = table[ids[t], :] for ids u32|i32 [count], table f32 [vocab, dim],
// out f32 [count, dim] (shaders/gather.wgsl). An id outside 0..vocab-1 (negative i32 ids included)
// yields a row of zeros on both implementations; ids are data, so check() cannot see them.
import shader from '../../../shaders/gather.wgsl?raw';
import { F32, INDEX_TYPES, LINEAR_WORKGROUP, checkOperands, checkShape, checkSize, linearDispatch, packParams } from './common.js';
import type { OpBinding, OpDef } from './types.js';

export interface GatherParams {
  /** Number of ids (output rows). */
  readonly count: number;
  /** Rows of the table. */
  readonly vocab: number;
  /** Row length of the table and the output. */
  readonly dim: number;
}

const BINDINGS: readonly OpBinding[] = [
  { name: 'ids', access: 'read', dtypes: INDEX_TYPES },
  { name: 'table', access: 'read', dtypes: F32 },
  { name: 'out', access: 'read_write', dtypes: F32 },
];

export const gather: OpDef<GatherParams, readonly [ids: Uint32Array | Int32Array, table: Float32Array, out: Float32Array]> = {
  name: 'gather',
  shader,
  entryPoint: 'main',
  bindings: BINDINGS,
  paramsBytes: 32,
  check(operands, p) {
    checkOperands('gather', BINDINGS, operands);
    checkSize('gather', 'count', p.count);
    checkSize('gather', 'vocab', p.vocab);
    checkSize('gather', 'dim', p.dim);
    checkShape('gather', 'ids', operands[0]!, [p.count]);
    checkShape('gather', 'table', operands[1]!, [p.vocab, p.dim]);
    checkShape('gather', 'out', operands[2]!, [p.count, p.dim]);
  },
  params(p, offsets) {
    return packParams(32, [{ u32: offsets[0]! }, { u32: offsets[1]! }, { u32: offsets[2]! }, { u32: p.count }, { u32: p.vocab }, { u32: p.dim }]);
  },
  constants() {
    return { WG: LINEAR_WORKGROUP };
  },
  workgroups(p, limits) {
    return linearDispatch('gather', p.count * p.dim, LINEAR_WORKGROUP, limits);
  },
  host(p, [ids, table, out]) {
    const { count, vocab, dim } = p;
    for (let t = 0; t < count; t++) {
      const id = ids[t]!;
      if (id >= 0 && id < vocab) out.set(table.subarray(id * dim, (id + 1) * dim), t * dim);
      else out.fill(0, t * dim, (t + 1) * dim);
    }
  },
};

// kv_write: appends rows to a KV cache: cache[pos0 + t, :] = src[t, :] for src f32 [count, width] and
// cache f32 [maxSeq, width]; other cache rows are untouched (shaders/kv_write.wgsl). pos0 travels in
// the uniform, so a recorded decode graph advances it per step.
import shader from '../../../shaders/kv_write.wgsl?raw';
import { F32, LINEAR_WORKGROUP, checkIndex, checkOperands, checkShape, checkSize, linearDispatch, packParams, rejectRange } from './common.js';
import type { OpBinding, OpDef } from './types.js';

export interface KvWriteParams {
  /** Rows to write. */
  readonly count: number;
  /** Row length (n_kv_heads * head_dim). */
  readonly width: number;
  /** Cache rows (the cache's first dimension). */
  readonly maxSeq: number;
  /** Cache row of src row 0. */
  readonly pos0: number;
}

const BINDINGS: readonly OpBinding[] = [
  { name: 'src', access: 'read', dtypes: F32 },
  { name: 'cache', access: 'read_write', dtypes: F32 },
];

export const kvWrite: OpDef<KvWriteParams, readonly [src: Float32Array, cache: Float32Array]> = {
  name: 'kv_write',
  shader,
  entryPoint: 'main',
  bindings: BINDINGS,
  paramsBytes: 32,
  check(operands, p) {
    checkOperands('kv_write', BINDINGS, operands);
    checkSize('kv_write', 'count', p.count);
    checkSize('kv_write', 'width', p.width);
    checkSize('kv_write', 'maxSeq', p.maxSeq);
    checkIndex('kv_write', 'pos0', p.pos0);
    checkShape('kv_write', 'src', operands[0]!, [p.count, p.width]);
    checkShape('kv_write', 'cache', operands[1]!, [p.maxSeq, p.width]);
    if (p.pos0 + p.count > p.maxSeq) {
      rejectRange('kv_write', `rows ${p.pos0}..${p.pos0 + p.count - 1} do not fit a cache of ${p.maxSeq}`, { pos0: p.pos0, count: p.count, maxSeq: p.maxSeq });
    }
  },
  params(p, offsets) {
    return packParams(32, [{ u32: offsets[0]! }, { u32: offsets[1]! }, { u32: p.count }, { u32: p.width }, { u32: p.pos0 }]);
  },
  constants() {
    return { WG: LINEAR_WORKGROUP };
  },
  workgroups(p, limits) {
    return linearDispatch('kv_write', p.count * p.width, LINEAR_WORKGROUP, limits);
  },
  host(p, [src, cache]) {
    const n = p.count * p.width;
    cache.set(src.length === n ? src : src.subarray(0, n), p.pos0 * p.width);
  },
};

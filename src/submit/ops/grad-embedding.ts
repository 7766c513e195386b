// embedding_grad: the gradient of gather into its table, dtable [vocab, dim] (+)= sum over t with
// ids[t] = v of dout[t] (shaders/embedding_grad.wgsl). Every occurrence of a repeated token counts; ids
// outside 0..vocab-1 contribute nothing (gather gave them zero rows). Deterministic: each table element
// is summed by one invocation in token order (no scatter, no float atomics).
import shader from '../../../shaders/embedding_grad.wgsl?raw';
import { F32, LINEAR_WORKGROUP, U32, checkOperands, checkShape, checkSize, linearDispatch, packParams } from './common.js';
import type { OpBinding, OpDef } from './types.js';

export interface EmbeddingGradParams {
  /** Tokens (rows of dout). */
  readonly count: number;
  readonly vocab: number;
  readonly dim: number;
  /** Add into dtable (a tied classifier wrote its part first) instead of overwriting it. */
  readonly accumulate: boolean;
}

const BINDINGS: readonly OpBinding[] = [
  { name: 'ids', access: 'read', dtypes: U32 },
  { name: 'dout', access: 'read', dtypes: F32 },
  { name: 'dtable', access: 'read_write', dtypes: F32 },
];

export const embeddingGrad: OpDef<EmbeddingGradParams, readonly [ids: Uint32Array, dout: Float32Array, dtable: Float32Array]> = {
  name: 'embedding_grad',
  shader,
  entryPoint: 'main',
  bindings: BINDINGS,
  paramsBytes: 32,
  check(operands, p) {
    checkOperands('embedding_grad', BINDINGS, operands);
    checkSize('embedding_grad', 'count', p.count);
    checkSize('embedding_grad', 'vocab', p.vocab);
    checkSize('embedding_grad', 'dim', p.dim);
    checkShape('embedding_grad', 'ids', operands[0]!, [p.count]);
    checkShape('embedding_grad', 'dout', operands[1]!, [p.count, p.dim]);
    checkShape('embedding_grad', 'dtable', operands[2]!, [p.vocab, p.dim]);
  },
  params(p, o) {
    return packParams(32, [{ u32: o[0]! }, { u32: o[1]! }, { u32: o[2]! }, { u32: p.count }, { u32: p.vocab }, { u32: p.dim }, { u32: p.accumulate ? 1 : 0 }]);
  },
  constants() {
    return { WG: LINEAR_WORKGROUP };
  },
  workgroups(p, limits) {
    return linearDispatch('embedding_grad', p.vocab * p.dim, LINEAR_WORKGROUP, limits);
  },
  host(p, [ids, dout, dtable]) {
    const { count, vocab, dim } = p;
    const acc = new Float64Array(vocab * dim);
    for (let t = 0; t < count; t++) {
      const id = ids[t]!;
      if (id >= vocab) continue;
      for (let c = 0; c < dim; c++) acc[id * dim + c]! += dout[t * dim + c]!;
    }
    for (let e = 0; e < vocab * dim; e++) dtable[e] = p.accumulate ? dtable[e]! + acc[e]! : acc[e]!;
  },
};

// matmul_batched: out[i] = a[i] x b[i] for i in 0..batch-1; a [batch, M, K], b [batch, K, N],
// out [batch, M, N], row-major f32 (shaders/matmul.wgsl; the batch index is the z workgroup).
import shader from '../../../shaders/matmul.wgsl?raw';
import { F32, checkDispatch, checkOperands, checkShape, checkSize, packParams } from './common.js';
import { hostMatmulBlock } from './matmul.js';
import { matmulGroups, matmulTiling } from './tiling.js';
import type { OpBinding, OpDef } from './types.js';

export interface MatmulBatchedParams {
  readonly batch: number;
  readonly m: number;
  readonly n: number;
  readonly k: number;
}

const BINDINGS: readonly OpBinding[] = [
  { name: 'a', access: 'read', dtypes: F32 },
  { name: 'b', access: 'read', dtypes: F32 },
  { name: 'out', access: 'read_write', dtypes: F32 },
];

export const matmulBatched: OpDef<MatmulBatchedParams, readonly [a: Float32Array, b: Float32Array, out: Float32Array]> = {
  name: 'matmul_batched',
  shader,
  entryPoint: 'main',
  bindings: BINDINGS,
  paramsBytes: 32,
  check(operands, p) {
    checkOperands('matmul_batched', BINDINGS, operands);
    checkSize('matmul_batched', 'batch', p.batch);
    checkSize('matmul_batched', 'm', p.m);
    checkSize('matmul_batched', 'n', p.n);
    checkSize('matmul_batched', 'k', p.k);
    checkShape('matmul_batched', 'a', operands[0]!, [p.batch, p.m, p.k]);
    checkShape('matmul_batched', 'b', operands[1]!, [p.batch, p.k, p.n]);
    checkShape('matmul_batched', 'out', operands[2]!, [p.batch, p.m, p.n]);
  },
  params(p, offsets) {
    return packParams(32, [
      { u32: offsets[0]! }, { u32: offsets[1]! }, { u32: offsets[2]! }, { u32: p.batch },
      { u32: p.m }, { u32: p.n }, { u32: p.k },
    ]);
  },
  constants(p) {
    return { ...matmulTiling(p.m) };
  },
  workgroups(p, limits) {
    return checkDispatch('matmul_batched', matmulGroups(p.m, p.n, p.batch), limits);
  },
  host(p, [a, b, out]) {
    const { m, n, k } = p;
    for (let i = 0; i < p.batch; i++) hostMatmulBlock(a, i * m * k, b, i * k * n, out, i * m * n, m, n, k);
  },
};

// moe_combine: out[t, :] = sum_j weights[t, j] * y[t, j, :] (or out[t, :] += that sum, `accumulate`: the
// residual update of the block) for y f32 [tokens, used, n] (qmatmul_expert's down projection, one row
// per routed expert), weights f32 [tokens, used] (moe_route), out f32 [tokens, n]
// (shaders/moe_combine.wgsl). The last step of a routed-experts block; with accumulate it also replaces
// the residual add_inplace that follows a dense feed-forward block.
import shader from '../../../shaders/moe_combine.wgsl?raw';
import { F32, LINEAR_WORKGROUP, checkOperands, checkShape, checkSize, linearDispatch, packParams, rejectParam } from './common.js';
import type { OpBinding, OpDef } from './types.js';

export interface MoeCombineParams {
  readonly tokens: number;
  /** Routed experts per token (the second dimension of y and weights). */
  readonly used: number;
  /** Row length of y and out. */
  readonly n: number;
  /** Add the sum to out (true) or replace out with it (false). */
  readonly accumulate: boolean;
}

const BINDINGS: readonly OpBinding[] = [
  { name: 'y', access: 'read', dtypes: F32 },
  { name: 'weights', access: 'read', dtypes: F32 },
  { name: 'out', access: 'read_write', dtypes: F32 },
];

/** Bytes of the uniform params struct (8 u32 fields). */
const PARAMS_BYTES = 32;

export const moeCombine: OpDef<MoeCombineParams, readonly [y: Float32Array, weights: Float32Array, out: Float32Array]> = {
  name: 'moe_combine',
  shader,
  entryPoint: 'main',
  bindings: BINDINGS,
  paramsBytes: PARAMS_BYTES,
  check(operands, p) {
    checkOperands('moe_combine', BINDINGS, operands);
    checkSize('moe_combine', 'tokens', p.tokens);
    checkSize('moe_combine', 'used', p.used);
    checkSize('moe_combine', 'n', p.n);
    if (typeof p.accumulate !== 'boolean') rejectParam('moe_combine', 'accumulate', 'accumulate must be a boolean');
    checkShape('moe_combine', 'y', operands[0]!, [p.tokens, p.used, p.n]);
    checkShape('moe_combine', 'weights', operands[1]!, [p.tokens, p.used]);
    checkShape('moe_combine', 'out', operands[2]!, [p.tokens, p.n]);
  },
  params(p, offsets) {
    return packParams(PARAMS_BYTES, [
      { u32: offsets[0]! },
      { u32: offsets[1]! },
      { u32: offsets[2]! },
      { u32: p.tokens },
      { u32: p.used },
      { u32: p.n },
      { u32: p.accumulate ? 1 : 0 },
    ]);
  },
  constants() {
    return { WG: LINEAR_WORKGROUP };
  },
  workgroups(p, limits) {
    return linearDispatch('moe_combine', p.tokens * p.n, LINEAR_WORKGROUP, limits);
  },
  host(p, [y, weights, out]) {
    const { tokens, used, n } = p;
    for (let t = 0; t < tokens; t++) {
      for (let c = 0; c < n; c++) {
        let s = 0;
        for (let j = 0; j < used; j++) s += weights[t * used + j]! * y[(t * used + j) * n + c]!;
        out[t * n + c] = p.accumulate ? out[t * n + c]! + s : s;
      }
    }
  },
};

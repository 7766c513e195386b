// matmul_nt_norm_qkv: RMSNorm of x folded into the Q, K and V projections, written side by side into one
// qkv row per row of x (shaders/matmul_nt_norm_qkv.wesl, its input side shared in ./norm-input.ts): x [M, K], norm [K], wq [Q, K], wk and wv [KV, K]
// (llama2.c's [out_features, in_features]), qkv [M, Q + 2 KV], row-major f32; Q and KV multiples of 8.
// The host twin computes what rmsnorm then matmul_nt into each matrix's columns compute: the normed row
// rounded to f32 as rmsnorm's twin rounds it, each product summed in f64 and rounded once.
import variants from '../../../shaders/matmul_nt_norm_qkv.wesl?wesl';
import { F32, checkDispatch, checkOperands, checkShape, checkSize, packParams, rejectParam } from './common.js';
import { weslVariant } from './fused-variants.js';
import { NORM_INPUT_BINDINGS, checkNormInput, normedRow, type NormInputParams } from './norm-input.js';
import { TILE_N } from './tiling.js';
import type { OpBinding, OpDef } from './types.js';

export interface MatmulNTNormQkvParams extends NormInputParams {
  /** Rows of wq (Q's columns in qkv), a multiple of 8. */
  readonly qRows: number;
  /** Rows of wk and of wv, a multiple of 8. */
  readonly kvRows: number;
}

const BINDINGS: readonly OpBinding[] = [
  ...NORM_INPUT_BINDINGS,
  { name: 'wq', access: 'read', dtypes: F32 },
  { name: 'wk', access: 'read', dtypes: F32 },
  { name: 'wv', access: 'read', dtypes: F32 },
  { name: 'qkv', access: 'read_write', dtypes: F32 },
];

/** Invocations per workgroup (x); each computes TILE_N columns of one row. */
const WORKGROUP = 32;
const OP = 'matmul_nt_norm_qkv';

export const matmulNTNormQkv: OpDef<MatmulNTNormQkvParams, readonly [x: Float32Array, norm: Float32Array, wq: Float32Array, wk: Float32Array, wv: Float32Array, qkv: Float32Array]> = {
  name: OP,
  shader: weslVariant(variants, [], OP),
  entryPoint: 'main',
  bindings: BINDINGS,
  paramsBytes: 48,
  check(operands, p) {
    checkOperands(OP, BINDINGS, operands);
    checkNormInput(OP, operands, p);
    checkSize(OP, 'qRows', p.qRows);
    checkSize(OP, 'kvRows', p.kvRows);
    if (p.qRows % TILE_N !== 0 || p.kvRows % TILE_N !== 0) rejectParam(OP, 'qRows', `qRows and kvRows must be multiples of ${TILE_N}`);
    checkShape(OP, 'wq', operands[2]!, [p.qRows, p.k]);
    checkShape(OP, 'wk', operands[3]!, [p.kvRows, p.k]);
    checkShape(OP, 'wv', operands[4]!, [p.kvRows, p.k]);
    checkShape(OP, 'qkv', operands[5]!, [p.m, p.qRows + 2 * p.kvRows]);
  },
  params(p, offsets) {
    return packParams(48, [
      ...offsets.slice(0, 6).map((o) => ({ u32: o })),
      { u32: p.m },
      { u32: p.qRows },
      { u32: p.kvRows },
      { u32: p.k },
      { f32: p.eps },
    ]);
  },
  constants() {
    return { WG: WORKGROUP };
  },
  workgroups(p, limits) {
    return checkDispatch(OP, [Math.ceil((p.qRows + 2 * p.kvRows) / (TILE_N * WORKGROUP)), p.m, 1], limits);
  },
  host(p, [x, norm, wq, wk, wv, qkv]) {
    const { m, k, qRows, kvRows } = p;
    const width = qRows + 2 * kvRows;
    const xn = new Float32Array(k);
    for (let i = 0; i < m; i++) {
      normedRow(p, x, norm, i, xn);
      const project = (w: Float32Array, rows: number, col: number): void => {
        for (let j = 0; j < rows; j++) {
          let s = 0;
          for (let kk = 0; kk < k; kk++) s += xn[kk]! * w[j * k + kk]!;
          qkv[i * width + col + j] = s;
        }
      };
      project(wq, qRows, 0);
      project(wk, kvRows, qRows);
      project(wv, kvRows, qRows + kvRows);
    }
  },
};

// Fused matrix-vector ops of a decoder layer (shaders/fused_matvec.wesl): one pass over the weights
// with the neighbouring elementwise work folded in, for every packed weight kind (PackedKind) and both
// reduction variants (plain, subgroups):
//   fused_norm_matmul     out[:, col..col+n) = rmsnorm(x) · Wᵀ                 (classifier, split parts)
//   fused_norm_glu        out[:, col..col+n) = silu(rmsnorm(x) · Gᵀ) * (rmsnorm(x) · Uᵀ)
//   fused_norm_qkv_rope   q, k cache, v cache = rope(rmsnorm(x) · [Wq; Wk; Wv]ᵀ (+ biases)) at pos0..
//   fused_matmul_add      out[:, col..col+n) += x · Wᵀ                         (output, down projections)
// x [M, K], out [M, outStride] row-major f32; weights as packed rows (qmatmul-layout.ts; F32 also as an
// f32 tensor). `col` and `outStride` let a matrix split into row parts write each part's columns in
// place. The kind of each weight is a parameter that becomes the override constants KIND0..2, so one
// shader (per form and variant) serves every kind and every mix of kinds (a Q4_K_M file mixes Q4_K and
// Q6_K inside one layer).
//
// Host twins: each is the unfused composition of the op library's own host twins (rmsnorm, qmatmul,
// bias_add, rope, kv_write, silu_mul, add_inplace), run over scratch arrays in the same order the
// unfused forward runs them, so a fused op and the ops it replaces agree on the host bit for bit.
//
// Tiling: TM = 1, 2 or 4 x rows per workgroup (as qmatmul) and WG from K alone (fusedMatvecTiling), so
// every output element's summation order depends only on its kind, K and the variant: a part of a
// split matrix, or a row computed by another form, sums exactly as the whole matrix does.
import variants from '../../../shaders/fused_matvec.wesl?wesl';
import { TenonError } from '../../errors.js';
import { addInplace } from './add-inplace.js';
import { biasAdd } from './bias-add.js';
import { F32, checkDispatch, checkFloat, checkIndex, checkOperands, checkShape, checkSize, linearWorkgroups, rejectParam, rejectRange } from './common.js';
import { weslVariant } from './fused-variants.js';
import { kvWrite } from './kv-write.js';
import { qmatmulOp } from './qmatmul.js';
import type { QMatmulVariant } from './qmatmul.js';
import { PACKED_KINDS, packedRowLayout } from './qmatmul-layout.js';
import type { PackedKind, PackedRowLayout } from './qmatmul-layout.js';
import { PACKED_KIND_ID, unitWorkgroup, walkUnits } from './qunit.js';
import { rmsnorm } from './rmsnorm.js';
import { ROPE_MAX_HEAD_DIM, rope, ropeTable } from './rope.js';
import type { RopeParams, RopeStyle } from './rope.js';
import { siluMul } from './silu-mul.js';
import type { OpBinding, OpDef, OpOperand, Workgroups } from './types.js';

/** The fused forms (shader conditions). */
export type FusedMatvecForm = 'plain' | 'glu' | 'rope' | 'residual';

/** out[:, outCol..outCol+n) = rmsnorm(x) · Wᵀ. */
export interface FusedNormMatmulParams {
  readonly m: number;
  readonly n: number;
  readonly k: number;
  readonly kind: PackedKind;
  readonly eps: number;
  /** Elements per output row (default n). */
  readonly outStride?: number;
  /** Column of W's row 0 in the output (default 0). */
  readonly outCol?: number;
}

/** out[:, outCol..outCol+n) = silu(rmsnorm(x) · Gᵀ) * (rmsnorm(x) · Uᵀ). */
export interface FusedNormGluParams {
  readonly m: number;
  readonly n: number;
  readonly k: number;
  readonly gateKind: PackedKind;
  readonly upKind: PackedKind;
  readonly eps: number;
  readonly outStride?: number;
  readonly outCol?: number;
}

/** out[:, outCol..outCol+n) += x · Wᵀ. */
export interface FusedMatmulAddParams {
  readonly m: number;
  readonly n: number;
  readonly k: number;
  readonly kind: PackedKind;
  readonly outStride?: number;
  readonly outCol?: number;
}

/**
 * x [m, k] at positions pos0..pos0+m-1: q [m, heads * headDim] = rope(xn · Wqᵀ + bq), k cache rows
 * pos0.. = rope(xn · Wkᵀ + bk), v cache rows pos0.. = xn · Wvᵀ + bv, xn = rmsnorm(x); the biases exist in
 * the bias op (after the norm weight in `vec`).
 */
export interface FusedNormQkvRopeParams {
  readonly m: number;
  readonly k: number;
  readonly heads: number;
  readonly kvHeads: number;
  readonly headDim: number;
  readonly qKind: PackedKind;
  readonly kKind: PackedKind;
  readonly vKind: PackedKind;
  readonly eps: number;
  /** Cache rows. */
  readonly maxSeq: number;
  readonly pos0: number;
  readonly theta: number;
  readonly style?: RopeStyle;
  readonly freqFactors?: ArrayLike<number>;
}

type F = Float32Array;
type W = Uint32Array | Float32Array;
export type FusedNormMatmulArrays = readonly [x: F, norm: F, w: W, out: F];
export type FusedNormGluArrays = readonly [x: F, norm: F, gate: W, up: W, out: F];
export type FusedNormQkvRopeArrays = readonly [x: F, vec: F, wq: W, wk: W, wv: W, q: F, kCache: F, vCache: F];
export type FusedMatmulAddArrays = readonly [x: F, w: W, out: F];

/** The override constants of one dispatch. */
export interface FusedMatvecTiling {
  /** Invocations per workgroup: from K alone. */
  readonly WG: number;
  /** x rows per workgroup. */
  readonly TM: number;
}

/** Elements per unit the workgroup size is sized for (the 4- and 5-bit kinds' unit). */
const SIZING_UNIT_ELEMENTS = 8;
/** Largest TM (MAX_ACC = 8 accumulators for 2 weight rows in the shader). */
const MAX_TM = 4;
/** Weight rows per workgroup in the plain and residual forms (one row of each matrix in glu, one pair in rope). */
const ROWS_PER_WORKGROUP = 2;
/** Uniform bytes: 16 scalars, 7 vec4u; the rope form adds ROPE_MAX_HEAD_DIM / 2 frequencies. */
const PARAMS_BYTES = 176;
export const ROPE_PARAMS_BYTES = PARAMS_BYTES + (ROPE_MAX_HEAD_DIM / 2) * 4;
/** Byte offsets of the vec4u fields (shader struct Params). */
const AT = { wOff: 64, rowWords: 80, units: 96, plane1: 112, plane2: 128, plane3: 144, biasAt: 160, freq: 176 } as const;

/** TM for m rows (1, 2, 4) and WG from k alone (a power of two in 32..256). */
export function fusedMatvecTiling(m: number, k: number): FusedMatvecTiling {
  const TM = m <= 1 ? 1 : m === 2 ? 2 : MAX_TM;
  return { WG: unitWorkgroup(Math.ceil(k / SIZING_UNIT_ELEMENTS)), TM };
}

export const WEIGHT_DTYPES = ['f32', 'u32'] as const;

export function layoutOf(op: string, kind: PackedKind, k: number): PackedRowLayout {
  if (!PACKED_KINDS.includes(kind)) rejectParam(op, 'kind', `unknown weight kind ${String(kind)}`);
  try {
    return packedRowLayout(kind, k, `ops.${op}`);
  } catch (err) {
    if (err instanceof TenonError && err.reason === 'bad-param') rejectParam(op, 'k', `k = ${String(k)} is not a whole number of ${kind} blocks`);
    throw err;
  }
}

/** A weight operand: [rows, rowWords], u32 (any kind) or f32 (F32 only). */
export function checkWeight(op: string, name: string, w: OpOperand, kind: PackedKind, rows: number, layout: PackedRowLayout): void {
  if (w.dtype !== 'u32' && !(w.dtype === 'f32' && kind === 'F32')) {
    throw new TenonError('EINVAL', `${name} of kind ${kind} must be u32${kind === 'F32' ? ' or f32' : ''}`, { op: `ops.${op}`, reason: 'dtype-mismatch', ids: { operand: name } });
  }
  checkShape(op, name, w, [rows, layout.rowWords]);
}

/** Output placement: outStride >= outCol + n. */
function placement(op: string, p: { readonly n: number; readonly outStride?: number; readonly outCol?: number }): { stride: number; col: number } {
  const stride = p.outStride ?? p.n;
  const col = p.outCol ?? 0;
  checkSize(op, 'outStride', stride);
  checkIndex(op, 'outCol', col);
  if (col + p.n > stride) rejectRange(op, `columns ${col}..${col + p.n - 1} do not fit output rows of ${stride}`, { outCol: col, n: p.n, outStride: stride });
  return { stride, col };
}

export interface Fields {
  readonly offsets: readonly number[];
  readonly m: number;
  readonly k: number;
  readonly eps: number;
  readonly n: number;
  readonly stride: number;
  readonly col: number;
  readonly pos0?: number;
  readonly qDim?: number;
  readonly kvDim?: number;
  readonly headDim?: number;
  /** Binding index of x, vec (-1: none), out, k cache, v cache (-1: none). */
  readonly at: { readonly x: number; readonly vec: number; readonly out: number; readonly kc: number; readonly vc: number };
  /** Weight binding indices and layouts, in matrix order. */
  readonly weights: readonly { readonly binding: number; readonly layout: PackedRowLayout }[];
  readonly biasAt?: readonly number[];
  readonly freq?: Float32Array;
}

export function pack(bytes: number, f: Fields): ArrayBuffer {
  const buffer = new ArrayBuffer(bytes);
  const v = new DataView(buffer);
  const u32 = (byte: number, value: number): void => v.setUint32(byte, value, true);
  const off = (i: number): number => (i < 0 ? 0 : f.offsets[i]!);
  [off(f.at.x), off(f.at.vec), off(f.at.out), off(f.at.kc), off(f.at.vc), f.m, f.k].forEach((value, i) => u32(4 * i, value));
  v.setFloat32(28, f.eps, true);
  [f.n, f.stride, f.col, f.pos0 ?? 0, f.qDim ?? 0, f.kvDim ?? 0, f.headDim ?? 0].forEach((value, i) => u32(32 + 4 * i, value));
  f.weights.forEach(({ binding, layout }, s) => {
    u32(AT.wOff + 4 * s, f.offsets[binding]!);
    u32(AT.rowWords + 4 * s, layout.rowWords);
    u32(AT.units + 4 * s, walkUnits(layout));
    u32(AT.plane1 + 4 * s, layout.planes[0]);
    u32(AT.plane2 + 4 * s, layout.planes[1]);
    u32(AT.plane3 + 4 * s, layout.planes[2]);
  });
  (f.biasAt ?? []).forEach((value, s) => u32(AT.biasAt + 4 * s, value));
  if (f.freq !== undefined) new Float32Array(buffer, AT.freq, f.freq.length).set(f.freq);
  return buffer;
}

export function kindConstants(kinds: readonly PackedKind[]): Record<string, number> {
  const out: Record<string, number> = {};
  kinds.forEach((kind, s) => (out[`KIND${s}`] = PACKED_KIND_ID[kind]));
  return out;
}

function workgroups(op: string, items: number, m: number, k: number, limits: { maxComputeWorkgroupsPerDimension: number }): Workgroups {
  const [x, y] = linearWorkgroups(op, items, limits);
  return checkDispatch(op, [x, y, Math.ceil(m / fusedMatvecTiling(m, k).TM)], limits);
}

function opName(base: string, variant: QMatmulVariant): string {
  return variant === 'plain' ? base : `${base}_${variant}`;
}

/** Conditions of a form's variant. */
function conditions(form: FusedMatvecForm, variant: QMatmulVariant, bias = false): string[] {
  return [form, ...(bias ? ['bias'] : []), ...(variant === 'subgroups' ? ['subgroups'] : [])];
}

/** rmsnorm of m rows into a scratch (the host twin's first step). */
function normRows(x: F, norm: F, m: number, k: number, eps: number): F {
  const xn = new Float32Array(m * k);
  rmsnorm.host({ rows: m, cols: k, eps }, [x.subarray(0, m * k), norm.subarray(0, k), xn]);
  return xn;
}

/** x · Wᵀ through qmatmul's host twin into a fresh [m, n]. */
function project(kind: PackedKind, x: F, w: W, m: number, n: number, k: number): F {
  const y = new Float32Array(m * n);
  qmatmulOp(kind).host({ m, n, k }, [x, w, y]);
  return y;
}

/** Writes y [m, n] into out at column `col` of rows of `stride`. */
function place(y: F, out: F, m: number, n: number, stride: number, col: number): void {
  for (let i = 0; i < m; i++) out.set(y.subarray(i * n, i * n + n), i * stride + col);
}

function makeNormMatmul(variant: QMatmulVariant): OpDef<FusedNormMatmulParams, FusedNormMatmulArrays> {
  const name = opName('fused_norm_matmul', variant);
  const bindings: readonly OpBinding[] = [
    { name: 'x', access: 'read', dtypes: F32 },
    { name: 'norm', access: 'read', dtypes: F32 },
    { name: 'w', access: 'read', dtypes: WEIGHT_DTYPES },
    { name: 'out', access: 'read_write', dtypes: F32 },
  ];
  return {
    name,
    shader: weslVariant(variants, conditions('plain', variant), name),
    entryPoint: 'main',
    bindings,
    paramsBytes: PARAMS_BYTES,
    check(operands, p) {
      checkOperands(name, bindings, operands);
      checkSize(name, 'm', p.m);
      checkSize(name, 'n', p.n);
      checkSize(name, 'k', p.k);
      checkFloat(name, 'eps', p.eps, true);
      const layout = layoutOf(name, p.kind, p.k);
      const { stride } = placement(name, p);
      checkShape(name, 'x', operands[0]!, [p.m, p.k]);
      checkShape(name, 'norm', operands[1]!, [p.k]);
      checkWeight(name, 'w', operands[2]!, p.kind, p.n, layout);
      checkShape(name, 'out', operands[3]!, [p.m, stride]);
    },
    params(p, offsets) {
      const { stride, col } = placement(name, p);
      return pack(PARAMS_BYTES, {
        offsets, m: p.m, k: p.k, eps: p.eps, n: p.n, stride, col,
        at: { x: 0, vec: 1, out: 3, kc: -1, vc: -1 },
        weights: [{ binding: 2, layout: layoutOf(name, p.kind, p.k) }],
      });
    },
    constants(p) {
      return { ...fusedMatvecTiling(p.m, p.k), ...kindConstants([p.kind]) };
    },
    workgroups(p, limits) {
      return workgroups(name, Math.ceil(p.n / ROWS_PER_WORKGROUP), p.m, p.k, limits);
    },
    host(p, [x, norm, w, out]) {
      const { stride, col } = placement(name, p);
      place(project(p.kind, normRows(x, norm, p.m, p.k, p.eps), w, p.m, p.n, p.k), out, p.m, p.n, stride, col);
    },
  };
}

function makeNormGlu(variant: QMatmulVariant): OpDef<FusedNormGluParams, FusedNormGluArrays> {
  const name = opName('fused_norm_glu', variant);
  const bindings: readonly OpBinding[] = [
    { name: 'x', access: 'read', dtypes: F32 },
    { name: 'norm', access: 'read', dtypes: F32 },
    { name: 'gate', access: 'read', dtypes: WEIGHT_DTYPES },
    { name: 'up', access: 'read', dtypes: WEIGHT_DTYPES },
    { name: 'out', access: 'read_write', dtypes: F32 },
  ];
  return {
    name,
    shader: weslVariant(variants, conditions('glu', variant), name),
    entryPoint: 'main',
    bindings,
    paramsBytes: PARAMS_BYTES,
    check(operands, p) {
      checkOperands(name, bindings, operands);
      checkSize(name, 'm', p.m);
      checkSize(name, 'n', p.n);
      checkSize(name, 'k', p.k);
      checkFloat(name, 'eps', p.eps, true);
      const gate = layoutOf(name, p.gateKind, p.k);
      const up = layoutOf(name, p.upKind, p.k);
      const { stride } = placement(name, p);
      checkShape(name, 'x', operands[0]!, [p.m, p.k]);
      checkShape(name, 'norm', operands[1]!, [p.k]);
      checkWeight(name, 'gate', operands[2]!, p.gateKind, p.n, gate);
      checkWeight(name, 'up', operands[3]!, p.upKind, p.n, up);
      checkShape(name, 'out', operands[4]!, [p.m, stride]);
    },
    params(p, offsets) {
      const { stride, col } = placement(name, p);
      return pack(PARAMS_BYTES, {
        offsets, m: p.m, k: p.k, eps: p.eps, n: p.n, stride, col,
        at: { x: 0, vec: 1, out: 4, kc: -1, vc: -1 },
        weights: [
          { binding: 2, layout: layoutOf(name, p.gateKind, p.k) },
          { binding: 3, layout: layoutOf(name, p.upKind, p.k) },
        ],
      });
    },
    constants(p) {
      return { ...fusedMatvecTiling(p.m, p.k), ...kindConstants([p.gateKind, p.upKind]) };
    },
    workgroups(p, limits) {
      return workgroups(name, p.n, p.m, p.k, limits);
    },
    host(p, [x, norm, gate, up, out]) {
      const { m, n, k } = p;
      const { stride, col } = placement(name, p);
      const xn = normRows(x, norm, m, k, p.eps);
      const g = project(p.gateKind, xn, gate, m, n, k);
      const u = project(p.upKind, xn, up, m, n, k);
      const h = new Float32Array(m * n);
      siluMul.host({ n: m * n }, [g, u, h]);
      place(h, out, m, n, stride, col);
    },
  };
}

function makeMatmulAdd(variant: QMatmulVariant): OpDef<FusedMatmulAddParams, FusedMatmulAddArrays> {
  const name = opName('fused_matmul_add', variant);
  const bindings: readonly OpBinding[] = [
    { name: 'x', access: 'read', dtypes: F32 },
    { name: 'w', access: 'read', dtypes: WEIGHT_DTYPES },
    { name: 'out', access: 'read_write', dtypes: F32 },
  ];
  return {
    name,
    shader: weslVariant(variants, conditions('residual', variant), name),
    entryPoint: 'main',
    bindings,
    paramsBytes: PARAMS_BYTES,
    check(operands, p) {
      checkOperands(name, bindings, operands);
      checkSize(name, 'm', p.m);
      checkSize(name, 'n', p.n);
      checkSize(name, 'k', p.k);
      const layout = layoutOf(name, p.kind, p.k);
      const { stride } = placement(name, p);
      checkShape(name, 'x', operands[0]!, [p.m, p.k]);
      checkWeight(name, 'w', operands[1]!, p.kind, p.n, layout);
      checkShape(name, 'out', operands[2]!, [p.m, stride]);
    },
    params(p, offsets) {
      const { stride, col } = placement(name, p);
      return pack(PARAMS_BYTES, {
        offsets, m: p.m, k: p.k, eps: 0, n: p.n, stride, col,
        at: { x: 0, vec: -1, out: 2, kc: -1, vc: -1 },
        weights: [{ binding: 1, layout: layoutOf(name, p.kind, p.k) }],
      });
    },
    constants(p) {
      return { ...fusedMatvecTiling(p.m, p.k), ...kindConstants([p.kind]) };
    },
    workgroups(p, limits) {
      return workgroups(name, Math.ceil(p.n / ROWS_PER_WORKGROUP), p.m, p.k, limits);
    },
    host(p, [x, w, out]) {
      const { m, n, k } = p;
      const { stride, col } = placement(name, p);
      const y = project(p.kind, x, w, m, n, k);
      for (let i = 0; i < m; i++) {
        const row = out.subarray(i * stride + col, i * stride + col + n);
        addInplace.host({ n }, [row, y.subarray(i * n, i * n + n)]);
      }
    },
  };
}

/** The rope op's params for `rows` rows of `heads` heads (its checks and table are the fused op's). */
/** Widths of the Q row and of a K or V row. */
function dims(p: FusedNormQkvRopeParams): { qDim: number; kvDim: number } {
  return { qDim: p.heads * p.headDim, kvDim: p.kvHeads * p.headDim };
}

/**
 * The params fields of the rope form (bindings x, vec, wq, wk, wv, out, kCache, vCache), which
 * fused_attention_block's params start with too (src/submit/ops/fused-attention-block.ts).
 */
export function ropeFormFields(name: string, p: FusedNormQkvRopeParams, offsets: readonly number[]): Fields {
  const { qDim, kvDim } = dims(p);
  return {
    offsets, m: p.m, k: p.k, eps: p.eps, n: (qDim + 2 * kvDim) / 2, stride: qDim, col: 0,
    pos0: p.pos0, qDim, kvDim, headDim: p.headDim,
    at: { x: 0, vec: 1, out: 5, kc: 6, vc: 7 },
    weights: [
      { binding: 2, layout: layoutOf(name, p.qKind, p.k) },
      { binding: 3, layout: layoutOf(name, p.kKind, p.k) },
      { binding: 4, layout: layoutOf(name, p.vKind, p.k) },
    ],
    biasAt: [p.k, p.k + qDim, p.k + qDim + kvDim],
    freq: ropeTable(ropeParams(p, p.heads)),
  };
}

function ropeParams(p: FusedNormQkvRopeParams, heads: number): RopeParams {
  return {
    count: p.m,
    heads,
    headDim: p.headDim,
    pos0: p.pos0,
    theta: p.theta,
    ...(p.style === undefined ? {} : { style: p.style }),
    ...(p.freqFactors === undefined ? {} : { freqFactors: p.freqFactors }),
  };
}

function makeNormQkvRope(variant: QMatmulVariant, bias: boolean): OpDef<FusedNormQkvRopeParams, FusedNormQkvRopeArrays> {
  const name = opName(bias ? 'fused_norm_qkv_rope_bias' : 'fused_norm_qkv_rope', variant);
  const bindings: readonly OpBinding[] = [
    { name: 'x', access: 'read', dtypes: F32 },
    { name: 'vec', access: 'read', dtypes: F32 },
    { name: 'wq', access: 'read', dtypes: WEIGHT_DTYPES },
    { name: 'wk', access: 'read', dtypes: WEIGHT_DTYPES },
    { name: 'wv', access: 'read', dtypes: WEIGHT_DTYPES },
    { name: 'q', access: 'read_write', dtypes: F32 },
    { name: 'kCache', access: 'read_write', dtypes: F32 },
    { name: 'vCache', access: 'read_write', dtypes: F32 },
  ];
  return {
    name,
    shader: weslVariant(variants, conditions('rope', variant, bias), name),
    entryPoint: 'main',
    bindings,
    paramsBytes: ROPE_PARAMS_BYTES,
    check(operands, p) {
      checkOperands(name, bindings, operands);
      checkSize(name, 'm', p.m);
      checkSize(name, 'k', p.k);
      checkSize(name, 'heads', p.heads);
      checkSize(name, 'kvHeads', p.kvHeads);
      checkSize(name, 'headDim', p.headDim);
      checkSize(name, 'maxSeq', p.maxSeq);
      checkFloat(name, 'eps', p.eps, true);
      if (p.heads % p.kvHeads !== 0) rejectParam(name, 'kvHeads', 'kvHeads must divide heads');
      // Positions, head size, style, theta and factors: the rope op's own rules.
      rope.check([{ dtype: 'f32', shape: [p.m, p.heads * p.headDim], contiguous: true }], ropeParams(p, p.heads));
      if (p.pos0 + p.m > p.maxSeq) rejectRange(name, `rows ${p.pos0}..${p.pos0 + p.m - 1} do not fit a cache of ${p.maxSeq}`, { pos0: p.pos0, m: p.m, maxSeq: p.maxSeq });
      const { qDim, kvDim } = dims(p);
      checkShape(name, 'x', operands[0]!, [p.m, p.k]);
      checkShape(name, 'vec', operands[1]!, [bias ? p.k + qDim + 2 * kvDim : p.k]);
      checkWeight(name, 'wq', operands[2]!, p.qKind, qDim, layoutOf(name, p.qKind, p.k));
      checkWeight(name, 'wk', operands[3]!, p.kKind, kvDim, layoutOf(name, p.kKind, p.k));
      checkWeight(name, 'wv', operands[4]!, p.vKind, kvDim, layoutOf(name, p.vKind, p.k));
      checkShape(name, 'q', operands[5]!, [p.m, qDim]);
      checkShape(name, 'kCache', operands[6]!, [p.maxSeq, kvDim]);
      checkShape(name, 'vCache', operands[7]!, [p.maxSeq, kvDim]);
    },
    params(p, offsets) {
      return pack(ROPE_PARAMS_BYTES, ropeFormFields(name, p, offsets));
    },
    constants(p) {
      return { ...fusedMatvecTiling(p.m, p.k), ...kindConstants([p.qKind, p.kKind, p.vKind]), NEOX: p.style === 'neox' ? 1 : 0 };
    },
    workgroups(p, limits) {
      const { qDim, kvDim } = dims(p);
      return workgroups(name, (qDim + 2 * kvDim) / 2, p.m, p.k, limits);
    },
    host(p, [x, vec, wq, wk, wv, q, kCache, vCache]) {
      const { m, k } = p;
      const { qDim, kvDim } = dims(p);
      const xn = normRows(x, vec, m, k, p.eps);
      const qy = project(p.qKind, xn, wq, m, qDim, k);
      const ky = project(p.kKind, xn, wk, m, kvDim, k);
      const vy = project(p.vKind, xn, wv, m, kvDim, k);
      if (bias) {
        biasAdd.host({ rows: m, cols: qDim }, [qy, vec.subarray(k, k + qDim)]);
        biasAdd.host({ rows: m, cols: kvDim }, [ky, vec.subarray(k + qDim, k + qDim + kvDim)]);
        biasAdd.host({ rows: m, cols: kvDim }, [vy, vec.subarray(k + qDim + kvDim, k + qDim + 2 * kvDim)]);
      }
      rope.host(ropeParams(p, p.heads), [qy]);
      rope.host(ropeParams(p, p.kvHeads), [ky]);
      q.set(qy);
      const cache = { count: m, width: kvDim, maxSeq: p.maxSeq, pos0: p.pos0 };
      kvWrite.host(cache, [ky, kCache]);
      kvWrite.host(cache, [vy, vCache]);
    },
  };
}

type ByVariant<T> = Readonly<Record<QMatmulVariant, T>>;

function both<T>(make: (variant: QMatmulVariant) => T): ByVariant<T> {
  return Object.freeze({ plain: make('plain'), subgroups: make('subgroups') });
}

/** Every fused matvec op, by form and reduction variant. */
export const FUSED_MATVEC = Object.freeze({
  normMatmul: both(makeNormMatmul),
  normGlu: both(makeNormGlu),
  normQkvRope: both((v) => makeNormQkvRope(v, false)),
  normQkvRopeBias: both((v) => makeNormQkvRope(v, true)),
  matmulAdd: both(makeMatmulAdd),
});

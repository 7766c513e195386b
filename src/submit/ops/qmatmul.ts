// qmatmul: out = x · W^T with W in a packed weight kind (src/submit/ops/qmatmul-layout.ts) and x, out f32:
// x [M, K], W [N, K] stored as packed rows (a u32 tensor [N, rowWords]; F32 also as an f32 tensor
// [N, K]), out [M, N]. M = 1 is decode (matrix-vector), M > 1 prefill (matrix-matrix). A linear layer
// of a GGUF model is this op; the weights are dequantized in registers and never exist as f32.
//
// One op per (kind, variant) rather than one op with a `kind` parameter: an OpDef carries exactly one
// shader, the graph compiler and pools cache pipelines and look kernels up by op name + shader, and the
// operand dtypes and row geometry differ by kind. A kind parameter would make the shader a function of
// the parameters, which the op contract (types.ts) does not have. `qmatmulOp(kind, variant)` and
// `selectQMatmul(kind, features)` are the one entry point.
//
// Kernel design (the same in all twenty shaders, written for real GPUs; SwiftShader only checks them):
// a row group of SEG invocations owns RN adjacent output columns (weight rows) for TM adjacent rows of x;
// a workgroup of WG invocations is WG / SEG row groups (one when rows are long; many short rows share a
// workgroup rather than leave invocations idle, as a matrix-vector product over a small K would). A row
// group walks its packed rows in "units" (one quant word each, see the layout module): unit u goes to
// invocation u mod SEG, so adjacent invocations load adjacent words (coalesced). Each unit is
// dequantized in registers, its scale factored out of the dot product, and the weights are reused for
// all TM rows of x; accumulation is f32. The RN x TM partial sums are then reduced over the row group:
// - `plain`: a shared-memory tree reduction (log2 SEG barrier steps);
// - `subgroups`: where a row group is the whole workgroup, subgroupAdd inside each subgroup, one partial
//   per subgroup in shared memory, one barrier (needs the device feature `subgroups` and the WGSL language
//   feature `subgroup_id`); smaller row groups use the tree (a subgroup's size is unknown at compile time).
// Measured on the software adapters (Dawn's SwiftShader, 2 cores): one unit per invocation with idle
// invocations for short rows made tiny-llama-F16's batched pass 38 s; UNITS_PER_INVOCATION 8 with row
// groups brings it to a few seconds.
// No `shader-f16` variant: f16 arithmetic would change the accumulation precision the session's
// references are checked against (f32 activations), and every f16 the kernels read is widened exactly by
// unpack2x16float, which needs no feature. No device here reports shader-f16, so it could not be tested.
//
// Limits: WG <= 256 invocations in x (the WebGPU defaults every device meets for
// maxComputeWorkgroupSizeX and maxComputeInvocationsPerWorkgroup) and WG * 8 * 4 = 8 KiB of workgroup
// memory at most (default maxComputeWorkgroupStorageSize: 16 KiB); workgroup counts fold into y under
// maxComputeWorkgroupsPerDimension, x-row tiles go to z.
import { TenonError } from '../../errors.js';
import bf16Plain from '../../../shaders/qmatmul_bf16.wgsl?raw';
import bf16Subgroups from '../../../shaders/qmatmul_bf16_subgroups.wgsl?raw';
import f16Plain from '../../../shaders/qmatmul_f16.wgsl?raw';
import f16Subgroups from '../../../shaders/qmatmul_f16_subgroups.wgsl?raw';
import f32Plain from '../../../shaders/qmatmul_f32.wgsl?raw';
import f32Subgroups from '../../../shaders/qmatmul_f32_subgroups.wgsl?raw';
import q4_0Plain from '../../../shaders/qmatmul_q4_0.wgsl?raw';
import q4_0Subgroups from '../../../shaders/qmatmul_q4_0_subgroups.wgsl?raw';
import q4_1Plain from '../../../shaders/qmatmul_q4_1.wgsl?raw';
import q4_1Subgroups from '../../../shaders/qmatmul_q4_1_subgroups.wgsl?raw';
import q4_kPlain from '../../../shaders/qmatmul_q4_k.wgsl?raw';
import q4_kSubgroups from '../../../shaders/qmatmul_q4_k_subgroups.wgsl?raw';
import q5_0Plain from '../../../shaders/qmatmul_q5_0.wgsl?raw';
import q5_0Subgroups from '../../../shaders/qmatmul_q5_0_subgroups.wgsl?raw';
import q5_1Plain from '../../../shaders/qmatmul_q5_1.wgsl?raw';
import q5_1Subgroups from '../../../shaders/qmatmul_q5_1_subgroups.wgsl?raw';
import q6_kPlain from '../../../shaders/qmatmul_q6_k.wgsl?raw';
import q6_kSubgroups from '../../../shaders/qmatmul_q6_k_subgroups.wgsl?raw';
import q8_0Plain from '../../../shaders/qmatmul_q8_0.wgsl?raw';
import q8_0Subgroups from '../../../shaders/qmatmul_q8_0_subgroups.wgsl?raw';
import { F32, U32, checkDispatch, checkOperands, checkShape, checkSize, linearWorkgroups, packParams, rejectParam } from './common.js';
import { PACKED_KINDS, decodePackedRow, packedRowLayout } from './qmatmul-layout.js';
import type { PackedKind, PackedRowLayout } from './qmatmul-layout.js';
import type { OpBinding, OpDef, Workgroups } from './types.js';

export interface QMatmulParams {
  readonly m: number;
  readonly n: number;
  readonly k: number;
}

/** How the partial sums are reduced over a workgroup. */
export type QMatmulVariant = 'plain' | 'subgroups';

export const QMATMUL_VARIANTS: readonly QMatmulVariant[] = ['plain', 'subgroups'];

export type QMatmulArrays = readonly [x: Float32Array, w: Uint32Array | Float32Array, out: Float32Array];

const SHADERS: Readonly<Record<PackedKind, Readonly<Record<QMatmulVariant, string>>>> = {
  F32: { plain: f32Plain, subgroups: f32Subgroups },
  F16: { plain: f16Plain, subgroups: f16Subgroups },
  BF16: { plain: bf16Plain, subgroups: bf16Subgroups },
  Q8_0: { plain: q8_0Plain, subgroups: q8_0Subgroups },
  Q4_0: { plain: q4_0Plain, subgroups: q4_0Subgroups },
  Q4_K: { plain: q4_kPlain, subgroups: q4_kSubgroups },
  Q6_K: { plain: q6_kPlain, subgroups: q6_kSubgroups },
  Q4_1: { plain: q4_1Plain, subgroups: q4_1Subgroups },
  Q5_0: { plain: q5_0Plain, subgroups: q5_0Subgroups },
  Q5_1: { plain: q5_1Plain, subgroups: q5_1Subgroups },
};

/** Smallest and largest workgroup (powers of two; 256 is the WebGPU default limit every device meets). */
const MIN_WORKGROUP = 32;
const MAX_WORKGROUP = 256;
/** Weight rows per row group. */
const ROWS_PER_WORKGROUP = 2;
/** Units each invocation takes (at least) before the workgroup grows. */
const UNITS_PER_INVOCATION = 8;
/** Bytes of the uniform params struct (12 u32 fields). */
const PARAMS_BYTES = 48;

/**
 * The override constants of one dispatch: workgroup size, invocations per row group, weight rows per row
 * group and x rows per workgroup. A workgroup serves WG / SEG row groups, so RN * WG / SEG weight rows.
 */
export interface QMatmulTiling {
  readonly WG: number;
  readonly SEG: number;
  readonly RN: number;
  readonly TM: number;
}

/**
 * Tiling for M rows of x and `units` work units per weight row: TM = 1 for decode, 2 for M = 2 and 4
 * above (each weight unit loaded once serves TM rows). SEG, the invocations that share one row, is the
 * smallest power of two (at most 256) that leaves each invocation at most UNITS_PER_INVOCATION units, so
 * every invocation has several units of work before the reduction; WG is SEG, or 32 when SEG is smaller
 * (a short row then shares its workgroup with other rows instead of leaving most invocations idle).
 */
export function qmatmulTiling(m: number, units: number): QMatmulTiling {
  const TM = m <= 1 ? 1 : m === 2 ? 2 : 4;
  let SEG = 1;
  while (SEG < MAX_WORKGROUP && SEG * UNITS_PER_INVOCATION < units) SEG *= 2;
  return { WG: Math.max(SEG, MIN_WORKGROUP), SEG, RN: ROWS_PER_WORKGROUP, TM };
}

/** Weight rows one workgroup computes. */
export function qmatmulRowsPerWorkgroup(t: QMatmulTiling): number {
  return (t.RN * t.WG) / t.SEG;
}

function opName(kind: PackedKind, variant: QMatmulVariant): string {
  return `qmatmul_${kind.toLowerCase()}${variant === 'plain' ? '' : `_${variant}`}`;
}

function makeQMatmul(kind: PackedKind, variant: QMatmulVariant): OpDef<QMatmulParams, QMatmulArrays> {
  const name = opName(kind, variant);
  const bindings: readonly OpBinding[] = [
    { name: 'x', access: 'read', dtypes: F32 },
    { name: 'w', access: 'read', dtypes: kind === 'F32' ? ['f32', 'u32'] : U32 },
    { name: 'out', access: 'read_write', dtypes: F32 },
  ];
  const layoutOf = (p: QMatmulParams): PackedRowLayout => {
    try {
      return packedRowLayout(kind, p.k, `ops.${name}`);
    } catch (err) {
      if (err instanceof TenonError && err.reason === 'bad-param') rejectParam(name, 'k', `k = ${String(p.k)} is not a whole number of ${kind} blocks`);
      throw err;
    }
  };
  return {
    name,
    shader: SHADERS[kind][variant],
    entryPoint: 'main',
    bindings,
    paramsBytes: PARAMS_BYTES,
    check(operands, p) {
      checkOperands(name, bindings, operands);
      checkSize(name, 'm', p.m);
      checkSize(name, 'n', p.n);
      checkSize(name, 'k', p.k);
      const layout = layoutOf(p);
      checkShape(name, 'x', operands[0]!, [p.m, p.k]);
      checkShape(name, 'w', operands[1]!, [p.n, layout.rowWords]);
      checkShape(name, 'out', operands[2]!, [p.m, p.n]);
    },
    params(p, offsets) {
      const layout = layoutOf(p);
      return packParams(PARAMS_BYTES, [
        { u32: offsets[0]! },
        { u32: offsets[1]! },
        { u32: offsets[2]! },
        { u32: p.m },
        { u32: p.n },
        { u32: p.k },
        { u32: layout.rowWords },
        { u32: layout.units },
        { u32: layout.planes[0] },
        { u32: layout.planes[1] },
        { u32: layout.planes[2] },
      ]);
    },
    constants(p) {
      return { ...qmatmulTiling(p.m, layoutOf(p).units) };
    },
    workgroups(p, limits): Workgroups {
      const t = qmatmulTiling(p.m, layoutOf(p).units);
      const [x, y] = linearWorkgroups(name, Math.ceil(p.n / qmatmulRowsPerWorkgroup(t)), limits);
      return checkDispatch(name, [x, y, Math.ceil(p.m / t.TM)], limits);
    },
    host(p, [x, w, out]) {
      // One row of W at a time is dequantized into a K-element scratch (the packed rows are the only copy
      // of the weights) and dotted with every row of x, in f64.
      const { m, n, k } = p;
      const layout = layoutOf(p);
      const words = w instanceof Uint32Array ? w : new Uint32Array(w.buffer, w.byteOffset, w.length);
      const row = new Float32Array(k);
      for (let j = 0; j < n; j++) {
        decodePackedRow(layout, words, j * layout.rowWords, row);
        for (let i = 0; i < m; i++) {
          const base = i * k;
          let s = 0;
          for (let kk = 0; kk < k; kk++) s += x[base + kk]! * row[kk]!;
          out[i * n + j] = s;
        }
      }
    },
  };
}

function table(): Readonly<Record<PackedKind, Readonly<Record<QMatmulVariant, OpDef<QMatmulParams, QMatmulArrays>>>>> {
  const entries = PACKED_KINDS.map((kind) => [kind, Object.freeze({ plain: makeQMatmul(kind, 'plain'), subgroups: makeQMatmul(kind, 'subgroups') })] as const);
  return Object.freeze(Object.fromEntries(entries) as Record<PackedKind, Readonly<Record<QMatmulVariant, OpDef<QMatmulParams, QMatmulArrays>>>>);
}

/** Every qmatmul op, by kind and variant. */
export const QMATMUL = table();

/** The op for one kind and variant. */
export function qmatmulOp(kind: PackedKind, variant: QMatmulVariant = 'plain'): OpDef<QMatmulParams, QMatmulArrays> {
  const byVariant = (QMATMUL as Partial<Record<string, Readonly<Record<QMatmulVariant, OpDef<QMatmulParams, QMatmulArrays>>>>>)[kind];
  const op = byVariant?.[variant];
  if (op === undefined) throw new TenonError('EINVAL', `no qmatmul for ${String(kind)}/${String(variant)}`, { op: 'ops.qmatmul', reason: 'bad-param', ids: { kind: String(kind), variant: String(variant) } });
  return op;
}

/**
 * What variant selection reads of a provider (a WebGPUProvider fits): its device's features and the WGSL
 * language features of the GPU entry point the device came from.
 */
export interface QMatmulFeatures {
  readonly device: { readonly features: { has(name: string): boolean } };
  readonly wgslLanguageFeatures: { has(name: string): boolean };
}

/** `subgroups` when the device has that feature and WGSL has `subgroup_id`; otherwise `plain`. */
export function qmatmulVariant(provider: QMatmulFeatures): QMatmulVariant {
  return provider.device.features.has('subgroups') && provider.wgslLanguageFeatures.has('subgroup_id') ? 'subgroups' : 'plain';
}

/** The fastest qmatmul for `kind` that this provider's device can run. */
export function selectQMatmul(kind: PackedKind, provider: QMatmulFeatures): OpDef<QMatmulParams, QMatmulArrays> {
  return qmatmulOp(kind, qmatmulVariant(provider));
}

// Backward of causal grouped-query attention over one sequence (the `attention` op with pos0 = 0 and the
// sequence's own k, v as the cache: q [count, heads * headDim], k, v [count, kvHeads * headDim]), as two
// kernels in the FlashAttention-2 split, softmax backward inside:
// - attention_grad_q (shaders/attention_grad_q.wgsl): dq, and per (row, head) stats = (lse, delta) with
//   lse the log-sum-exp of the scaled scores and delta = dout · out;
// - attention_grad_kv (shaders/attention_grad_kv.wgsl): dk and dv from the stats, one invocation per key
//   row, kv head and 4 dims, summing over later query rows and the heads of the group in a fixed order.
// No score matrix is kept; no float atomics. headDim must be a multiple of 4 (the kernels own 4 dims each).
import shaderKv from '../../../shaders/attention_grad_kv.wgsl?raw';
import shaderQ from '../../../shaders/attention_grad_q.wgsl?raw';
import { attentionScale } from './attention.js';
import { F32, LINEAR_WORKGROUP, checkOperands, checkShape, checkSize, linearDispatch, packParams, rejectParam } from './common.js';
import type { OpBinding, OpDef, OpOperand } from './types.js';

export interface AttentionGradParams {
  /** Sequence length (query rows = key rows, positions 0..count-1). */
  readonly count: number;
  readonly heads: number;
  /** Divides heads. */
  readonly kvHeads: number;
  /** A multiple of 4. */
  readonly headDim: number;
}

/** Dims of a head each invocation owns. */
const LANES = 4;
/** Values per (row, head) in stats: lse, delta. */
export const ATTENTION_GRAD_STATS = 2;

const Q_BINDINGS: readonly OpBinding[] = [
  { name: 'q', access: 'read', dtypes: F32 },
  { name: 'k', access: 'read', dtypes: F32 },
  { name: 'v', access: 'read', dtypes: F32 },
  { name: 'out', access: 'read', dtypes: F32 },
  { name: 'dout', access: 'read', dtypes: F32 },
  { name: 'dq', access: 'read_write', dtypes: F32 },
  { name: 'stats', access: 'read_write', dtypes: F32 },
];

const KV_BINDINGS: readonly OpBinding[] = [
  { name: 'q', access: 'read', dtypes: F32 },
  { name: 'k', access: 'read', dtypes: F32 },
  { name: 'v', access: 'read', dtypes: F32 },
  { name: 'dout', access: 'read', dtypes: F32 },
  { name: 'stats', access: 'read', dtypes: F32 },
  { name: 'dk', access: 'read_write', dtypes: F32 },
  { name: 'dv', access: 'read_write', dtypes: F32 },
];

function checkParams(op: string, p: AttentionGradParams): void {
  checkSize(op, 'count', p.count);
  checkSize(op, 'heads', p.heads);
  checkSize(op, 'kvHeads', p.kvHeads);
  checkSize(op, 'headDim', p.headDim);
  if (p.heads % p.kvHeads !== 0) rejectParam(op, 'kvHeads', 'kvHeads must divide heads');
  if (p.headDim % LANES !== 0) rejectParam(op, 'headDim', `headDim must be a multiple of ${LANES}`);
}

function checkShapes(op: string, bindings: readonly OpBinding[], operands: readonly OpOperand[], p: AttentionGradParams): void {
  const qShape = [p.count, p.heads * p.headDim];
  const kvShape = [p.count, p.kvHeads * p.headDim];
  const shapes: Record<string, number[]> = { q: qShape, k: kvShape, v: kvShape, out: qShape, dout: qShape, dq: qShape, dk: kvShape, dv: kvShape, stats: [p.count, p.heads, ATTENTION_GRAD_STATS] };
  bindings.forEach((b, i) => checkShape(op, b.name, operands[i]!, shapes[b.name]!));
}

/** Per (row, head): scaled scores' max, log-sum-exp; the host twins share it. */
function scores(q: Float32Array, k: Float32Array, p: AttentionGradParams, t: number, h: number, out: Float64Array): number {
  const { heads, kvHeads, headDim } = p;
  const g = Math.floor(h / (heads / kvHeads));
  const scale = attentionScale(headDim);
  const qa = t * heads * headDim + h * headDim;
  let max = -Infinity;
  for (let j = 0; j <= t; j++) {
    const ka = j * kvHeads * headDim + g * headDim;
    let s = 0;
    for (let d = 0; d < headDim; d++) s += q[qa + d]! * k[ka + d]!;
    out[j] = s * scale;
    max = Math.max(max, out[j]!);
  }
  let sum = 0;
  for (let j = 0; j <= t; j++) sum += Math.exp(out[j]! - max);
  return max + Math.log(sum);
}

export const attentionGradQ: OpDef<AttentionGradParams, readonly [q: Float32Array, k: Float32Array, v: Float32Array, out: Float32Array, dout: Float32Array, dq: Float32Array, stats: Float32Array]> = {
  name: 'attention_grad_q',
  shader: shaderQ,
  entryPoint: 'main',
  bindings: Q_BINDINGS,
  paramsBytes: 48,
  check(operands, p) {
    checkOperands('attention_grad_q', Q_BINDINGS, operands);
    checkParams('attention_grad_q', p);
    checkShapes('attention_grad_q', Q_BINDINGS, operands, p);
  },
  params(p, o) {
    return packParams(48, [...o.slice(0, 7).map((u32) => ({ u32 })), { u32: p.count }, { u32: p.heads }, { u32: p.kvHeads }, { u32: p.headDim }, { f32: attentionScale(p.headDim) }]);
  },
  constants() {
    return { WG: LINEAR_WORKGROUP };
  },
  workgroups(p, limits) {
    return linearDispatch('attention_grad_q', (p.count * p.heads * p.headDim) / LANES, LINEAR_WORKGROUP, limits);
  },
  host(p, [q, k, v, out, dout, dq, stats]) {
    const { count, heads, kvHeads, headDim } = p;
    const scale = attentionScale(headDim);
    const s = new Float64Array(count);
    const acc = new Float64Array(headDim);
    for (let t = 0; t < count; t++) {
      for (let h = 0; h < heads; h++) {
        const g = Math.floor(h / (heads / kvHeads));
        const lse = scores(q, k, p, t, h, s);
        const oa = t * heads * headDim + h * headDim;
        let delta = 0;
        for (let d = 0; d < headDim; d++) delta += dout[oa + d]! * out[oa + d]!;
        acc.fill(0);
        for (let j = 0; j <= t; j++) {
          const kv = j * kvHeads * headDim + g * headDim;
          let dp = 0;
          for (let d = 0; d < headDim; d++) dp += dout[oa + d]! * v[kv + d]!;
          const ds = Math.exp(s[j]! - lse) * (dp - delta);
          for (let d = 0; d < headDim; d++) acc[d]! += ds * k[kv + d]!;
        }
        for (let d = 0; d < headDim; d++) dq[oa + d] = acc[d]! * scale;
        stats[(t * heads + h) * 2] = lse;
        stats[(t * heads + h) * 2 + 1] = delta;
      }
    }
  },
};

export const attentionGradKV: OpDef<AttentionGradParams, readonly [q: Float32Array, k: Float32Array, v: Float32Array, dout: Float32Array, stats: Float32Array, dk: Float32Array, dv: Float32Array]> = {
  name: 'attention_grad_kv',
  shader: shaderKv,
  entryPoint: 'main',
  bindings: KV_BINDINGS,
  paramsBytes: 48,
  check(operands, p) {
    checkOperands('attention_grad_kv', KV_BINDINGS, operands);
    checkParams('attention_grad_kv', p);
    checkShapes('attention_grad_kv', KV_BINDINGS, operands, p);
  },
  params(p, o) {
    return packParams(48, [...o.slice(0, 7).map((u32) => ({ u32 })), { u32: p.count }, { u32: p.heads }, { u32: p.kvHeads }, { u32: p.headDim }, { f32: attentionScale(p.headDim) }]);
  },
  constants() {
    return { WG: LINEAR_WORKGROUP };
  },
  workgroups(p, limits) {
    return linearDispatch('attention_grad_kv', (p.count * p.kvHeads * p.headDim) / LANES, LINEAR_WORKGROUP, limits);
  },
  host(p, [q, k, v, dout, stats, dk, dv]) {
    const { count, heads, kvHeads, headDim } = p;
    const group = heads / kvHeads;
    const scale = attentionScale(headDim);
    const dkAcc = new Float64Array(headDim);
    const dvAcc = new Float64Array(headDim);
    for (let j = 0; j < count; j++) {
      for (let g = 0; g < kvHeads; g++) {
        const kv = j * kvHeads * headDim + g * headDim;
        dkAcc.fill(0);
        dvAcc.fill(0);
        for (let t = j; t < count; t++) {
          for (let h = g * group; h < (g + 1) * group; h++) {
            const qa = t * heads * headDim + h * headDim;
            let s = 0;
            let dp = 0;
            for (let d = 0; d < headDim; d++) {
              s += q[qa + d]! * k[kv + d]!;
              dp += dout[qa + d]! * v[kv + d]!;
            }
            const pr = Math.exp(s * scale - stats[(t * heads + h) * 2]!);
            const ds = pr * (dp - stats[(t * heads + h) * 2 + 1]!);
            for (let d = 0; d < headDim; d++) {
              dvAcc[d]! += pr * dout[qa + d]!;
              dkAcc[d]! += ds * scale * q[qa + d]!;
            }
          }
        }
        for (let d = 0; d < headDim; d++) {
          dk[kv + d] = dkAcc[d]!;
          dv[kv + d] = dvAcc[d]!;
        }
      }
    }
  },
};

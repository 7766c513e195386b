// fused_rope_kv: biases, RoPE and the KV-cache write of a Q/K/V projection in one pass
// (shaders/fused_rope_kv.wesl), for a projection that left its rows in a qkv buffer [count, qDim +
// 2 kvDim] (Q, K, V columns in that order): q [count, qDim] = rope(Q + bq), k cache rows pos0.. =
// rope(K + bk), v cache rows pos0.. = V + bv. The forward uses it after fused_norm_matmul when a layer's
// Q, K or V matrix is split into row parts (fused_norm_qkv_rope needs each whole); its rotation is the
// same WGSL as that op's epilogue, so the two paths agree bit for bit. The bias op binds the biases as
// one vector [qDim + 2 kvDim] (bq, bk, bv).
// Host twin: the unfused composition (bias_add, rope, kv_write host twins).
import variants from '../../../shaders/fused_rope_kv.wesl?wesl';
import { biasAdd } from './bias-add.js';
import { F32, LINEAR_WORKGROUP, checkOperands, checkShape, checkSize, linearDispatch, packParams, rejectParam, rejectRange } from './common.js';
import { weslVariant } from './fused-variants.js';
import { kvWrite } from './kv-write.js';
import { ROPE_MAX_HEAD_DIM, checkRopeParams, rope, ropeTable } from './rope.js';
import type { RopeParams, RopeStyle } from './rope.js';
import type { OpBinding, OpDef } from './types.js';

export interface FusedRopeKvParams {
  readonly count: number;
  readonly heads: number;
  readonly kvHeads: number;
  readonly headDim: number;
  readonly maxSeq: number;
  readonly pos0: number;
  readonly theta: number;
  readonly style?: RopeStyle;
  readonly freqFactors?: ArrayLike<number>;
}

type F = Float32Array;
export type FusedRopeKvArrays = readonly [qkv: F, q: F, kCache: F, vCache: F];
export type FusedRopeKvBiasArrays = readonly [qkv: F, bias: F, q: F, kCache: F, vCache: F];

/** 12 u32 fields, then ROPE_MAX_HEAD_DIM / 2 f32 frequencies (shader struct Params). */
const PARAMS_BYTES = 48 + (ROPE_MAX_HEAD_DIM / 2) * 4;
const FREQ_AT = 48;

function ropeParams(p: FusedRopeKvParams, heads: number): RopeParams {
  return {
    count: p.count,
    heads,
    headDim: p.headDim,
    pos0: p.pos0,
    theta: p.theta,
    ...(p.style === undefined ? {} : { style: p.style }),
    ...(p.freqFactors === undefined ? {} : { freqFactors: p.freqFactors }),
  };
}

function make<A extends FusedRopeKvArrays | FusedRopeKvBiasArrays>(bias: boolean): OpDef<FusedRopeKvParams, A> {
  const name = bias ? 'fused_rope_kv_bias' : 'fused_rope_kv';
  const bindings: readonly OpBinding[] = [
    { name: 'qkv', access: 'read', dtypes: F32 },
    ...(bias ? [{ name: 'bias', access: 'read', dtypes: F32 } as const] : []),
    { name: 'q', access: 'read_write', dtypes: F32 },
    { name: 'kCache', access: 'read_write', dtypes: F32 },
    { name: 'vCache', access: 'read_write', dtypes: F32 },
  ];
  const b = bias ? 1 : 0;
  const dims = (p: FusedRopeKvParams) => ({ qDim: p.heads * p.headDim, kvDim: p.kvHeads * p.headDim });
  return {
    name,
    shader: weslVariant(variants, bias ? ['bias'] : [], name),
    entryPoint: 'main',
    bindings,
    paramsBytes: PARAMS_BYTES,
    check(operands, p) {
      checkOperands(name, bindings, operands);
      checkSize(name, 'count', p.count);
      checkSize(name, 'heads', p.heads);
      checkSize(name, 'kvHeads', p.kvHeads);
      checkSize(name, 'headDim', p.headDim);
      checkSize(name, 'maxSeq', p.maxSeq);
      if (p.heads % p.kvHeads !== 0) rejectParam(name, 'kvHeads', 'kvHeads must divide heads');
      // rope's param checks for Q's rows (K's differ only in heads, which divide them); no operand built.
      checkRopeParams(p);
      if (p.pos0 + p.count > p.maxSeq) rejectRange(name, `rows ${p.pos0}..${p.pos0 + p.count - 1} do not fit a cache of ${p.maxSeq}`, { pos0: p.pos0, count: p.count, maxSeq: p.maxSeq });
      const { qDim, kvDim } = dims(p);
      checkShape(name, 'qkv', operands[0]!, [p.count, qDim + 2 * kvDim]);
      if (bias) checkShape(name, 'bias', operands[1]!, [qDim + 2 * kvDim]);
      checkShape(name, 'q', operands[1 + b]!, [p.count, qDim]);
      checkShape(name, 'kCache', operands[2 + b]!, [p.maxSeq, kvDim]);
      checkShape(name, 'vCache', operands[3 + b]!, [p.maxSeq, kvDim]);
    },
    params(p, offsets) {
      const { qDim, kvDim } = dims(p);
      const bytes = packParams(PARAMS_BYTES, [
        { u32: offsets[0]! },
        { u32: bias ? offsets[1]! : 0 },
        { u32: offsets[1 + b]! },
        { u32: offsets[2 + b]! },
        { u32: offsets[3 + b]! },
        { u32: p.count },
        { u32: p.pos0 },
        { u32: qDim },
        { u32: kvDim },
        { u32: p.headDim },
      ]);
      const freq = ropeTable(ropeParams(p, p.heads));
      new Float32Array(bytes, FREQ_AT, freq.length).set(freq);
      return bytes;
    },
    constants(p) {
      return { WG: LINEAR_WORKGROUP, NEOX: p.style === 'neox' ? 1 : 0 };
    },
    workgroups(p, limits) {
      const { qDim, kvDim } = dims(p);
      return linearDispatch(name, (p.count * (qDim + 2 * kvDim)) / 2, LINEAR_WORKGROUP, limits);
    },
    host(p, arrays) {
      const qkv = arrays[0];
      const biases = bias ? arrays[1]! : undefined;
      const [q, kCache, vCache] = arrays.slice(1 + b) as [F, F, F];
      const { count } = p;
      const { qDim, kvDim } = dims(p);
      const width = qDim + 2 * kvDim;
      const columns = (from: number, n: number): F => {
        const out = new Float32Array(count * n);
        for (let t = 0; t < count; t++) out.set(qkv.subarray(t * width + from, t * width + from + n), t * n);
        return out;
      };
      const qy = columns(0, qDim);
      const ky = columns(qDim, kvDim);
      const vy = columns(qDim + kvDim, kvDim);
      if (biases !== undefined) {
        biasAdd.host({ rows: count, cols: qDim }, [qy, biases.subarray(0, qDim)]);
        biasAdd.host({ rows: count, cols: kvDim }, [ky, biases.subarray(qDim, qDim + kvDim)]);
        biasAdd.host({ rows: count, cols: kvDim }, [vy, biases.subarray(qDim + kvDim, width)]);
      }
      rope.host(ropeParams(p, p.heads), [qy]);
      rope.host(ropeParams(p, p.kvHeads), [ky]);
      q.set(qy);
      const cache = { count, width: kvDim, maxSeq: p.maxSeq, pos0: p.pos0 };
      kvWrite.host(cache, [ky, kCache]);
      kvWrite.host(cache, [vy, vCache]);
    },
  };
}

export const fusedRopeKv: OpDef<FusedRopeKvParams, FusedRopeKvArrays> = make<FusedRopeKvArrays>(false);
export const fusedRopeKvBias: OpDef<FusedRopeKvParams, FusedRopeKvBiasArrays> = make<FusedRopeKvBiasArrays>(true);

/**
 * fused_rope_kv for the unfused list of a one-row step on the host: the same op (shader, checks, host
 * twin) under its own identity, which the host executor runs with rope's WebAssembly kernel plus
 * kv_write's row copies (src/submit/wasm/ops.ts), the same bits as the rope and kv_write dispatches it
 * replaces. The library's fusedRopeKv keeps its host twin on the host, so the fused list's split path
 * stays bit for bit its one-pass op (whose twin rotates as rope's twin does).
 */
export const hostRopeKv: OpDef<FusedRopeKvParams, FusedRopeKvArrays> = { ...fusedRopeKv };

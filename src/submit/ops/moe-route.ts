// moe_route: the router of a routed-experts (Mixtral-style) feed-forward block, on the device: for each
// token t of logits f32 [tokens, experts] (the router projection ffn_gate_inp · x), softmax over all
// experts, the `used` experts of largest probability in decreasing order (ties: lower expert index
// first), and their weights, renormalised to sum 1 when `renormalize` (Mixtral, llama-architecture MoE
// GGUFs) or the plain softmax probabilities otherwise. Writes ids u32 [tokens, used] and weights f32
// [tokens, used] (shaders/moe_route.wgsl), which qmatmul_expert and moe_combine read in the same
// submission: the routing never visits the host.
//
// Semantics against llama.cpp's llm_build_moe_ffn (softmax gating, ggml_top_k = the first `used` of a
// descending argsort of the probabilities, get_rows of the probabilities, division by their sum): the
// same experts and weights, selected on the logits (softmax is strictly monotonic, so the order is the
// same except where two probabilities round to one f32 value from different logits; this op keeps the
// logits' order there). Exactly equal logits are ordered by expert index, lower first: the order of a
// stable sort; ggml's CPU argsort puts the lowest index of the largest value first too, but its later
// ties may come out in either order, so only exact-tie routing can differ from it.
import shader from '../../../shaders/moe_route.wgsl?raw';
import { F32, U32, checkOperands, checkShape, checkSize, linearWorkgroups, packParams, rejectParam } from './common.js';
import { unitWorkgroup } from './qunit.js';
import type { OpBinding, OpDef } from './types.js';

export interface MoeRouteParams {
  readonly tokens: number;
  /** Experts (router logits per token). */
  readonly experts: number;
  /** Experts picked per token (expert_used_count), 1..experts. */
  readonly used: number;
  /** Weights renormalised over the picked experts (true) or the softmax over all experts (false). */
  readonly renormalize: boolean;
}

export type MoeRouteArrays = readonly [logits: Float32Array, ids: Uint32Array, weights: Float32Array];

const BINDINGS: readonly OpBinding[] = [
  { name: 'logits', access: 'read', dtypes: F32 },
  { name: 'ids', access: 'read_write', dtypes: U32 },
  { name: 'weights', access: 'read_write', dtypes: F32 },
];

/** Bytes of the uniform params struct (8 u32 fields). */
const PARAMS_BYTES = 32;

/**
 * The `used` experts of row `row` (a view of `experts` logits) in pick order: larger logit first, lower
 * index first among equal logits (the host twin's selection).
 */
export function routeOrder(row: ArrayLike<number>, used: number): number[] {
  const order = Array.from({ length: row.length }, (_, e) => e);
  order.sort((a, b) => (row[b]! - row[a]!) || a - b);
  return order.slice(0, used);
}

export const moeRoute: OpDef<MoeRouteParams, MoeRouteArrays> = {
  name: 'moe_route',
  shader,
  entryPoint: 'main',
  bindings: BINDINGS,
  paramsBytes: PARAMS_BYTES,
  check(operands, p) {
    checkOperands('moe_route', BINDINGS, operands);
    checkSize('moe_route', 'tokens', p.tokens);
    checkSize('moe_route', 'experts', p.experts);
    checkSize('moe_route', 'used', p.used);
    if (p.used > p.experts) rejectParam('moe_route', 'used', `used (${p.used}) must not exceed experts (${p.experts})`);
    if (typeof p.renormalize !== 'boolean') rejectParam('moe_route', 'renormalize', 'renormalize must be a boolean');
    checkShape('moe_route', 'logits', operands[0]!, [p.tokens, p.experts]);
    checkShape('moe_route', 'ids', operands[1]!, [p.tokens, p.used]);
    checkShape('moe_route', 'weights', operands[2]!, [p.tokens, p.used]);
  },
  params(p, offsets) {
    return packParams(PARAMS_BYTES, [
      { u32: offsets[0]! },
      { u32: offsets[1]! },
      { u32: offsets[2]! },
      { u32: p.tokens },
      { u32: p.experts },
      { u32: p.used },
      { u32: p.renormalize ? 1 : 0 },
    ]);
  },
  constants(p) {
    return { WG: unitWorkgroup(p.experts) };
  },
  workgroups(p, limits) {
    return linearWorkgroups('moe_route', p.tokens, limits);
  },
  host(p, [logits, ids, weights]) {
    const { tokens, experts, used } = p;
    for (let t = 0; t < tokens; t++) {
      const row = logits.subarray(t * experts, (t + 1) * experts);
      let mx = -Infinity;
      for (const v of row) mx = Math.max(mx, v);
      let total = 0;
      for (const v of row) total += Math.exp(v - mx);
      const picks = routeOrder(row, used);
      let picked = 0;
      for (const e of picks) picked += Math.exp(row[e]! - mx);
      const norm = p.renormalize ? picked : total;
      picks.forEach((e, j) => {
        ids[t * used + j] = e;
        weights[t * used + j] = Math.exp(row[e]! - mx) / norm;
      });
    }
  },
};

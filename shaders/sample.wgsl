// sample: one token id per row of logits x [rows, cols] (f32) -> out u32 [rows], drawn with temperature,
// top-k and top-p (nucleus) from a counter-based random number, so that step t's draw depends only on
// (seed, step, row) and src/submit/ops/sample.ts reproduces every id bit for bit.
//
// Greedy (flag GREEDY, temperature 0): the first index of the row maximum, as argmax.wgsl.
//
// Otherwise every token gets an integer weight that only integer arithmetic produces after one f32
// subtraction and one f32 multiplication (both correctly rounded in WGSL), so any adapter and the host
// twin agree exactly:
//   t = min(u32((max - x) * scale), T_MAX), and t = T_MAX when max - x >= limit;
//   scale = 2^24 * log2(e) / temperature and limit = T_MAX / scale come from the host (f32), so t is
//   -log2 of the token's probability relative to the maximum, in 1/2^24 octaves; T_MAX (31 octaves) marks
//   a token whose weight is zero.
//   w(t) = 2^31 * 2^(-t / 2^24), computed as (2^31 * 2^-f) >> n for n = whole octaves and f the fraction;
//   2^-f = e^(-f ln 2) by an 8-term Taylor series in Q31 fixed point (truncation < 1e-7 relative).
// Sums of weights are 64-bit (two u32 words, carries by hand): a row holds at most 2^22 tokens of weight
// <= 2^31.
//
// The kept set is {i : t_i <= bound}, a threshold on t found without sorting, by radix selection: the
// smallest theta with F(theta) > goal, where F(theta) sums, over tokens with t <= theta, either 1 (top-k:
// goal = k - 1) or the weight (top-p: goal = floor(K * q / 2^32), K the mass kept so far, q = the top_p
// param = floor(topP * 2^32)). Why not a bisection over theta: that reads the row once per bit (29 times);
// the radix select reads it four times. Four passes decide theta's bits 21..28, 13..20, 5..12 and 0..4:
// each builds a 256-bin histogram of the next digit over the tokens whose decided bits match, in workgroup
// atomics (64-bit mass as a low word plus a carry count: integer sums, so the atomics' order does not
// matter), scans the bins (two-level scan, see scan()), and the one bin where the running sum first
// passes the goal fixes the digit. Whole tie classes of t are kept (the k-th token's ties all stay). Top-k
// runs first; top-p then cuts the top-k set. The first pass spreads over eighths of an octave, so the
// likely tokens do not all land in one bin.
//
// The draw: r = word 0 of Philox4x32-10 (Salmon et al., SC'11) with key (seed_lo, seed_hi) and counter
// (step, row, 0, 0); u = floor(M * r / 2^32) in [0, M) where M is the kept mass. Tokens are walked in the
// order of their owning invocation (invocation j owns j, j + 256, j + 512, ..., so loads are coalesced):
// each invocation sums its kept mass, a scan gives each its start, and the invocation whose range holds u
// walks its tokens to the one where the running sum passes u.
//
// One workgroup of 256 invocations per row (one histogram bin each); rows fold into y past
// maxComputeWorkgroupsPerDimension. The row is re-read on each pass (from cache on a GPU) instead of being
// staged, so the kernel needs no scratch buffer. Logits must be finite.
struct Params {
  x_off: u32,
  out_off: u32,
  rows: u32,
  cols: u32,
  flags: u32,
  scale: f32,
  limit: f32,
  top_p: u32,
  top_k: u32,
  seed_lo: u32,
  seed_hi: u32,
  step: u32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@group(0) @binding(2) var<uniform> p: Params;

/** Invocations per workgroup = histogram bins (one each); the host twin's walk order uses the same. */
const WG: u32 = 256u;
const FLAG_GREEDY: u32 = 1u;
const FLAG_TOP_P: u32 = 2u;
const FLAG_TOP_K: u32 = 4u;
/** t counts 1/2^24 octaves. */
const FRAC_BITS: u32 = 24u;
const FRAC_MASK: u32 = 0xffffffu;
/** 31 octaves: t == T_MAX marks a zero weight (below 2^-31 of the maximum's). */
const T_MAX: u32 = 0x1f000000u;
/** 1.0 in Q31. */
const ONE: u32 = 0x80000000u;
/** round(ln 2 * 2^32). */
const LN2_Q32: u32 = 0xb17217f8u;
const TAYLOR_TERMS: u32 = 8u;
/** Philox4x32 multipliers and Weyl key increments (Random123). */
const PHILOX_M0: u32 = 0xd2511f53u;
const PHILOX_M1: u32 = 0xcd9e8d57u;
const PHILOX_W0: u32 = 0x9e3779b9u;
const PHILOX_W1: u32 = 0xbb67ae85u;
const PHILOX_ROUNDS: u32 = 10u;
/** Selection modes: count tokens (top-k) or sum their weights (top-p). */
const BY_COUNT: u32 = 0u;
const BY_MASS: u32 = 1u;

var<workgroup> red_v: array<f32, WG>;
var<workgroup> red_i: array<u32, WG>;
var<workgroup> hist_lo: array<atomic<u32>, WG>;
var<workgroup> hist_hi: array<atomic<u32>, WG>;
var<workgroup> scan_lo: array<u32, WG>;
var<workgroup> scan_hi: array<u32, WG>;
/** Scans and reductions work in RUNS runs of RUN entries (RUNS * RUN = WG). */
const RUN: u32 = 16u;
const RUNS: u32 = 16u;
var<workgroup> run_total: array<vec2u, RUNS>;
/** The kept set is t <= bound. */
var<workgroup> bound: u32;
/** Radix selection state: bits of theta decided so far (prefix under mask) and the sum below them. */
var<workgroup> sel_prefix: u32;
var<workgroup> sel_mask: u32;
var<workgroup> sel_below: vec2u;
var<workgroup> sel_found: u32;

/** a * b as a 64-bit (lo, hi) pair from 16-bit halves (WGSL has no 64-bit integers). */
fn mul_wide(a: u32, b: u32) -> vec2u {
  let a0 = a & 0xffffu;
  let a1 = a >> 16u;
  let b0 = b & 0xffffu;
  let b1 = b >> 16u;
  let p00 = a0 * b0;
  let p01 = a0 * b1;
  let p10 = a1 * b0;
  let p11 = a1 * b1;
  let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
  let hi = p11 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u);
  return vec2u((mid << 16u) | (p00 & 0xffffu), hi);
}

fn add64(a: vec2u, b: vec2u) -> vec2u {
  let lo = a.x + b.x;
  return vec2u(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}

fn gt64(a: vec2u, b: vec2u) -> bool {
  return a.y > b.y || (a.y == b.y && a.x > b.x);
}

/** floor(a * f / 2^32) for a 64-bit a and a 32-bit fraction f. */
fn scale64(a: vec2u, f: u32) -> vec2u {
  return add64(mul_wide(a.y, f), vec2u(mul_wide(a.x, f).y, 0u));
}

/** The weight of a token at t < T_MAX: 2^31 * 2^(-t / 2^24), >= 1. */
fn weight(t: u32) -> u32 {
  let n = t >> FRAC_BITS;
  // z = (t's fraction of an octave) * ln 2 in Q31: (f * 2^8 [Q32] * ln2 [Q32]) >> 33.
  let z = mul_wide((t & FRAC_MASK) << 8u, LN2_Q32).y >> 1u;
  // e^-z = 1 - z (1 - z/2 (1 - z/3 (... (1 - z/8)))), every factor in [0, 1].
  var acc = ONE;
  for (var k = TAYLOR_TERMS; k >= 1u; k--) {
    let m = mul_wide(z / k, acc);
    acc = ONE - ((m.x >> 31u) | (m.y << 1u));
  }
  return acc >> n;
}

/** t of logit v against the row maximum mx (see the header). */
fn tq(v: f32, mx: f32) -> u32 {
  let d = mx - v;
  if (d >= p.limit) { return T_MAX; }
  return min(u32(d * p.scale), T_MAX);
}

/** Word 0 of Philox4x32-10 of counter (c0, c1, 0, 0) under key (k0, k1). */
fn philox(c0: u32, c1: u32, k0: u32, k1: u32) -> u32 {
  var c = vec4u(c0, c1, 0u, 0u);
  var k = vec2u(k0, k1);
  for (var round = 0u; round < PHILOX_ROUNDS; round++) {
    if (round > 0u) { k = k + vec2u(PHILOX_W0, PHILOX_W1); }
    let a = mul_wide(PHILOX_M0, c.x);
    let b = mul_wide(PHILOX_M1, c.z);
    c = vec4u(b.y ^ c.y ^ k.x, b.x, a.y ^ c.w ^ k.y, a.x);
  }
  return c.x;
}

/**
 * Inclusive scan of (scan_lo, scan_hi) over the workgroup in two levels: 16 invocations each scan a run of
 * 16 entries, one scans the run totals, then every entry adds the totals before its run (four barriers
 * instead of a log-step scan's sixteen). Every invocation must call it after writing its entry.
 */
fn scan(lid: u32) {
  workgroupBarrier();
  if (lid < RUNS) {
    var s = vec2u(0u, 0u);
    for (var i = 0u; i < RUN; i++) {
      let j = lid * RUN + i;
      s = add64(s, vec2u(scan_lo[j], scan_hi[j]));
      scan_lo[j] = s.x;
      scan_hi[j] = s.y;
    }
    run_total[lid] = s;
  }
  workgroupBarrier();
  if (lid == 0u) {
    var s = vec2u(0u, 0u);
    for (var r = 0u; r < RUNS; r++) {
      let v = run_total[r];
      run_total[r] = s;
      s = add64(s, v);
    }
  }
  workgroupBarrier();
  let s = add64(vec2u(scan_lo[lid], scan_hi[lid]), run_total[lid / RUN]);
  scan_lo[lid] = s.x;
  scan_hi[lid] = s.y;
  workgroupBarrier();
}

/**
 * One radix pass: histogram of digit (t >> shift) & digit_mask over the kept tokens whose decided bits
 * match, scan, and the bin where the running sum first passes `goal` fixes the digit. With top_p
 * nonzero the goal is set from the pass total (the kept mass) first. Returns the goal used.
 */
fn radix_pass(lid: u32, xb: u32, mx: f32, shift: u32, digit_mask: u32, mode: u32, goal_in: vec2u, top_p: u32) -> vec2u {
  atomicStore(&hist_lo[lid], 0u);
  atomicStore(&hist_hi[lid], 0u);
  workgroupBarrier();
  let keep = bound;
  let prefix = sel_prefix;
  let mask = sel_mask;
  for (var i = lid; i < p.cols; i += WG) {
    let t = tq(x[xb + i], mx);
    if (t < T_MAX && t <= keep && (t & mask) == prefix) {
      let d = (t >> shift) & digit_mask;
      let v = select(1u, weight(t), mode == BY_MASS);
      let old = atomicAdd(&hist_lo[d], v);
      if (old + v < old) { atomicAdd(&hist_hi[d], 1u); }
    }
  }
  workgroupBarrier();
  scan_lo[lid] = atomicLoad(&hist_lo[lid]);
  scan_hi[lid] = atomicLoad(&hist_hi[lid]);
  scan(lid);
  let below = sel_below;
  var goal = goal_in;
  if (top_p != 0u) { goal = scale64(vec2u(scan_lo[WG - 1u], scan_hi[WG - 1u]), top_p); }
  let incl = add64(below, vec2u(scan_lo[lid], scan_hi[lid]));
  var excl = below;
  if (lid > 0u) { excl = add64(below, vec2u(scan_lo[lid - 1u], scan_hi[lid - 1u])); }
  workgroupBarrier();
  if (gt64(incl, goal) && !gt64(excl, goal)) {
    sel_prefix = prefix | (lid << shift);
    sel_mask = mask | (digit_mask << shift);
    sel_below = excl;
    sel_found = 1u;
  }
  workgroupBarrier();
  return goal;
}

/**
 * Lowers `bound` to the smallest theta <= bound with F(theta) > goal (see the header); with top_p
 * nonzero the goal is floor(F(bound) * top_p / 2^32). Leaves `bound` unchanged when F(bound) <= goal
 * (top-k with k at least the count of weighted tokens).
 */
fn select_bound(lid: u32, xb: u32, mx: f32, mode: u32, goal_in: vec2u, top_p: u32) {
  if (lid == 0u) {
    sel_prefix = 0u;
    sel_mask = 0u;
    sel_below = vec2u(0u, 0u);
    sel_found = 0u;
  }
  workgroupBarrier();
  let goal = radix_pass(lid, xb, mx, 21u, 0xffu, mode, goal_in, top_p);
  if (workgroupUniformLoad(&sel_found) == 0u) { return; }
  _ = radix_pass(lid, xb, mx, 13u, 0xffu, mode, goal, 0u);
  _ = radix_pass(lid, xb, mx, 5u, 0xffu, mode, goal, 0u);
  _ = radix_pass(lid, xb, mx, 0u, 0x1fu, mode, goal, 0u);
  if (lid == 0u) { bound = sel_prefix; }
  workgroupBarrier();
}

/** Keeps in red[a] the larger of entries a and b, the smaller index on equal values (the first maximum). */
fn fold_max(a: u32, b: u32) {
  let v = red_v[b];
  let j = red_i[b];
  if (v > red_v[a] || (v == red_v[a] && j < red_i[a])) {
    red_v[a] = v;
    red_i[a] = j;
  }
}

@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) groups: vec3u, @builtin(local_invocation_index) lid: u32) {
  let row = wid.x + wid.y * groups.x;
  if (row >= p.rows) { return; }
  let xb = p.x_off + row * p.cols;

  // Row maximum and its first index: each invocation over its strided tokens, then a tree.
  var best_v = x[xb];
  var best_i = 0u;
  for (var i = lid; i < p.cols; i += WG) {
    let v = x[xb + i];
    if (v > best_v) {
      best_v = v;
      best_i = i;
    }
  }
  red_v[lid] = best_v;
  red_i[lid] = best_i;
  workgroupBarrier();
  // Two levels as in scan(): runs of 16 fold into their first entry, then entry 0 folds the runs.
  if (lid < RUNS) {
    for (var i = 1u; i < RUN; i++) { fold_max(lid * RUN, lid * RUN + i); }
  }
  workgroupBarrier();
  if (lid == 0u) {
    for (var r = 1u; r < RUNS; r++) { fold_max(0u, r * RUN); }
  }
  workgroupBarrier();
  if ((p.flags & FLAG_GREEDY) != 0u) {
    if (lid == 0u) { out[p.out_off + row] = red_i[0]; }
    return;
  }
  let mx = red_v[0];
  if (lid == 0u) { bound = T_MAX - 1u; }
  workgroupBarrier();

  if ((p.flags & FLAG_TOP_K) != 0u) { select_bound(lid, xb, mx, BY_COUNT, vec2u(p.top_k - 1u, 0u), 0u); }
  if ((p.flags & FLAG_TOP_P) != 0u) { select_bound(lid, xb, mx, BY_MASS, vec2u(0u, 0u), p.top_p); }

  // The draw: each invocation's kept mass, their scan, u in [0, M), and the walk of the owner of u.
  let keep = workgroupUniformLoad(&bound);
  var mine = vec2u(0u, 0u);
  for (var i = lid; i < p.cols; i += WG) {
    let t = tq(x[xb + i], mx);
    if (t <= keep) { mine = add64(mine, vec2u(weight(t), 0u)); }
  }
  scan_lo[lid] = mine.x;
  scan_hi[lid] = mine.y;
  scan(lid);
  let total = vec2u(scan_lo[WG - 1u], scan_hi[WG - 1u]);
  let u = scale64(total, philox(p.step, row, p.seed_lo, p.seed_hi));
  let end = vec2u(scan_lo[lid], scan_hi[lid]);
  var acc = vec2u(0u, 0u);
  if (lid > 0u) { acc = vec2u(scan_lo[lid - 1u], scan_hi[lid - 1u]); }
  if (gt64(end, u) && !gt64(acc, u)) {
    for (var i = lid; i < p.cols; i += WG) {
      let t = tq(x[xb + i], mx);
      if (t <= keep) {
        acc = add64(acc, vec2u(weight(t), 0u));
        if (gt64(acc, u)) {
          out[p.out_off + row] = i;
          break;
        }
      }
    }
  }
}

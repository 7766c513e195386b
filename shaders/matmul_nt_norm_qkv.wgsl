// matmul_nt_norm_qkv: a layer's attention input in one pass: RMSNorm of each row of x folded into the
// Q, K and V projections, written side by side into one qkv row (Q's columns, then K's, then V's):
//   xn[m, c]  = norm[c] * (inv_m * x[m, c]),  inv_m = 1 / sqrt(mean_c(x[m, c]^2) + eps)   (rmsnorm's expression)
//   qkv[m, :] = [xn[m] · wq^T, xn[m] · wk^T, xn[m] · wv^T]
// for row-major f32 x [M, K], wq [Q, K], wk and wv [KV, K] (llama2.c's layout), qkv [M, Q + 2 KV]; Q and
// KV are multiples of 8, so each invocation's 8 adjacent columns lie in one matrix (the branch on which is
// uniform per invocation). One invocation per (row, 8 columns), matmul_nt's M = 1 tile: each recomputes
// its row's sum of squares (K reads of a row every invocation shares, against 8 K weight reads of its
// own) instead of a separate rmsnorm dispatch writing xn and the next reading it back. The k loop and
// the vec4 accumulators are matmul_nt's. Each binding covers a tensor's whole claim; `*_off` is the
// element index of element 0 in it.
struct Params {
  x_off: u32,
  norm_off: u32,
  wq_off: u32,
  wk_off: u32,
  wv_off: u32,
  out_off: u32,
  m: u32,
  q_rows: u32,
  kv_rows: u32,
  k: u32,
  eps: f32,
  _pad0: u32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> norm: array<f32>;
@group(0) @binding(2) var<storage, read> wq: array<f32>;
@group(0) @binding(3) var<storage, read> wk: array<f32>;
@group(0) @binding(4) var<storage, read> wv: array<f32>;
@group(0) @binding(5) var<storage, read_write> out: array<f32>;
@group(0) @binding(6) var<uniform> p: Params;

override WG: u32 = 32;

// Element i of matrix seg (0 = Q, 1 = K, 2 = V), i counted from the matrix's element 0.
fn wload(seg: u32, i: u32) -> f32 {
  switch (seg) {
    case 0u: { return wq[p.wq_off + i]; }
    case 1u: { return wk[p.wk_off + i]; }
    default: { return wv[p.wv_off + i]; }
  }
}

@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let width = p.q_rows + 2u * p.kv_rows;
  let n0 = gid.x * 8u;
  let m = gid.y;
  if (n0 >= width || m >= p.m) { return; }
  let xr = p.x_off + m * p.k;
  var ss = 0.0;
  for (var c = 0u; c < p.k; c++) {
    let v = x[xr + c];
    ss += v * v;
  }
  let inv = 1.0 / sqrt(ss / f32(p.k) + p.eps);
  // Which matrix the 8 columns belong to, and their first row in it.
  var seg = 0u;
  var row = n0;
  if (n0 >= p.q_rows + p.kv_rows) {
    seg = 2u;
    row = n0 - p.q_rows - p.kv_rows;
  } else if (n0 >= p.q_rows) {
    seg = 1u;
    row = n0 - p.q_rows;
  }
  let c0 = row * p.k;
  let c1 = c0 + p.k;
  let c2 = c1 + p.k;
  let c3 = c2 + p.k;
  let c4 = c3 + p.k;
  let c5 = c4 + p.k;
  let c6 = c5 + p.k;
  let c7 = c6 + p.k;
  var lo_acc = vec4f(0.0);
  var hi_acc = vec4f(0.0);
  for (var k = 0u; k < p.k; k++) {
    let xn = norm[p.norm_off + k] * (inv * x[xr + k]);
    let lo = vec4f(wload(seg, c0 + k), wload(seg, c1 + k), wload(seg, c2 + k), wload(seg, c3 + k));
    let hi = vec4f(wload(seg, c4 + k), wload(seg, c5 + k), wload(seg, c6 + k), wload(seg, c7 + k));
    lo_acc += xn * lo;
    hi_acc += xn * hi;
  }
  let o = p.out_off + m * width + n0;
  out[o] = lo_acc.x; out[o + 1u] = lo_acc.y; out[o + 2u] = lo_acc.z; out[o + 3u] = lo_acc.w;
  out[o + 4u] = hi_acc.x; out[o + 5u] = hi_acc.y; out[o + 6u] = hi_acc.z; out[o + 7u] = hi_acc.w;
}

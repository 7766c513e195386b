// matmul_nt_norm: RMSNorm of each row of x folded into one matmul_nt (the final norm and the classifier
// of a decode step):
//   a[m, c]   = norm[c] * (inv_m * x[m, c]),  inv_m = 1 / sqrt(mean_c(x[m, c]^2) + eps)   (rmsnorm's expression)
//   out[m, n] = a[m] · w[n]
// for row-major f32 x [M, K], norm [K], w [N, K] (llama2.c's layout) and out [M, N]: what rmsnorm then
// matmul_nt compute, without writing the normed rows and reading them back, in one dispatch instead of
// two. One invocation per (row, 8 adjacent columns), matmul_nt's M = 1 tile; each recomputes its row's
// sum of squares (K reads of a row every invocation shares, against 8 K weight reads of its own). The k
// loop and the vec4 accumulators are matmul_nt's. Edge columns are clamped for loading and never stored.
// Each binding covers a tensor's whole claim; `*_off` is the element index of element 0 in it.
struct Params {
  x_off: u32,
  norm_off: u32,
  w_off: u32,
  out_off: u32,
  m: u32,
  n: u32,
  k: u32,
  eps: f32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> norm: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<uniform> p: Params;

override WG: u32 = 32;

// Stores columns col..col+3 of row `row`, skipping what lies past the edge.
fn store4(row: u32, col: u32, v: vec4f) {
  let o = p.out_off + row * p.n + col;
  for (var j = 0u; j < 4u; j++) {
    if (col + j < p.n) { out[o + j] = v[j]; }
  }
}

@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let n0 = gid.x * 8u;
  let m = gid.y;
  if (n0 >= p.n || m >= p.m) { return; }
  let last_n = p.n - 1u;
  let r = p.x_off + m * p.k;
  var ss = 0.0;
  for (var c = 0u; c < p.k; c++) {
    let v = x[r + c];
    ss += v * v;
  }
  let inv = 1.0 / sqrt(ss / f32(p.k) + p.eps);
  // Row starts of the 8 columns (clamped) in w.
  var c: array<u32, 8>;
  for (var j = 0u; j < 8u; j++) { c[j] = p.w_off + min(n0 + j, last_n) * p.k; }
  var lo = vec4f(0.0);
  var hi = vec4f(0.0);
  for (var k = 0u; k < p.k; k++) {
    let xn = norm[p.norm_off + k] * (inv * x[r + k]);
    lo += xn * vec4f(w[c[0] + k], w[c[1] + k], w[c[2] + k], w[c[3] + k]);
    hi += xn * vec4f(w[c[4] + k], w[c[5] + k], w[c[6] + k], w[c[7] + k]);
  }
  store4(m, n0, lo);
  store4(m, n0 + 4u, hi);
}

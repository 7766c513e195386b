// matmul_nt_norm_glu: the SwiGLU half of llama's MLP, its RMSNorm included, in one pass over its weights,
//   a[m, c]   = norm[c] * (inv_m * x[m, c]),  inv_m = 1 / sqrt(mean_c(x[m, c]^2) + eps)   (rmsnorm's expression)
//   out[m, n] = silu(a[m] · gate[n]) * (a[m] · up[n]),  silu(x) = x / (1 + exp(-x)),
// for row-major f32 x [M, K], norm [K], gate and up [N, K] (llama2.c's layout, one row per output
// feature) and out [M, N]: what rmsnorm, matmul_nt into two scratches and silu_mul compute, without
// writing the normed rows and the two [M, N] products and reading them back, in one dispatch instead of
// four. Each binding covers a tensor's whole claim; `*_off` is the element index of element 0 in it.
// One invocation computes 8 adjacent columns of one row (matmul_nt's M = 1 tile, for both weights); it
// recomputes its row's sum of squares (K reads of a row every invocation shares, against 16 K weight
// reads of its own). The k loop and the vec4 accumulators are matmul_nt's, so each product is summed in
// the same order, and the gate is silu_mul's expression. Edge columns are clamped for loading and never
// stored.
struct Params {
  x_off: u32,
  norm_off: u32,
  g_off: u32,
  u_off: u32,
  out_off: u32,
  m: u32,
  n: u32,
  k: u32,
  eps: f32,
  _pad0: u32,
  _pad1: u32,
  _pad2: u32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> norm: array<f32>;
@group(0) @binding(2) var<storage, read> gate: array<f32>;
@group(0) @binding(3) var<storage, read> up: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;
@group(0) @binding(5) var<uniform> p: Params;

override WG: u32 = 32;

fn silu_times(g: vec4f, u: vec4f) -> vec4f {
  return (g / (vec4f(1.0) + exp(-g))) * u;
}

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
  // Row starts of the 8 columns (clamped) in each weight.
  var c: array<u32, 8>;
  for (var j = 0u; j < 8u; j++) { c[j] = min(n0 + j, last_n) * p.k; }
  var gl = vec4f(0.0); var gh = vec4f(0.0);
  var ul = vec4f(0.0); var uh = vec4f(0.0);
  for (var k = 0u; k < p.k; k++) {
    let xn = norm[p.norm_off + k] * (inv * x[r + k]);
    let g = p.g_off + k;
    let u = p.u_off + k;
    gl += xn * vec4f(gate[g + c[0]], gate[g + c[1]], gate[g + c[2]], gate[g + c[3]]);
    gh += xn * vec4f(gate[g + c[4]], gate[g + c[5]], gate[g + c[6]], gate[g + c[7]]);
    ul += xn * vec4f(up[u + c[0]], up[u + c[1]], up[u + c[2]], up[u + c[3]]);
    uh += xn * vec4f(up[u + c[4]], up[u + c[5]], up[u + c[6]], up[u + c[7]]);
  }
  store4(m, n0, silu_times(gl, ul));
  store4(m, n0 + 4u, silu_times(gh, uh));
}

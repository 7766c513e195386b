// matmul_nt: out = a x w^T for row-major f32 matrices ("x times W-transposed", llama2.c's weight layout):
//   a [M, K], w [N, K] (one row per output feature), out [M, N]; out[m, n] = sum_k a[m, k] * w[n, k].
// Decode is M = 1, prefill M = T. Each binding covers a tensor's whole claim; `*_off` is the element
// index of element 0 in it.
//
// Register tiling as in matmul.wgsl: one invocation computes a TM x 8 block of `out` with 2*TM vec4
// accumulators, reading TM values of `a` and 8 of `w` per k step. TM (1, 2, 4 or 8) is an override
// constant: M = 1 uses TM = 1 (one invocation per 8 output columns, a plain K loop; on SwiftShader this
// beat a workgroup reduction over K by 30x and one column per invocation by 1.5x); prefill uses TM = 8.
// The `TM > i` tests fold away at pipeline creation. Edge rows/columns are clamped for loading and
// never stored.
// Epilogue (override ACC, the matmul_nt_add op): false stores the product; true adds it into `out`
// (out[m, n] = out[m, n] + sum, one f32 addition after the f32 sum, as add_inplace would do next), which
// folds a residual connection into the matmul: one dispatch and one pass over `out` fewer.
struct Params {
  a_off: u32,
  w_off: u32,
  out_off: u32,
  m: u32,
  n: u32,
  k: u32,
  _pad0: u32,
  _pad1: u32,
}

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

override WG_X: u32 = 16;
override WG_Y: u32 = 4;
// Rows of `out` per invocation: 1, 2, 4 or 8.
override TM: u32 = 8;
// Add the product into `out` instead of storing it.
override ACC: bool = false;

fn put(i: u32, v: f32) {
  if (ACC) {
    out[i] = out[i] + v;
  } else {
    out[i] = v;
  }
}

// Stores columns col..col+3 of row `row`, skipping what lies past the edge.
fn store4(row: u32, col: u32, v: vec4f) {
  if (row >= p.m) { return; }
  let o = p.out_off + row * p.n + col;
  if (col + 3u < p.n) {
    put(o, v.x); put(o + 1u, v.y); put(o + 2u, v.z); put(o + 3u, v.w);
    return;
  }
  for (var j = 0u; j < 4u; j++) {
    if (col + j < p.n) { put(o + j, v[j]); }
  }
}

@compute @workgroup_size(WG_X, WG_Y, 1)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let n0 = gid.x * 8u;
  let m0 = gid.y * TM;
  if (n0 >= p.n || m0 >= p.m) { return; }
  let last_m = p.m - 1u;
  let last_n = p.n - 1u;
  // Row starts in `a` and in `w` (both clamped).
  let r0 = p.a_off + min(m0, last_m) * p.k;
  let r1 = p.a_off + min(m0 + 1u, last_m) * p.k;
  let r2 = p.a_off + min(m0 + 2u, last_m) * p.k;
  let r3 = p.a_off + min(m0 + 3u, last_m) * p.k;
  let r4 = p.a_off + min(m0 + 4u, last_m) * p.k;
  let r5 = p.a_off + min(m0 + 5u, last_m) * p.k;
  let r6 = p.a_off + min(m0 + 6u, last_m) * p.k;
  let r7 = p.a_off + min(m0 + 7u, last_m) * p.k;
  let c0 = p.w_off + min(n0, last_n) * p.k;
  let c1 = p.w_off + min(n0 + 1u, last_n) * p.k;
  let c2 = p.w_off + min(n0 + 2u, last_n) * p.k;
  let c3 = p.w_off + min(n0 + 3u, last_n) * p.k;
  let c4 = p.w_off + min(n0 + 4u, last_n) * p.k;
  let c5 = p.w_off + min(n0 + 5u, last_n) * p.k;
  let c6 = p.w_off + min(n0 + 6u, last_n) * p.k;
  let c7 = p.w_off + min(n0 + 7u, last_n) * p.k;
  // acc<row>l / acc<row>h: columns n0..n0+3 / n0+4..n0+7 of that row.
  var acc0l = vec4f(0.0); var acc0h = vec4f(0.0);
  var acc1l = vec4f(0.0); var acc1h = vec4f(0.0);
  var acc2l = vec4f(0.0); var acc2h = vec4f(0.0);
  var acc3l = vec4f(0.0); var acc3h = vec4f(0.0);
  var acc4l = vec4f(0.0); var acc4h = vec4f(0.0);
  var acc5l = vec4f(0.0); var acc5h = vec4f(0.0);
  var acc6l = vec4f(0.0); var acc6h = vec4f(0.0);
  var acc7l = vec4f(0.0); var acc7h = vec4f(0.0);
  for (var k = 0u; k < p.k; k++) {
    let lo = vec4f(w[c0 + k], w[c1 + k], w[c2 + k], w[c3 + k]);
    let hi = vec4f(w[c4 + k], w[c5 + k], w[c6 + k], w[c7 + k]);
    { let x = a[r0 + k]; acc0l += x * lo; acc0h += x * hi; }
    if (TM > 1u) { let x = a[r1 + k]; acc1l += x * lo; acc1h += x * hi; }
    if (TM > 2u) {
      let x2 = a[r2 + k]; acc2l += x2 * lo; acc2h += x2 * hi;
      let x3 = a[r3 + k]; acc3l += x3 * lo; acc3h += x3 * hi;
    }
    if (TM > 4u) {
      let x4 = a[r4 + k]; acc4l += x4 * lo; acc4h += x4 * hi;
      let x5 = a[r5 + k]; acc5l += x5 * lo; acc5h += x5 * hi;
      let x6 = a[r6 + k]; acc6l += x6 * lo; acc6h += x6 * hi;
      let x7 = a[r7 + k]; acc7l += x7 * lo; acc7h += x7 * hi;
    }
  }
  store4(m0, n0, acc0l); store4(m0, n0 + 4u, acc0h);
  if (TM > 1u) { store4(m0 + 1u, n0, acc1l); store4(m0 + 1u, n0 + 4u, acc1h); }
  if (TM > 2u) {
    store4(m0 + 2u, n0, acc2l); store4(m0 + 2u, n0 + 4u, acc2h);
    store4(m0 + 3u, n0, acc3l); store4(m0 + 3u, n0 + 4u, acc3h);
  }
  if (TM > 4u) {
    store4(m0 + 4u, n0, acc4l); store4(m0 + 4u, n0 + 4u, acc4h);
    store4(m0 + 5u, n0, acc5l); store4(m0 + 5u, n0 + 4u, acc5h);
    store4(m0 + 6u, n0, acc6l); store4(m0 + 6u, n0 + 4u, acc6h);
    store4(m0 + 7u, n0, acc7l); store4(m0 + 7u, n0 + 4u, acc7h);
  }
}

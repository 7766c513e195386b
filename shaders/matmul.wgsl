// matmul: out[b] = a[b] x w[b] for row-major f32 matrices, b in 0..batch-1.
//   a [batch, M, K], w [batch, K, N], out [batch, M, N]; plain matmul is batch 1.
// Each binding covers a tensor's whole claim; `*_off` is the element index of element 0 in it.
//
// Register tiling: one invocation computes a TM x 8 block of `out` (rows m0.., columns n0..n0+7) with
// 2*TM vec4 accumulators, reading TM values of `a` and 8 of `w` per k step. Measured on SwiftShader
// (TOOLCHAIN.md): ~10x a one-output-per-invocation kernel at 1024^3, while a shared-memory tiled kernel
// was slower than naive (barriers are costly there), and tiles held in loop-indexed arrays were 6x slower
// than this hand-unrolled form. TM (1, 2, 4 or 8) is an override constant: decode shapes (M = 1) use
// TM = 1 so no invocation computes rows that do not exist; the `TM > i` tests fold away at pipeline
// creation. Rows and columns past the edge are clamped for loading and never stored.
struct Params {
  a_off: u32,
  w_off: u32,
  out_off: u32,
  batch: u32,
  m: u32,
  n: u32,
  k: u32,
  _pad: u32,
}

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

override WG_X: u32 = 16;
override WG_Y: u32 = 4;
// Rows of `out` per invocation: 1, 2, 4 or 8.
override TM: u32 = 8;

// Stores columns col..col+3 of row `row` of out[b], skipping what lies past the edge.
fn store4(b: u32, row: u32, col: u32, v: vec4f) {
  if (row >= p.m) { return; }
  let o = p.out_off + (b * p.m + row) * p.n + col;
  if (col + 3u < p.n) {
    out[o] = v.x; out[o + 1u] = v.y; out[o + 2u] = v.z; out[o + 3u] = v.w;
    return;
  }
  for (var j = 0u; j < 4u; j++) {
    if (col + j < p.n) { out[o + j] = v[j]; }
  }
}

@compute @workgroup_size(WG_X, WG_Y, 1)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let n0 = gid.x * 8u;
  let m0 = gid.y * TM;
  let b = gid.z;
  if (n0 >= p.n || m0 >= p.m || b >= p.batch) { return; }
  let last_m = p.m - 1u;
  let last_n = p.n - 1u;
  let a_base = p.a_off + b * p.m * p.k;
  let w_base = p.w_off + b * p.k * p.n;
  // Row starts in `a` (clamped) and column indices in `w` (clamped).
  let r0 = a_base + min(m0, last_m) * p.k;
  let r1 = a_base + min(m0 + 1u, last_m) * p.k;
  let r2 = a_base + min(m0 + 2u, last_m) * p.k;
  let r3 = a_base + min(m0 + 3u, last_m) * p.k;
  let r4 = a_base + min(m0 + 4u, last_m) * p.k;
  let r5 = a_base + min(m0 + 5u, last_m) * p.k;
  let r6 = a_base + min(m0 + 6u, last_m) * p.k;
  let r7 = a_base + min(m0 + 7u, last_m) * p.k;
  let c0 = w_base + min(n0, last_n);
  let c1 = w_base + min(n0 + 1u, last_n);
  let c2 = w_base + min(n0 + 2u, last_n);
  let c3 = w_base + min(n0 + 3u, last_n);
  let c4 = w_base + min(n0 + 4u, last_n);
  let c5 = w_base + min(n0 + 5u, last_n);
  let c6 = w_base + min(n0 + 6u, last_n);
  let c7 = w_base + min(n0 + 7u, last_n);
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
    let wr = k * p.n;
    let lo = vec4f(w[c0 + wr], w[c1 + wr], w[c2 + wr], w[c3 + wr]);
    let hi = vec4f(w[c4 + wr], w[c5 + wr], w[c6 + wr], w[c7 + wr]);
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
  store4(b, m0, n0, acc0l); store4(b, m0, n0 + 4u, acc0h);
  if (TM > 1u) { store4(b, m0 + 1u, n0, acc1l); store4(b, m0 + 1u, n0 + 4u, acc1h); }
  if (TM > 2u) {
    store4(b, m0 + 2u, n0, acc2l); store4(b, m0 + 2u, n0 + 4u, acc2h);
    store4(b, m0 + 3u, n0, acc3l); store4(b, m0 + 3u, n0 + 4u, acc3h);
  }
  if (TM > 4u) {
    store4(b, m0 + 4u, n0, acc4l); store4(b, m0 + 4u, n0 + 4u, acc4h);
    store4(b, m0 + 5u, n0, acc5l); store4(b, m0 + 5u, n0 + 4u, acc5h);
    store4(b, m0 + 6u, n0, acc6l); store4(b, m0 + 6u, n0 + 4u, acc6h);
    store4(b, m0 + 7u, n0, acc7l); store4(b, m0 + 7u, n0 + 4u, acc7h);
  }
}

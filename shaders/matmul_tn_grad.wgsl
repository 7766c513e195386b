// matmul_tn_grad: the weight gradient of out = x · Wᵀ (matmul_nt), dw [N, K] (+)= dyᵀ · x, for
// dy [M, N] (the output gradient) and x [M, K] (the forward input); f32, row-major.
// With `accumulate` = 0 the kernel overwrites dw, otherwise it adds to what dw holds (a weight read by
// several products, such as a classifier tied to the embedding, sums its parts without a zeroing pass).
//
// Register tiling: one invocation owns a 4 x 4 block of dw (rows j0..j0+3, columns c0..c0+3) with four
// vec4 accumulators; per step of the reduction over M it reads 4 values of one dy row and one vec4 of x.
// Neighbouring invocations along x take neighbouring column blocks, so the x reads of a workgroup are one
// contiguous run of a row. Edges are clamped for loading and never stored. Each dw element is summed by
// one invocation in row order: deterministic, no atomics.
struct Params {
  dy_off: u32,
  x_off: u32,
  dw_off: u32,
  m: u32,
  n: u32,
  k: u32,
  accumulate: u32,
  _pad: u32,
}

@group(0) @binding(0) var<storage, read> dy: array<f32>;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> dw: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

override WG_X: u32 = 16;
override WG_Y: u32 = 4;

fn store4(row: u32, col: u32, v: vec4f) {
  if (row >= p.n) { return; }
  let o = p.dw_off + row * p.k + col;
  for (var j = 0u; j < 4u; j++) {
    if (col + j < p.k) {
      if (p.accumulate != 0u) { dw[o + j] += v[j]; } else { dw[o + j] = v[j]; }
    }
  }
}

@compute @workgroup_size(WG_X, WG_Y, 1)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let c0 = gid.x * 4u;
  let j0 = gid.y * 4u;
  if (c0 >= p.k || j0 >= p.n) { return; }
  let last_n = p.n - 1u;
  let last_k = p.k - 1u;
  let j1 = min(j0 + 1u, last_n);
  let j2 = min(j0 + 2u, last_n);
  let j3 = min(j0 + 3u, last_n);
  let k1 = min(c0 + 1u, last_k);
  let k2 = min(c0 + 2u, last_k);
  let k3 = min(c0 + 3u, last_k);
  var acc0 = vec4f(0.0);
  var acc1 = vec4f(0.0);
  var acc2 = vec4f(0.0);
  var acc3 = vec4f(0.0);
  for (var i = 0u; i < p.m; i++) {
    let xr = p.x_off + i * p.k;
    let xv = vec4f(x[xr + c0], x[xr + k1], x[xr + k2], x[xr + k3]);
    let dr = p.dy_off + i * p.n;
    acc0 += dy[dr + j0] * xv;
    acc1 += dy[dr + j1] * xv;
    acc2 += dy[dr + j2] * xv;
    acc3 += dy[dr + j3] * xv;
  }
  store4(j0, c0, acc0);
  store4(j0 + 1u, c0, acc1);
  store4(j0 + 2u, c0, acc2);
  store4(j0 + 3u, c0, acc3);
}

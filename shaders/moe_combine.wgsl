// moe_combine: the weighted sum of a routed-experts block's outputs,
//   out[t, c] = sum_j weights[t, j] * y[t, j, c]            (accumulate = 0)
//   out[t, c] = out[t, c] + sum_j weights[t, j] * y[t, j, c]  (accumulate = 1: the residual update)
// for t in 0..tokens-1, c in 0..n-1, j in 0..used-1 in order; y f32 [tokens, used, n] (qmatmul_expert's
// down projection), weights f32 [tokens, used] (moe_route), out f32 [tokens, n]. One output element per
// invocation: adjacent invocations read adjacent words of y and write adjacent words of out; the dispatch
// folds into y past maxComputeWorkgroupsPerDimension.
struct Params {
  y_off: u32,
  weights_off: u32,
  out_off: u32,
  tokens: u32,
  used: u32,
  n: u32,
  accumulate: u32,
  _pad0: u32,
}

@group(0) @binding(0) var<storage, read> y: array<f32>;
@group(0) @binding(1) var<storage, read> weights: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

override WG: u32 = 64;

@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) groups: vec3u) {
  let i = gid.x + gid.y * groups.x * WG;
  if (i >= p.tokens * p.n) { return; }
  let t = i / p.n;
  let c = i - t * p.n;
  var s = 0.0;
  for (var j = 0u; j < p.used; j++) {
    s += weights[p.weights_off + t * p.used + j] * y[p.y_off + (t * p.used + j) * p.n + c];
  }
  if (p.accumulate == 1u) { s = out[p.out_off + i] + s; }
  out[p.out_off + i] = s;
}

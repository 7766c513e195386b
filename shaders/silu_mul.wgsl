// silu_mul: out[i] = silu(a[i]) * b[i], silu(x) = x / (1 + exp(-x)) — the gate of llama's SwiGLU MLP
// (a = x W1^T, b = x W3^T). f32, same shape, out-of-place. For very negative x, exp(-x) overflows to
// +inf and silu(x) becomes -0, which is its limit.
// One element per invocation; the dispatch folds into y past maxComputeWorkgroupsPerDimension.
struct Params {
  a_off: u32,
  b_off: u32,
  out_off: u32,
  n: u32,
}

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

override WG: u32 = 64;

@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) groups: vec3u) {
  let i = gid.x + gid.y * groups.x * WG;
  if (i >= p.n) { return; }
  let x = a[p.a_off + i];
  out[p.out_off + i] = (x / (1.0 + exp(-x))) * b[p.b_off + i];
}

// mul: out[i] = a[i] * b[i] for i in 0..n-1 (f32, same shape, out-of-place).
// One element per invocation; the dispatch folds into y when n needs more than
// maxComputeWorkgroupsPerDimension workgroups, so the linear index counts whole rows of workgroups.
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
  out[p.out_off + i] = a[p.a_off + i] * b[p.b_off + i];
}

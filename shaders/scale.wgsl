// scale: out[i] = a[i] * s for i in 0..n-1 (f32, out-of-place; s is a uniform, so it can change per
// replay without re-recording).
// One element per invocation; the dispatch folds into y past maxComputeWorkgroupsPerDimension.
struct Params {
  a_off: u32,
  out_off: u32,
  n: u32,
  s: f32,
}

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

override WG: u32 = 64;

@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) groups: vec3u) {
  let i = gid.x + gid.y * groups.x * WG;
  if (i >= p.n) { return; }
  out[p.out_off + i] = a[p.a_off + i] * p.s;
}

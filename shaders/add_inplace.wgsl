// add_inplace: acc[i] = acc[i] + b[i] for i in 0..n-1 (f32, same shape). The residual-stream update
// (x += f(x)) without a second buffer: a tensor cannot be bound both for reading and writing in one
// dispatch, so the accumulator is a single read_write binding.
// One element per invocation; the dispatch folds into y past maxComputeWorkgroupsPerDimension.
struct Params {
  acc_off: u32,
  b_off: u32,
  n: u32,
  _pad: u32,
}

@group(0) @binding(0) var<storage, read_write> acc: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

override WG: u32 = 64;

@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) groups: vec3u) {
  let i = gid.x + gid.y * groups.x * WG;
  if (i >= p.n) { return; }
  acc[p.acc_off + i] = acc[p.acc_off + i] + b[p.b_off + i];
}

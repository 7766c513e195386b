// bias_add: x[r, c] += bias[c] for r in 0..rows-1, c in 0..cols-1, in place over x f32 [rows, cols] with
// bias f32 [cols] (the Q/K/V biases of qwen2, added after each projection). One element per invocation:
// adjacent invocations touch adjacent words of x and of bias; the dispatch folds into y past
// maxComputeWorkgroupsPerDimension.
struct Params {
  x_off: u32,
  bias_off: u32,
  rows: u32,
  cols: u32,
}

@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<storage, read> bias: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

override WG: u32 = 64;

@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) groups: vec3u) {
  let i = gid.x + gid.y * groups.x * WG;
  if (i >= p.rows * p.cols) { return; }
  let c = i % p.cols;
  x[p.x_off + i] = x[p.x_off + i] + bias[p.bias_off + c];
}

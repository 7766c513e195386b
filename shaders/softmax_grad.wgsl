// softmax_grad: the gradient of softmax over rows (shaders/softmax.wgsl) from its output y [rows, cols]
// and the output gradient dy: dx[c] = y[c] * (dy[c] - sum_j y[j] * dy[j]). f32, out-of-place.
// One invocation per row, two serial passes (as the forward kernel); rows fold into y past
// maxComputeWorkgroupsPerDimension.
struct Params {
  y_off: u32,
  dy_off: u32,
  dx_off: u32,
  rows: u32,
  cols: u32,
  _pad0: u32,
  _pad1: u32,
  _pad2: u32,
}

@group(0) @binding(0) var<storage, read> y: array<f32>;
@group(0) @binding(1) var<storage, read> dy: array<f32>;
@group(0) @binding(2) var<storage, read_write> dx: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

override WG: u32 = 64;

@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) groups: vec3u) {
  let r = gid.x + gid.y * groups.x * WG;
  if (r >= p.rows) { return; }
  let yb = p.y_off + r * p.cols;
  let db = p.dy_off + r * p.cols;
  var dot = 0.0;
  for (var c = 0u; c < p.cols; c++) { dot += y[yb + c] * dy[db + c]; }
  let ob = p.dx_off + r * p.cols;
  for (var c = 0u; c < p.cols; c++) { dx[ob + c] = y[yb + c] * (dy[db + c] - dot); }
}

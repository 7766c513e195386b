// rmsnorm_grad_x: the input gradient of out = w * x * r, r = 1 / sqrt(mean_c(x^2) + eps), over the rows
// of x [rows, cols]:
//   dx[c] (+)= r * w[c] * dy[c] - x[c] * r^3 * (sum_j w[j] * dy[j] * x[j]) / cols
// and r of each row into rstd [rows] (rmsnorm_grad_w reads it). `accumulate` != 0 adds into dx: the
// residual stream's gradient passes through the norm's input unchanged, so the norm's part is summed in.
// One invocation per row, serial passes over the row, no barriers (as shaders/rmsnorm.wgsl); rows fold
// into y past maxComputeWorkgroupsPerDimension.
struct Params {
  x_off: u32,
  w_off: u32,
  dy_off: u32,
  dx_off: u32,
  rstd_off: u32,
  rows: u32,
  cols: u32,
  eps: f32,
  accumulate: u32,
  _pad0: u32,
  _pad1: u32,
  _pad2: u32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read> dy: array<f32>;
@group(0) @binding(3) var<storage, read_write> dx: array<f32>;
@group(0) @binding(4) var<storage, read_write> rstd: array<f32>;
@group(0) @binding(5) var<uniform> p: Params;

override WG: u32 = 64;

@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) groups: vec3u) {
  let r = gid.x + gid.y * groups.x * WG;
  if (r >= p.rows) { return; }
  let xb = p.x_off + r * p.cols;
  let db = p.dy_off + r * p.cols;
  var ss = 0.0;
  var dot = 0.0;
  for (var c = 0u; c < p.cols; c++) {
    let v = x[xb + c];
    ss += v * v;
    dot += w[p.w_off + c] * dy[db + c] * v;
  }
  let inv = 1.0 / sqrt(ss / f32(p.cols) + p.eps);
  let k = inv * inv * inv * dot / f32(p.cols);
  let ob = p.dx_off + r * p.cols;
  for (var c = 0u; c < p.cols; c++) {
    let g = inv * w[p.w_off + c] * dy[db + c] - k * x[xb + c];
    if (p.accumulate != 0u) { dx[ob + c] += g; } else { dx[ob + c] = g; }
  }
  rstd[p.rstd_off + r] = inv;
}

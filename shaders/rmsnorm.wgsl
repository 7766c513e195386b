// rmsnorm over rows (llama2.c): for each row r of x [rows, cols],
//   inv = 1 / sqrt(mean_c(x[r, c]^2) + eps),  out[r, c] = w[c] * (inv * x[r, c]).
// f32; w [cols]; out [rows, cols], out-of-place.
// One invocation per row: two passes over the row with no barriers (workgroup reductions were far
// slower than serial loops on SwiftShader, TOOLCHAIN.md). Rows fold into y past
// maxComputeWorkgroupsPerDimension.
struct Params {
  x_off: u32,
  w_off: u32,
  out_off: u32,
  rows: u32,
  cols: u32,
  eps: f32,
  _pad0: u32,
  _pad1: u32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

override WG: u32 = 64;

@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) groups: vec3u) {
  let r = gid.x + gid.y * groups.x * WG;
  if (r >= p.rows) { return; }
  let xb = p.x_off + r * p.cols;
  var ss = 0.0;
  for (var c = 0u; c < p.cols; c++) {
    let v = x[xb + c];
    ss += v * v;
  }
  let inv = 1.0 / sqrt(ss / f32(p.cols) + p.eps);
  let ob = p.out_off + r * p.cols;
  for (var c = 0u; c < p.cols; c++) {
    out[ob + c] = w[p.w_off + c] * (inv * x[xb + c]);
  }
}

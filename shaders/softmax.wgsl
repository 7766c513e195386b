// softmax over rows: for each row r of x [rows, cols],
//   out[r, c] = exp(x[r, c] - max_r) / sum_c' exp(x[r, c'] - max_r).
// f32, out-of-place. Subtracting the row maximum keeps every exp() argument <= 0 (no overflow).
// One invocation per row, three passes, no barriers (see rmsnorm.wgsl); rows fold into y past
// maxComputeWorkgroupsPerDimension.
struct Params {
  x_off: u32,
  out_off: u32,
  rows: u32,
  cols: u32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

override WG: u32 = 64;

@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) groups: vec3u) {
  let r = gid.x + gid.y * groups.x * WG;
  if (r >= p.rows) { return; }
  let xb = p.x_off + r * p.cols;
  let ob = p.out_off + r * p.cols;
  var mx = x[xb];
  for (var c = 1u; c < p.cols; c++) { mx = max(mx, x[xb + c]); }
  var sum = 0.0;
  for (var c = 0u; c < p.cols; c++) {
    let e = exp(x[xb + c] - mx);
    out[ob + c] = e;
    sum += e;
  }
  let inv = 1.0 / sum;
  for (var c = 0u; c < p.cols; c++) { out[ob + c] = out[ob + c] * inv; }
}

// rmsnorm_grad_w: the weight gradient of rmsnorm, dw[c] (+)= sum over rows r of dy[r, c] * x[r, c] * rstd[r],
// with rstd the per-row 1 / sqrt(mean(x^2) + eps) that rmsnorm_grad_x wrote. One invocation per column,
// summing rows in order (deterministic, no atomics); neighbouring invocations read neighbouring columns
// of each row, so the reads of a workgroup are contiguous.
struct Params {
  x_off: u32,
  dy_off: u32,
  rstd_off: u32,
  dw_off: u32,
  rows: u32,
  cols: u32,
  accumulate: u32,
  _pad: u32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> dy: array<f32>;
@group(0) @binding(2) var<storage, read> rstd: array<f32>;
@group(0) @binding(3) var<storage, read_write> dw: array<f32>;
@group(0) @binding(4) var<uniform> p: Params;

override WG: u32 = 64;

@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) groups: vec3u) {
  let c = gid.x + gid.y * groups.x * WG;
  if (c >= p.cols) { return; }
  var s = 0.0;
  for (var r = 0u; r < p.rows; r++) {
    let at = r * p.cols + c;
    s += dy[p.dy_off + at] * x[p.x_off + at] * rstd[p.rstd_off + r];
  }
  if (p.accumulate != 0u) { dw[p.dw_off + c] += s; } else { dw[p.dw_off + c] = s; }
}

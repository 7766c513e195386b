// argmax over rows: out[r] = the smallest c with x[r, c] == max_c' x[r, c'] (first maximum on ties;
// llama2.c's greedy sampler walks the row the same way, replacing only on a strictly greater value).
// x f32 [rows, cols]; out u32 [rows].
// One invocation per row, no barriers (see rmsnorm.wgsl); rows fold into y past
// maxComputeWorkgroupsPerDimension.
struct Params {
  x_off: u32,
  out_off: u32,
  rows: u32,
  cols: u32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@group(0) @binding(2) var<uniform> p: Params;

override WG: u32 = 64;

@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) groups: vec3u) {
  let r = gid.x + gid.y * groups.x * WG;
  if (r >= p.rows) { return; }
  let xb = p.x_off + r * p.cols;
  var best = 0u;
  var best_v = x[xb];
  for (var c = 1u; c < p.cols; c++) {
    let v = x[xb + c];
    if (v > best_v) {
      best = c;
      best_v = v;
    }
  }
  out[p.out_off + r] = best;
}

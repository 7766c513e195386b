// cross_entropy_grad: softmax cross-entropy from logits [rows, cols] against targets [rows] (u32), fused
// with its gradient:
//   loss[r] = log sum_c exp(logits[r, c]) - logits[r, targets[r]]
//   dlogits[r, c] = scale * (softmax(logits[r])[c] - (c == targets[r] ? 1 : 0))
// `scale` is the factor the caller's total loss puts on each row (1 / rows for a mean). A target outside
// 0..cols-1 is refused by the host before dispatch.
// One workgroup per row: WG invocations stride over the row (contiguous reads) and combine their
// max and sum through workgroup memory in a fixed tree, so the result is deterministic. Rows fold into y.
struct Params {
  logits_off: u32,
  targets_off: u32,
  dlogits_off: u32,
  loss_off: u32,
  rows: u32,
  cols: u32,
  scale: f32,
  _pad: u32,
}

@group(0) @binding(0) var<storage, read> logits: array<f32>;
@group(0) @binding(1) var<storage, read> targets: array<u32>;
@group(0) @binding(2) var<storage, read_write> dlogits: array<f32>;
@group(0) @binding(3) var<storage, read_write> loss: array<f32>;
@group(0) @binding(4) var<uniform> p: Params;

const WG: u32 = 64u;
var<workgroup> red: array<f32, WG>;

@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) groups: vec3u) {
  let r = wid.x + wid.y * groups.x;
  let live = r < p.rows;
  let row = p.logits_off + min(r, p.rows - 1u) * p.cols;
  var mx = -3.0e38;
  for (var c = lid.x; c < p.cols; c += WG) { mx = max(mx, logits[row + c]); }
  red[lid.x] = mx;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid.x < s) { red[lid.x] = max(red[lid.x], red[lid.x + s]); }
    workgroupBarrier();
  }
  mx = red[0];
  workgroupBarrier();
  var sum = 0.0;
  for (var c = lid.x; c < p.cols; c += WG) { sum += exp(logits[row + c] - mx); }
  red[lid.x] = sum;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid.x < s) { red[lid.x] += red[lid.x + s]; }
    workgroupBarrier();
  }
  let total = red[0];
  if (!live) { return; }
  let tgt = targets[p.targets_off + r];
  let out = p.dlogits_off + r * p.cols;
  for (var c = lid.x; c < p.cols; c += WG) {
    let pr = exp(logits[row + c] - mx) / total;
    dlogits[out + c] = p.scale * (pr - select(0.0, 1.0, c == tgt));
  }
  if (lid.x == 0u) { loss[p.loss_off + r] = mx + log(total) - logits[row + tgt]; }
}

// moe_route (routed-expert gate, Mixtral-style): for each token t of the router logits [tokens, experts],
//   p[e] = exp(l[e] - max_e l) / sum_e exp(l[e] - max_e l)          (softmax over all experts)
//   picks j = 0..used-1: the experts in decreasing order of logit, the lower expert index first among
//   equal logits (the order of a stable descending sort; softmax is monotonic, so this is the order of
//   the probabilities without their rounding ties)
//   ids[t, j] = pick j, weights[t, j] = p[pick j] / sum_j' p[pick j'] (renormalize = 1) or p[pick j]
// The common factor 1 / sum_e exp(...) cancels in the renormalised weights, so they are exp(l - max)
// over the sum of the picked exp(l - max). Logits must be finite.
//
// One workgroup per token (tokens fold into y past maxComputeWorkgroupsPerDimension). Its WG invocations
// stride over the experts (adjacent invocations read adjacent logits): a tree reduction gives the row
// maximum, another the sum of exp, and each of the `used` picks is a tree reduction of (logit, index)
// over the experts that rank after the previous pick, so nothing is marked or sorted. Invocation 0
// writes ids and weights.
struct Params {
  logits_off: u32,
  ids_off: u32,
  weights_off: u32,
  tokens: u32,
  experts: u32,
  used: u32,
  renormalize: u32,
  _pad0: u32,
}

@group(0) @binding(0) var<storage, read> logits: array<f32>;
@group(0) @binding(1) var<storage, read_write> ids: array<u32>;
@group(0) @binding(2) var<storage, read_write> weights: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

// Invocations per workgroup: a power of two in 32..256.
override WG: u32 = 64u;

// No expert: ranks after every expert.
const NONE: u32 = 0xffffffffu;
// The lowest finite f32: the maximum of no logits (logits are finite).
const LOWEST: f32 = -3.40282346638528859812e+38;

var<workgroup> red_v: array<f32, WG>;
var<workgroup> red_i: array<u32, WG>;

// Whether expert i with logit v ranks before expert bi with logit bv.
fn before(v: f32, i: u32, bv: f32, bi: u32) -> bool {
  return i != NONE && (bi == NONE || v > bv || (v == bv && i < bi));
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) groups: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let t = wid.x + wid.y * groups.x;
  if (t >= p.tokens) { return; }
  let base = p.logits_off + t * p.experts;

  var m = LOWEST;
  for (var e = lid; e < p.experts; e += WG) { m = max(m, logits[base + e]); }
  red_v[lid] = m;
  workgroupBarrier();
  for (var s = WG >> 1u; s > 0u; s >>= 1u) {
    if (lid < s) { red_v[lid] = max(red_v[lid], red_v[lid + s]); }
    workgroupBarrier();
  }
  let mx = red_v[0];
  workgroupBarrier();

  var sum = 0.0;
  for (var e = lid; e < p.experts; e += WG) { sum += exp(logits[base + e] - mx); }
  red_v[lid] = sum;
  workgroupBarrier();
  for (var s = WG >> 1u; s > 0u; s >>= 1u) {
    if (lid < s) { red_v[lid] += red_v[lid + s]; }
    workgroupBarrier();
  }
  let total = red_v[0];
  workgroupBarrier();

  let out = t * p.used;
  var last_v = 0.0;
  var last_i = NONE;
  var picked = 0.0;
  for (var j = 0u; j < p.used; j++) {
    var bv = 0.0;
    var bi = NONE;
    for (var e = lid; e < p.experts; e += WG) {
      let v = logits[base + e];
      if ((last_i == NONE || before(last_v, last_i, v, e)) && before(v, e, bv, bi)) {
        bv = v;
        bi = e;
      }
    }
    red_v[lid] = bv;
    red_i[lid] = bi;
    workgroupBarrier();
    for (var s = WG >> 1u; s > 0u; s >>= 1u) {
      if (lid < s && before(red_v[lid + s], red_i[lid + s], red_v[lid], red_i[lid])) {
        red_v[lid] = red_v[lid + s];
        red_i[lid] = red_i[lid + s];
      }
      workgroupBarrier();
    }
    last_v = red_v[0];
    last_i = red_i[0];
    workgroupBarrier();
    if (lid == 0u) {
      let pw = exp(last_v - mx);
      ids[p.ids_off + out + j] = last_i;
      weights[p.weights_off + out + j] = pw;
      picked += pw;
    }
  }
  if (lid == 0u) {
    let norm = select(total, picked, p.renormalize == 1u);
    for (var j = 0u; j < p.used; j++) { weights[p.weights_off + out + j] = weights[p.weights_off + out + j] / norm; }
  }
}

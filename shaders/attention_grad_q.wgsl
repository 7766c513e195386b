// attention_grad_q: first half of the backward of causal grouped-query attention over a sequence of
// `count` rows at positions 0..count-1 (q [count, heads * hd], k and v [count, kv_heads * hd], out the
// forward output, dout its gradient). For query row t, head h (kv head g = h / (heads / kv_heads)):
//   s_j = scale * q_t . k_j (j <= t),  P_j = exp(s_j - lse_t),  lse_t = log sum_j exp(s_j)
//   delta_t = dout_t . out_t  (= sum_j P_j * dP_j),  dP_j = dout_t . v_j,  dS_j = P_j * (dP_j - delta_t)
//   dq_t = scale * sum_j dS_j * k_j
// and writes (lse_t, delta_t) into stats [count, heads, 2] for attention_grad_kv. The softmax backward is
// inside (dS). One invocation per (row, head, 4 dims of the head): each recomputes the row's scores in
// two passes (an online log-sum-exp, then the gradient; no score matrix is stored, as in the forward
// kernel), and owns its 4 outputs: deterministic.
struct Params {
  q_off: u32,
  k_off: u32,
  v_off: u32,
  out_off: u32,
  dout_off: u32,
  dq_off: u32,
  stats_off: u32,
  count: u32,
  heads: u32,
  kv_heads: u32,
  head_dim: u32,
  scale: f32,
}

@group(0) @binding(0) var<storage, read> q: array<f32>;
@group(0) @binding(1) var<storage, read> k: array<f32>;
@group(0) @binding(2) var<storage, read> v: array<f32>;
@group(0) @binding(3) var<storage, read> out: array<f32>;
@group(0) @binding(4) var<storage, read> dout: array<f32>;
@group(0) @binding(5) var<storage, read_write> dq: array<f32>;
@group(0) @binding(6) var<storage, read_write> stats: array<f32>;
@group(0) @binding(7) var<uniform> p: Params;

override WG: u32 = 64;

@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) groups: vec3u) {
  let id = gid.x + gid.y * groups.x * WG;
  let chunks = p.head_dim / 4u;
  if (id >= p.count * p.heads * chunks) { return; }
  let t = id / (p.heads * chunks);
  let rest = id - t * p.heads * chunks;
  let h = rest / chunks;
  let c = (rest - h * chunks) * 4u;
  let g = h / (p.heads / p.kv_heads);
  let q_width = p.heads * p.head_dim;
  let kv_width = p.kv_heads * p.head_dim;
  let qa = p.q_off + t * q_width + h * p.head_dim;
  let oa = t * q_width + h * p.head_dim;
  // One pass for the log-sum-exp: a running maximum with the sum rescaled whenever it grows.
  var mx = -3.0e38;
  var sum = 0.0;
  for (var j = 0u; j <= t; j++) {
    let ka = p.k_off + j * kv_width + g * p.head_dim;
    var s = 0.0;
    for (var d = 0u; d < p.head_dim; d++) { s += q[qa + d] * k[ka + d]; }
    let x = s * p.scale;
    if (x > mx) {
      sum = sum * exp(mx - x) + 1.0;
      mx = x;
    } else {
      sum += exp(x - mx);
    }
  }
  let lse = mx + log(sum);
  var delta = 0.0;
  for (var d = 0u; d < p.head_dim; d++) { delta += dout[p.dout_off + oa + d] * out[p.out_off + oa + d]; }
  var acc = vec4f(0.0);
  for (var j = 0u; j <= t; j++) {
    let ka = p.k_off + j * kv_width + g * p.head_dim;
    let va = p.v_off + j * kv_width + g * p.head_dim;
    var s = 0.0;
    var dp = 0.0;
    for (var d = 0u; d < p.head_dim; d++) {
      s += q[qa + d] * k[ka + d];
      dp += dout[p.dout_off + oa + d] * v[va + d];
    }
    let pr = exp(s * p.scale - lse);
    let ds = pr * (dp - delta);
    acc += ds * vec4f(k[ka + c], k[ka + c + 1u], k[ka + c + 2u], k[ka + c + 3u]);
  }
  let o = p.dq_off + oa + c;
  dq[o] = acc.x * p.scale;
  dq[o + 1u] = acc.y * p.scale;
  dq[o + 2u] = acc.z * p.scale;
  dq[o + 3u] = acc.w * p.scale;
  if (c == 0u) {
    let sa = p.stats_off + (t * p.heads + h) * 2u;
    stats[sa] = lse;
    stats[sa + 1u] = delta;
  }
}

// attention_grad_kv: second half of the causal attention backward (after attention_grad_q, which wrote
// stats [count, heads, 2] = (lse, delta) per query row and head). For key row j and kv head g, over the
// query rows t >= j and the query heads h of g's group:
//   P = exp(scale * q_t . k_j - lse_th),  dS = P * (dout_th . v_j - delta_th)
//   dv_j += P * dout_th,  dk_j += scale * dS * q_th
// One invocation per (key row, kv head, 4 dims): it owns those outputs and sums them in (t, h) order,
// so there are no races and no float atomics; the result is deterministic.
struct Params {
  q_off: u32,
  k_off: u32,
  v_off: u32,
  dout_off: u32,
  stats_off: u32,
  dk_off: u32,
  dv_off: u32,
  count: u32,
  heads: u32,
  kv_heads: u32,
  head_dim: u32,
  scale: f32,
}

@group(0) @binding(0) var<storage, read> q: array<f32>;
@group(0) @binding(1) var<storage, read> k: array<f32>;
@group(0) @binding(2) var<storage, read> v: array<f32>;
@group(0) @binding(3) var<storage, read> dout: array<f32>;
@group(0) @binding(4) var<storage, read> stats: array<f32>;
@group(0) @binding(5) var<storage, read_write> dk: array<f32>;
@group(0) @binding(6) var<storage, read_write> dv: array<f32>;
@group(0) @binding(7) var<uniform> p: Params;

override WG: u32 = 64;

@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) groups: vec3u) {
  let id = gid.x + gid.y * groups.x * WG;
  let chunks = p.head_dim / 4u;
  if (id >= p.count * p.kv_heads * chunks) { return; }
  let j = id / (p.kv_heads * chunks);
  let rest = id - j * p.kv_heads * chunks;
  let g = rest / chunks;
  let c = (rest - g * chunks) * 4u;
  let group = p.heads / p.kv_heads;
  let q_width = p.heads * p.head_dim;
  let kv_width = p.kv_heads * p.head_dim;
  let ka = p.k_off + j * kv_width + g * p.head_dim;
  let va = p.v_off + j * kv_width + g * p.head_dim;
  var dk4 = vec4f(0.0);
  var dv4 = vec4f(0.0);
  for (var t = j; t < p.count; t++) {
    for (var h = g * group; h < (g + 1u) * group; h++) {
      let qa = p.q_off + t * q_width + h * p.head_dim;
      let oa = p.dout_off + t * q_width + h * p.head_dim;
      var s = 0.0;
      var dp = 0.0;
      for (var d = 0u; d < p.head_dim; d++) {
        s += q[qa + d] * k[ka + d];
        dp += dout[oa + d] * v[va + d];
      }
      let sa = p.stats_off + (t * p.heads + h) * 2u;
      let pr = exp(s * p.scale - stats[sa]);
      let ds = pr * (dp - stats[sa + 1u]);
      dv4 += pr * vec4f(dout[oa + c], dout[oa + c + 1u], dout[oa + c + 2u], dout[oa + c + 3u]);
      dk4 += (ds * p.scale) * vec4f(q[qa + c], q[qa + c + 1u], q[qa + c + 2u], q[qa + c + 3u]);
    }
  }
  let o = j * kv_width + g * p.head_dim + c;
  dk[p.dk_off + o] = dk4.x; dk[p.dk_off + o + 1u] = dk4.y; dk[p.dk_off + o + 2u] = dk4.z; dk[p.dk_off + o + 3u] = dk4.w;
  dv[p.dv_off + o] = dv4.x; dv[p.dv_off + o + 1u] = dv4.y; dv[p.dv_off + o + 2u] = dv4.z; dv[p.dv_off + o + 3u] = dv4.w;
}

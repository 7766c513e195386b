// attention: causal grouped-query attention of `count` query rows over a KV cache.
//   q   f32 [count, heads * head_dim]        row t is the query at position pos0 + t
//   k,v f32 [max_seq, kv_heads * head_dim]   rows 0..pos0+count-1 already written (kv_write)
//   out f32 [count, heads * head_dim]
// For query row t and head h (kv head g = h / (heads / kv_heads)), over positions j = 0..pos0+t:
//   s_j = scale * dot(q[t, h], k[j, g]),  out[t, h] = sum_j softmax(s)_j * v[j, g].
// scale = 1/sqrt(head_dim) is packed by the host so host and device use the same f32 value.
// Prefill (count > 1) and decode (count = 1) are the same kernel.
//
// One invocation per (t, h, 4-wide slice of head_dim) with a one-pass online softmax: a running max m,
// running sum l and a vec4 accumulator, rescaled by exp(m_old - m_new) whenever the max grows. The
// score dot product is recomputed by each slice of a head (head_dim / 4 times); in exchange there are
// no barriers and no shared memory (both slow on SwiftShader, TOOLCHAIN.md) and the accumulator stays
// in registers for any head_dim. Slice lanes past head_dim are clamped for loading and never stored.
// The dispatch folds into y past maxComputeWorkgroupsPerDimension.
struct Params {
  q_off: u32,
  k_off: u32,
  v_off: u32,
  out_off: u32,
  count: u32,
  heads: u32,
  kv_heads: u32,
  head_dim: u32,
  pos0: u32,
  scale: f32,
  _pad0: u32,
  _pad1: u32,
}

@group(0) @binding(0) var<storage, read> q: array<f32>;
@group(0) @binding(1) var<storage, read> k: array<f32>;
@group(0) @binding(2) var<storage, read> v: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<uniform> p: Params;

override WG: u32 = 64;

fn score(qb: u32, kb: u32) -> f32 {
  var s = 0.0;
  for (var d = 0u; d < p.head_dim; d++) { s += q[qb + d] * k[kb + d]; }
  return s * p.scale;
}

fn v4(vb: u32, last: u32) -> vec4f {
  return vec4f(v[vb], v[min(vb + 1u, last)], v[min(vb + 2u, last)], v[min(vb + 3u, last)]);
}

@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) groups: vec3u) {
  let id = gid.x + gid.y * groups.x * WG;
  let slices = (p.head_dim + 3u) / 4u;
  if (id >= p.count * p.heads * slices) { return; }
  let slice = id % slices;
  let h = (id / slices) % p.heads;
  let t = id / (slices * p.heads);
  let g = h / (p.heads / p.kv_heads);
  let d0 = slice * 4u;
  let q_row = p.heads * p.head_dim;
  let kv_row = p.kv_heads * p.head_dim;
  let qb = p.q_off + t * q_row + h * p.head_dim;
  let kb = p.k_off + g * p.head_dim;
  let vb = p.v_off + g * p.head_dim + d0;
  // Last element of this head's v row, relative to the row start (clamps the slice's lanes).
  let v_last = g * p.head_dim + p.head_dim - 1u;
  let last = p.pos0 + t;

  var m = score(qb, kb);
  var l = 1.0;
  var acc = v4(vb, p.v_off + v_last);
  for (var j = 1u; j <= last; j++) {
    let s = score(qb, kb + j * kv_row);
    let m_new = max(m, s);
    let rescale = exp(m - m_new);
    let e = exp(s - m_new);
    l = l * rescale + e;
    acc = acc * rescale + e * v4(vb + j * kv_row, p.v_off + j * kv_row + v_last);
    m = m_new;
  }
  let o = acc / l;
  let ob = p.out_off + t * q_row + h * p.head_dim + d0;
  for (var i = 0u; i < 4u; i++) {
    if (d0 + i < p.head_dim) { out[ob + i] = o[i]; }
  }
}

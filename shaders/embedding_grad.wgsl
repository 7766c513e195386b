// embedding_grad: the gradient of gather (out[t] = table[ids[t]]) into the table: for every vocabulary
// row v and column c, dtable[v, c] (+)= sum over t with ids[t] == v of dout[t, c]. A token that occurs
// several times contributes every occurrence. Ids outside 0..vocab-1 (gather's zero rows) contribute
// nothing.
// Deterministic per-row formulation instead of a scatter with float atomics: one invocation per element
// of dtable scans the `count` ids in order and sums its column of the matching rows, so no two
// invocations write one element and the sum order is fixed. Neighbouring invocations take neighbouring
// columns, so the dout reads of a workgroup are contiguous. Cost count * vocab * dim reads of ids (tiny
// beside the matmuls of a training step at training sequence lengths).
struct Params {
  ids_off: u32,
  dout_off: u32,
  dtable_off: u32,
  count: u32,
  vocab: u32,
  dim: u32,
  accumulate: u32,
  _pad: u32,
}

@group(0) @binding(0) var<storage, read> ids: array<u32>;
@group(0) @binding(1) var<storage, read> dout: array<f32>;
@group(0) @binding(2) var<storage, read_write> dtable: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

override WG: u32 = 64;

@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) groups: vec3u) {
  let e = gid.x + gid.y * groups.x * WG;
  if (e >= p.vocab * p.dim) { return; }
  let row = e / p.dim;
  let c = e - row * p.dim;
  var s = 0.0;
  for (var t = 0u; t < p.count; t++) {
    if (ids[p.ids_off + t] == row) { s += dout[p.dout_off + t * p.dim + c]; }
  }
  let o = p.dtable_off + e;
  if (p.accumulate != 0u) { dtable[o] += s; } else { dtable[o] = s; }
}

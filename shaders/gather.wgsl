// gather (embedding lookup): out[t, d] = table[ids[t], d] for t in 0..count-1, d in 0..dim-1.
// ids u32 [count] (i32 ids are bound as the same bits: a negative id reads as >= 2^31); table f32
// [vocab, dim]; out f32 [count, dim]. An id >= vocab has no row: its output row is all zeros, the same
// as the host implementation (the session validates token ids before they reach a kernel).
// One output element per invocation; the dispatch folds into y past maxComputeWorkgroupsPerDimension.
struct Params {
  ids_off: u32,
  table_off: u32,
  out_off: u32,
  count: u32,
  vocab: u32,
  dim: u32,
  _pad0: u32,
  _pad1: u32,
}

@group(0) @binding(0) var<storage, read> ids: array<u32>;
@group(0) @binding(1) var<storage, read> table: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

override WG: u32 = 64;

@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) groups: vec3u) {
  let i = gid.x + gid.y * groups.x * WG;
  if (i >= p.count * p.dim) { return; }
  let t = i / p.dim;
  let d = i - t * p.dim;
  let id = ids[p.ids_off + t];
  var v = 0.0;
  if (id < p.vocab) { v = table[p.table_off + id * p.dim + d]; }
  out[p.out_off + i] = v;
}

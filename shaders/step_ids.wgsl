// step_ids: the token ids one step of a chained decode or prefill feeds to its embedding lookup.
// ids[i] for i in 0..count-1 is either staged[at + i] (a chunk of a prompt the host staged once, before
// the chain began; `at` travels in the uniform, so one recorded graph serves every chunk) or, when
// from_host is 1, the single token the host put into the uniform (count is then 1). Either way the host
// uploads nothing but the graph's uniform for the step. staged u32 [n]; ids u32 [count].
// One id per invocation; count is at most a step's batch, so no folding into y is needed.
struct Params {
  staged_off: u32,
  ids_off: u32,
  count: u32,
  at: u32,
  from_host: u32,
  token: u32,
  _pad0: u32,
  _pad1: u32,
}

@group(0) @binding(0) var<storage, read> staged: array<u32>;
@group(0) @binding(1) var<storage, read_write> ids: array<u32>;
@group(0) @binding(2) var<uniform> p: Params;

override WG: u32 = 64;

@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x;
  if (i >= p.count) { return; }
  if (p.from_host != 0u) {
    ids[p.ids_off + i] = p.token;
  } else {
    ids[p.ids_off + i] = staged[p.staged_off + p.at + i];
  }
}

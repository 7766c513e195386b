// kv_write: appends rows to a KV cache: cache[pos0 + t, c] = src[t, c] for t in 0..count-1,
// c in 0..width-1. src f32 [count, width]; cache f32 [max_seq, width] (rows outside pos0..pos0+count-1
// are not touched). pos0 is a uniform, so a recorded graph advances it per step without re-recording.
// One element per invocation; the dispatch folds into y past maxComputeWorkgroupsPerDimension.
struct Params {
  src_off: u32,
  cache_off: u32,
  count: u32,
  width: u32,
  pos0: u32,
  _pad0: u32,
  _pad1: u32,
  _pad2: u32,
}

@group(0) @binding(0) var<storage, read> src: array<f32>;
@group(0) @binding(1) var<storage, read_write> cache: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

override WG: u32 = 64;

@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) groups: vec3u) {
  let i = gid.x + gid.y * groups.x * WG;
  if (i >= p.count * p.width) { return; }
  cache[p.cache_off + p.pos0 * p.width + i] = src[p.src_off + i];
}

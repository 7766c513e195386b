// silu_mul_grad: the gradient of out = silu(a) * b, silu(x) = x * sig(x), sig(x) = 1 / (1 + exp(-x)):
//   da = dout * b * sig(a) * (1 + a * (1 - sig(a))),  db = dout * silu(a)
// f32, elementwise, out-of-place. One element per invocation; folds into y past the dispatch limit.
struct Params {
  a_off: u32,
  b_off: u32,
  dout_off: u32,
  da_off: u32,
  db_off: u32,
  n: u32,
  _pad0: u32,
  _pad1: u32,
}

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read> dout: array<f32>;
@group(0) @binding(3) var<storage, read_write> da: array<f32>;
@group(0) @binding(4) var<storage, read_write> db: array<f32>;
@group(0) @binding(5) var<uniform> p: Params;

override WG: u32 = 64;

@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) groups: vec3u) {
  let i = gid.x + gid.y * groups.x * WG;
  if (i >= p.n) { return; }
  let x = a[p.a_off + i];
  let g = dout[p.dout_off + i];
  let sg = 1.0 / (1.0 + exp(-x));
  da[p.da_off + i] = g * b[p.b_off + i] * sg * (1.0 + x * (1.0 - sg));
  db[p.db_off + i] = g * x * sg;
}

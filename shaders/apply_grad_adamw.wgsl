// apply_grad_adamw: one AdamW update of a parameter tensor from its gradient (decoupled weight decay):
//   m = beta1 * m + (1 - beta1) * g,  v = beta2 * v + (1 - beta2) * g^2
//   param -= lr * (m / bc1 / (sqrt(v / bc2) + eps) + wd * param)
// with bc1 = 1 - beta1^step, bc2 = 1 - beta2^step computed by the host in f64 and passed as f32.
// f32, elementwise, in place on param, m and v. One element per invocation; folds into y.
struct Params {
  param_off: u32,
  grad_off: u32,
  m_off: u32,
  v_off: u32,
  n: u32,
  lr: f32,
  beta1: f32,
  beta2: f32,
  eps: f32,
  wd: f32,
  bc1: f32,
  bc2: f32,
}

@group(0) @binding(0) var<storage, read_write> param: array<f32>;
@group(0) @binding(1) var<storage, read> grad: array<f32>;
@group(0) @binding(2) var<storage, read_write> m: array<f32>;
@group(0) @binding(3) var<storage, read_write> v: array<f32>;
@group(0) @binding(4) var<uniform> p: Params;

override WG: u32 = 64;

@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) groups: vec3u) {
  let i = gid.x + gid.y * groups.x * WG;
  if (i >= p.n) { return; }
  let g = grad[p.grad_off + i];
  let mi = p.beta1 * m[p.m_off + i] + (1.0 - p.beta1) * g;
  let vi = p.beta2 * v[p.v_off + i] + (1.0 - p.beta2) * g * g;
  m[p.m_off + i] = mi;
  v[p.v_off + i] = vi;
  let w = param[p.param_off + i];
  param[p.param_off + i] = w - p.lr * ((mi / p.bc1) / (sqrt(vi / p.bc2) + p.eps) + p.wd * w);
}

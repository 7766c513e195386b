// rope_grad: the gradient of rope (shaders/rope.wgsl), in place over dx [count, heads * head_dim]. rope
// turns each pair by the angle pos * freq[i]; a rotation's transpose turns by minus that angle, so
//   dx[a] =  d0 * cos + d1 * sin
//   dx[b] = -d0 * sin + d1 * cos
// with the same pairing (NEOX), the same f32 frequency table in the uniform and the same angle reduction
// and Taylor sin/cos as the forward (see shaders/rope.wgsl for their precision). One pair per invocation;
// the dispatch folds into y past maxComputeWorkgroupsPerDimension.
struct Params {
  x_off: u32,
  count: u32,
  heads: u32,
  head_dim: u32,
  pos0: u32,
  _pad0: u32,
  _pad1: u32,
  _pad2: u32,
  // freq[i] is freq4[i / 4][i % 4]; head_dim <= 256.
  freq4: array<vec4f, 32>,
}

@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<uniform> p: Params;

override WG: u32 = 64;
// Pairing style: false = (2i, 2i+1), true = (i, i + head_dim/2).
override NEOX: bool = false;

const TWO_OVER_PI: f32 = 0.63661977236758134;
const PIO2_HI: f32 = 1.5703125;
const PIO2_MID: f32 = 4.8382679233327508e-4;
const PIO2_LO: f32 = 2.5632829192545614e-12;

// (sin y, cos y) for |y| <= pi/4.
fn sincos_reduced(y: f32) -> vec2f {
  let y2 = y * y;
  let s = y * (1.0 + y2 * (-1.0 / 6.0 + y2 * (1.0 / 120.0 + y2 * (-1.0 / 5040.0 + y2 * (1.0 / 362880.0)))));
  let c = 1.0 + y2 * (-0.5 + y2 * (1.0 / 24.0 + y2 * (-1.0 / 720.0 + y2 * (1.0 / 40320.0 + y2 * (-1.0 / 3628800.0)))));
  return vec2f(s, c);
}

// (sin a, cos a) for 0 <= a < ~1e5.
fn sincos(a: f32) -> vec2f {
  let q = round(a * TWO_OVER_PI);
  let y = ((a - q * PIO2_HI) - q * PIO2_MID) - q * PIO2_LO;
  let sc = sincos_reduced(y);
  switch (u32(q) & 3u) {
    case 0u: { return sc; }
    case 1u: { return vec2f(sc.y, -sc.x); }
    case 2u: { return vec2f(-sc.x, -sc.y); }
    default: { return vec2f(-sc.y, sc.x); }
  }
}

@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) groups: vec3u) {
  let pair = gid.x + gid.y * groups.x * WG;
  let half = p.head_dim / 2u;
  let pairs_per_row = p.heads * half;
  if (pair >= p.count * pairs_per_row) { return; }
  let t = pair / pairs_per_row;
  let in_row = pair - t * pairs_per_row;
  let h = in_row / half;
  let i = in_row - h * half;
  let angle = f32(p.pos0 + t) * p.freq4[i / 4u][i % 4u];
  let sc = sincos(angle);
  let head = p.x_off + t * p.heads * p.head_dim + h * p.head_dim;
  let a = head + select(2u * i, i, NEOX);
  let b = a + select(1u, half, NEOX);
  let d0 = x[a];
  let d1 = x[b];
  x[a] = d0 * sc.y + d1 * sc.x;
  x[b] = d1 * sc.y - d0 * sc.x;
}

// qmatmul_q8_0: out[m, n] = sum_k x[m, k] * W[n, k] with W in the packed Q8_0 layout
// (src/submit/ops/qmatmul-layout.ts): each row holds `units` quant words (four int8 elements each, 8 words
// per 32-element block) and, from word `plane1`, the block scales d, two f16 per word. Element e of
// block b is d_b * q_e. A unit is one quant word; the scale is factored out of its dot product.
//
// A workgroup of WG invocations is WG / SEG row groups of SEG invocations (SEG = WG unless rows have few
// units: then many short rows share one workgroup rather than leave invocations idle). Row group `seg`
// owns weight rows n0..n0+RN-1 and x rows m0..m0+TM-1; its invocation `sl` takes units sl, sl + SEG, ...
// of each row (adjacent invocations read adjacent words), dequantizes them in registers and accumulates
// in f32 for each of its TM rows of x (one weight load serves TM rows). The RN * TM sums are then reduced
// over the row group by a shared-memory tree. Tail rows (n >= N, m >= M) are clamped for loading and
// never stored. x [M, K] and out [M, N] are row-major f32.
struct Params {
  x_off: u32,
  w_off: u32,
  out_off: u32,
  m: u32,
  n: u32,
  k: u32,
  row_words: u32,
  units: u32,
  plane1: u32,
  plane2: u32,
  plane3: u32,
  _pad0: u32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

// Invocations per workgroup: a power of two in 32..256.
override WG: u32 = 64u;
// Weight rows per row group and x rows per workgroup; RN * TM <= MAX_ACC.
override RN: u32 = 2u;
// Invocations per row group: a power of two <= WG.
override SEG: u32 = 64u;
override TM: u32 = 1u;
const MAX_ACC: u32 = 8u;

var<workgroup> red: array<f32, WG * MAX_ACC>;

// x[row, k .. k + 3], `base` the element index of x[row, 0].
fn x4(base: u32, k: u32) -> vec4f {
  return vec4f(x[base + k], x[base + k + 1u], x[base + k + 2u], x[base + k + 3u]);
}

// The f16 of block b in the half plane starting at word `plane` of the row at `row`.
fn half_of(row: u32, plane: u32, b: u32) -> f32 {
  let pair = unpack2x16float(w[row + plane + (b >> 1u)]);
  return select(pair.x, pair.y, (b & 1u) == 1u);
}

// The four int8 of a word, little-endian, sign-extended.
fn i8x4(v: u32) -> vec4f {
  return vec4f(vec4i(i32(v << 24u), i32(v << 16u), i32(v << 8u), i32(v)) >> vec4u(24u));
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) groups: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let seg = lid / SEG;
  let sl = lid % SEG;
  let g0 = (wid.x + wid.y * groups.x) * (WG / SEG) * RN;
  let n0 = g0 + seg * RN;
  let m0 = wid.z * TM;
  if (g0 >= p.n) { return; }
  var acc: array<f32, MAX_ACC>;
  for (var u = sl; u < p.units; u += SEG) {
    let b = u >> 3u;
    let k0 = u * 4u;
    for (var r = 0u; r < RN; r++) {
      let row = p.w_off + min(n0 + r, p.n - 1u) * p.row_words;
      let q = i8x4(w[row + u]);
      let d = half_of(row, p.plane1, b);
      for (var i = 0u; i < TM; i++) {
        let xb = p.x_off + min(m0 + i, p.m - 1u) * p.k;
        acc[r * TM + i] += d * dot(q, x4(xb, k0));
      }
    }
  }
  for (var a = 0u; a < RN * TM; a++) { red[a * WG + lid] = acc[a]; }
  workgroupBarrier();
  for (var s = SEG >> 1u; s > 0u; s >>= 1u) {
    if (sl < s) {
      for (var a = 0u; a < RN * TM; a++) { red[a * WG + lid] += red[a * WG + lid + s]; }
    }
    workgroupBarrier();
  }
  for (var a = sl; a < RN * TM; a += SEG) {
    let r = a / TM;
    let i = a % TM;
    if (n0 + r < p.n && m0 + i < p.m) { out[p.out_off + (m0 + i) * p.n + n0 + r] = red[a * WG + seg * SEG]; }
  }
}

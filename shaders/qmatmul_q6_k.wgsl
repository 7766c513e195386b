// qmatmul_q6_k: out[m, n] = sum_k x[m, k] * W[n, k] with W in the packed Q6_K layout
// (src/submit/ops/qmatmul-layout.ts): each row holds 32 ql words per 256-element super-block, then from
// word `plane1` 16 qh words, from `plane2` 4 words of int8 group scales and from `plane3` the f16 d, two
// per word. Half h (128 elements) of super-block b uses ql bytes 64h.., qh bytes 32h.. and scales 8h..;
// for l in 0..31 element 128h + 32g + l is ((ql nibble) | (qh bits 2g..2g+1) << 4) - 32 times
// d * scale[8h + l/16 + 2g], the nibble being the low (g = 0, 1) or high (g = 2, 3) one of ql[64h + l]
// (g even) or ql[64h + 32 + l] (g odd). A unit is one qh word (16 elements: l = l0..l0+3, g = 0..3) and
// the two ql words it completes.
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

// Four 6-bit quants (one per byte of v) minus their offset 32.
fn q6x4(v: u32) -> vec4f {
  return vec4f(vec4u(v, v >> 8u, v >> 16u, v >> 24u) & vec4u(255u)) - vec4f(32.0);
}

// Signed byte i (0..3) of v.
fn int8_of(v: u32, i: u32) -> f32 {
  return f32(i32(v << (24u - 8u * i)) >> 24u);
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
    let b = u >> 4u;
    let t = u & 15u;
    let h = t >> 3u;
    let l4 = t & 7u;
    let k0 = b * 256u + h * 128u + l4 * 4u;
    // Scales 8h + j + 2g, j = l0 / 16: bytes j and j + 2 of scale words 2h (g = 0, 1) and 2h + 1 (g = 2, 3).
    let j = l4 >> 2u;
    for (var r = 0u; r < RN; r++) {
      let row = p.w_off + min(n0 + r, p.n - 1u) * p.row_words;
      let qa = w[row + b * 32u + h * 16u + l4];
      let qb = w[row + b * 32u + h * 16u + 8u + l4];
      let qh = w[row + p.plane1 + b * 16u + t];
      let q0 = q6x4((qa & 0x0f0f0f0fu) | ((qh & 0x03030303u) << 4u));
      let q1 = q6x4((qb & 0x0f0f0f0fu) | (((qh >> 2u) & 0x03030303u) << 4u));
      let q2 = q6x4(((qa >> 4u) & 0x0f0f0f0fu) | (((qh >> 4u) & 0x03030303u) << 4u));
      let q3 = q6x4(((qb >> 4u) & 0x0f0f0f0fu) | (((qh >> 6u) & 0x03030303u) << 4u));
      let sw = row + p.plane2 + b * 4u + h * 2u;
      let sc_a = w[sw];
      let sc_b = w[sw + 1u];
      let d = half_of(row, p.plane3, b);
      let s0 = int8_of(sc_a, j);
      let s1 = int8_of(sc_a, j + 2u);
      let s2 = int8_of(sc_b, j);
      let s3 = int8_of(sc_b, j + 2u);
      for (var i = 0u; i < TM; i++) {
        let xb = p.x_off + min(m0 + i, p.m - 1u) * p.k;
        let sum = s0 * dot(q0, x4(xb, k0)) + s1 * dot(q1, x4(xb, k0 + 32u)) + s2 * dot(q2, x4(xb, k0 + 64u)) + s3 * dot(q3, x4(xb, k0 + 96u));
        acc[r * TM + i] += d * sum;
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

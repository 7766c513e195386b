// qmatmul_q4_k: out[m, n] = sum_k x[m, k] * W[n, k] with W in the packed Q4_K layout
// (src/submit/ops/qmatmul-layout.ts): each row holds `units` quant words (32 per 256-element
// super-block), then from word `plane1` 3 words of packed 6-bit scales and mins per super-block, then
// from word `plane2` one word per super-block with d (low half) and dmin (high half). Byte 32c + l of a
// super-block holds element 64c + l (low nibble, sub-block 2c) and 64c + 32 + l (high nibble, sub-block
// 2c + 1); an element of sub-block s is (d * sc_s) * q - dmin * m_s. A unit is one quant word (8
// elements); per unit, sum (d sc q - dmin m) x = d sc (q . x) - dmin m (sum x).
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

// The low and the high nibbles of a word's four bytes (byte 0 first).
fn low_nibbles(v: u32) -> vec4f {
  return vec4f(vec4u(v, v >> 8u, v >> 16u, v >> 24u) & vec4u(15u));
}
fn high_nibbles(v: u32) -> vec4f {
  return vec4f(vec4u(v >> 4u, v >> 12u, v >> 20u, v >> 28u) & vec4u(15u));
}

// Byte i (0..11) of the three scale words.
fn scale_byte(s3: vec3u, i: u32) -> u32 {
  return (s3[i >> 2u] >> ((i & 3u) * 8u)) & 0xffu;
}

// The 6-bit scale (x) and min (y) of sub-block s: sub-blocks 0..3 keep them in the low 6 bits of bytes s
// and s + 4; sub-blocks 4..7 keep their low 4 bits in byte s + 4 (scale low nibble, min high nibble) and
// their top 2 bits in the top bits of bytes s - 4 (scale) and s (min).
fn scale_min(s3: vec3u, s: u32) -> vec2f {
  if (s < 4u) {
    return vec2f(f32(scale_byte(s3, s) & 63u), f32(scale_byte(s3, s + 4u) & 63u));
  }
  let low = scale_byte(s3, s + 4u);
  let sc = (low & 15u) | ((scale_byte(s3, s - 4u) >> 6u) << 4u);
  let mn = (low >> 4u) | ((scale_byte(s3, s) >> 6u) << 4u);
  return vec2f(f32(sc), f32(mn));
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
    let b = u >> 5u;
    let c = (u >> 3u) & 3u;
    let k0 = b * 256u + c * 64u + (u & 7u) * 4u;
    for (var r = 0u; r < RN; r++) {
      let row = p.w_off + min(n0 + r, p.n - 1u) * p.row_words;
      let v = w[row + u];
      let lo = low_nibbles(v);
      let hi = high_nibbles(v);
      let sb = row + p.plane1 + b * 3u;
      let s3 = vec3u(w[sb], w[sb + 1u], w[sb + 2u]);
      let dm = unpack2x16float(w[row + p.plane2 + b]);
      let sm_lo = scale_min(s3, 2u * c);
      let sm_hi = scale_min(s3, 2u * c + 1u);
      for (var i = 0u; i < TM; i++) {
        let xb = p.x_off + min(m0 + i, p.m - 1u) * p.k;
        let xl = x4(xb, k0);
        let xh = x4(xb, k0 + 32u);
        let scaled = sm_lo.x * dot(lo, xl) + sm_hi.x * dot(hi, xh);
        let mins = sm_lo.y * dot(xl, vec4f(1.0)) + sm_hi.y * dot(xh, vec4f(1.0));
        acc[r * TM + i] += dm.x * scaled - dm.y * mins;
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

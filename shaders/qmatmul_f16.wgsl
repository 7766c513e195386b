// qmatmul_f16: out[m, n] = sum_k x[m, k] * W[n, k] with W in the packed F16 layout
// (src/submit/ops/qmatmul-layout.ts): word i of a row holds elements 2i (low half) and 2i + 1 (high half)
// as IEEE binary16, widened exactly by unpack2x16float. A unit is one word (two elements).
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
    let k0 = u * 2u;
    // An odd K leaves the last word's high half as padding: its x is never read.
    let second = k0 + 1u < p.k;
    for (var r = 0u; r < RN; r++) {
      let v = unpack2x16float(w[p.w_off + min(n0 + r, p.n - 1u) * p.row_words + u]);
      for (var i = 0u; i < TM; i++) {
        let xb = p.x_off + min(m0 + i, p.m - 1u) * p.k;
        let x1 = select(0.0, x[xb + min(k0 + 1u, p.k - 1u)], second);
        acc[r * TM + i] += v.x * x[xb + k0] + v.y * x1;
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

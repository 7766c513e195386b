// qmatmul_expert_subgroups: the expert-indexed quantized matmul of a routed-experts block. For every token t and
// slot j (0..used-1) with expert id = ids[t, j] in expert_base..expert_base+experts-1,
//   out[t, j, n] = sum_k x[r, k] * W[id - expert_base, n, k],   r = t (x [tokens, K], shared by the
//   slots: gate and up projections) or r = t * used + j (x [tokens, used, K]: the down projection)
// with W [experts, N, K] the 3-D expert tensor in the packed layout of the override constant KIND
// (src/submit/ops/qmatmul-layout.ts): expert e's rows are packed rows e * N .. e * N + N - 1. The
// expert id is read from the ids buffer (moe_route's output) on the device. A pair whose id is outside
// this binding's experts leaves its output row as it was (a model split into several bindings of
// experts runs one dispatch per binding). out [tokens, used, N] f32.
//
// A workgroup of WG invocations owns weight rows n0..n0+RN-1 (x and y of the dispatch). Two ways of
// finding its (token, slot) pairs, chosen per dispatch by the override constant GROUPED:
// - not GROUPED (decode: no more pairs than experts): workgroup z serves pair z, reading its expert id;
// - GROUPED (prefill): workgroup z serves expert expert_base + z and every pair routed to it. It scans
//   the ids WG at a time (adjacent invocations read adjacent ids), compacts the matches into shared
//   memory with a workgroup atomic, and computes them TM at a time, so one weight load serves up to TM
//   pairs (the order of the matches never changes a result: each pair's sum has its own accumulators).
// Invocation `lid` takes units lid, lid + WG, ... of each row (adjacent invocations read adjacent words;
// src/submit/ops/qunit.ts), dequantizes them in registers with GGML's f32 operations and accumulates the
// dot products in f32. The RN * TM sums are then reduced over the workgroup: with subgroupAdd inside each
// subgroup, one partial per subgroup in shared memory, one barrier, and the first RN * TM invocations
// add the partials in subgroup order (needs the device feature `subgroups` and the WGSL language
// feature `subgroup_id`).
// Tail rows (n >= N) are clamped for loading and never stored; x tails of the float kinds are masked.
enable subgroups;
requires subgroup_id;

struct Params {
  x_off: u32,
  ids_off: u32,
  w_off: u32,
  out_off: u32,
  tokens: u32,
  used: u32,
  experts: u32,
  expert_base: u32,
  n: u32,
  k: u32,
  row_words: u32,
  units: u32,
  plane1: u32,
  plane2: u32,
  plane3: u32,
  x_per_slot: u32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> ids: array<u32>;
@group(0) @binding(2) var<storage, read> w: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<uniform> p: Params;

// The packed kind (PACKED_KIND_ID in src/submit/ops/qunit.ts).
const KIND_F32: u32 = 0u;
const KIND_F16: u32 = 1u;
const KIND_BF16: u32 = 2u;
const KIND_Q8_0: u32 = 3u;
const KIND_Q4_0: u32 = 4u;
const KIND_Q4_K: u32 = 5u;
const KIND_Q6_K: u32 = 6u;
const KIND_Q4_1: u32 = 7u;
const KIND_Q5_0: u32 = 8u;
const KIND_Q5_1: u32 = 9u;
override KIND: u32 = KIND_F32;

// One unit, dequantized: groups of 4 adjacent elements starting at elements k0, k0 + stride, ...; in
// group 0 only the first `valid` elements exist (the tail of a float row; the others are 0).
struct Unit {
  w: array<vec4f, 4>,
  k0: u32,
  stride: u32,
  valid: u32,
}

// Groups per unit of this kind.
fn groups() -> u32 {
  switch (KIND) {
    case KIND_Q4_0, KIND_Q4_K, KIND_Q4_1, KIND_Q5_0, KIND_Q5_1: { return 2u; }
    case KIND_Q6_K: { return 4u; }
    default: { return 1u; }
  }
}

// The f16 of block b in the half plane starting at word `plane` of the row at `row`.
fn half_of(row: u32, plane: u32, b: u32) -> f32 {
  let pair = unpack2x16float(w[row + plane + (b >> 1u)]);
  return select(pair.x, pair.y, (b & 1u) == 1u);
}

// The two bfloat16 of a word (low half first), widened exactly.
fn bf16_pair(v: u32) -> vec2f {
  return vec2f(bitcast<f32>(v << 16u), bitcast<f32>(v & 0xffff0000u));
}

// The four int8 of a word, little-endian, sign-extended.
fn i8x4(v: u32) -> vec4f {
  return vec4f(vec4i(i32(v << 24u), i32(v << 16u), i32(v << 8u), i32(v)) >> vec4u(24u));
}

// The low and the high nibbles of a word's four bytes (byte 0 first).
fn low_nibbles(v: u32) -> vec4f {
  return vec4f(vec4u(v, v >> 8u, v >> 16u, v >> 24u) & vec4u(15u));
}
fn high_nibbles(v: u32) -> vec4f {
  return vec4f(vec4u(v >> 4u, v >> 12u, v >> 20u, v >> 28u) & vec4u(15u));
}

// The fifth bits of four Q5_0/Q5_1 elements as values (16 or 0): bits 0..3 of h, one per element.
fn fifth_bits(h: u32) -> vec4f {
  return vec4f((vec4u(h, h >> 1u, h >> 2u, h >> 3u) & vec4u(1u)) << vec4u(4u));
}

// Byte i (0..11) of Q4_K's three scale words.
fn scale_byte(s3: vec3u, i: u32) -> u32 {
  return (s3[i >> 2u] >> ((i & 3u) * 8u)) & 0xffu;
}

// Q4_K's 6-bit scale (x) and min (y) of sub-block s: sub-blocks 0..3 keep them in the low 6 bits of bytes
// s and s + 4; sub-blocks 4..7 keep their low 4 bits in byte s + 4 (scale low nibble, min high nibble)
// and their top 2 bits in the top bits of bytes s - 4 (scale) and s (min).
fn scale_min(s3: vec3u, s: u32) -> vec2f {
  if (s < 4u) {
    return vec2f(f32(scale_byte(s3, s) & 63u), f32(scale_byte(s3, s + 4u) & 63u));
  }
  let low = scale_byte(s3, s + 4u);
  let sc = (low & 15u) | ((scale_byte(s3, s - 4u) >> 6u) << 4u);
  let mn = (low >> 4u) | ((scale_byte(s3, s) >> 6u) << 4u);
  return vec2f(f32(sc), f32(mn));
}

// Four Q6_K quants (one per byte of v) minus their offset 32.
fn q6x4(v: u32) -> vec4f {
  return vec4f(vec4u(v, v >> 8u, v >> 16u, v >> 24u) & vec4u(255u)) - vec4f(32.0);
}

// Signed byte i (0..3) of v.
fn int8_of(v: u32, i: u32) -> f32 {
  return f32(i32(v << (24u - 8u * i)) >> 24u);
}

// Unit u of the packed row whose first word is `row`, dequantized.
fn unit_of(row: u32, u: u32) -> Unit {
  var q: Unit;
  q.valid = 4u;
  switch (KIND) {
    case KIND_F32: {
      q.k0 = 4u * u;
      q.valid = min(4u, p.k - q.k0);
      let last = row + p.k - 1u;
      let v = vec4u(w[min(row + q.k0, last)], w[min(row + q.k0 + 1u, last)], w[min(row + q.k0 + 2u, last)], w[min(row + q.k0 + 3u, last)]);
      q.w[0] = bitcast<vec4f>(v);
    }
    case KIND_F16, KIND_BF16: {
      q.k0 = 4u * u;
      q.valid = min(4u, p.k - q.k0);
      // An odd word count leaves the last unit one word short: its second word is never used.
      let a = w[row + 2u * u];
      let b = w[row + min(2u * u + 1u, p.row_words - 1u)];
      if (KIND == KIND_F16) {
        q.w[0] = vec4f(unpack2x16float(a), unpack2x16float(b));
      } else {
        q.w[0] = vec4f(bf16_pair(a), bf16_pair(b));
      }
    }
    case KIND_Q8_0: {
      q.k0 = 4u * u;
      q.w[0] = i8x4(w[row + u]) * half_of(row, p.plane1, u >> 3u);
    }
    case KIND_Q4_0: {
      let b = u >> 2u;
      q.k0 = b * 32u + (u & 3u) * 4u;
      q.stride = 16u;
      let v = w[row + u];
      let d = half_of(row, p.plane1, b);
      q.w[0] = (low_nibbles(v) - vec4f(8.0)) * d;
      q.w[1] = (high_nibbles(v) - vec4f(8.0)) * d;
    }
    case KIND_Q4_K: {
      let b = u >> 5u;
      let c = (u >> 3u) & 3u;
      q.k0 = b * 256u + c * 64u + (u & 7u) * 4u;
      q.stride = 32u;
      let v = w[row + u];
      let sb = row + p.plane1 + b * 3u;
      let s3 = vec3u(w[sb], w[sb + 1u], w[sb + 2u]);
      let dm = unpack2x16float(w[row + p.plane2 + b]);
      let lo = scale_min(s3, 2u * c);
      let hi = scale_min(s3, 2u * c + 1u);
      q.w[0] = (dm.x * lo.x) * low_nibbles(v) - vec4f(dm.y * lo.y);
      q.w[1] = (dm.x * hi.x) * high_nibbles(v) - vec4f(dm.y * hi.y);
    }
    case KIND_Q6_K: {
      let b = u >> 4u;
      let t = u & 15u;
      let h = t >> 3u;
      let l4 = t & 7u;
      q.k0 = b * 256u + h * 128u + l4 * 4u;
      q.stride = 32u;
      let qa = w[row + b * 32u + h * 16u + l4];
      let qb = w[row + b * 32u + h * 16u + 8u + l4];
      let qh = w[row + p.plane1 + b * 16u + t];
      // Scales 8h + j + 2g, j = l4 / 4: bytes j and j + 2 of scale words 2h (g = 0, 1) and 2h + 1 (g = 2, 3).
      let sw = row + p.plane2 + b * 4u + h * 2u;
      let sc_a = w[sw];
      let sc_b = w[sw + 1u];
      let j = l4 >> 2u;
      let d = half_of(row, p.plane3, b);
      q.w[0] = (d * int8_of(sc_a, j)) * q6x4((qa & 0x0f0f0f0fu) | ((qh & 0x03030303u) << 4u));
      q.w[1] = (d * int8_of(sc_a, j + 2u)) * q6x4((qb & 0x0f0f0f0fu) | (((qh >> 2u) & 0x03030303u) << 4u));
      q.w[2] = (d * int8_of(sc_b, j)) * q6x4(((qa >> 4u) & 0x0f0f0f0fu) | (((qh >> 4u) & 0x03030303u) << 4u));
      q.w[3] = (d * int8_of(sc_b, j + 2u)) * q6x4(((qb >> 4u) & 0x0f0f0f0fu) | (((qh >> 6u) & 0x03030303u) << 4u));
    }
    case KIND_Q4_1: {
      let b = u >> 2u;
      q.k0 = b * 32u + (u & 3u) * 4u;
      q.stride = 16u;
      let v = w[row + u];
      let dm = unpack2x16float(w[row + p.plane1 + b]);
      q.w[0] = low_nibbles(v) * dm.x + vec4f(dm.y);
      q.w[1] = high_nibbles(v) * dm.x + vec4f(dm.y);
    }
    case KIND_Q5_0, KIND_Q5_1: {
      let b = u >> 2u;
      let j = u & 3u;
      q.k0 = b * 32u + j * 4u;
      q.stride = 16u;
      let v = w[row + u];
      // Bit e of qh is the fifth bit of element e of the block: this unit's are bits 4j..4j+3 (low
      // nibbles, elements 4j..4j+3) and 16+4j..16+4j+3 (high nibbles).
      let h = w[row + p.plane1 + b] >> (j * 4u);
      let lo = low_nibbles(v) + fifth_bits(h);
      let hi = high_nibbles(v) + fifth_bits(h >> 16u);
      if (KIND == KIND_Q5_0) {
        let d = half_of(row, p.plane2, b);
        q.w[0] = (lo - vec4f(16.0)) * d;
        q.w[1] = (hi - vec4f(16.0)) * d;
      } else {
        let dm = unpack2x16float(w[row + p.plane2 + b]);
        q.w[0] = lo * dm.x + vec4f(dm.y);
        q.w[1] = hi * dm.x + vec4f(dm.y);
      }
    }
    default: {}
  }
  // Lanes past the end of a float row weigh nothing.
  q.w[0] = select(vec4f(0.0), q.w[0], vec4u(0u, 1u, 2u, 3u) < vec4u(q.valid));
  return q;
}

// Invocations per workgroup: a power of two in 32..256.
override WG: u32 = 64u;
// Weight rows and pairs per workgroup step; RN * TM <= MAX_ACC, TM <= MAX_TM (TM = 1 unless GROUPED).
override RN: u32 = 2u;
override TM: u32 = 1u;
// Workgroup z is an expert (true) or a (token, slot) pair (false).
override GROUPED: bool = false;
const MAX_ACC: u32 = 8u;
const MAX_TM: u32 = 4u;

var<workgroup> red: array<f32, WG * MAX_ACC>;
// GROUPED: the pairs (t * used + j) of this chunk of ids routed to this workgroup's expert.
var<workgroup> hits: array<u32, WG>;
var<workgroup> hit_count: atomic<u32>;
var<workgroup> hit_total: u32;

// x[row, k .. k + 3], `base` the element index of x[row, 0].
fn x4(base: u32, k: u32) -> vec4f {
  return vec4f(x[base + k], x[base + k + 1u], x[base + k + 2u], x[base + k + 3u]);
}

// The same for the float kinds, whose last unit may pass K: indices are clamped to the row (the weights
// of those lanes are 0).
fn x4_tail(base: u32, k: u32) -> vec4f {
  let last = base + p.k - 1u;
  return vec4f(x[min(base + k, last)], x[min(base + k + 1u, last)], x[min(base + k + 2u, last)], x[min(base + k + 3u, last)]);
}

// The dot product of a dequantized unit with the row of x at `base`.
fn unit_dot(q: ptr<function, Unit>, base: u32) -> f32 {
  if (KIND <= KIND_BF16) {
    return dot((*q).w[0], x4_tail(base, (*q).k0));
  }
  var s = 0.0;
  for (var g = 0u; g < groups(); g++) { s += dot((*q).w[g], x4(base, (*q).k0 + g * (*q).stride)); }
  return s;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) groups_n: vec3u,
        @builtin(local_invocation_index) lid: u32,
        @builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_id) sg: u32, @builtin(num_subgroups) sgs: u32) {
  let n0 = (wid.x + wid.y * groups_n.x) * RN;
  if (n0 >= p.n) { return; }
  let pairs = p.tokens * p.used;
  let chunks = select(1u, (pairs + WG - 1u) / WG, GROUPED);
  for (var c = 0u; c < chunks; c++) {
    // e: the expert inside this binding; total: the pairs this step serves; stored: whether they are ours.
    var e = 0u;
    var total = 1u;
    var stored = true;
    if (GROUPED) {
      e = wid.z;
      if (lid == 0u) { atomicStore(&hit_count, 0u); }
      workgroupBarrier();
      let pi = c * WG + lid;
      if (pi < pairs && ids[p.ids_off + pi] == p.expert_base + e) { hits[atomicAdd(&hit_count, 1u)] = pi; }
      workgroupBarrier();
      if (lid == 0u) { hit_total = atomicLoad(&hit_count); }
      total = workgroupUniformLoad(&hit_total);
    } else {
      let id = ids[p.ids_off + wid.z];
      stored = id >= p.expert_base && id - p.expert_base < p.experts;
      e = min(id - p.expert_base, p.experts - 1u);
    }
    for (var h0 = 0u; h0 < total; h0 += TM) {
      var acc = array<f32, MAX_ACC>();
      var pair: array<u32, MAX_TM>;
      var xb: array<u32, MAX_TM>;
      for (var i = 0u; i < TM; i++) {
        let pr = select(wid.z, hits[min(h0 + i, total - 1u)], GROUPED);
        pair[i] = pr;
        xb[i] = p.x_off + select(pr / p.used, pr, p.x_per_slot == 1u) * p.k;
      }
      for (var u = lid; u < p.units; u += WG) {
        for (var r = 0u; r < RN; r++) {
          var q = unit_of(p.w_off + (e * p.n + min(n0 + r, p.n - 1u)) * p.row_words, u);
          for (var i = 0u; i < TM; i++) { acc[r * TM + i] += unit_dot(&q, xb[i]); }
        }
      }
      for (var a = 0u; a < RN * TM; a++) {
        let s = subgroupAdd(acc[a]);
        if (lane == 0u) { red[a * WG + sg] = s; }
      }
      workgroupBarrier();
      if (lid < RN * TM) {
        var sum = 0.0;
        for (var g = 0u; g < sgs; g++) { sum += red[lid * WG + g]; }
        let r = lid / TM;
        let i = lid % TM;
        if (stored && n0 + r < p.n && h0 + i < total) { out[p.out_off + pair[i] * p.n + n0 + r] = sum; }
      }
      // The partials and the matches are read before the next step overwrites them.
      workgroupBarrier();
    }
  }
}

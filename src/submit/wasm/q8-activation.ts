// The scalar twin of wasm/quant.wat's q8-activation kernel (`qmatmul_q8`, chosen with
// `hostKernels: 'wasm-q8'`): out[M, N] = x[M, K] . W^T for packed Q8_0, Q4_0, Q4_K or Q6_K rows (src/submit/ops/
// qmatmul-layout.ts) with every row of x first quantized to blocks of 32 signed 8-bit values and an f32
// scale each. It repeats the kernel's operations one by one in f32 (Math.fround after each), lane by
// lane, so the kernel must equal it bit for bit; the tests hold it there. Pure function of its
// arguments: reads x and the packed words, writes only `out`.
import { halfToFloat, packedRowLayout } from '../ops/qmatmul-layout.js';

/** Elements per quantized block of x (and per weight block of Q8_0 / Q4_0; a Q6_K half has four). */
const BLOCK = 32;
/** Largest magnitude of a quantized x value. */
const Q_MAX = 127;
/**
 * Vector lanes of the kernel's accumulators, and elements per lane per 16: for Q8_0 and Q4_0, of every 16
 * consecutive elements of a block, lane l sums elements 4l .. 4l + 3 (the kernel's x layout, even then odd
 * elements, puts them there); Q4_K and Q6_K put each sub-block's or group's whole sum in one lane.
 */
const LANES = 4;
const PER_LANE = 4;
const SIXTEEN = 16;

/** Element e (0 .. 31) of a 32-element block: the lane whose integer sum it goes to. */
function laneOf(e: number): number {
  return Math.floor((e % SIXTEEN) / PER_LANE);
}
const NIBBLE_OFFSET = 8;
const I16_MIN = -32768;
const I16_MAX = 32767;

const f = Math.fround;

/** f32x4.nearest: to the nearest integer, ties to even. */
function nearestEven(v: number): number {
  const r = Math.round(v);
  return Math.abs(v % 1) === 0.5 ? 2 * Math.round(v / 2) : r;
}

/** i32x4.trunc_sat_f32x4_s then i16x8.narrow_i32x4_s of an integral f32 (NaN gives 0). */
function toI16(v: number): number {
  if (Number.isNaN(v)) return 0;
  return Math.min(I16_MAX, Math.max(I16_MIN, v));
}

/** One block of x (32 values from `at`) quantized: the i16 values into `q`, returns the scale d. */
export function quantizeBlock(x: ArrayLike<number>, at: number, q: Int16Array): number {
  let amax = 0;
  for (let e = 0; e < BLOCK; e++) amax = Math.max(amax, Math.abs(x[at + e]!));
  const d = f(amax / Q_MAX);
  const id = d !== 0 ? f(1 / d) : 0;
  for (let e = 0; e < BLOCK; e++) q[e] = toI16(nearestEven(f(x[at + e]! * id)));
  return d;
}

/** Elements per Q6_K super-block, per half of one, and per scale group. */
const QK_K = 256;
const HALF = 128;
const GROUP = 16;
const Q6_OFFSET = 32;

/**
 * The twin of qmatmul_q8 for kind 'Q8_0', 'Q4_0' (k a multiple of 32), 'Q4_K' or 'Q6_K' (k a multiple of 256);
 * `w` holds n packed rows.
 */
export function qmatmulQ8Reference(kind: 'Q8_0' | 'Q4_0' | 'Q4_K' | 'Q6_K', x: Float32Array, w: Uint32Array, out: Float32Array, m: number, n: number, k: number): void {
  const layout = packedRowLayout(kind, k);
  const blocks = k / BLOCK;
  const bytes = new Uint8Array(w.buffer, w.byteOffset, w.byteLength);
  const xq = new Int16Array(m * k);
  const xd = new Float32Array(m * blocks);
  const block = new Int16Array(BLOCK);
  for (let i = 0; i < m; i++) {
    for (let b = 0; b < blocks; b++) {
      xd[i * blocks + b] = quantizeBlock(x, i * k + b * BLOCK, block);
      xq.set(block, i * k + b * BLOCK);
    }
  }
  if (kind === 'Q4_K') {
    q4kRows(bytes, layout.rowWords * 4, layout.planes.map((p) => p * 4), xq, xd, out, m, n, k);
    return;
  }
  if (kind === 'Q6_K') {
    q6kRows(bytes, layout.rowWords * 4, layout.planes.map((p) => p * 4), xq, xd, out, m, n, k);
    return;
  }
  const wq = new Int8Array(BLOCK);
  const acc = new Float64Array(LANES);
  for (let j = 0; j < n; j++) {
    const row = j * layout.rowWords * 4;
    const halves = row + layout.planes[0] * 4;
    for (let i = 0; i < m; i++) {
      acc.fill(0);
      for (let b = 0; b < blocks; b++) {
        for (let e = 0; e < BLOCK; e++) {
          if (kind === 'Q8_0') wq[e] = bytes[row + b * BLOCK + e]!;
          else {
            const byte = bytes[row + b * (BLOCK / 2) + (e % (BLOCK / 2))]!;
            wq[e] = (e < BLOCK / 2 ? byte & 0x0f : byte >> 4) - NIBBLE_OFFSET;
          }
        }
        const dw = halfToFloat(bytes[halves + 2 * b]! | (bytes[halves + 2 * b + 1]! << 8));
        const scale = f(dw * xd[i * blocks + b]!);
        const xBase = i * k + b * BLOCK;
        const s = [0, 0, 0, 0];
        for (let e = 0; e < BLOCK; e++) s[laneOf(e)]! += wq[e]! * xq[xBase + e]!;
        for (let l = 0; l < LANES; l++) acc[l] = f(acc[l]! + f(f(s[l]!) * scale));
      }
      out[i * n + j] = f(f(acc[0]! + acc[1]!) + f(acc[2]! + acc[3]!));
    }
  }
}

/**
 * The lane of Q6_K's accumulators that group t (0..3) of a step goes to: the kernel sums each group's 16
 * products across into one lane, the four groups of a step coming out in the order 0, 2, 1, 3.
 */
const Q6_LANE_OF_GROUP = [0, 2, 1, 3] as const;

/**
 * Q6_K rows against quantized x, in the kernel's order: super-block b, half h, lane step l, group t. Per
 * group the exact integer sum of its 16 products goes in whole to lane Q6_LANE_OF_GROUP[t]:
 * acc += f32(sum) * f(f(d sc) d_x), one f32 step per group.
 */
function q6kRows(bytes: Uint8Array, rowBytes: number, planes: readonly number[], xq: Int16Array, xd: Float32Array, out: Float32Array, m: number, n: number, k: number): void {
  const [qhPlane, scPlane, dPlane] = planes as [number, number, number];
  const supers = k / QK_K;
  const blocks = k / BLOCK;
  const q = new Int8Array(GROUP);
  const acc = new Float64Array(LANES);
  for (let j = 0; j < n; j++) {
    const row = j * rowBytes;
    for (let i = 0; i < m; i++) {
      acc.fill(0);
      for (let b = 0; b < supers; b++) {
        const d = halfToFloat(bytes[row + dPlane + 2 * b]! | (bytes[row + dPlane + 2 * b + 1]! << 8));
        for (let h = 0; h < 2; h++) {
          const ql = row + b * HALF + h * (HALF / 2);
          const qh = row + qhPlane + b * (HALF / 2) + h * (BLOCK);
          for (let l = 0; l < BLOCK; l += GROUP) {
            for (let t = 0; t < LANES; t++) {
              for (let e = 0; e < GROUP; e++) {
                const a = bytes[ql + l + e]!;
                const c = bytes[ql + BLOCK + l + e]!;
                const hi = bytes[qh + l + e]!;
                const v = t === 0 ? (a & 0x0f) | ((hi & 0x03) << 4) : t === 1 ? (c & 0x0f) | ((hi & 0x0c) << 2) : t === 2 ? (a >> 4) | (hi & 0x30) : (c >> 4) | ((hi >> 2) & 0x30);
                q[e] = v - Q6_OFFSET;
              }
              const sc = (bytes[row + scPlane + b * GROUP + h * 8 + l / GROUP + 2 * t]! << 24) >> 24;
              const xBlock = b * (QK_K / BLOCK) + h * 4 + t;
              const scale = f(f(d * sc) * xd[i * blocks + xBlock]!);
              const xBase = i * k + b * QK_K + h * HALF + l + BLOCK * t;
              let s = 0;
              for (let e = 0; e < GROUP; e++) s += q[e]! * xq[xBase + e]!;
              const lane = Q6_LANE_OF_GROUP[t]!;
              acc[lane] = f(acc[lane]! + f(f(s) * scale));
            }
          }
        }
      }
      out[i * n + j] = f(f(acc[0]! + acc[1]!) + f(acc[2]! + acc[3]!));
    }
  }
}

/** The 6-bit scale and min of sub-block s from a Q4_K super-block's 12 scale bytes at `at` (GGML's packing). */
function q4kScaleMin(bytes: Uint8Array, at: number, s: number): [number, number] {
  if (s < 4) return [bytes[at + s]! & 63, bytes[at + s + 4]! & 63];
  const hi4 = bytes[at + s + 4]!;
  return [(hi4 & 15) | ((bytes[at + s - 4]! >> 6) << 4), (hi4 >> 4) | ((bytes[at + s]! >> 6) << 4)];
}

/**
 * Q4_K rows against quantized x, in the kernel's order: super-block b, step t (sub-blocks 4t .. 4t + 3, x's
 * blocks 8b + 4t ..). Sub-block 4t + l's exact integer sums go whole to lane l: acc += f32(sum q x_q) *
 * f(f(d sc) d_x), then acc += f32(sum x_q) * f(-f(dmin m) d_x), one f32 step of each per step and lane.
 */
function q4kRows(bytes: Uint8Array, rowBytes: number, planes: readonly number[], xq: Int16Array, xd: Float32Array, out: Float32Array, m: number, n: number, k: number): void {
  const [scPlane, dmPlane] = planes as [number, number];
  const supers = k / QK_K;
  const blocks = k / BLOCK;
  const acc = new Float64Array(LANES);
  const SUBS = QK_K / BLOCK;
  const SCALE_BYTES = 12;
  for (let j = 0; j < n; j++) {
    const row = j * rowBytes;
    for (let i = 0; i < m; i++) {
      acc.fill(0);
      for (let b = 0; b < supers; b++) {
        const dmAt = row + dmPlane + 4 * b;
        const d = halfToFloat(bytes[dmAt]! | (bytes[dmAt + 1]! << 8));
        const dmin = halfToFloat(bytes[dmAt + 2]! | (bytes[dmAt + 3]! << 8));
        for (let t = 0; t < SUBS / LANES; t++) {
          for (let lane = 0; lane < LANES; lane++) {
            const s = t * LANES + lane;
            const [sc, mn] = q4kScaleMin(bytes, row + scPlane + SCALE_BYTES * b, s);
            const quants = row + b * (QK_K / 2) + (s >> 1) * BLOCK;
            const dx = xd[i * blocks + b * SUBS + s]!;
            const xBase = i * k + b * QK_K + s * BLOCK;
            const scale = f(f(d * sc) * dx);
            const min = f(-f(dmin * mn) * dx);
            let sq = 0;
            let sx = 0;
            for (let e = 0; e < BLOCK; e++) {
              const q = s % 2 === 0 ? bytes[quants + e]! & 0x0f : bytes[quants + e]! >> 4;
              sq += q * xq[xBase + e]!;
              sx += xq[xBase + e]!;
            }
            acc[lane] = f(acc[lane]! + f(f(sq) * scale));
            acc[lane] = f(acc[lane]! + f(f(sx) * min));
          }
        }
      }
      out[i * n + j] = f(f(acc[0]! + acc[1]!) + f(acc[2]! + acc[3]!));
    }
  }
}

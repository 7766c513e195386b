// sample: one token id per row of logits x [rows, cols] -> out u32 [rows], drawn on the device with
// temperature, top-k and top-p from a counter-based random number (shaders/sample.wgsl, whose header
// gives the arithmetic). The host twin here computes the same integers in the same order, so for the same
// logits, seed, step and row it returns the same id as any adapter, bit for bit: after one f32
// subtraction and one f32 multiplication per logit (correctly rounded in WGSL and reproduced here with
// Math.fround) everything is integer arithmetic, and the random number is Philox4x32-10 of
// (seed, step, row), which depends on no earlier draw.
//
// How it relates to the session's sampler (src/session/sampler.ts, llama2.c's semantics): the same options
// (temperature 0 = greedy argmax with the first maximum on ties; temperature > 0 divides the logits; topP in
// (0, 1] keeps the smallest most likely set whose mass passes topP; a safe-integer seed) plus `step`, and
// an optional topK. It differs in ways that do not change the distribution beyond ~1e-6 relative: weights
// are 2^31 * 2^(-t / 2^24) in integers (tokens below 2^-31 of the most likely one are never drawn), the
// nucleus keeps whole tie classes of the quantised level, tokens are walked in the device's order, and the
// coin is Philox of (seed, step) instead of a sequential xorshift stream. The sequences of ids for a seed
// therefore differ from the old sampler's, but are the same on every provider.
//
// Pure apart from a module scratch (two typed arrays grown to the widest row seen, reused by every call on
// this thread).
import shader from '../../../shaders/sample.wgsl?raw';
import { F32, U32, checkIndex, checkOperands, checkShape, checkSize, linearWorkgroups, packParams, rejectParam } from './common.js';
import type { OpBinding, OpDef } from './types.js';

/** What to draw (the session's SamplerOptions plus the counter). */
export interface SampleOptions {
  /** 0 is greedy (first maximum); otherwise a finite positive number. */
  readonly temperature: number;
  /** Nucleus threshold in (0, 1]; 1 (default) keeps everything. */
  readonly topP?: number;
  /** Keep only the k most likely tokens (and the ties of the k-th); 0 (default) keeps everything. */
  readonly topK?: number;
  /** Key of the random numbers: any safe integer (negative ones as their 64-bit two's complement). */
  readonly seed: number;
  /** Counter of the draw (e.g. the position of the token being chosen): 0..2^32-1. */
  readonly step: number;
}

export interface SampleParams extends SampleOptions {
  readonly rows: number;
  readonly cols: number;
}

/** Invocations per workgroup in the shader; the walk order of the draw depends on it. */
export const SAMPLE_WORKGROUP = 256;
/** Widest row: 64-bit sums of at most 2^22 weights of at most 2^31 stay exact in a JS number too. */
export const SAMPLE_MAX_COLS = 2 ** 22;
/** Levels t count 1/2^24 octaves below the row maximum. */
export const SAMPLE_FRAC_BITS = 24;
/** Level marking a zero weight: 31 octaves (a weight below 2^-31 of the maximum's). */
export const SAMPLE_T_MAX = 31 * 2 ** SAMPLE_FRAC_BITS;

const FLAG_GREEDY = 1;
const FLAG_TOP_P = 2;
const FLAG_TOP_K = 4;
const FRAC_MASK = 2 ** SAMPLE_FRAC_BITS - 1;
const TWO32 = 2 ** 32;
/** 1.0 in Q31. */
const ONE = 2 ** 31;
/** round(ln 2 * 2^32), split in 16-bit halves. */
const LN2_Q32 = 0xb17217f8;
const LN2_HI = LN2_Q32 >>> 16;
const LN2_LO = LN2_Q32 & 0xffff;
const TAYLOR_TERMS = 8;
/** Clamp of the level scale: temperatures outside about [1.3e-12, 4.5e26] act as the nearest end. */
const SCALE_MIN = 2 ** -64;
const SCALE_MAX = 2 ** 64;
/** Radix passes over the 29 bits of a level: shift and digit mask of each (as the shader). */
const PASSES: readonly (readonly [shift: number, mask: number])[] = [
  [21, 0xff],
  [13, 0xff],
  [5, 0xff],
  [0, 0x1f],
];
const BINS = 256;
/** Philox4x32 multipliers and Weyl key increments (Random123). */
const PHILOX_M0 = 0xd2511f53;
const PHILOX_M1 = 0xcd9e8d57;
const PHILOX_W0 = 0x9e3779b9;
const PHILOX_W1 = 0xbb67ae85;
const PHILOX_ROUNDS = 10;

/** Parameters of one draw as the shader receives them. */
interface Packed {
  readonly flags: number;
  readonly scale: number;
  readonly limit: number;
  readonly topP: number;
  readonly topK: number;
  readonly seedLo: number;
  readonly seedHi: number;
  readonly step: number;
}

/** The f32 level scale 2^24 log2(e) / temperature (clamped) and the f32 difference limit T_MAX / scale. */
export function sampleScale(temperature: number): { readonly scale: number; readonly limit: number } {
  const scale = Math.fround(Math.min(Math.max((2 ** SAMPLE_FRAC_BITS * Math.LOG2E) / temperature, SCALE_MIN), SCALE_MAX));
  return { scale, limit: Math.fround(SAMPLE_T_MAX / scale) };
}

/** A safe-integer seed as the low and high words of its 64-bit two's complement. */
function seedWords(seed: number): [number, number] {
  const s = BigInt.asUintN(64, BigInt(seed));
  return [Number(s & 0xffffffffn), Number(s >> 32n)];
}

function pack(o: SampleOptions): Packed {
  const topP = o.topP ?? 1;
  const topK = o.topK ?? 0;
  const [seedLo, seedHi] = seedWords(o.seed);
  const { scale, limit } = o.temperature === 0 ? { scale: 0, limit: 0 } : sampleScale(o.temperature);
  return {
    flags: (o.temperature === 0 ? FLAG_GREEDY : 0) | (topP < 1 ? FLAG_TOP_P : 0) | (topK > 0 ? FLAG_TOP_K : 0),
    scale,
    limit,
    topP: topP < 1 ? Math.floor(topP * TWO32) : 0,
    topK,
    seedLo,
    seedHi,
    step: o.step,
  };
}

/** floor(a * b / 2^shift) for a < 2^32, b < 2^32 and shift >= 16, exactly (products of 16-bit halves). */
function mulShift(a: number, b: number, shift: number): number {
  const hi = a * (b >>> 16);
  const lo = a * (b & 0xffff);
  return Math.floor((hi + Math.floor(lo / 65536)) / 2 ** (shift - 16));
}

/** The weight of level t < SAMPLE_T_MAX: 2^31 * 2^(-t / 2^24) as the shader computes it (>= 1). */
export function sampleWeight(t: number): number {
  const f = (t & FRAC_MASK) * 256;
  const z = Math.floor((f * LN2_HI + Math.floor((f * LN2_LO) / 65536)) / 2 ** 17);
  let acc = ONE;
  for (let k = TAYLOR_TERMS; k >= 1; k--) acc = ONE - mulShift(Math.floor(z / k), acc, 31);
  return Math.floor(acc / 2 ** Math.floor(t / 2 ** SAMPLE_FRAC_BITS));
}

/** The 64-bit product a * b of two u32 as [lo, hi]. */
function mulWide(a: number, b: number): [number, number] {
  const p00 = (a & 0xffff) * (b & 0xffff);
  const p01 = (a & 0xffff) * (b >>> 16);
  const p10 = (a >>> 16) * (b & 0xffff);
  const p11 = (a >>> 16) * (b >>> 16);
  const mid = Math.floor(p00 / 65536) + (p01 % 65536) + (p10 % 65536);
  const hi = p11 + Math.floor(p01 / 65536) + Math.floor(p10 / 65536) + Math.floor(mid / 65536);
  return [((mid % 65536) * 65536 + (p00 % 65536)) >>> 0, hi >>> 0];
}

/** Philox4x32-10 (Salmon et al., SC'11; Random123's known answers hold) of a 4-word counter under a 2-word key. */
export function philox4x32(counter: readonly [number, number, number, number], key: readonly [number, number]): [number, number, number, number] {
  let [c0, c1, c2, c3] = counter.map((v) => v >>> 0) as [number, number, number, number];
  let [k0, k1] = key.map((v) => v >>> 0) as [number, number];
  for (let round = 0; round < PHILOX_ROUNDS; round++) {
    if (round > 0) {
      k0 = (k0 + PHILOX_W0) >>> 0;
      k1 = (k1 + PHILOX_W1) >>> 0;
    }
    const [aLo, aHi] = mulWide(PHILOX_M0, c0);
    const [bLo, bHi] = mulWide(PHILOX_M1, c2);
    [c0, c1, c2, c3] = [(bHi ^ c1 ^ k0) >>> 0, bLo, (aHi ^ c3 ^ k1) >>> 0, aLo];
  }
  return [c0, c1, c2, c3];
}

/** The random word of a draw: word 0 of Philox4x32-10, counter (step, row, 0, 0), key = the seed's two words. */
export function sampleRandom(seed: number, step: number, row: number): number {
  return philox4x32([step, row, 0, 0], seedWords(seed))[0];
}

/** floor(a * f / 2^32), exactly, for a < 2^53 and f < 2^32. */
function scaleFraction(a: number, f: number): number {
  return Number((BigInt(a) * BigInt(f)) >> 32n);
}

let levels = new Uint32Array(0);
let weights = new Uint32Array(0);

/**
 * Lowers `bound` to the smallest theta <= bound with F(theta) > target, where F sums 1 (`byMass` false) or
 * the weight of every level <= theta; with `topP` nonzero the target is floor(F(bound) * topP / 2^32).
 * Returns `bound` when F(bound) <= target. Radix passes as the shader's.
 */
function selectBound(cols: number, bound: number, byMass: boolean, target: number, topP: number): number {
  const hist = new Float64Array(BINS);
  let prefix = 0;
  let mask = 0;
  let below = 0;
  for (const [pass, [shift, digitMask]] of PASSES.entries()) {
    hist.fill(0);
    for (let i = 0; i < cols; i++) {
      const t = levels[i]!;
      if (t < SAMPLE_T_MAX && t <= bound && ((t & mask) >>> 0) === prefix) hist[(t >>> shift) & digitMask]! += byMass ? weights[i]! : 1;
    }
    if (pass === 0 && topP !== 0) {
      let total = 0;
      for (let b = 0; b < BINS; b++) total += hist[b]!;
      target = scaleFraction(total, topP);
    }
    let run = below;
    let digit = -1;
    for (let b = 0; b < BINS; b++) {
      if (run + hist[b]! > target) {
        digit = b;
        break;
      }
      run += hist[b]!;
    }
    if (digit < 0) return bound;
    prefix = (prefix | (digit << shift)) >>> 0;
    mask = (mask | (digitMask << shift)) >>> 0;
    below = run;
  }
  return prefix;
}

function sampleInto(x: Float32Array, base: number, cols: number, p: Packed, row: number): number {
  let best = 0;
  for (let i = 1; i < cols; i++) if (x[base + i]! > x[base + best]!) best = i;
  if ((p.flags & FLAG_GREEDY) !== 0) return best;
  const mx = x[base + best]!;
  if (levels.length < cols) {
    levels = new Uint32Array(cols);
    weights = new Uint32Array(cols);
  }
  for (let i = 0; i < cols; i++) {
    const d = Math.fround(mx - x[base + i]!);
    const t = d >= p.limit ? SAMPLE_T_MAX : Math.min(Math.trunc(Math.fround(d * p.scale)), SAMPLE_T_MAX);
    levels[i] = t;
    weights[i] = t < SAMPLE_T_MAX ? sampleWeight(t) : 0;
  }
  let bound = SAMPLE_T_MAX - 1;
  if ((p.flags & FLAG_TOP_K) !== 0) bound = selectBound(cols, bound, false, p.topK - 1, 0);
  if ((p.flags & FLAG_TOP_P) !== 0) bound = selectBound(cols, bound, true, 0, p.topP);
  // The draw, in the shader's order: invocation j's tokens j, j + 256, ... before invocation j + 1's.
  const owners = Math.min(SAMPLE_WORKGROUP, cols);
  const mass = new Float64Array(owners);
  let total = 0;
  for (let i = 0; i < cols; i++) if (levels[i]! <= bound) mass[i % SAMPLE_WORKGROUP]! += weights[i]!;
  for (let j = 0; j < owners; j++) total += mass[j]!;
  const u = scaleFraction(total, philox4x32([p.step, row, 0, 0], [p.seedLo, p.seedHi])[0]);
  let acc = 0;
  for (let j = 0; j < owners; j++) {
    if (acc + mass[j]! <= u) {
      acc += mass[j]!;
      continue;
    }
    for (let i = j; i < cols; i += SAMPLE_WORKGROUP) {
      if (levels[i]! > bound) continue;
      acc += weights[i]!;
      if (acc > u) return i;
    }
  }
  throw new Error('sample: the draw fell past the kept mass (unreachable)');
}

/** The host twin for one row: the id the shader writes for these logits, options and row. */
export function sampleRow(logits: Float32Array, options: SampleOptions, row = 0): number {
  return sampleInto(logits, 0, logits.length, pack(options), row);
}

const BINDINGS: readonly OpBinding[] = [
  { name: 'x', access: 'read', dtypes: F32 },
  { name: 'out', access: 'read_write', dtypes: U32 },
];

export const sample: OpDef<SampleParams, readonly [x: Float32Array, out: Uint32Array]> = {
  name: 'sample',
  shader,
  entryPoint: 'main',
  bindings: BINDINGS,
  paramsBytes: 48,
  check(operands, p) {
    checkOperands('sample', BINDINGS, operands);
    checkSize('sample', 'rows', p.rows);
    checkSize('sample', 'cols', p.cols);
    if (p.cols > SAMPLE_MAX_COLS) rejectParam('sample', 'cols', `rows of more than ${SAMPLE_MAX_COLS} logits are not sampled`);
    if (typeof p.temperature !== 'number' || !Number.isFinite(p.temperature) || p.temperature < 0) {
      rejectParam('sample', 'temperature', 'temperature must be a finite number >= 0');
    }
    const topP = p.topP ?? 1;
    if (typeof topP !== 'number' || !(topP > 0 && topP <= 1)) rejectParam('sample', 'topP', 'topP must be in (0, 1]');
    checkIndex('sample', 'topK', p.topK ?? 0);
    if (!Number.isSafeInteger(p.seed)) rejectParam('sample', 'seed', 'seed must be a safe integer');
    checkIndex('sample', 'step', p.step);
    checkShape('sample', 'x', operands[0]!, [p.rows, p.cols]);
    checkShape('sample', 'out', operands[1]!, [p.rows]);
  },
  params(p, offsets) {
    const q = pack(p);
    return packParams(48, [
      { u32: offsets[0]! },
      { u32: offsets[1]! },
      { u32: p.rows },
      { u32: p.cols },
      { u32: q.flags },
      { f32: q.scale },
      { f32: q.limit },
      { u32: q.topP },
      { u32: q.topK },
      { u32: q.seedLo },
      { u32: q.seedHi },
      { u32: q.step },
    ]);
  },
  constants() {
    return {};
  },
  workgroups(p, limits) {
    return linearWorkgroups('sample', p.rows, limits);
  },
  host(p, [x, out]) {
    const q = pack(p);
    for (let r = 0; r < p.rows; r++) out[r] = sampleInto(x, r * p.cols, p.cols, q, r);
  },
};

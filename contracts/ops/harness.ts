// Shared harness of the op property suites: seeded data, operands placed at non-zero element offsets
// inside their claims with canaries around them, one GPU run through contracts/support/run-op.ts, the
// same op on the host reference, and a tolerance comparison that names the worst element.
//
// Ownership: every tensor made here is disposed before `runBoth` returns (also when it throws); the
// provider belongs to the suite (useWebGPU: made in beforeAll, destroyed in afterAll).
import { afterAll, beforeAll, expect } from 'vitest';
import { fromArray } from '../../src/index.js';
import type { AnyTypedArray, DType, Tensor, WebGPUProvider } from '../../src/index.js';
import type { OpDef, OpLimits } from '../../src/submit/ops/index.js';
import { fc } from '../support/fc.js';
import { webgpuCase } from '../support/providers.js';
import { runOp } from '../support/run-op.js';

/** The lane's WebGPU provider for one suite (Dawn in node, Chromium in the browser lane). */
export function useWebGPU(): () => WebGPUProvider {
  let provider: WebGPUProvider | undefined;
  beforeAll(async () => {
    provider = (await webgpuCase().make()) as WebGPUProvider;
  });
  afterAll(() => {
    provider?.destroy();
    provider = undefined;
  });
  return () => {
    if (provider === undefined) throw new Error('WebGPU provider not ready');
    return provider;
  };
}

/** mulberry32: a small seeded generator, so a fast-check seed fixes every element. */
export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** n uniform f32 values in [lo, hi). */
export function randomF32(seed: number, n: number, lo = -1, hi = 1): Float32Array {
  const r = rng(seed);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = lo + (hi - lo) * r();
  return out;
}

/** Arbitraries shared by the suites. */
export const arb = {
  seed: () => fc.integer({ min: 1, max: 0x7fffffff }),
  /** A size in 1..max that often hits 1, workgroup and tile edges, and their neighbours. */
  size: (max: number) =>
    fc.oneof(
      { weight: 3, arbitrary: fc.integer({ min: 1, max }) },
      { weight: 1, arbitrary: fc.constantFrom(...[1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65].filter((v) => v <= max)) },
    ),
  /** Elements of padding before an operand inside its claim (so element offsets are non-zero). */
  pad: () => fc.integer({ min: 0, max: 7 }),
  /** Pads for `n` operands. */
  pads: (n: number) => fc.array(fc.integer({ min: 0, max: 7 }), { minLength: n, maxLength: n }),
};

/**
 * Limits under which `op`'s dispatch for `params` must fold into y: maxComputeWorkgroupsPerDimension
 * about the square root of the workgroups it needs unfolded (at least 2), so small test shapes
 * exercise the folded index arithmetic. Undefined (device limits) when `fold` is false.
 */
export function foldingLimits<P>(op: OpDef<P, never>, params: P, fold: boolean): OpLimits | undefined {
  if (!fold) return undefined;
  const [groups] = op.workgroups(params, { maxComputeWorkgroupsPerDimension: 2 ** 31 });
  return { maxComputeWorkgroupsPerDimension: Math.max(2, Math.ceil(Math.sqrt(groups))) };
}

export interface OperandSpec {
  readonly dtype: DType;
  readonly shape: readonly number[];
  readonly data: AnyTypedArray;
}

const CANARY: Record<'f32' | 'u32' | 'i32', number> = { f32: -1234.5, u32: 0xdeadbeef, i32: -559038737 };

function canaryOf(dtype: DType): number {
  if (dtype === 'f32' || dtype === 'u32' || dtype === 'i32') return CANARY[dtype];
  throw new Error(`no canary for ${dtype}`);
}

function newLike(dtype: DType, n: number): AnyTypedArray {
  if (dtype === 'f32') return new Float32Array(n);
  if (dtype === 'u32') return new Uint32Array(n);
  if (dtype === 'i32') return new Int32Array(n);
  throw new Error(`unsupported dtype ${dtype}`);
}

const TAIL = 3;

interface Placed {
  tensor: Tensor<DType>;
  readonly spec: OperandSpec;
  readonly pad: number;
  readonly size: number;
}

/** Uploads `spec` with `pad` canary elements before it and TAIL after, and views it at byteOffset pad*4. */
async function place(provider: WebGPUProvider, spec: OperandSpec, pad: number): Promise<Placed> {
  const size = spec.data.length;
  const flat = newLike(spec.dtype, pad + size + TAIL);
  flat.fill(canaryOf(spec.dtype));
  flat.set(spec.data as never, pad);
  const whole = await fromArray(provider, spec.dtype, flat as never, [flat.length]);
  const tensor = whole.intoLayout({ shape: spec.shape, byteOffset: pad * 4 });
  return { tensor, spec, pad, size };
}

/** Reads the operand back, checks every canary survived, and disposes it. */
async function collect(placed: Placed, label: string): Promise<AnyTypedArray> {
  const whole = placed.tensor.intoLayout({ shape: [placed.pad + placed.size + TAIL] });
  try {
    const all = (await whole.toArray()) as AnyTypedArray;
    const canary = newLike(placed.spec.dtype, 1);
    canary[0] = canaryOf(placed.spec.dtype);
    for (let i = 0; i < all.length; i++) {
      if (i >= placed.pad && i < placed.pad + placed.size) continue;
      if (!Object.is(all[i], canary[0])) throw new Error(`${label}: canary at claim element ${i} was overwritten (${all[i]})`);
    }
    return all.slice(placed.pad, placed.pad + placed.size) as AnyTypedArray;
  } finally {
    whole.dispose();
  }
}

export interface BothResult {
  /** Every operand after the GPU run (read ones too, to show they were not written), binding order. */
  readonly gpu: AnyTypedArray[];
  /** Every operand after the host run, binding order. */
  readonly host: AnyTypedArray[];
}

/** Runs `op` on the GPU (operands at element offsets `pads`) and on the host, over copies of the same data. */
export async function runBoth<P, A extends readonly AnyTypedArray[]>(
  provider: WebGPUProvider,
  op: OpDef<P, A>,
  specs: readonly OperandSpec[],
  params: P,
  pads: readonly number[] = [],
  limits?: OpLimits,
): Promise<BothResult> {
  const host = specs.map((s) => s.data.slice() as AnyTypedArray);
  op.host(params, host as unknown as A);
  const placed: Placed[] = [];
  try {
    for (const [i, spec] of specs.entries()) placed.push(await place(provider, spec, pads[i] ?? 0));
    await runOp(provider, op, placed.map((p) => p.tensor), params, limits === undefined ? {} : { limits });
    const gpu: AnyTypedArray[] = [];
    while (placed.length > 0) {
      const p = placed.shift()!;
      gpu.push(await collect(p, `${op.name}.${op.bindings[gpu.length]!.name}`));
    }
    specs.forEach((s, i) => {
      if (op.bindings[i]!.access === 'read') expect(Array.from(gpu[i]!), `${op.bindings[i]!.name} is read-only`).toEqual(Array.from(s.data));
    });
    return { gpu, host };
  } finally {
    for (const p of placed) p.tensor.dispose();
  }
}

export interface Tolerance {
  /** Absolute part. */
  readonly abs: number;
  /** Relative part (times |expected|). */
  readonly rel: number;
}

/** Asserts |got - want| <= abs + rel * |want| element-wise; the message names the worst element. */
export function expectClose(got: ArrayLike<number>, want: ArrayLike<number>, tol: Tolerance, label: string): void {
  expect(got.length, `${label}: length`).toBe(want.length);
  let worst = -1;
  let worstExcess = 0;
  for (let i = 0; i < want.length; i++) {
    const g = got[i]!;
    const w = want[i]!;
    const excess = Math.abs(g - w) - (tol.abs + tol.rel * Math.abs(w));
    if (!(excess <= 0) && (worst < 0 || !(excess <= worstExcess))) {
      worst = i;
      worstExcess = excess;
    }
  }
  if (worst >= 0) {
    expect.fail(`${label}: element ${worst} is ${got[worst]}, expected ${want[worst]} within ${tol.abs} + ${tol.rel}·|expected| (${want.length} elements)`);
  }
}

/** Largest |got - want| / (1 + |want|), for reporting observed error next to a tolerance. */
export function maxScaledError(got: ArrayLike<number>, want: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < want.length; i++) m = Math.max(m, Math.abs(got[i]! - want[i]!) / (1 + Math.abs(want[i]!)));
  return m;
}

/**
 * The obviously correct product the host references are checked against: out[i, j] = sum over k in
 * order of a[i, k] · b[k, j], in f64, rounded to f32 once. `bAt(k, j)` reads b (so a transposed weight
 * is the same loop).
 */
export function naiveMatmul(a: Float32Array, bAt: (k: number, j: number) => number, m: number, n: number, k: number): Float32Array {
  const out = new Float32Array(m * n);
  for (let i = 0; i < m; i++) {
    for (let j = 0; j < n; j++) {
      let s = 0;
      for (let kk = 0; kk < k; kk++) s += a[i * k + kk]! * bAt(kk, j);
      out[i * n + j] = s;
    }
  }
  return out;
}

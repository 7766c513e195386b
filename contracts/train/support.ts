// Shared helpers of the G7 autodiff suites: ledger multisets (copy and allocation ledgers kept apart),
// seeded data, and the one AD scenario `y = (x @ W + B) * x2`, recorded with or without a checkpoint
// around the whole expression, differentiated as the sum of y's elements (seed = ones).
//
// Ownership: `recordScenario` moves the four leaves onto the caller's tape and returns their handles and
// y's; the caller disposes them (and the tape). Interior handles are released inside.
import { fromArray } from '../../src/index.js';
import type { LedgerEvent, Provider, Tape, ValueHandle } from '../../src/index.js';

export const M = 2;
export const K = 3;
export const N = 4;
export const F32_BYTES = 4;

/** Allocation events as sorted `reason:target:bytes` keys. */
export function allocations(events: readonly LedgerEvent[]): string[] {
  return events.flatMap((e) => (e.kind === 'allocation' ? [`${e.reason}:${e.target}:${e.bytes}`] : [])).sort();
}

/** Copy events as sorted `reason:bytes` keys. */
export function copies(events: readonly LedgerEvent[]): string[] {
  return events.flatMap((e) => (e.kind === 'copy' ? [`${e.reason}:${e.bytes}`] : [])).sort();
}

/** `n` copies of `key`. */
export function times(n: number, key: string): string[] {
  return Array.from({ length: n }, () => key);
}

/** mulberry32 floats in [-1, 1). */
export function seeded(seed: number, n: number): Float32Array {
  let s = seed >>> 0;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    out[i] = (((t ^ (t >>> 14)) >>> 0) / 4294967296) * 2 - 1;
  }
  return out;
}

export interface ScenarioData {
  readonly x: Float32Array;
  readonly W: Float32Array;
  readonly B: Float32Array;
  readonly x2: Float32Array;
}

export function scenarioData(seed: number): ScenarioData {
  return { x: seeded(seed, M * K), W: seeded(seed + 1, K * N), B: seeded(seed + 2, M * N), x2: seeded(seed + 3, M * N) };
}

export interface Leaves {
  readonly x: ValueHandle;
  readonly W: ValueHandle;
  readonly B: ValueHandle;
  readonly x2: ValueHandle;
}

export async function uploadLeaves(provider: Provider, tape: Tape, d: ScenarioData): Promise<Leaves> {
  return {
    x: tape.leaf(await fromArray(provider, 'f32', d.x, [M, K])),
    W: tape.leaf(await fromArray(provider, 'f32', d.W, [K, N])),
    B: tape.leaf(await fromArray(provider, 'f32', d.B, [M, N])),
    x2: tape.leaf(await fromArray(provider, 'f32', d.x2, [M, N])),
  };
}

/** y = (x @ W + B) * x2 on `tape`; the interior handles (h, s) are dropped as soon as they are used. */
export async function expression(tape: Tape, x: ValueHandle, W: ValueHandle, B: ValueHandle, x2: ValueHandle): Promise<ValueHandle> {
  const h = await tape.matmul(x, W);
  const s = await tape.add(h, B);
  h.dispose();
  const y = await tape.mul(s, x2);
  s.dispose();
  return y;
}

export async function recordScenario(tape: Tape, l: Leaves, checkpointed: boolean): Promise<ValueHandle> {
  if (!checkpointed) return expression(tape, l.x, l.W, l.B, l.x2);
  const [y] = await tape.checkpoint([l.x, l.W, l.B, l.x2], async (t, [x, W, B, x2]) => [await expression(t, x!, W!, B!, x2!)]);
  return y!;
}

/** sum((x @ W + B) * x2) in f64, for finite differences. */
export function scenarioLoss(d: ScenarioData): number {
  let total = 0;
  for (let i = 0; i < M; i++) {
    for (let j = 0; j < N; j++) {
      let h = 0;
      for (let k = 0; k < K; k++) h += d.x[i * K + k]! * d.W[k * N + j]!;
      total += (h + d.B[i * N + j]!) * d.x2[i * N + j]!;
    }
  }
  return total;
}

/** Central finite differences of scenarioLoss with respect to every element of leaf `name`. */
export function finiteDifferences(d: ScenarioData, name: keyof ScenarioData, eps = 1e-3): Float64Array {
  const base = d[name];
  const out = new Float64Array(base.length);
  for (let i = 0; i < base.length; i++) {
    const plus = Float64Array.from(base);
    const minus = Float64Array.from(base);
    plus[i] = plus[i]! + eps;
    minus[i] = minus[i]! - eps;
    const at = (arr: Float64Array) => scenarioLoss({ ...d, [name]: arr as unknown as Float32Array });
    out[i] = (at(plus) - at(minus)) / (2 * eps);
  }
  return out;
}

// Shared body of the elementwise suites (add, mul, scale, add_inplace, silu_mul): random shapes of rank
// 1..3 up to ~1500 elements, operands at random element offsets, and half the runs under limits that
// force the dispatch to fold into y.
import { zeros } from '../../src/index.js';
import type { WebGPUProvider } from '../../src/index.js';
import type { OpDef } from '../../src/submit/ops/index.js';
import { expectCode } from '../support/expect-error.js';
import { fc } from '../support/fc.js';
import { operandOf } from '../support/run-op.js';
import { arb } from './harness.js';

/** A shape of rank 1..3 with at most ~1500 elements, often containing 1s and workgroup edges. */
export const shapeArb = fc.oneof(
  fc.tuple(arb.size(1500)).map((s) => [...s]),
  fc.tuple(arb.size(40), arb.size(40)).map((s) => [...s]),
  fc.tuple(arb.size(12), arb.size(12), arb.size(12)).map((s) => [...s]),
);

export const elementwiseCase = fc.record({ shape: shapeArb, seed: arb.seed(), pads: arb.pads(3), fold: fc.boolean() });

export function count(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

/**
 * check() of an op over `arity` f32 operands of one shape and params { n }: accepts the matching set and
 * rejects a wrong shape, a wrong dtype, a wrong n, a strided operand and a wrong operand count.
 */
export async function expectElementwiseChecks<P extends { n: number }>(provider: WebGPUProvider, op: OpDef<P, never>, arity: number, params: (n: number) => P): Promise<void> {
  const good = await Promise.all(Array.from({ length: arity }, () => zeros(provider, 'f32', [3, 5])));
  const other = await zeros(provider, 'f32', [5, 3]);
  const ints = await zeros(provider, 'i32', [3, 5]);
  try {
    const ok = good.map(operandOf);
    op.check(ok, params(15));
    for (let i = 0; i < arity; i++) {
      const swap = (t: typeof other | typeof ints) => ok.map((o, j) => (j === i ? operandOf(t) : o));
      if (i > 0) expectCode(() => op.check(swap(other), params(15)), 'EINVAL', 'shape-mismatch');
      expectCode(() => op.check(swap(ints), params(15)), 'EINVAL', 'dtype-mismatch');
      expectCode(() => op.check(ok.map((o, j) => (j === i ? { ...o, contiguous: false } : o)), params(15)), 'EINVAL', 'not-contiguous');
    }
    expectCode(() => op.check(ok, params(16)), 'EINVAL', 'shape-mismatch');
    expectCode(() => op.check(ok, params(0)), 'EINVAL', 'bad-param');
    expectCode(() => op.check(ok.slice(1), params(15)), 'EINVAL', 'operand-count');
  } finally {
    for (const t of [...good, other, ints]) t.dispose();
  }
}

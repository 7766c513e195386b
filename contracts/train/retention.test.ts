// Plan: retention and handles on every provider of the lane. A tape retains through its own group with no
// ledger event and only what a backward rule declares needed (or a handle holds); handles are read-only
// and outlive their tape; intoValue refuses shared containers before any extraction and keeps the handle
// on both failures; duplicateValue is the explicit copy; takeGrad has exactly three outcomes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IntoValueError, MUTATION_METHODS, TensorView, ValueHandle, createAllocationGroup, createHostProvider, createTape, fromArray, mul, scale } from '../../src/index.js';
import type { CustomRule, HostProvider, MulParams, ScaleParams, Tape, Tensor, WebGPUProvider } from '../../src/index.js';
import { expectCode, expectCodeAsync } from '../support/expect-error.js';
import { providerCases } from '../support/providers.js';
import { allocations, copies, times } from './support.js';

const LEN = 4;
const BYTES = LEN * 4;
const A = Float32Array.of(1, 2, 3, 4);
const B = Float32Array.of(0.5, -1, 2, 3);

async function leaf(tape: Tape, data: Float32Array, requiresGrad = true) {
  return tape.leaf(await fromArray(tape.provider, 'f32', data, [LEN]), { requiresGrad });
}

async function read(h: ValueHandle): Promise<Float32Array> {
  using v = await h.value<'f32'>();
  return await v.toArray();
}

function intoValueError(fn: () => unknown): IntoValueError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(IntoValueError);
    return err as IntoValueError;
  }
  throw new Error('intoValue succeeded');
}

for (const pc of providerCases()) {
  describe(`retention on ${pc.name}`, () => {
    let provider: HostProvider | WebGPUProvider;
    beforeAll(async () => {
      provider = await pc.make();
    });
    afterAll(() => {
      if (provider.kind === 'webgpu') (provider as WebGPUProvider).destroy();
    });

    it('[G7-retain-group] retention records no event and keeps exactly what a backward rule needs or a handle holds', async () => {
      const base = provider.counters();
      const tape = createTape(provider);
      const a = await leaf(tape, A);
      const b = await leaf(tape, B);
      const mark = provider.ledgerMark();
      const c0 = provider.counters();
      const s = await tape.add(a, b); // add's backward needs neither input
      const p = await tape.mul(s, b); // mul's backward needs s and b
      const q = await tape.add(p, a);
      expect(allocations(provider.ledgerSince(mark))).toEqual(times(3, `operation-output:root:${BYTES}`));
      expect(copies(provider.ledgerSince(mark))).toEqual([]);
      expect(tape.retainedValues).toBe(5);
      // A refused op records nothing and allocates nothing.
      const nodes = tape.nodeCount;
      await expectCodeAsync(() => tape.matmul(a, b), 'EINVAL', 'not-a-matrix');
      expect(tape.nodeCount).toBe(nodes);
      expect(provider.ledgerSince(mark)).toHaveLength(3);
      // s is needed by mul: dropping the caller's handle keeps it; p is needed by nobody: dropping frees it.
      s.dispose();
      expect(tape.retainedValues).toBe(5);
      expect(provider.counters().liveBytes - c0.liveBytes).toBe(3 * BYTES);
      p.dispose();
      expect(tape.retainedValues).toBe(4);
      expect(provider.counters().liveBytes - c0.liveBytes).toBe(2 * BYTES);
      expect(provider.counters().rootsDestroyed - c0.rootsDestroyed).toBe(1);
      // Disposing the tape releases what only its nodes retained (s); the surviving handle keeps q.
      tape.dispose();
      a.dispose();
      b.dispose();
      expect(provider.counters().liveBytes - base.liveBytes).toBe(BYTES);
      expect(Array.from(await read(q))).toEqual([1.75, 1, 13, 25]);
      q.dispose();
      expect(provider.counters().liveBytes).toBe(base.liveBytes);
      // Apart from reading q back (a transfer on WebGPU), still only the three op outputs.
      expect(provider.ledgerSince(mark).filter((e) => e.reason !== 'transfer' && e.reason !== 'transfer-destination')).toHaveLength(3);
    });

    it('[G7-retain-group] a release that meets a borrowed value view is deferred, never forced', async () => {
      const base = provider.counters();
      const tape = createTape(provider);
      // One value: its last handle goes while a view of the tape's group is alive; the tape stays.
      const b = await leaf(tape, B);
      {
        using held = await b.value();
        b.dispose();
        expect(provider.counters().liveBytes - base.liveBytes).toBe(BYTES);
        expect(held.size).toBe(LEN);
      }
      createTape(provider).dispose();
      expect(provider.counters().liveBytes).toBe(base.liveBytes);
      // The whole container: its last retainers go while the view is alive.
      const a = await leaf(tape, A);
      const v = await a.value<'f32'>();
      // The last retainers go while the view is alive: nothing throws and nothing is freed under the view.
      tape.dispose();
      a.dispose();
      expect(provider.counters().liveBytes - base.liveBytes).toBe(BYTES);
      expect(Array.from(await v.toArray())).toEqual(Array.from(A));
      v.release();
      // The next train-layer call finishes the release.
      createTape(provider).dispose();
      expect(provider.counters().liveBytes).toBe(base.liveBytes);
      expect(provider.counters().liveRoots).toBe(base.liveRoots);
    });

    it('[G7-custom-rule] a custom rule retains only the inputs it names and its gradients accumulate', async () => {
      using tape = createTape(provider);
      const x = await leaf(tape, A);
      const triple: CustomRule<ScaleParams> = {
        kernel: scale,
        params: { n: LEN, s: 3 },
        shape: [LEN],
        needs: [],
        backward: async (ctx, dy) => [await ctx.run(scale, [dy], [LEN], { n: LEN, s: 3 })],
      };
      const square: CustomRule<MulParams> = {
        kernel: mul,
        params: { n: LEN },
        shape: [LEN],
        needs: [0],
        // One contribution per input position (both are the same value): the tape adds them.
        backward: async (ctx, dy, saved) => [await ctx.run(mul, [dy, saved[0]!], [LEN], { n: LEN }), await ctx.run(mul, [dy, saved[1]!], [LEN], { n: LEN })],
      };
      const mark = provider.ledgerMark();
      const t = await tape.custom(triple, [x]);
      const y = await tape.custom(square, [t, t]);
      t.dispose();
      // t is named by square's rule: still retained; retention recorded nothing.
      expect(tape.retainedValues).toBe(3);
      expect(allocations(provider.ledgerSince(mark))).toEqual(times(2, `operation-output:root:${BYTES}`));
      const grads = await tape.backward([y], [await fromArray(provider, 'f32', new Float32Array(LEN).fill(1), [LEN])]);
      {
        using g = grads.grad<'f32'>(x)!;
        // d/dx (3x)^2 = 18x
        expect(Array.from(await g.toArray())).toEqual(Array.from(A, (v) => 18 * v));
      }
      const nodes = tape.nodeCount;
      await expectCodeAsync(() => tape.custom({ ...square, needs: [2] }, [x, x]), 'EINVAL', 'bad-needs');
      expect(tape.nodeCount).toBe(nodes);
      grads.dispose();
      x.dispose();
      y.dispose();
    });

    it('[G7-handle-readonly] handles and their views offer no owner and no write path', async () => {
      using tape = createTape(provider);
      const a = await leaf(tape, A);
      const clone = a.clone();
      const proto = ValueHandle.prototype as unknown as Record<string, unknown>;
      for (const name of [...MUTATION_METHODS, 'viewMut', 'asViewMut', 'prepareHostMut', 'prepareDeviceMut', 'take', 'tryExtract', 'insert', 'split', 'intoLayout']) {
        expect(name in proto, name).toBe(false);
      }
      {
        using v = await a.value<'f32'>();
        expect(v).toBeInstanceOf(TensorView);
        const viewMembers = v as unknown as Record<string, unknown>;
        for (const name of [...MUTATION_METHODS, 'viewMut', 'prepareHostMut', 'prepareDeviceMut', 'dispose', 'intoLayout']) expect(name in viewMembers, name).toBe(false);
        // A view is not an owner: a group refuses it.
        const g = createAllocationGroup();
        expectCode(() => g.insert(v as unknown as Tensor), 'EINVAL', 'not-a-tensor');
        g.dispose();
        // @ts-expect-error a value view has no write method
        expect(v.write).toBeUndefined();
      }
      // @ts-expect-error a handle has no mutable view
      expect(a.viewMut).toBeUndefined();
      expectCode(() => new ValueHandle(Symbol('forged'), {} as never), 'EINVAL', 'private-constructor');
      // A tensor of another provider is refused and stays the caller's.
      const foreign = await fromArray(createHostProvider(), 'f32', A, [LEN]);
      expectCode(() => tape.leaf(foreign), 'EINVAL', 'provider-mismatch');
      expect(Array.from(await foreign.toArray())).toEqual(Array.from(A));
      foreign.dispose();
      expect('record' in proto).toBe(false);
      // The owner path is refused while the value is shared (the tape and a clone retain it).
      expectCode(() => a.intoValue(), 'EBUSY', 'not-unique');
      expect(Array.from(await read(clone))).toEqual(Array.from(A));
      clone.dispose();
      expectCode(() => clone.clone(), 'EMOVED');
      await expect(clone.value()).rejects.toMatchObject({ code: 'EMOVED' });
      a.dispose();
    });

    it('[G7-record-validity] a handle stays valid after its tape is gone; a gradient key of another tape misses', async () => {
      const tape = createTape(provider);
      const other = createTape(provider);
      const a = await leaf(tape, A);
      const y = await tape.mul(a, a);
      const foreign = await leaf(other, B);
      const grads = await tape.backward([y], [await fromArray(provider, 'f32', new Float32Array(LEN).fill(1), [LEN])]);
      tape.dispose();
      expect(Array.from(await read(y))).toEqual([1, 4, 9, 16]);
      expect(grads.grad(foreign)).toBeUndefined();
      expect(grads.takeGrad(foreign)).toBeUndefined();
      expect(grads.has(a.clone())).toBe(true);
      {
        using g = grads.grad<'f32'>(a)!;
        expect(Array.from(await g.toArray())).toEqual([2, 4, 6, 8]);
      }
      grads.dispose();
      for (const h of [a, y, foreign]) h.dispose();
      other.dispose();
    });

    it('[G7-into-value-unique] intoValue checks uniqueness before extraction and keeps the handle on both failures', async () => {
      const base = provider.counters();
      const tape = createTape(provider);
      const a = await leaf(tape, A);
      const b = await leaf(tape, B);
      const p = await tape.mul(a, b);
      // Shared with the tape (and its mul node): NotUnique, nothing extracted, handle intact.
      let mark = provider.ledgerMark();
      let err = intoValueError(() => a.intoValue());
      expect(provider.ledgerSince(mark)).toEqual([]);
      expect(err.code).toBe('EBUSY');
      expect(err.reason).toBe('not-unique');
      expect(err.handle).toBe(a);
      expect(tape.retainedValues).toBe(3);
      expect(Array.from(await read(a))).toEqual(Array.from(A));
      tape.dispose();
      b.dispose();
      p.dispose();
      // Still shared with a clone.
      const clone = a.clone();
      err = intoValueError(() => a.intoValue());
      expect(err.reason).toBe('not-unique');
      clone.dispose();
      // Unique, but a borrowed view makes the G2 extraction fail: Extract, handle intact.
      {
        using v = await a.value();
        err = intoValueError(() => a.intoValue());
        expect(err.reason).toBe('extract');
        expect(err.handle).toBe(a);
        expect((err.cause as { code: string }).code).toBe('EBUSY');
        expect(v.size).toBe(LEN);
      }
      mark = provider.ledgerMark();
      const owner = a.intoValue<'f32'>();
      // The move records no event.
      expect(provider.ledgerSince(mark)).toEqual([]);
      expect(Array.from(await owner.toArray())).toEqual(Array.from(A));
      expectCode(() => a.intoValue(), 'EMOVED');
      owner.dispose();
      expect(provider.counters().liveBytes).toBe(base.liveBytes);
    });

    it('[G7-duplicate-value] duplicateValue is an explicit copy with its own ledger reasons', async () => {
      using tape = createTape(provider);
      const a = await leaf(tape, A);
      const mark = provider.ledgerMark();
      const copy = await a.duplicateValue<'f32'>();
      const events = provider.ledgerSince(mark);
      expect(allocations(events)).toEqual([`explicit-duplicate-destination:root:${BYTES}`]);
      expect(copies(events)).toEqual([`explicit-duplicate:${BYTES}`]);
      await copy.write(B);
      expect(Array.from(await read(a))).toEqual(Array.from(A));
      copy.dispose();
      a.dispose();
    });

    it('[G7-take-grad] takeGrad: a tensor, none, or an extraction error that leaves the bundle unchanged', async () => {
      using tape = createTape(provider);
      const x = await leaf(tape, A);
      const c = await leaf(tape, B, false);
      const y = await tape.mul(x, c);
      const grads = await tape.backward([y], [await fromArray(provider, 'f32', new Float32Array(LEN).fill(1), [LEN])]);
      expect(grads.size).toBe(1);
      // None: the constant has no gradient.
      expect(grads.grad(c)).toBeUndefined();
      expect(grads.takeGrad(c)).toBeUndefined();
      // Error: a live view of the bundle blocks extraction; the bundle is unchanged.
      {
        using v = grads.grad<'f32'>(x)!;
        expectCode(() => grads.takeGrad(x), 'EBUSY');
        expect(grads.size).toBe(1);
        expect(Array.from(await v.toArray())).toEqual(Array.from(B));
      }
      // Tensor: moved out once; afterwards there is none.
      const mark = provider.ledgerMark();
      const g = grads.takeGrad<'f32'>(x)!;
      expect(provider.ledgerSince(mark)).toEqual([]);
      expect(Array.from(await g.toArray())).toEqual(Array.from(B));
      expect(grads.takeGrad(x)).toBeUndefined();
      expect(grads.size).toBe(0);
      g.dispose();
      grads.dispose();
      for (const h of [x, c, y]) h.dispose();
    });
  });
}

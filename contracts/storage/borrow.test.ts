// Plan: ownership and run-time borrow rules of tensors (G1), on every provider of the lane.
// Each forbidden use is tried against a live object; the test asserts the code and then proves the object
// is still usable (or moved, where moving is the contract). Claims: split partitions, nothing widens.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Tensor, TensorView, TensorViewMut, fromArray, zeros } from '../../src/index.js';
import type { HostProvider, WebGPUProvider } from '../../src/index.js';
import { expectCode, expectCodeAsync } from '../support/expect-error.js';
import { providerCases } from '../support/providers.js';

const iota = (n: number): Float32Array => Float32Array.from({ length: n }, (_, i) => i);

for (const pc of providerCases()) {
  describe(`ownership and borrows on ${pc.name}`, () => {
    let provider: HostProvider | WebGPUProvider;
    let align: number;
    beforeAll(async () => {
      provider = await pc.make();
      align = provider.capabilities.claimAlignment;
    });
    afterAll(() => {
      if (provider.kind === 'webgpu') (provider as WebGPUProvider).destroy();
    });

    it('[G1-borrow-shared] many shared views coexist and read the same data; an exclusive borrow is refused meanwhile', async () => {
      using t = await fromArray(provider, 'f32', iota(6), [2, 3]);
      const a = t.view();
      const b = t.view();
      const c = a.view(); // reborrow of a view
      expect(Array.from(await a.toArray())).toEqual([0, 1, 2, 3, 4, 5]);
      expect(Array.from(await c.toArray())).toEqual(Array.from(await b.toArray()));
      expectCode(() => t.viewMut(), 'EBUSY', 'shared-borrowed');
      await expectCodeAsync(() => t.write(iota(6)), 'EBUSY');
      // a view with a live reborrow cannot end before it
      expectCode(() => a.release(), 'EBUSY', 'reborrowed');
      c.release();
      a.release();
      b.release();
      using m = t.viewMut(); // all shared borrows gone: exclusive is allowed now
      expect(m.size).toBe(6);
    });

    it('[G1-borrow-exclusive] one exclusive borrow blocks reads, writes, other borrows and consumption through the owner', async () => {
      const t = await fromArray(provider, 'f32', iota(4));
      const m = t.viewMut();
      expectCode(() => t.viewMut(), 'EBUSY', 'exclusively-borrowed');
      expectCode(() => t.view(), 'EBUSY', 'exclusively-borrowed');
      expectCode(() => t.shape, 'EBUSY', 'exclusively-borrowed');
      await expectCodeAsync(() => t.toArray(), 'EBUSY');
      await expectCodeAsync(() => t.fill(1), 'EBUSY');
      expectCode(() => t.dispose(), 'EBUSY', 'exclusively-borrowed');
      expectCode(() => t.split([2, 2]), 'EBUSY');
      // the exclusive borrow itself works, including reborrowing itself
      await m.write(Float32Array.from([9, 8, 7, 6]));
      const inner = m.viewMut();
      expectCode(() => m.shape, 'EBUSY', 'exclusively-borrowed');
      await inner.fill(5);
      inner.release();
      expect(Array.from(await m.toArray())).toEqual([5, 5, 5, 5]);
      m.release();
      expect(Array.from(await t.toArray())).toEqual([5, 5, 5, 5]);
      t.dispose();
    });

    it('[G1-borrow-release] a released view throws ERELEASED on every use and the owner is usable again', async () => {
      using t = await fromArray(provider, 'f32', iota(3));
      const v = t.view();
      const m0 = (() => {
        v.release();
        return t.viewMut();
      })();
      expectCode(() => v.shape, 'ERELEASED');
      expectCode(() => v.view(), 'ERELEASED');
      await expectCodeAsync(() => v.toArray(), 'ERELEASED');
      expectCode(() => v.release(), 'ERELEASED');
      m0.release();
      expectCode(() => m0.viewMut(), 'ERELEASED');
      await expectCodeAsync(() => m0.write(iota(3)), 'ERELEASED');
      // `using` on a view releases it at scope end
      {
        using scoped = t.view();
        expect(scoped.size).toBe(3);
        expectCode(() => t.viewMut(), 'EBUSY');
      }
      using after = t.viewMut();
      expect(after.size).toBe(3);
    });

    it('[G1-move] after dispose, split or intoLayout every member of the old owner throws EMOVED', async () => {
      const consumers: Array<(t: Tensor<'f32'>) => unknown> = [
        (t) => t.dispose(),
        (t) => t.split([4]).forEach((c) => c.dispose()),
        (t) => t.intoLayout({ shape: [2, 2] }).dispose(),
      ];
      for (const consume of consumers) {
        const t = await fromArray(provider, 'f32', iota(4));
        consume(t);
        expect(t.moved).toBe(true);
        expectCode(() => t.shape, 'EMOVED');
        expectCode(() => t.view(), 'EMOVED');
        expectCode(() => t.viewMut(), 'EMOVED');
        expectCode(() => t.asView().size, 'EMOVED');
        await expectCodeAsync(() => t.toArray(), 'EMOVED');
        await expectCodeAsync(() => t.write(iota(4)), 'EMOVED');
        await expectCodeAsync(() => t.duplicate(), 'EMOVED');
        expectCode(() => t.dispose(), 'EMOVED');
        expectCode(() => t.split([4]), 'EMOVED');
        expectCode(() => t.intoLayout({ shape: [4] }), 'EMOVED');
        // `using` on a moved owner is a no-op, never a second release
        expect(() => t[Symbol.dispose]()).not.toThrow();
      }
    });

    it('[G1-consume-borrowed] consuming while borrowed fails EBUSY; the owner and its data stay intact', async () => {
      const t = await fromArray(provider, 'f32', iota(4));
      const before = provider.counters();
      const v = t.view();
      expectCode(() => t.dispose(), 'EBUSY', 'shared-borrowed');
      expectCode(() => t.split([1, 3]), 'EBUSY');
      expectCode(() => t.intoLayout({ shape: [2, 2] }), 'EBUSY');
      expect(t.moved).toBe(false);
      expect(Array.from(await v.toArray())).toEqual([0, 1, 2, 3]);
      v.release();
      expect(provider.counters().liveRoots).toBe(before.liveRoots);
      t.dispose();
      expect(provider.counters().liveRoots).toBe(before.liveRoots - 1);
    });

    it('[G1-consume-fail-intact] a failing split or intoLayout leaves the tensor unchanged and usable', async () => {
      const t = await fromArray(provider, 'f32', iota(8), [4, 2]);
      const before = provider.counters();
      expectCode(() => t.split([1, 1]), 'EINVAL', 'bad-split'); // does not sum to 4
      expectCode(() => t.split([]), 'EINVAL', 'bad-split');
      expectCode(() => t.split([-1, 5]), 'EINVAL', 'bad-split');
      expectCode(() => t.intoLayout({ shape: [5, 2] }), 'EINVAL', 'out-of-span');
      expectCode(() => t.intoLayout({ shape: [2] }, 'q8' as never), 'EINVAL', 'unknown-dtype');
      const strided = t.intoLayout({ shape: [2, 4], strides: [1, 2] });
      expectCode(() => strided.split([1, 1]), 'EINVAL', 'not-splittable');
      expect(strided.moved).toBe(false);
      expect(Array.from(await strided.toArray())).toEqual([0, 2, 4, 6, 1, 3, 5, 7]);
      const after = provider.counters();
      expect(after.liveRoots).toBe(before.liveRoots);
      expect(after.rootsDestroyed).toBe(before.rootsDestroyed);
      strided.dispose();
    });

    it('[G1-claim-split] split consumes the parent; the children partition its claim and retain the root until the last goes', async () => {
      // rows sized so split points are multiples of the provider's claim alignment
      const rowElems = Math.max(align / 4, 1);
      const rows = 3;
      const t = await fromArray(provider, 'f32', iota(rows * rowElems), [rows, rowElems]);
      const root = t.diagnostics().root;
      const claim = t.diagnostics().claim;
      const before = provider.counters();
      const parts = t.split([1, 0, 2]);
      expect(t.moved).toBe(true);
      expect(parts.map((p) => p.shape[0])).toEqual([1, 0, 2]);
      const claims = parts.map((p) => p.diagnostics().claim);
      expect(parts.every((p) => p.diagnostics().root === root)).toBe(true);
      // contiguous, non-overlapping cover of the parent claim
      expect(claims[0]!.start).toBe(claim.start);
      for (let i = 1; i < claims.length; i++) expect(claims[i]!.start).toBe(claims[i - 1]!.end);
      expect(claims[claims.length - 1]!.end).toBe(claim.end);
      expect(Array.from(await parts[0]!.toArray())).toEqual(Array.from(iota(rowElems)));
      expect(Array.from(await parts[2]!.toArray())).toEqual(Array.from(iota(3 * rowElems)).slice(rowElems));
      // children write independently
      await parts[2]!.fill(-1);
      expect(Array.from(await parts[0]!.toArray())).toEqual(Array.from(iota(rowElems)));
      // the root lives until its last child goes
      parts[2]!.dispose();
      parts[0]!.dispose();
      expect(provider.counters().rootsDestroyed).toBe(before.rootsDestroyed);
      parts[1]!.dispose();
      expect(provider.counters().rootsDestroyed).toBe(before.rootsDestroyed + 1);
      expect(provider.counters().liveRoots).toBe(before.liveRoots - 1);
    });

    it('[G1-claim-split] split points that break the provider claim alignment are refused without change', async () => {
      if (align === 1) {
        // host: any element boundary is a valid split point
        const t = await fromArray(provider, 'u8', Uint8Array.from([1, 2, 3]), [3]);
        const [a, b] = t.split([1, 2]);
        expect(Array.from(await b!.toArray())).toEqual([2, 3]);
        a!.dispose();
        b!.dispose();
        return;
      }
      const t = await fromArray(provider, 'f32', iota(align / 2), [align / 2]);
      expectCode(() => t.split([1, align / 2 - 1]), 'EINVAL', 'misaligned-split');
      expect(t.moved).toBe(false);
      expect((await t.toArray()).length).toBe(align / 2);
      t.dispose();
    });

    it('[G1-claim-no-widen] no layout or child reaches past the claim: intoLayout and alias beyond it are refused', async () => {
      const rowElems = Math.max(align / 4, 1);
      const t = await fromArray(provider, 'f32', iota(2 * rowElems), [2, rowElems]);
      const [first, second] = t.split([1, 1]);
      const firstBytes = first!.diagnostics().claim.end - first!.diagnostics().claim.start;
      // the first child cannot be reinterpreted to reach into its sibling
      expectCode(() => first!.intoLayout({ shape: [2 * rowElems] }), 'EINVAL', 'out-of-span');
      expectCode(() => first!.intoLayout({ shape: [1], byteOffset: firstBytes }), 'EINVAL', 'out-of-span');
      expectCode(() => first!.intoLayout({ shape: [2], strides: [-1] }), 'EINVAL', 'out-of-span');
      // the largest legal reinterpretation is exactly the claim
      const whole = first!.intoLayout({ shape: [firstBytes] }, 'u8');
      expect(whole.size).toBe(firstBytes);
      expect(Array.from(await second!.toArray())).toEqual(Array.from(iota(2 * rowElems)).slice(rowElems));
      whole.dispose();
      second!.dispose();
    });

    it('[G1-no-clone] owners have no clone; duplicate() makes an independent owner on a new root, recorded as a copy', async () => {
      const t = await fromArray(provider, 'f32', iota(5));
      expect('clone' in t).toBe(false);
      expect(typeof (t as unknown as { structuredClone?: unknown }).structuredClone).toBe('undefined');
      const mark = provider.ledgerMark();
      const before = provider.counters();
      const d = await t.duplicate();
      expect(provider.counters().rootsCreated).toBe(before.rootsCreated + 1);
      expect(d.diagnostics().root).not.toBe(t.diagnostics().root);
      const events = provider.ledgerSince(mark).filter((e) => e.kind === 'copy' && e.reason === 'explicit-duplicate');
      expect(events).toHaveLength(1);
      await d.fill(42);
      expect(Array.from(await t.toArray())).toEqual([0, 1, 2, 3, 4]);
      expect(Array.from(await d.toArray())).toEqual([42, 42, 42, 42, 42]);
      t.dispose();
      d.dispose();
    });

    it('[G1-no-clone] owners and views cannot be constructed outside the kernel, even from a live tensor\'s parts', async () => {
      const t = await fromArray(provider, 'f32', iota(2));
      const forge = (ctor: unknown, ...args: unknown[]) => () => new (ctor as new (...a: unknown[]) => unknown)(...args);
      expectCode(forge(Tensor, Symbol('tenon.storage.internal'), {}), 'EINVAL', 'private-constructor');
      expectCode(forge(TensorView, undefined, {}, {}, true), 'EINVAL', 'private-constructor');
      expectCode(forge(TensorViewMut, t.diagnostics(), {}, {}, true), 'EINVAL', 'private-constructor');
      expect(provider.counters().liveRoots).toBeGreaterThan(0);
      t.dispose();
    });

    it('[G1-no-clone] zeros() owners start zeroed and distinct allocations never share a root', async () => {
      const a = await zeros(provider, 'i32', [3]);
      const b = await zeros(provider, 'i32', [3]);
      expect(a.diagnostics().root).not.toBe(b.diagnostics().root);
      await a.fill(7);
      expect(Array.from(await b.toArray())).toEqual([0, 0, 0]);
      a.dispose();
      b.dispose();
    });
  });
}

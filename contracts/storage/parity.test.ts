// Plan: method distribution (G4). The canonical lists in src/storage/methods.ts are the one source of
// truth; these tests fail when a family drifts from them, when a read member on the owner or view-mut does
// not run TensorView's implementation (the error's `op` names the implementation that ran), when a
// view gains a write or consuming member, or when asView() starts costing anything.
// Compile-time counterparts (write members absent from shared views) live in `compileFailures` below:
// `npm run typecheck` fails if any of those lines stops being a type error.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CONSUMING_METHODS,
  MUTATION_METHODS,
  READ_GETTERS,
  READ_METHODS,
  Tensor,
  TensorView,
  TensorViewMut,
  createAllocationGroup,
  fromArray,
} from '../../src/index.js';
import type { HostProvider, WebGPUProvider } from '../../src/index.js';
import { catchTenon, catchTenonAsync } from '../support/expect-error.js';
import { providerCases } from '../support/providers.js';

/** Never called: each line must stay a type error (checked by tsc in `npm test`). */
export function compileFailures(view: TensorView<'f32'>, owner: Tensor<'f32'>): void {
  // @ts-expect-error shared views have no write preparation
  void view.prepareHostMut();
  // @ts-expect-error shared views have no device write preparation
  void view.prepareDeviceMut();
  // @ts-expect-error shared views cannot write
  void view.write(new Float32Array(1));
  // @ts-expect-error shared views cannot lend exclusively
  void view.viewMut();
  // @ts-expect-error views cannot consume
  view.dispose();
  // @ts-expect-error owners have no clone
  void owner.clone();
  // @ts-expect-error constructors are private to the kernel
  void new Tensor(Symbol('forged'), undefined as never).size;
}

const ownNames = (proto: object): string[] =>
  Object.getOwnPropertyNames(proto).filter((n) => n !== 'constructor').sort();

describe('canonical member lists', () => {
  it('[G4-read-once] TensorView is the only family whose prototype implements the read members natively', () => {
    const viewOwn = ownNames(TensorView.prototype);
    expect(viewOwn).toEqual([...READ_GETTERS, ...READ_METHODS, 'release'].sort());
  });

  it('[G4-mut-once] TensorViewMut implements exactly the mutation members plus asView/release, and delegates reads', () => {
    const own = ownNames(TensorViewMut.prototype);
    expect(own).toEqual([...MUTATION_METHODS, ...READ_GETTERS, ...READ_METHODS, 'asView', 'release'].sort());
  });

  it('[G4-consuming-owner-only] consuming members exist on Tensor and on no view family', () => {
    for (const name of CONSUMING_METHODS) {
      expect(typeof (Tensor.prototype as unknown as Record<string, unknown>)[name]).toBe('function');
      expect(name in TensorView.prototype).toBe(false);
      expect(name in TensorViewMut.prototype).toBe(false);
    }
    const ownerOwn = ownNames(Tensor.prototype);
    expect(ownerOwn).toEqual(
      [...CONSUMING_METHODS, ...READ_GETTERS, ...READ_METHODS, ...MUTATION_METHODS, 'asView', 'asViewMut', 'moved'].sort(),
    );
  });

  it('[G5-prepared-write-exclusive] shared views have no write preparation at run time either', () => {
    for (const name of MUTATION_METHODS) expect(name in TensorView.prototype).toBe(false);
    expect('prepareHostMut' in TensorViewMut.prototype).toBe(true);
    expect('prepareDeviceMut' in Tensor.prototype).toBe(true);
  });
});

for (const pc of providerCases()) {
  describe(`method parity on ${pc.name}`, () => {
    let provider: HostProvider | WebGPUProvider;
    beforeAll(async () => {
      provider = await pc.make();
    });
    afterAll(() => {
      if (provider.kind === 'webgpu') (provider as WebGPUProvider).destroy();
    });

    it('[G4-parity] owner, view and view-mut answer every read getter identically', async () => {
      const t = await fromArray(provider, 'f32', Float32Array.from([1, 2, 3, 4, 5, 6]), [2, 3]);
      const strided = t.intoLayout({ shape: [3, 2], strides: [1, 3] });
      const expectedValues = [1, 4, 2, 5, 3, 6];
      const fromOwner = Object.fromEntries(READ_GETTERS.map((n) => [n, strided[n]]));
      {
        using v = strided.view();
        const fromView = Object.fromEntries(READ_GETTERS.map((n) => [n, v[n]]));
        expect(fromView).toEqual(fromOwner);
        expect(Array.from(await v.toArray())).toEqual(expectedValues);
        expect(v.diagnostics()).toEqual(strided.diagnostics());
      }
      {
        using m = strided.viewMut();
        const fromMut = Object.fromEntries(READ_GETTERS.map((n) => [n, m[n]]));
        expect(fromMut).toEqual(fromOwner);
        expect(Array.from(await m.toArray())).toEqual(expectedValues);
      }
      expect(Array.from(await strided.toArray())).toEqual(expectedValues);
      expect(fromOwner['shape']).toEqual([3, 2]);
      expect(fromOwner['isContiguous']).toBe(false);
      strided.dispose();
    });

    it('[G4-parity] group views belong to the same families and answer the same members', async () => {
      const g = createAllocationGroup();
      const { descriptor } = g.insert(await fromArray(provider, 'i32', Int32Array.from([5, 6, 7])));
      {
        using v = g.view<'i32'>(descriptor);
        expect(v).toBeInstanceOf(TensorView);
        expect(Array.from(await v.toArray())).toEqual([5, 6, 7]);
      }
      {
        using m = g.viewMut<'i32'>(descriptor);
        expect(m).toBeInstanceOf(TensorViewMut);
        await m.write(Int32Array.from([1, 1, 1]));
      }
      const out = g.intoTensor<'i32'>(descriptor);
      expect(Array.from(await out.toArray())).toEqual([1, 1, 1]);
      out.dispose();
    });

    it('[G4-read-once] read members of owner and view-mut run the TensorView implementation', async () => {
      const t = await fromArray(provider, 'f32', Float32Array.from([1, 2]));
      const m = t.viewMut();
      // while exclusively lent, the owner's read members fail inside TensorView's implementation
      expect(catchTenon(() => t.shape).op).toBe('view.shape');
      expect(catchTenon(() => t.diagnostics()).op).toBe('view.diagnostics');
      expect((await catchTenonAsync(() => t.toArray())).op).toBe('view.prepareHost');
      const inner = m.view();
      // a view-mut with a live shared reborrow still reads through the same implementation
      expect(m.size).toBe(2);
      inner.release();
      const deeper = m.viewMut();
      expect(catchTenon(() => m.rank).op).toBe('view.rank');
      deeper.release();
      m.release();
      t.dispose();
    });

    it('[G4-mut-once] mutation members of the owner run the TensorViewMut implementation', async () => {
      const t = await fromArray(provider, 'f32', Float32Array.from([1, 2]));
      const v = t.view();
      expect((await catchTenonAsync(() => t.write(Float32Array.from([3, 4])))).op).toBe('viewMut.write');
      expect((await catchTenonAsync(() => t.prepareHostMut())).op).toBe('viewMut.prepareHostMut');
      expect(catchTenon(() => t.viewMut()).op).toBe('viewMut.viewMut');
      v.release();
      await t.write(Float32Array.from([3, 4]));
      expect(Array.from(await t.toArray())).toEqual([3, 4]);
      t.dispose();
    });

    it('[G4-asview-free] asView()/asViewMut() return one cached object and cost no root, resolution or validation', async () => {
      const t = await fromArray(provider, 'f32', new Float32Array(16));
      const before = provider.counters();
      const first = t.asView();
      let total = 0;
      for (let i = 0; i < 1000; i++) {
        const v = t.asView();
        expect(v).toBe(first);
        total += v.size + t.asViewMut().asView().rank;
      }
      expect(t.asViewMut()).toBe(t.asViewMut());
      expect(total).toBe(1000 * 17);
      const after = provider.counters();
      expect(after.rootsCreated).toBe(before.rootsCreated);
      expect(after.providerResolutions).toBe(before.providerResolutions);
      expect(after.validations).toBe(before.validations);
      expect(after.maps).toBe(before.maps);
      // an unregistered reborrow holds nothing: the owner can still be consumed
      t.dispose();
      expect(catchTenon(() => first.size).code).toBe('EMOVED');
    });
  });
}

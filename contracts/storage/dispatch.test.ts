// Plan: the group's consuming move (take) and dispatch binding preparation (G5 prepared binding for a
// dispatch). A dispatch's writes must be proven disjoint from everything else it binds, reads may alias,
// a WebGPU dispatch may not read and write one GPUBuffer, and none of it validates a layout again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAllocationGroup, fromArray, zeros } from '../../src/index.js';
import type { HostProvider, WebGPUProvider } from '../../src/index.js';
import { expectCode } from '../support/expect-error.js';
import { providerCases } from '../support/providers.js';

for (const pc of providerCases()) {
  describe(`dispatch bindings on ${pc.name}`, () => {
    let provider: HostProvider | WebGPUProvider;
    beforeAll(async () => {
      provider = await pc.make();
    });
    afterAll(() => {
      if (provider.kind === 'webgpu') (provider as WebGPUProvider).destroy();
    });

    it('[G2-take] take() moves every allocation and descriptor into a new owner under the same slots', async () => {
      const g = createAllocationGroup();
      const a = g.insert(await fromArray(provider, 'f32', Float32Array.from([1, 2, 3, 4])));
      const b = g.insert(await fromArray(provider, 'i32', Int32Array.from([7])));
      const alias = g.alias(a.allocation, 'f32', { shape: [2], byteOffset: 8 });
      g.removeDescriptor(b.descriptor);
      const before = provider.counters();
      const moved = g.take();
      expect(g.moved).toBe(true);
      expectCode(() => g.view(a.descriptor), 'EMOVED');
      expectCode(() => g.take(), 'EMOVED');
      expect(moved.descriptors()).toEqual([a.descriptor, alias]);
      expect(moved.descriptorSlots).toBe(3);
      {
        using v = moved.view<'f32'>(alias);
        expect(Array.from(await v.toArray())).toEqual([3, 4]);
      }
      expectCode(() => moved.view(b.descriptor), 'EINVAL', 'empty-slot');
      const after = provider.counters();
      expect(after.rootsCreated).toBe(before.rootsCreated);
      expect(after.rootsDestroyed).toBe(before.rootsDestroyed);
      expect(after.validations).toBe(before.validations);
      // a borrowed group cannot be moved
      const v = moved.view(a.descriptor);
      expectCode(() => moved.take(), 'EBUSY');
      v.release();
      moved.dispose();
      expect(provider.counters().liveRoots).toBe(before.liveRoots - 2);
    });

    it('[G5-dispatch-bindings] writes must be disjoint from every other binding; reads may alias; nothing is revalidated', async () => {
      const g = createAllocationGroup();
      const x = g.insert(await fromArray(provider, 'f32', Float32Array.from({ length: 8 }, (_, i) => i)));
      const y = g.insert(await zeros(provider, 'f32', [8]));
      const xHead = g.alias(x.allocation, 'f32', { shape: [4] });
      const target = pc.kind === 'webgpu' ? 'device' : 'host';
      const before = provider.counters();
      const states = g.prepareDispatch(
        [
          { slot: x.descriptor, access: 'read' },
          { slot: xHead, access: 'read' },
          { slot: y.descriptor, access: 'write' },
        ],
        target as 'device',
      );
      expect(states.map((s) => s.access)).toEqual(['read', 'read', 'write']);
      const after = provider.counters();
      expect(after.validations).toBe(before.validations);
      expect(after.providerResolutions).toBe(before.providerResolutions + 1);
      expect(after.disjointnessProofs).toBe(before.disjointnessProofs + 1);
      if (target === 'device') {
        expect(states[0]!.binding.buffer).toBe(states[1]!.binding.buffer);
        expect(states[2]!.binding.buffer).not.toBe(states[0]!.binding.buffer);
        expect(states[2]!.elementOffset).toBe(0);
      } else {
        const host = g.prepareDispatch([{ slot: x.descriptor, access: 'read' }], 'host');
        expect(Array.from(host[0]!.array)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
      }
      // a write that overlaps a read of the same dispatch is refused, the group unchanged
      expectCode(
        () => g.prepareDispatch([{ slot: x.descriptor, access: 'read' }, { slot: xHead, access: 'write' }], target as 'device'),
        'EINVAL',
        'overlap',
      );
      // bad requests are refused before anything
      expectCode(() => g.prepareDispatch([{ slot: 99 as never, access: 'read' }], target as 'device'), 'EINVAL', 'invalid-slot');
      expectCode(() => g.prepareDispatch([{ slot: x.descriptor, access: 'rw' as never }], target as 'device'), 'EINVAL', 'bad-request');
      // the wrong target for this provider is not supported
      const other = target === 'device' ? 'host' : 'device';
      expectCode(() => g.prepareDispatch([{ slot: x.descriptor, access: 'read' }], other as 'device'), 'ENOTSUP');
      // while borrowed, a dispatch cannot be prepared
      const v = g.view(x.descriptor);
      expectCode(() => g.prepareDispatch([{ slot: x.descriptor, access: 'read' }], target as 'device'), 'EBUSY');
      v.release();
      g.dispose();
    });

    it('[G5-dispatch-bindings] on a device, reading and writing disjoint parts of one GPUBuffer in one dispatch is refused', async () => {
      const g = createAllocationGroup();
      const rowElems = Math.max(1, provider.capabilities.claimAlignment / 4);
      const { allocation } = g.insert(await zeros(provider, 'f32', [2 * rowElems]));
      const lo = g.alias(allocation, 'f32', { shape: [rowElems] });
      const hi = g.alias(allocation, 'f32', { shape: [rowElems], byteOffset: rowElems * 4 });
      if (pc.kind === 'webgpu') {
        expectCode(
          () => g.prepareDispatch([{ slot: lo, access: 'read' }, { slot: hi, access: 'write' }], 'device'),
          'EINVAL',
          'shared-root-read-write',
        );
        // two disjoint writes of one buffer are a legal usage scope
        expect(g.prepareDispatch([{ slot: lo, access: 'write' }, { slot: hi, access: 'write' }], 'device')).toHaveLength(2);
      } else {
        // host memory has no usage scopes: a disjoint read and write are fine
        const [r, w] = g.prepareDispatch([{ slot: lo, access: 'read' }, { slot: hi, access: 'write' }], 'host');
        expect(r!.array.buffer).toBe(w!.array.buffer);
      }
      g.dispose();
    });
  });
}

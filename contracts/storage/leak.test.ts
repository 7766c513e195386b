// Plan: memory returns exactly (G1 root lifetime). Many owners, views, prepared accesses, splits,
// duplicates and groups are created and ended; afterwards live roots, bytes and physical resources are at
// their baseline, every resource the provider created was destroyed once, and no destroy ever repeated.
// The per-root test pins the moment of destruction: the last retainer, not the first.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allocate, createAllocationGroup, fromArray, zeros } from '../../src/index.js';
import type { CounterSnapshot, HostProvider, WebGPUProvider } from '../../src/index.js';
import { expectCode, expectCodeAsync } from '../support/expect-error.js';
import { providerCases } from '../support/providers.js';

function expectBaseline(before: CounterSnapshot, after: CounterSnapshot): void {
  expect(after.liveRoots).toBe(before.liveRoots);
  expect(after.liveBytes).toBe(before.liveBytes);
  expect(after.liveResources).toBe(before.liveResources);
  expect(after.resourcesCreated - before.resourcesCreated).toBe(after.resourcesDestroyed - before.resourcesDestroyed);
  expect(after.rootsCreated - before.rootsCreated).toBe(after.rootsDestroyed - before.rootsDestroyed);
  expect(after.doubleDestroys).toBe(0);
}

for (const pc of providerCases()) {
  describe(`memory returns to baseline on ${pc.name}`, () => {
    let provider: HostProvider | WebGPUProvider;
    beforeAll(async () => {
      provider = await pc.make();
    });
    afterAll(() => {
      if (provider.kind === 'webgpu') (provider as WebGPUProvider).destroy();
    });

    it('[G1-leak-baseline] 1,000 tensors and 1,000 groups created and disposed leave no root, byte or buffer behind', async () => {
      const before = provider.counters();
      const align = provider.capabilities.claimAlignment;
      const rowElems = Math.max(1, align / 4);
      for (let i = 0; i < 1000; i++) {
        const n = 1 + (i % 37);
        const t = await zeros(provider, 'f32', [n]);
        const g = createAllocationGroup();
        const pair = await fromArray(provider, 'f32', new Float32Array(2 * rowElems), [2, rowElems]);
        const [a, b] = pair.split([1, 1]);
        const slotA = g.insert(a!);
        g.insert(b!);
        g.alias(slotA.allocation, 'u8', { shape: [4] });
        if (i % 10 === 0) {
          // the heavier paths, every tenth round: staging downloads, duplicates, extraction
          using v = t.view();
          using p = await v.prepareHost();
          expect(p.kind).toBe('contiguous');
          const d = await v.duplicate();
          g.insert(d);
        }
        t.dispose();
        if (i % 2 === 0) g.dispose();
        else g.intoTensor(slotA.descriptor).dispose();
      }
      const after = provider.counters();
      expectBaseline(before, after);
      // per round a tensor and a pair (its split children share one root); every tenth round a duplicate
      expect(after.rootsCreated - before.rootsCreated).toBe(2 * 1000 + 1000 / 10);
      if (provider.kind === 'webgpu') {
        // staging buffers of the downloads are physical resources too, and were destroyed as well
        expect(after.resourcesCreated - before.resourcesCreated).toBeGreaterThan(after.rootsCreated - before.rootsCreated);
      }
    });

    it('[G1-root-once] a root shared by split children, a group and a live view is destroyed only when the last one lets go', async () => {
      const align = provider.capabilities.claimAlignment;
      const rowElems = Math.max(1, align / 4);
      const before = provider.counters();
      const t = await allocate(provider, 'f32', { shape: [3, rowElems] });
      const [x, y, z] = t.split([1, 1, 1]);
      const g = createAllocationGroup();
      const { descriptor } = g.insert(y!);
      const view = g.view(descriptor);
      x!.dispose();
      expectCode(() => g.dispose(), 'EBUSY');
      z!.dispose();
      expect(provider.counters().rootsDestroyed).toBe(before.rootsDestroyed);
      view.release();
      expect(provider.counters().liveRoots).toBe(before.liveRoots + 1);
      g.dispose();
      const after = provider.counters();
      expect(after.rootsDestroyed).toBe(before.rootsDestroyed + 1);
      expectBaseline(before, after);
      // ending things twice is refused at the owner, never a second destroy
      expectCode(() => x!.dispose(), 'EMOVED');
      expectCode(() => g.dispose(), 'EMOVED');
      expect(provider.counters().rootsDestroyed).toBe(before.rootsDestroyed + 1);
      expect(provider.counters().doubleDestroys).toBe(0);
    });

    it('[G1-root-once] rejected allocations create no root and leave every counter of live memory unchanged', async () => {
      const before = provider.counters();
      const mark = provider.ledgerMark();
      await expectCodeAsync(() => fromArray(provider, 'f32', new Float32Array(3), [2, 2]), 'EINVAL', 'length-mismatch');
      await expectCodeAsync(() => fromArray(provider, 'f32', new Int32Array(4) as never, [4]), 'EINVAL', 'dtype-mismatch');
      await expectCodeAsync(() => allocate(provider, 'f32', { shape: [2], strides: [1] }), 'EINVAL', 'capacity-required');
      await expectCodeAsync(() => allocate(provider, 'f32', { shape: [4] }, { capacityBytes: 8 }), 'EINVAL', 'out-of-span');
      const after = provider.counters();
      expect(after.rootsCreated).toBe(before.rootsCreated);
      expect(after.resourcesCreated).toBe(before.resourcesCreated);
      expect(provider.ledgerSince(mark)).toEqual([]);
      expectBaseline(before, after);
    });
  });
}

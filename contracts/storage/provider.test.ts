// Plan: the provider boundary. Unsupported modes fail with ENOTSUP before anything changes; impossible
// allocations fail with ENOMEM and leave no root; the WebGPU device is requested with the adapter's own
// limits; after device loss new work is refused with ENODEV while existing owners stay owned and can
// still be ended (the loss is driven through the provider's named fault seam on a real device).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allocate, createHostProvider, createWebGPUProvider, fromArray, zeros } from '../../src/index.js';
import type { HostProvider, WebGPUProvider } from '../../src/index.js';
import { expectCode, expectCodeAsync } from '../support/expect-error.js';
import { inBrowser, providerCases, webgpuCase } from '../support/providers.js';

for (const pc of providerCases()) {
  describe(`provider boundary on ${pc.name}`, () => {
    let provider: HostProvider | WebGPUProvider;
    beforeAll(async () => {
      provider = await pc.make();
    });
    afterAll(() => {
      if (provider.kind === 'webgpu') (provider as WebGPUProvider).destroy();
    });

    it('[G1-provider-enomem] an allocation past the provider limit fails ENOMEM and creates nothing', async () => {
      const limit = provider.capabilities.maxAllocationBytes;
      const before = provider.counters();
      const mark = provider.ledgerMark();
      await expectCodeAsync(
        () => allocate(provider, 'u8', { shape: [limit + 1] }),
        'ENOMEM',
        'exceeds-limit',
      );
      const after = provider.counters();
      expect(after.rootsCreated).toBe(before.rootsCreated);
      expect(after.resourcesCreated).toBe(before.resourcesCreated);
      expect(after.liveBytes).toBe(before.liveBytes);
      expect(provider.ledgerSince(mark)).toEqual([]);
      // the provider still allocates normally afterwards
      const t = await zeros(provider, 'u8', [8]);
      t.dispose();
    });

    it('[G1-provider-enotsup] device preparation and scoped modes are refused up front where the provider lacks them', async () => {
      const t = await fromArray(provider, 'f32', Float32Array.from([1, 2]));
      if (provider.capabilities.deviceBinding) {
        using p = t.prepareDevice();
        expect(p.kind).toBe('device-read');
        expect(provider.capabilities.scopedExecution).toBe(false);
      } else {
        const before = provider.counters();
        expectCode(() => t.prepareDevice(), 'ENOTSUP', 'no-device');
        expectCode(() => t.prepareDeviceMut(), 'ENOTSUP', 'no-device');
        expect(provider.counters().liveResources).toBe(before.liveResources);
        expect(provider.capabilities.scopedExecution).toBe(true);
        // nothing stayed borrowed: an exclusive borrow and a write succeed
        await t.write(Float32Array.from([3, 4]));
      }
      t.dispose();
    });
  });
}

describe('host provider options', () => {
  it('[G1-provider-enomem] a host provider with a small limit refuses larger roots with ENOMEM', async () => {
    const host = createHostProvider({ maxAllocationBytes: 64 });
    await expectCodeAsync(() => zeros(host, 'f32', [17]), 'ENOMEM', 'exceeds-limit');
    const ok = await zeros(host, 'f32', [16]);
    expect(host.counters().liveBytes).toBe(64);
    ok.dispose();
    expect(host.counters().liveRoots).toBe(0);
  });

  it('[G1-provider-enotsup] shared host roots are SharedArrayBuffers only where the platform offers them', async () => {
    if (typeof SharedArrayBuffer === 'undefined') {
      expectCode(() => createHostProvider({ shared: true }), 'ENOTSUP', 'no-shared-memory');
      return;
    }
    const host = createHostProvider({ shared: true });
    expect(host.capabilities.sharedMemory).toBe(true);
    const t = await zeros(host, 'u8', [4]);
    {
      using p = await t.prepareHost();
      expect(p.kind === 'contiguous' && p.asArray().buffer instanceof SharedArrayBuffer).toBe(true);
    }
    t.dispose();
  });
});

describe('WebGPU provider creation and loss', () => {
  // Chromium here has WebGPU: only the node lane has a platform without the entry point.
  it.skipIf(inBrowser)('[G1-provider-enotsup] without a WebGPU entry point creation fails ENOTSUP', async () => {
    expect((globalThis as { navigator?: { gpu?: unknown } }).navigator?.gpu).toBeUndefined();
    await expectCodeAsync(() => createWebGPUProvider(), 'ENOTSUP', 'no-webgpu');
  });

  it('[G1-provider-limits] the device gets the adapter limits, not the WebGPU defaults', async () => {
    const provider = (await webgpuCase().make()) as WebGPUProvider;
    const gpu = inBrowser ? navigator.gpu : (globalThis as { __tenonNodeGPU?: GPU }).__tenonNodeGPU!;
    const adapter = (await gpu.requestAdapter())!;
    for (const name of ['maxBufferSize', 'maxStorageBufferBindingSize', 'maxComputeWorkgroupStorageSize', 'maxComputeInvocationsPerWorkgroup'] as const) {
      expect(provider.device.limits[name]).toBe(adapter.limits[name]);
    }
    // the software adapter offers more than the 256 MiB default buffer size (TOOLCHAIN.md)
    expect(provider.device.limits.maxBufferSize).toBeGreaterThan(256 * 1024 * 1024);
    expect(provider.capabilities.maxAllocationBytes).toBe(adapter.limits.maxBufferSize);
    expect(provider.capabilities.claimAlignment).toBe(Math.max(4, adapter.limits.minStorageBufferOffsetAlignment));
    provider.destroy();
  });

  it('[G1-provider-loss] after the device is lost new work fails ENODEV and existing owners stay owned until disposed', async () => {
    const provider = (await webgpuCase().make()) as WebGPUProvider;
    const t = await fromArray(provider, 'f32', Float32Array.from([1, 2, 3]));
    const before = provider.counters();
    provider.faults.loseDevice();
    const loss = await provider.lost;
    expect(loss.reason).toBe('destroyed');
    expect(provider.loss).toEqual(loss);
    await expectCodeAsync(() => zeros(provider, 'f32', [2]), 'ENODEV', 'device-lost');
    await expectCodeAsync(() => t.toArray(), 'ENODEV', 'device-lost');
    expectCode(() => t.prepareDevice(), 'ENODEV', 'device-lost');
    // the owner was not consumed and its borrow state is clean
    expect(t.moved).toBe(false);
    expect(t.shape).toEqual([3]);
    expect(provider.counters().liveRoots).toBe(before.liveRoots);
    t.dispose();
    expect(provider.counters().liveRoots).toBe(before.liveRoots - 1);
    expect(provider.counters().doubleDestroys).toBe(0);
  });
});

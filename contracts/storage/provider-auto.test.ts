// Plan: provider auto-selection (src/storage/auto.ts), on both lanes.
//   - classifyAdapter over adapter identities: the fallback flag first, then CPU implementations named as
//     whole words (SwiftShader as Chromium and Dawn report it, llvmpipe as Dawn's OpenGL backend reports it
//     here, lavapipe, WARP, Microsoft Basic Render Driver); real hardware is hardware; near-miss names
//     are not markers.
//   - auto on this lane's adapter (SwiftShader, a fallback adapter: TOOLCHAIN.md) makes the host provider,
//     says so (requested, kind, reason, the adapter with its names) and the provider works.
//   - forcing 'webgpu' on the same adapter makes a working WebGPU provider (reason forced, adapter marked
//     software); forcing 'host' makes the host provider with its options and looks at no adapter.
//   - bad arguments fail EINVAL before anything is requested.
import { describe, expect, it } from 'vitest';
import { classifyAdapter, createProvider, fromArray } from '../../src/index.js';
import type { AdapterIdentity, WebGPUProvider } from '../../src/index.js';
import { expectCodeAsync } from '../support/expect-error.js';
import { inBrowser } from '../support/providers.js';

/** The lane's GPU entry point: Chromium's navigator.gpu, or Dawn in Node (contracts/support/setup-node.ts). */
function laneGPU(): GPU {
  const gpu = inBrowser ? navigator.gpu : (globalThis as { __tenonNodeGPU?: GPU }).__tenonNodeGPU;
  if (gpu === undefined) throw new Error('this lane has no GPU entry point');
  return gpu;
}

const identity = (vendor: string, architecture: string, device: string, description: string, isFallbackAdapter?: boolean): AdapterIdentity => ({
  vendor,
  architecture,
  device,
  description,
  ...(isFallbackAdapter === undefined ? {} : { isFallbackAdapter }),
});

describe('provider auto-selection', () => {
  it('[G1-provider-auto] classifyAdapter: the fallback flag, then CPU implementations named as whole words; hardware is hardware', () => {
    const table: readonly [AdapterIdentity, string, string | undefined][] = [
      // Chromium's SwiftShader (TOOLCHAIN.md) and Dawn in Node on this machine
      [identity('google', 'swiftshader', '', '', true), 'fallback-adapter', undefined],
      [identity('google', 'swiftshader', 'swiftshader-device-subzero-', 'SwiftShader driver 5.0.0', true), 'fallback-adapter', undefined],
      // the same without the flag (browsers that do not report it, or report false)
      [identity('google', 'swiftshader', '', ''), 'software-adapter', 'swiftshader'],
      [identity('google', '', '', 'SwiftShader driver 5.0.0', false), 'software-adapter', 'swiftshader'],
      // Dawn's OpenGL backend over Mesa here (compatibility mode): not flagged as a fallback
      [identity('', '', 'llvmpipe-llvm-15-0-6-256-bits-', 'OpenGL version 4.5 (Core Profile) Mesa 22.3.6', false), 'software-adapter', 'llvmpipe'],
      [identity('mesa', '', '', 'llvmpipe (LLVM 15.0.6, 256 bits)'), 'software-adapter', 'llvmpipe'],
      [identity('mesa', '', 'lavapipe', ''), 'software-adapter', 'lavapipe'],
      [identity('microsoft', '', '', 'Microsoft Basic Render Driver'), 'software-adapter', 'microsoft basic render driver'],
      [identity('microsoft', 'warp', '', ''), 'software-adapter', 'warp'],
      // hardware
      [identity('nvidia', 'ampere', '', 'NVIDIA GeForce RTX 3080', false), 'hardware-adapter', undefined],
      [identity('intel', 'gen-12lp', '', 'Intel(R) Iris(R) Xe Graphics'), 'hardware-adapter', undefined],
      [identity('apple', 'metal-3', '', 'Apple M2'), 'hardware-adapter', undefined],
      [identity('amd', 'rdna-3', '', 'AMD Radeon RX 7900 XTX', false), 'hardware-adapter', undefined],
      // near misses are not markers
      [identity('warpspeed', 'hyperwarp', '', 'swiftshaderless'), 'hardware-adapter', undefined],
    ];
    for (const [info, reason, marker] of table) {
      const c = classifyAdapter(info);
      expect(c.reason, JSON.stringify(info)).toBe(reason);
      expect(c.software, JSON.stringify(info)).toBe(reason !== 'hardware-adapter');
      expect(c.marker, JSON.stringify(info)).toBe(marker);
    }
  });

  it('[G1-provider-auto] auto on this lane\'s SwiftShader adapter makes the host provider, says why and names the adapter; the provider works', async () => {
    const gpu = laneGPU();
    const adapter = await gpu.requestAdapter();
    expect(adapter?.info.architecture, 'precondition: this lane runs SwiftShader (TOOLCHAIN.md)').toBe('swiftshader');
    const provider = await createProvider('auto', { gpu });
    expect(provider.kind).toBe('host');
    expect(provider.selection).toMatchObject({
      requested: 'auto',
      kind: 'host',
      reason: 'fallback-adapter',
      adapter: { vendor: 'google', architecture: 'swiftshader', isFallbackAdapter: true, software: true, reason: 'fallback-adapter' },
    });
    expect(provider.selection.message).toContain('swiftshader');
    expect(Object.isFrozen(provider.selection)).toBe(true);
    const t = await fromArray(provider, 'f32', Float32Array.of(1, 2, 3));
    expect(Array.from(await t.toArray())).toEqual([1, 2, 3]);
    t.dispose();
    expect(provider.counters().liveRoots).toBe(0);
  });

  it('[G1-provider-auto] auto with the lane\'s default entry point (no gpu passed) decides the same way', async () => {
    // Chromium: navigator.gpu is SwiftShader; Node 20 has no navigator.gpu, so there is no WebGPU at all.
    const provider = await createProvider();
    expect(provider.kind).toBe('host');
    expect(provider.selection.requested).toBe('auto');
    expect(provider.selection.reason).toBe(inBrowser ? 'fallback-adapter' : 'no-webgpu');
    expect(provider.selection.adapter === undefined).toBe(!inBrowser);
  });

  it('[G1-provider-auto-force] forcing webgpu on the same adapter makes a working WebGPU provider, reason forced, adapter marked software', async () => {
    const provider = await createProvider('webgpu', { gpu: laneGPU() });
    try {
      expect(provider.kind).toBe('webgpu');
      expect(provider.selection).toMatchObject({ requested: 'webgpu', kind: 'webgpu', reason: 'forced', adapter: { architecture: 'swiftshader', software: true } });
      expect(provider.selection.message).toContain('software adapter');
      const t = await fromArray(provider, 'f32', Float32Array.of(4, 5));
      expect(Array.from(await t.toArray())).toEqual([4, 5]);
      t.dispose();
    } finally {
      (provider as WebGPUProvider).destroy();
    }
  });

  it('[G1-provider-auto-force] forcing host makes the host provider with its options and looks at no adapter', async () => {
    const provider = await createProvider('host', { gpu: laneGPU(), host: { shared: true, maxAllocationBytes: 4096 } });
    expect(provider.kind).toBe('host');
    expect(provider.selection).toEqual({ requested: 'host', kind: 'host', reason: 'forced', message: provider.selection.message });
    expect(provider.selection.adapter).toBeUndefined();
    expect(provider.capabilities.sharedMemory).toBe(true);
    expect(provider.capabilities.maxAllocationBytes).toBe(4096);
  });

  it('[G1-provider-auto-force] a bad choice or bad WebGPU limits fail EINVAL before anything is requested', async () => {
    await expectCodeAsync(() => createProvider('gpu' as never, { gpu: laneGPU() }), 'EINVAL', 'bad-provider-choice');
    await expectCodeAsync(() => createProvider('auto', { gpu: laneGPU(), webgpu: { limits: { maxBindGroups: 2 } as never } }), 'EINVAL', 'bad-limit');
    await expectCodeAsync(() => createProvider('host', { webgpu: { limits: { maxBufferSize: 0 } } }), 'EINVAL', 'bad-limit');
  });
});

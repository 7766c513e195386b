// Plan: provider auto-selection where the node lane can reach what Chromium cannot: a GPU entry point
// that gives no adapter (Dawn asked for a backend this machine lacks: D3D12 on Linux). auto falls to the
// host provider and says why; forcing webgpu there fails ENOTSUP no-adapter as createWebGPUProvider does.
import { create } from 'webgpu';
import { describe, expect, it } from 'vitest';
import { createProvider } from '../../src/index.js';
import { expectCodeAsync } from '../support/expect-error.js';

describe('provider auto-selection without an adapter (node lane)', () => {
  const noAdapter = create(['backend=d3d12']);

  it('[G1-provider-auto] an entry point with no adapter gives the host provider, reason no-adapter', async () => {
    expect(await noAdapter.requestAdapter(), 'precondition: Dawn has no D3D12 adapter on this machine').toBeNull();
    const provider = await createProvider('auto', { gpu: noAdapter });
    expect(provider.kind).toBe('host');
    expect(provider.selection).toMatchObject({ requested: 'auto', kind: 'host', reason: 'no-adapter' });
    expect(provider.selection.adapter).toBeUndefined();
  });

  it('[G1-provider-auto-force] forcing webgpu where there is no adapter fails ENOTSUP no-adapter', async () => {
    await expectCodeAsync(() => createProvider('webgpu', { gpu: noAdapter }), 'ENOTSUP', 'no-adapter');
  });
});

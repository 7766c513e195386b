// Demo page (until the ship issue): runs the ownership kernel on this browser's WebGPU device and shows
// adapter info, a round trip through borrows and prepared access, and the provider counters.
import { createAllocationGroup, createWebGPUProvider, fromArray, isTenonError } from '../src/index.js';

const $ = (id: string): HTMLElement => document.getElementById(id)!;
const log = (line: string): void => {
  $('log').textContent += `${line}\n`;
};

async function main(): Promise<void> {
  let provider;
  try {
    provider = await createWebGPUProvider();
  } catch (err) {
    $('status').className = 'error';
    $('status').textContent = isTenonError(err, 'ENOTSUP')
      ? 'This browser has no WebGPU adapter. Use Chromium with WebGPU enabled (see README, browser requirements).'
      : `Could not start WebGPU: ${String(err)}`;
    return;
  }
  const info = provider.adapterInfo;
  $('adapter').textContent = JSON.stringify(
    { vendor: info.vendor, architecture: info.architecture, description: info.description, isFallbackAdapter: (info as { isFallbackAdapter?: boolean }).isFallbackAdapter, crossOriginIsolated },
    null,
    2,
  );
  const t = await fromArray(provider, 'f32', Float32Array.from({ length: 12 }, (_, i) => i), [3, 4]);
  log(`tensor ${JSON.stringify(t.shape)} on ${t.provider.id}: ${Array.from(await t.toArray()).join(' ')}`);
  const transposed = t.intoLayout({ shape: [4, 3], strides: [1, 4] });
  log(`transposed view (strided, no copy): ${Array.from(await transposed.toArray()).join(' ')}`);
  const group = createAllocationGroup();
  const { allocation, descriptor } = group.insert(transposed);
  const alias = group.alias(allocation, 'u32', { shape: [12] });
  try {
    group.splitMut([descriptor, alias]);
  } catch (err) {
    log(`splitMut over aliasing slots refused: ${isTenonError(err) ? `${err.code} ${err.reason}` : String(err)}`);
  }
  {
    using m = group.viewMut(descriptor);
    await m.fill(1.5);
  }
  {
    using v = group.view(descriptor);
    log(`after fill through a group view-mut: ${Array.from(await v.toArray()).slice(0, 4).join(' ')} …`);
  }
  group.dispose();
  const c = provider.counters();
  $('counters').textContent = JSON.stringify(c, null, 2);
  $('status').textContent = c.liveRoots === 0 ? 'done: every root was destroyed exactly once' : `done, but ${c.liveRoots} roots are live`;
}

void main().catch((err: unknown) => {
  $('status').className = 'error';
  $('status').textContent = String(err);
});

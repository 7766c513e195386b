// A DeviceRegion over a real GPUBuffer (Chromium's WebGPU, SwiftShader here), the way a higher layer
// would adapt a tensor: uploads go through queue.writeBuffer and resolve only after
// onSubmittedWorkDone (the fence, M9); downloads copy through a mappable staging buffer. It offers no
// direct route, so every transfer is staged and 'direct' requests must be refused (M10).
import type { DeviceRegion } from '../../../src/index.js';
import { onCleanup } from './plane.js';

export interface GpuRegion extends DeviceRegion {
  /** Uploads whose fence has passed. */
  readonly fenced: number;
  readBack(): Promise<Uint8Array>;
}

export async function gpuRegion(byteLength: number): Promise<GpuRegion> {
  const adapter = await navigator.gpu.requestAdapter();
  const device = await adapter!.requestDevice();
  onCleanup(() => device.destroy());
  const buffer = device.createBuffer({ size: byteLength, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC });
  let fenced = 0;
  const readBack = async (): Promise<Uint8Array> => {
    const staging = device.createBuffer({ size: byteLength, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    const enc = device.createCommandEncoder();
    enc.copyBufferToBuffer(buffer, 0, staging, 0, byteLength);
    device.queue.submit([enc.finish()]);
    await staging.mapAsync(GPUMapMode.READ);
    const out = new Uint8Array(staging.getMappedRange().slice(0));
    staging.destroy();
    return out;
  };
  return {
    kind: 'device',
    byteLength,
    readable: true,
    writable: true,
    directRoutes: [],
    get fenced() {
      return fenced;
    },
    async upload(src, at) {
      if (src.length % 4 !== 0 || at % 4 !== 0) throw new RangeError('GPU writes need 4-byte alignment');
      device.queue.writeBuffer(buffer, at, src as Uint8Array<ArrayBuffer>);
      await device.queue.onSubmittedWorkDone();
      fenced++;
    },
    async download(dst, at) {
      const all = await readBack();
      dst.set(all.subarray(at, at + dst.length));
    },
    readBack,
  };
}

// WebGPUProvider: one GPUDevice; every root is one GPUBuffer (STORAGE | COPY_SRC | COPY_DST) owned by its
// Root and destroyed exactly once by the kernel. Storage is device-only: host reads download through a
// temporary MAP_READ staging buffer, host writes go through queue.writeBuffer from mapped or caller bytes.
// Staging buffers are owned by the prepared access that made them and destroyed when it ends.
//
// Device loss (TOOLCHAIN.md): `lost` resolves, pending mapAsync rejects, and a destroyed device throws
// nothing on use. The provider records the loss and refuses new work with ENODEV; roots stay owned by
// their claims, and retirement decides (in src/submit, by a completion fence, never by this flag) whether
// they may ever be freed. A prepared host write whose commit would land on a device known to be lost
// fails its release with ENODEV (the bytes went nowhere), never silently.
// The loss signal can come late (a driver reset is asynchronous): the faults seam can destroy the device
// while keeping `lossObserved` false and `lost` pending until revealLoss(), to show that nothing which
// needs a proof relies on the signal.
// Out-of-memory does not throw from createBuffer: allocation wraps it in error scopes and reports ENOMEM.
// Single-threaded: the device cannot leave the thread that requested it.
import { TenonError } from '../errors.js';
import type { ByteRange } from '../errors.js';
import { alignDown, alignUp } from './arith.js';
import { ProviderCore } from './provider.js';
import type { MappedRange, ProviderCapabilities } from './provider.js';
import type { Claim, Root } from './root.js';

/** copyBufferToBuffer and writeBuffer offsets and sizes must be multiples of 4 bytes (WebGPU spec). */
const COPY_ALIGNMENT = 4;

/** Limits raised to whatever the adapter offers (the defaults are far below most adapters). */
const RAISED_LIMITS = [
  'maxBufferSize',
  'maxStorageBufferBindingSize',
  'maxUniformBufferBindingSize',
  'maxStorageBuffersPerShaderStage',
  'maxComputeWorkgroupStorageSize',
  'maxComputeInvocationsPerWorkgroup',
  'maxComputeWorkgroupSizeX',
  'maxComputeWorkgroupSizeY',
  'maxComputeWorkgroupSizeZ',
  'maxComputeWorkgroupsPerDimension',
  'maxBindGroups',
  'maxBindingsPerBindGroup',
] as const;

/** Optional device features requested whenever the adapter has them (kernels pick variants from device.features). */
const OPTIONAL_FEATURES: readonly GPUFeatureName[] = ['subgroups'];

export interface WebGPUProviderOptions {
  /** The GPU entry point; defaults to `navigator.gpu`. Node passes the `webgpu` package's `create([])`. */
  readonly gpu?: GPU;
  readonly powerPreference?: GPUPowerPreference;
  readonly label?: string;
  /**
   * Caps below the device's limits, enforced by the provider (tests force small limits with it; WebGPU
   * cannot lower a device limit under its default): maxBufferSize caps `maxAllocationBytes`,
   * maxStorageBufferBindingSize caps `maxBindingBytes`. The device is still requested with the adapter's
   * own limits.
   */
  readonly limits?: WebGPULimitCaps;
}

/** See WebGPUProviderOptions.limits. */
export interface WebGPULimitCaps {
  readonly maxBufferSize?: number;
  readonly maxStorageBufferBindingSize?: number;
}

export interface DeviceLoss {
  readonly reason: string;
  readonly message: string;
}

/** Named fault-injection seam: lets tests drive the production loss path on a real device. */
export interface WebGPUFaults {
  /** Destroys the device now, exactly as a lost device would behave. */
  loseDevice(): void;
  /** Destroys the device right after the next staging mapAsync has started (a loss during a map). */
  loseDeviceDuringNextMap(): void;
  /**
   * Destroys the device now but keeps the loss unreported: `lossObserved` stays false and `lost` stays
   * pending until revealLoss() (a driver reset that becomes visible late). Work submitted meanwhile goes
   * nowhere and pending or new maps reject, exactly as on any lost device.
   */
  loseDeviceSilently(): void;
  /** Reports a silent loss: `lossObserved` turns true at once and `lost` resolves. */
  revealLoss(): void;
}

export class WebGPUProvider extends ProviderCore {
  readonly kind = 'webgpu' as const;
  readonly capabilities: ProviderCapabilities;
  /** The device; owned by this provider and destroyed only by `destroy()` or the loss seam. */
  readonly device: GPUDevice;
  readonly adapterInfo: GPUAdapterInfo;
  /** Resolves when the device is lost for any reason (including `destroy()`). */
  readonly lost: Promise<DeviceLoss>;
  readonly faults: WebGPUFaults;
  /**
   * The GPU entry point and adapter the device came from, held for the provider's life: with Dawn in Node
   * (webgpu 0.6.2) the process aborts if the entry object is garbage-collected while its device works.
   */
  readonly #origin: { readonly gpu: GPU; readonly adapter: GPUAdapter } | undefined;
  #loss: DeviceLoss | undefined;
  /** Set synchronously when our own code destroys the device, before `lost` can report it. */
  #destroyRequested = false;
  #loseDuringMap = false;
  /** Set while a silent loss is unreported: releasing it lets `lost` resolve. */
  #hiddenLoss: (() => void) | undefined;
  #lossGate: Promise<void> | undefined;

  constructor(device: GPUDevice, adapterInfo: GPUAdapterInfo, origin?: { gpu: GPU; adapter: GPUAdapter }, caps: WebGPULimitCaps = {}) {
    super('webgpu');
    this.device = device;
    this.adapterInfo = adapterInfo;
    this.#origin = origin;
    const limits = device.limits;
    this.capabilities = Object.freeze({
      kind: 'webgpu',
      hostAccess: 'download',
      sharedMemory: false,
      deviceBinding: true,
      scopedExecution: false,
      // A claim is bound from its first byte, so split points honour the binding offset alignment.
      claimAlignment: Math.max(limits.minStorageBufferOffsetAlignment, COPY_ALIGNMENT),
      writeGranularity: COPY_ALIGNMENT,
      maxAllocationBytes: Math.min(limits.maxBufferSize, caps.maxBufferSize ?? Infinity),
      maxBindingBytes: Math.min(limits.maxStorageBufferBindingSize, limits.maxBufferSize, caps.maxStorageBufferBindingSize ?? Infinity, caps.maxBufferSize ?? Infinity),
    });
    this.lost = device.lost.then(async (info) => {
      if (this.#lossGate !== undefined) await this.#lossGate;
      this.#loss = { reason: info.reason, message: info.message };
      return this.#loss;
    });
    this.faults = Object.freeze({
      loseDevice: () => this.destroy(),
      loseDeviceDuringNextMap: () => {
        this.#loseDuringMap = true;
      },
      loseDeviceSilently: () => {
        if (this.#hiddenLoss === undefined && !this.lossObserved) {
          this.#lossGate = new Promise<void>((release) => (this.#hiddenLoss = release));
        }
        this.device.destroy();
      },
      revealLoss: () => this.#revealLoss(),
    });
  }

  /** WGSL language features of the GPU entry point the device came from (empty when unknown). */
  get wgslLanguageFeatures(): ReadonlySet<string> {
    return this.#origin?.gpu.wgslLanguageFeatures ?? (globalThis.navigator as Navigator | undefined)?.gpu?.wgslLanguageFeatures ?? new Set<string>();
  }

  /** The loss that ended the device, once known. */
  get loss(): DeviceLoss | undefined {
    return this.#loss;
  }

  /**
   * True when the device is lost or known to be going: `lost` resolved, or our own code destroyed it.
   * New work is refused while it is true. It can turn true late, so retirement never treats false as
   * evidence of completion (src/submit/fence.ts proves completion instead).
   */
  get lossObserved(): boolean {
    if (this.#hiddenLoss !== undefined) return false;
    return this.#loss !== undefined || this.#destroyRequested;
  }

  protected override assertUsable(op: string): void {
    if (this.lossObserved) {
      const why = this.#loss?.reason ?? 'destroyed';
      throw new TenonError('ENODEV', `device lost (${why})`, { op, reason: 'device-lost', ids: { provider: this.id } });
    }
  }

  protected async createResource(bytes: number, op: string): Promise<GPUBuffer> {
    const device = this.device;
    device.pushErrorScope('out-of-memory');
    device.pushErrorScope('validation');
    const buffer = device.createBuffer({
      size: alignUp(Math.max(bytes, COPY_ALIGNMENT), COPY_ALIGNMENT),
      usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST,
    });
    // Pop both scopes synchronously so concurrent allocations cannot interleave with ours.
    const validation = device.popErrorScope();
    const oom = device.popErrorScope();
    const [v, o] = await Promise.all([validation, oom]);
    if (v !== null || o !== null) {
      buffer.destroy();
      throw new TenonError('ENOMEM', `device could not allocate ${bytes} bytes`, {
        op,
        reason: o !== null ? 'out-of-memory' : 'rejected',
        ids: { provider: this.id },
        cause: o ?? v,
      });
    }
    this.assertUsable(op);
    return buffer;
  }

  protected destroyResource(resource: object): void {
    (resource as GPUBuffer).destroy();
  }

  bufferOf(root: Root): GPUBuffer {
    return root.resource as GPUBuffer;
  }

  /** Downloads `range` into a fresh staging buffer and maps it. */
  async mapRead(root: Root, range: ByteRange, op: string): Promise<MappedRange> {
    const start = alignDown(range.start, COPY_ALIGNMENT);
    const size = alignUp(range.end, COPY_ALIGNMENT) - start;
    if (size === 0) return emptyMapping();
    const staging = this.device.createBuffer({ size, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    this.stagingCreated(size);
    const encoder = this.device.createCommandEncoder();
    encoder.copyBufferToBuffer(this.bufferOf(root), start, staging, 0, size);
    this.device.queue.submit([encoder.finish()]);
    this.ledger.record({ kind: 'copy', reason: 'transfer', bytes: size, from: root.id, to: 'host' });
    await this.#map(staging, GPUMapMode.READ, op);
    return {
      buffer: staging.getMappedRange(),
      byteOffset: range.start - start,
      release: () => {
        staging.unmap();
        this.destroyTracked(staging);
      },
    };
  }

  /** Host-visible copy of `range`; on commit its bytes go back with queue.writeBuffer. */
  async mapWrite(root: Root, range: ByteRange, load: boolean, op: string): Promise<MappedRange> {
    const start = alignDown(range.start, COPY_ALIGNMENT);
    const size = alignUp(range.end, COPY_ALIGNMENT) - start;
    if (size === 0) return emptyMapping();
    // Bytes around the range inside the aligned window must survive the write-back, so an unaligned
    // window is always loaded first.
    const mustLoad = load || start !== range.start || start + size !== range.end;
    const mapped = mustLoad ? await this.mapRead(root, range, op) : this.#mapForUpload(size, range.start - start);
    const target = this.bufferOf(root);
    return {
      buffer: mapped.buffer,
      byteOffset: mapped.byteOffset,
      release: (commit) => {
        if (commit && this.lossObserved) {
          // The device is gone: the bytes cannot reach it. End the mapping, then say so.
          mapped.release(false);
          this.assertUsable('prepared.release');
        }
        if (commit) {
          this.device.queue.writeBuffer(target, start, mapped.buffer as ArrayBuffer, 0, size);
          this.ledger.record({ kind: 'copy', reason: 'transfer', bytes: size, from: 'host', to: root.id });
        }
        mapped.release(false);
      },
    };
  }

  async writeBytes(root: Root, rootOffset: number, src: Uint8Array, op: string): Promise<void> {
    const end = rootOffset + src.byteLength;
    if (rootOffset % COPY_ALIGNMENT === 0 && src.byteLength % COPY_ALIGNMENT === 0) {
      if (src.buffer instanceof SharedArrayBuffer) {
        // Some implementations (Dawn in Node) refuse shared memory in writeBuffer: go through a staging
        // buffer mapped at creation instead; still exactly one copy of the bytes on the host side.
        this.#uploadViaStaging(root, rootOffset, src);
      } else {
        this.device.queue.writeBuffer(this.bufferOf(root), rootOffset, src.buffer as ArrayBuffer, src.byteOffset, src.byteLength);
      }
      this.ledger.record({ kind: 'copy', reason: 'transfer', bytes: src.byteLength, from: 'host', to: root.id });
      return;
    }
    const mapped = await this.mapWrite(root, { start: rootOffset, end }, true, op);
    new Uint8Array(mapped.buffer, mapped.byteOffset, src.byteLength).set(src);
    mapped.release(true);
  }

  async copyBytes(src: Root, srcOffset: number, dst: Root, dstOffset: number, bytes: number): Promise<void> {
    if (bytes === 0) return;
    const size = alignUp(bytes, COPY_ALIGNMENT);
    const encoder = this.device.createCommandEncoder();
    encoder.copyBufferToBuffer(this.bufferOf(src), srcOffset, this.bufferOf(dst), dstOffset, size);
    this.device.queue.submit([encoder.finish()]);
  }

  deviceBinding(claim: Claim, op: string): GPUBufferBinding {
    const size = alignUp(claim.end, COPY_ALIGNMENT) - claim.start;
    if (size === 0) {
      throw new TenonError('EINVAL', 'an empty claim cannot be bound', { op, reason: 'empty-binding' });
    }
    return { buffer: this.bufferOf(claim.root), offset: claim.start, size };
  }

  /**
   * A device buffer owned by the runtime for its own bookkeeping (graph uniforms, fences), counted as a
   * physical resource of this provider. The caller owns it and must end it with destroyRuntimeBuffer().
   */
  createRuntimeBuffer(size: number, usage: GPUBufferUsageFlags, label: string): GPUBuffer {
    this.assertUsable('provider.createRuntimeBuffer');
    const buffer = this.device.createBuffer({ size: alignUp(Math.max(size, COPY_ALIGNMENT), COPY_ALIGNMENT), usage, label });
    this.meter.resourceCreated();
    return buffer;
  }

  destroyRuntimeBuffer(buffer: GPUBuffer): void {
    this.destroyTracked(buffer);
  }

  /** Ends the provider: destroys the device. Live roots become unusable (ENODEV on access). */
  destroy(): void {
    this.#destroyRequested = true;
    this.device.destroy();
    this.#revealLoss();
  }

  #revealLoss(): void {
    const release = this.#hiddenLoss;
    if (release === undefined) return;
    this.#hiddenLoss = undefined;
    this.#destroyRequested = true;
    release();
  }

  #uploadViaStaging(root: Root, rootOffset: number, src: Uint8Array): void {
    if (src.byteLength === 0) return;
    const staging = this.device.createBuffer({ size: src.byteLength, usage: GPUBufferUsage.MAP_WRITE | GPUBufferUsage.COPY_SRC, mappedAtCreation: true });
    this.stagingCreated(src.byteLength);
    this.meter.bump('maps');
    new Uint8Array(staging.getMappedRange()).set(src);
    staging.unmap();
    const encoder = this.device.createCommandEncoder();
    encoder.copyBufferToBuffer(staging, 0, this.bufferOf(root), rootOffset, src.byteLength);
    this.device.queue.submit([encoder.finish()]);
    // Destroying after submit is safe: the copy already holds the buffer on the queue timeline.
    this.destroyTracked(staging);
  }

  #mapForUpload(size: number, byteOffset: number): MappedRange {
    // A plain host array is enough: queue.writeBuffer copies from it on commit.
    const buffer = new ArrayBuffer(size);
    return { buffer, byteOffset, release: () => {} };
  }

  async #map(staging: GPUBuffer, mode: GPUMapModeFlags, op: string): Promise<void> {
    this.meter.bump('maps');
    try {
      const mapped = staging.mapAsync(mode);
      if (this.#loseDuringMap) {
        this.#loseDuringMap = false;
        this.destroy();
      }
      await mapped;
    } catch (cause) {
      this.destroyTracked(staging);
      this.assertUsable(op);
      throw new TenonError('EIO', 'mapping failed', { op, reason: 'map-failed', cause });
    }
  }
}

function emptyMapping(): MappedRange {
  return { buffer: new ArrayBuffer(0), byteOffset: 0, release: () => {} };
}

/** Requests one adapter and device with raised limits. ENOTSUP when WebGPU or an adapter is missing. */
export async function createWebGPUProvider(options: WebGPUProviderOptions = {}): Promise<WebGPUProvider> {
  const op = 'createWebGPUProvider';
  checkLimitCaps(options, op);
  const gpu = options.gpu ?? (globalThis.navigator as Navigator | undefined)?.gpu;
  if (gpu === undefined) {
    throw new TenonError('ENOTSUP', 'WebGPU is not available here', { op, reason: 'no-webgpu' });
  }
  const adapter = await gpu.requestAdapter(options.powerPreference ? { powerPreference: options.powerPreference } : undefined);
  if (adapter === null) {
    throw new TenonError('ENOTSUP', 'no WebGPU adapter', { op, reason: 'no-adapter' });
  }
  return providerOnAdapter(gpu, adapter, options);
}

/** Throws EINVAL `bad-limit` unless options.limits only caps maxBufferSize / maxStorageBufferBindingSize with positive integers. */
export function checkLimitCaps(options: WebGPUProviderOptions, op: string): void {
  for (const [name, value] of Object.entries(options.limits ?? {})) {
    if (name !== 'maxBufferSize' && name !== 'maxStorageBufferBindingSize') throw new TenonError('EINVAL', `limits.${name} cannot be capped`, { op, reason: 'bad-limit', ids: { limit: name } });
    if (value !== undefined && (!Number.isSafeInteger(value) || value < 1)) throw new TenonError('EINVAL', `limits.${name} must be a positive integer`, { op, reason: 'bad-limit', ids: { limit: name } });
  }
}

/**
 * The provider over `adapter`'s one device (requested with the adapter's own limits and the optional
 * features it has). Internal to src/storage: createProvider('auto') looks at the adapter before choosing.
 */
export async function providerOnAdapter(gpu: GPU, adapter: GPUAdapter, options: WebGPUProviderOptions): Promise<WebGPUProvider> {
  const requiredLimits: Record<string, number> = {};
  for (const name of RAISED_LIMITS) {
    const value = (adapter.limits as unknown as Record<string, number | undefined>)[name];
    if (typeof value === 'number') requiredLimits[name] = value;
  }
  const requiredFeatures = OPTIONAL_FEATURES.filter((name) => adapter.features.has(name));
  const descriptor: GPUDeviceDescriptor = { requiredLimits, requiredFeatures };
  if (options.label !== undefined) descriptor.label = options.label;
  const device = await adapter.requestDevice(descriptor);
  return new WebGPUProvider(device, adapter.info, { gpu, adapter }, options.limits ?? {});
}

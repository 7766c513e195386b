// HostProvider: roots are ArrayBuffers, or SharedArrayBuffers when `shared` is set (then other threads can
// attach views to the same memory without copying). Host access is zero-copy: a prepared access is a
// typed-array view over the root itself, so "mapping" does no work and counts no map.
// Destroying a root drops the provider's reference; the garbage collector reclaims the memory once no
// typed array over it survives (prepared accesses end with their borrow, so none should).
import { TenonError } from '../errors.js';
import type { ByteRange } from '../errors.js';
import { ProviderCore } from './provider.js';
import type { MappedRange, ProviderCapabilities } from './provider.js';
import type { Claim, Root } from './root.js';

export interface HostProviderOptions {
  /** Allocate SharedArrayBuffer roots (needs cross-origin isolation in a browser). */
  readonly shared?: boolean;
  /** Largest single allocation; defaults to 2 GiB, the ArrayBuffer limit common to engines we target. */
  readonly maxAllocationBytes?: number;
}

/** 2 GiB: the largest ArrayBuffer length every engine we target accepts. */
const DEFAULT_MAX_HOST_ALLOCATION = 2 ** 31;

interface HostResource {
  buffer: ArrayBuffer | SharedArrayBuffer;
}

const NOOP_RELEASE = (): void => {};

export class HostProvider extends ProviderCore {
  readonly kind = 'host' as const;
  readonly capabilities: ProviderCapabilities;

  constructor(options: HostProviderOptions = {}) {
    super(options.shared ? 'host-shared' : 'host');
    const shared = options.shared === true;
    if (shared && typeof SharedArrayBuffer === 'undefined') {
      throw new TenonError('ENOTSUP', 'SharedArrayBuffer is unavailable (is the page cross-origin isolated?)', {
        op: 'createHostProvider',
        reason: 'no-shared-memory',
      });
    }
    this.capabilities = Object.freeze({
      kind: 'host',
      hostAccess: 'zero-copy',
      sharedMemory: shared,
      deviceBinding: false,
      scopedExecution: true,
      claimAlignment: 1,
      writeGranularity: 1,
      maxAllocationBytes: options.maxAllocationBytes ?? DEFAULT_MAX_HOST_ALLOCATION,
      maxBindingBytes: options.maxAllocationBytes ?? DEFAULT_MAX_HOST_ALLOCATION,
    });
  }

  protected async createResource(bytes: number): Promise<HostResource> {
    return { buffer: this.capabilities.sharedMemory ? new SharedArrayBuffer(bytes) : new ArrayBuffer(bytes) };
  }

  protected destroyResource(resource: object): void {
    // Drop the reference so the collector can reclaim the memory.
    (resource as Partial<HostResource>).buffer = undefined;
  }

  /** The root's memory; kernel-internal (worker transfer of shared roots uses it). */
  bufferOf(root: Root): ArrayBuffer | SharedArrayBuffer {
    const buffer = (root.resource as Partial<HostResource>).buffer;
    if (buffer === undefined) {
      throw new TenonError('ERELEASED', 'root memory was released', { op: 'host.buffer', ids: { root: root.id } });
    }
    return buffer;
  }

  async mapRead(root: Root, range: ByteRange): Promise<MappedRange> {
    return { buffer: this.bufferOf(root), byteOffset: range.start, release: NOOP_RELEASE };
  }

  async mapWrite(root: Root, range: ByteRange): Promise<MappedRange> {
    return { buffer: this.bufferOf(root), byteOffset: range.start, release: NOOP_RELEASE };
  }

  async writeBytes(root: Root, rootOffset: number, src: Uint8Array): Promise<void> {
    // A plain host store: no boundary is crossed, so no ledger event (only transfers and duplicates are).
    new Uint8Array(this.bufferOf(root), rootOffset, src.byteLength).set(src);
  }

  async copyBytes(src: Root, srcOffset: number, dst: Root, dstOffset: number, bytes: number): Promise<void> {
    new Uint8Array(this.bufferOf(dst), dstOffset, bytes).set(new Uint8Array(this.bufferOf(src), srcOffset, bytes));
  }

  deviceBinding(_claim: Claim, op: string): GPUBufferBinding {
    throw new TenonError('ENOTSUP', 'the host provider has no device bindings', { op, reason: 'no-device', ids: { provider: this.id } });
  }
}

export function createHostProvider(options: HostProviderOptions = {}): HostProvider {
  return new HostProvider(options);
}

// HostProvider: roots live in one WebAssembly memory per provider (src/storage/host-memory.ts), so the
// WebAssembly kernels of src/submit read and write tensors in place; with `shared` that memory is a
// shared one, backed by a SharedArrayBuffer that other threads attach to without copying. Host access is
// zero-copy: a prepared access is a typed-array view over the root's bytes in that memory, so "mapping"
// does no work and counts no map. Destroying a root returns its block to the memory's free list (reused,
// zero-filled, by a later allocation); a root retained forever keeps its block.
// Growth: an allocation that does not fit grows the memory, and growing an ordinary memory detaches every
// typed array over the old buffer. A mapping's `buffer` is therefore read each time (it is the current
// buffer), and prepared accesses re-derive their arrays from it (src/storage/prepared.ts); `addressOf`
// (where a root starts in `bufferOf`) never changes.
// Engines without WebAssembly memories, and callers that ask for `memory: 'buffers'`, get one ArrayBuffer
// (or SharedArrayBuffer) per root instead: nothing detaches there, and kernels run their scalar twins.
import { TenonError } from '../errors.js';
import type { ByteRange } from '../errors.js';
import { HostMemory, hasWasmMemory } from './host-memory.js';
import { ProviderCore } from './provider.js';
import type { MappedRange, ProviderCapabilities } from './provider.js';
import type { Claim, Root } from './root.js';

/** Where a host provider's roots live: one WebAssembly memory, or an ArrayBuffer each. */
export type HostMemoryKind = 'wasm' | 'buffers';

export interface HostProviderOptions {
  /** Allocate in shared memory (needs cross-origin isolation in a browser). */
  readonly shared?: boolean;
  /** Largest single allocation; defaults to 2 GiB, the ArrayBuffer limit common to engines we target. */
  readonly maxAllocationBytes?: number;
  /** `wasm` (the default where the engine has WebAssembly memories) or `buffers`. */
  readonly memory?: HostMemoryKind;
}

/** 2 GiB: the largest ArrayBuffer length every engine we target accepts. */
const DEFAULT_MAX_HOST_ALLOCATION = 2 ** 31;

/** A root in the provider's memory (`address`, `bytes`) or in its own buffer. */
interface HostResource {
  address: number;
  bytes: number;
  buffer?: ArrayBuffer | SharedArrayBuffer;
  released: boolean;
}

const NOOP_RELEASE = (): void => {};

export class HostProvider extends ProviderCore {
  readonly kind = 'host' as const;
  readonly capabilities: ProviderCapabilities;
  /** `wasm` or `buffers` (see HostProviderOptions.memory). */
  readonly memoryKind: HostMemoryKind;
  /** The memory every root lives in (wasm only); made on the first allocation. */
  #memory: HostMemory | undefined;

  constructor(options: HostProviderOptions = {}) {
    super(options.shared ? 'host-shared' : 'host');
    const shared = options.shared === true;
    if (shared && typeof SharedArrayBuffer === 'undefined') {
      throw new TenonError('ENOTSUP', 'SharedArrayBuffer is unavailable (is the page cross-origin isolated?)', {
        op: 'createHostProvider',
        reason: 'no-shared-memory',
      });
    }
    const memory = options.memory ?? (hasWasmMemory() ? 'wasm' : 'buffers');
    if (memory !== 'wasm' && memory !== 'buffers') {
      throw new TenonError('EINVAL', `memory must be 'wasm' or 'buffers'`, { op: 'createHostProvider', reason: 'bad-option' });
    }
    if (memory === 'wasm' && !hasWasmMemory()) {
      throw new TenonError('ENOTSUP', 'this engine has no WebAssembly memories', { op: 'createHostProvider', reason: 'no-wasm-memory' });
    }
    this.memoryKind = memory;
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

  /**
   * The WebAssembly memory that holds every root (kernel-internal: src/submit instantiates its kernels
   * over it). Undefined for `buffers` providers.
   */
  wasmMemory(): HostMemory | undefined {
    if (this.memoryKind !== 'wasm') return undefined;
    this.#memory ??= new HostMemory(this.capabilities.sharedMemory, () => this.meter.bump('memoryGrowths'));
    return this.#memory;
  }

  protected async createResource(bytes: number, op: string): Promise<HostResource> {
    const memory = this.wasmMemory();
    if (memory === undefined) {
      return { address: 0, bytes, buffer: this.capabilities.sharedMemory ? new SharedArrayBuffer(bytes) : new ArrayBuffer(bytes), released: false };
    }
    return { address: memory.allocate(bytes, op), bytes, released: false };
  }

  protected destroyResource(resource: object): void {
    const r = resource as HostResource;
    r.released = true;
    if (r.buffer !== undefined) r.buffer = undefined;
    else this.#memory!.free(r.address, r.bytes);
  }

  #resource(root: Root): HostResource {
    const r = root.resource as HostResource;
    if (r.released) throw new TenonError('ERELEASED', 'root memory was released', { op: 'host.buffer', ids: { root: root.id } });
    return r;
  }

  /** The buffer holding the root now (re-read after allocations: growth replaces it); kernel-internal. */
  bufferOf(root: Root): ArrayBuffer | SharedArrayBuffer {
    const r = this.#resource(root);
    return r.buffer ?? this.#memory!.buffer;
  }

  /** Byte offset of the root's first byte in `bufferOf(root)` (fixed for the root's life); kernel-internal. */
  addressOf(root: Root): number {
    return this.#resource(root).address;
  }

  #mapping(root: Root, range: ByteRange): MappedRange {
    const r = this.#resource(root);
    const byteOffset = r.address + range.start;
    if (r.buffer !== undefined) return { buffer: r.buffer, byteOffset, release: NOOP_RELEASE };
    const memory = this.#memory!;
    // The buffer is read at each use: after growth it is a new one (the old is detached or too short).
    return {
      get buffer() {
        return memory.buffer;
      },
      byteOffset,
      release: NOOP_RELEASE,
    };
  }

  async mapRead(root: Root, range: ByteRange): Promise<MappedRange> {
    return this.#mapping(root, range);
  }

  async mapWrite(root: Root, range: ByteRange): Promise<MappedRange> {
    return this.#mapping(root, range);
  }

  async writeBytes(root: Root, rootOffset: number, src: Uint8Array): Promise<void> {
    // A plain host store: no boundary is crossed, so no ledger event (only transfers and duplicates are).
    new Uint8Array(this.bufferOf(root), this.addressOf(root) + rootOffset, src.byteLength).set(src);
  }

  async copyBytes(src: Root, srcOffset: number, dst: Root, dstOffset: number, bytes: number): Promise<void> {
    const from = new Uint8Array(this.bufferOf(src), this.addressOf(src) + srcOffset, bytes);
    new Uint8Array(this.bufferOf(dst), this.addressOf(dst) + dstOffset, bytes).set(from);
  }

  deviceBinding(_claim: Claim, op: string): GPUBufferBinding {
    throw new TenonError('ENOTSUP', 'the host provider has no device bindings', { op, reason: 'no-device', ids: { provider: this.id } });
  }
}

export function createHostProvider(options: HostProviderOptions = {}): HostProvider {
  return new HostProvider(options);
}

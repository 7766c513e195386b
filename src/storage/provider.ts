// The provider boundary (DESIGN.md "Providers"). One kernel, several providers: a provider differs only in
// how memory is created, mapped for the host and synchronized, never in what owner, view, group or
// retirement mean.
//
// ProviderCore is the shared base. It owns the counters and ledger of its provider, creates roots (one
// allocation event each) and destroys them exactly once when Root.release() reaches zero. Concrete
// providers (HostProvider, WebGPUProvider) implement the abstract resource and mapping hooks; those hooks
// receive root-relative byte ranges that the kernel already validated, and never validate layouts again.
// Single-threaded: a provider and all its roots live on the thread that created it.
import { TenonError } from '../errors.js';
import type { ByteRange } from '../errors.js';
import { Counters, Ledger } from './counters.js';
import type { AllocationReason, CounterSnapshot, LedgerEvent } from './counters.js';
import { Root } from './root.js';
import type { Claim } from './root.js';

export type ProviderKind = 'host' | 'webgpu';

export interface ProviderCapabilities {
  readonly kind: ProviderKind;
  /** `zero-copy`: prepared host access aliases the root; `download`: it goes through a staging copy. */
  readonly hostAccess: 'zero-copy' | 'download';
  /** Whether roots are SharedArrayBuffers that other threads can attach to without copying. */
  readonly sharedMemory: boolean;
  /** Whether views can be prepared as device bindings (GPUBufferBinding). */
  readonly deviceBinding: boolean;
  /** Whether synchronous scoped read-only execution is offered (host only, G3). */
  readonly scopedExecution: boolean;
  /** Split points inside a root must be multiples of this many bytes. */
  readonly claimAlignment: number;
  /**
   * Host writes reach device memory in whole units of this many bytes (WebGPU copies are 4-byte
   * granular). Two mutable views whose bytes share a unit cannot coexist, and root-to-root copies are
   * aligned to it. 1 on the host provider.
   */
  readonly writeGranularity: number;
  /** Largest single allocation in bytes. */
  readonly maxAllocationBytes: number;
  /**
   * Largest byte range one storage binding may cover (WebGPU maxStorageBufferBindingSize); on the host,
   * maxAllocationBytes. Tensors larger than this are bound in parts (src/model materialisation).
   */
  readonly maxBindingBytes: number;
}

/** Host-visible bytes for a root range during a prepared access. */
export interface MappedRange {
  /** Memory holding the range; the range's first byte is at `byteOffset`. */
  readonly buffer: ArrayBufferLike;
  readonly byteOffset: number;
  /** Ends the mapping. `commit` writes host changes back (write mappings only). Called exactly once. */
  release(commit: boolean): void;
}

/** The public face of a provider. */
export interface Provider {
  readonly kind: ProviderKind;
  /** Diagnostic name, unique per thread. */
  readonly id: string;
  readonly capabilities: ProviderCapabilities;
  /** Current counter values (a copy). */
  counters(): CounterSnapshot;
  /** Ledger position, for `ledgerSince`. */
  ledgerMark(): number;
  /** Allocation and copy events recorded since `mark`. */
  ledgerSince(mark?: number): readonly LedgerEvent[];
}

let nextProviderId = 1;
let nextStagingId = 1;

export abstract class ProviderCore implements Provider {
  abstract readonly kind: ProviderKind;
  abstract readonly capabilities: ProviderCapabilities;
  readonly id: string;
  readonly #counters = new Counters();
  readonly #ledger = new Ledger();
  /** Resources already destroyed; a second destroy is a kernel bug and is counted, never repeated. */
  readonly #destroyed = new WeakSet<object>();

  protected constructor(name: string) {
    this.id = `${name}#${nextProviderId++}`;
  }

  counters(): CounterSnapshot {
    return this.#counters.snapshot();
  }

  ledgerMark(): number {
    return this.#ledger.mark();
  }

  ledgerSince(mark = 0): readonly LedgerEvent[] {
    return this.#ledger.since(mark);
  }

  /** Kernel-internal access to the mutable counters and ledger. */
  get meter(): Counters {
    return this.#counters;
  }

  get ledger(): Ledger {
    return this.#ledger;
  }

  /** Every provider operation reached through a root starts here: one resolution, counted. */
  resolve(): this {
    this.#counters.bump('providerResolutions');
    this.assertUsable('provider.resolve');
    return this;
  }

  /** Throws when the provider can no longer do work (e.g. its device is lost). */
  protected assertUsable(_op: string): void {}

  /** Creates a root of `bytes` bytes (zero-filled) and records one allocation event. */
  async allocateRoot(bytes: number, reason: AllocationReason, op: string): Promise<Root> {
    if (!Number.isSafeInteger(bytes) || bytes < 0) {
      throw new TenonError('EINVAL', 'allocation size must be a non-negative safe integer', { op, reason: 'bad-size' });
    }
    if (bytes > this.capabilities.maxAllocationBytes) {
      throw new TenonError('ENOMEM', `${bytes} bytes exceed the provider limit ${this.capabilities.maxAllocationBytes}`, {
        op,
        reason: 'exceeds-limit',
        ids: { provider: this.id },
      });
    }
    this.assertUsable(op);
    const resource = await this.createResource(bytes, op);
    this.#counters.resourceCreated();
    const root = new Root(this, bytes, reason, resource);
    this.#counters.rootCreated(bytes);
    this.#ledger.record({ kind: 'allocation', reason, bytes, target: 'root', id: root.id });
    return root;
  }

  /** Called by Root.release() when the last retainer goes. Exactly once per root. */
  destroyRoot(root: Root): void {
    this.destroyTracked(root.resource as object);
    this.#counters.rootDestroyed(root.capacity);
  }

  /** Called by Root.retainForever(): the root leaves the live set but its memory is never freed. */
  rootRetainedForever(root: Root): void {
    this.#counters.bump('rootsRetainedForever');
    void root;
  }

  /** Destroys a physical resource once; a repeat is counted and refused. */
  protected destroyTracked(resource: object): void {
    if (this.#destroyed.has(resource)) {
      this.#counters.bump('doubleDestroys');
      throw new TenonError('ERELEASED', 'resource destroyed twice', { op: 'provider.destroy', ids: { provider: this.id } });
    }
    this.#destroyed.add(resource);
    this.destroyResource(resource);
    this.#counters.resourceDestroyed();
  }

  /** Records a temporary staging resource; returns its diagnostic id. */
  protected stagingCreated(bytes: number): number {
    const id = nextStagingId++;
    this.#counters.resourceCreated();
    this.#ledger.record({ kind: 'allocation', reason: 'transfer-destination', bytes, target: 'staging', id });
    return id;
  }

  protected abstract createResource(bytes: number, op: string): Promise<unknown>;
  protected abstract destroyResource(resource: object): void;

  /** Host-visible bytes of `range` (root-relative) for reading. */
  abstract mapRead(root: Root, range: ByteRange, op: string): Promise<MappedRange>;
  /** Host-visible bytes of `range` for writing; `load` fills them with the current contents first. */
  abstract mapWrite(root: Root, range: ByteRange, load: boolean, op: string): Promise<MappedRange>;
  /** Copies caller bytes into the root at `rootOffset`. */
  abstract writeBytes(root: Root, rootOffset: number, src: Uint8Array, op: string): Promise<void>;
  /** Copies `bytes` bytes between two roots of this provider (explicit duplicate). */
  abstract copyBytes(src: Root, srcOffset: number, dst: Root, dstOffset: number, bytes: number, op: string): Promise<void>;
  /** Binding state for a claim (device providers only; ENOTSUP elsewhere). */
  abstract deviceBinding(claim: Claim, op: string): GPUBufferBinding;
}

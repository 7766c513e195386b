// Roots and claims (G1 "Ownership and capability types").
//
// A Root is one physical allocation (an ArrayBuffer / SharedArrayBuffer or a GPUBuffer) made by one
// provider. It is retained by every owner claim, retirement record and live mapping that needs its
// memory, and the provider destroys it exactly once when the last retainer lets go. A root may instead
// be marked retained-forever (completion unproven, G3): then it is never destroyed or reused.
// A Claim is an immutable byte range of a root held by exactly one owner (a Tensor core or a group
// allocation entry). Claims are only created by allocation and by splitting; nothing widens one.
// Root ids are diagnostics: there is no table from id to root, so an id cannot become an owner.
// Single-threaded: roots live on the thread of their provider.
import { TenonError } from '../errors.js';
import type { AllocationReason } from './counters.js';
import type { ProviderCore } from './provider.js';

let nextRootId = 1;

type RootState = 'live' | 'destroyed' | 'retained-forever';

export class Root {
  /** Diagnostic identity, unique per thread. */
  readonly id = nextRootId++;
  readonly provider: ProviderCore;
  /** Bytes the caller asked for; the physical resource may be padded to the provider's alignment. */
  readonly capacity: number;
  readonly reason: AllocationReason;
  /** The physical memory. Owned by this root; released by `provider.destroyResource` exactly once. */
  readonly resource: unknown;
  #retainers = 0;
  #state: RootState = 'live';

  constructor(provider: ProviderCore, capacity: number, reason: AllocationReason, resource: unknown) {
    this.provider = provider;
    this.capacity = capacity;
    this.reason = reason;
    this.resource = resource;
  }

  get state(): RootState {
    return this.#state;
  }

  get retainers(): number {
    return this.#retainers;
  }

  retain(): void {
    if (this.#state !== 'live') {
      throw new TenonError('ERELEASED', 'root is no longer live', { op: 'root.retain', ids: { root: this.id } });
    }
    this.#retainers++;
  }

  /** Drops one retainer; the last one destroys the root (or leaves it retained forever). */
  release(): void {
    if (this.#retainers <= 0) {
      throw new TenonError('ERELEASED', 'root released more often than retained', { op: 'root.release', ids: { root: this.id } });
    }
    this.#retainers--;
    if (this.#retainers === 0 && this.#state === 'live') {
      this.#state = 'destroyed';
      this.provider.destroyRoot(this);
    }
  }

  /**
   * Completion unproven (G3): the memory may still be in use by a device we cannot observe, so it must
   * never be destroyed or reused. Retainers keep counting but reaching zero does nothing.
   */
  retainForever(): void {
    if (this.#state === 'live') {
      this.#state = 'retained-forever';
      this.provider.rootRetainedForever(this);
    }
  }
}

export interface Claim {
  readonly root: Root;
  /** Byte range [start, end) of the root that this claim owns. */
  readonly start: number;
  readonly end: number;
}

export function claimBytes(claim: Claim): number {
  return claim.end - claim.start;
}

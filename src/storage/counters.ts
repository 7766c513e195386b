// Cost and memory accounting for one provider (DESIGN.md "Counters", "Ledgers").
//
// Owned by the provider; mutated only by the kernel on the provider's thread. Tests read snapshots and
// assert deltas, so every counter is monotonic except the `live*` gauges. The ledgers record physical
// allocations and byte-preserving copies with their reason (G7 accounting); views, aliases and retention
// never emit an event.

export interface CounterSnapshot {
  /** Layout validations performed (construction of tensors, descriptors, reinterpretations). */
  readonly validations: number;
  /** Write-injectivity proofs computed (retained afterwards). */
  readonly injectivityProofs: number;
  /** Central disjointness proofs run by splitMut. */
  readonly disjointnessProofs: number;
  /** Times an operation reached the provider through a root to do provider work. */
  readonly providerResolutions: number;
  /** Host mappings of device memory (mapAsync or mappedAtCreation staging). */
  readonly maps: number;
  /** Compute dispatches encoded. */
  readonly dispatches: number;
  readonly rootsCreated: number;
  readonly rootsDestroyed: number;
  /** Roots whose last retainer went while completion was unproven: never destroyed (G3). */
  readonly rootsRetainedForever: number;
  /** Physical resources the provider created / destroyed (GPUBuffers incl. staging, or ArrayBuffers). */
  readonly resourcesCreated: number;
  readonly resourcesDestroyed: number;
  /** Attempts to destroy a resource that was already destroyed; always 0 unless the kernel is broken. */
  readonly doubleDestroys: number;
  readonly liveRoots: number;
  readonly liveBytes: number;
  /** Live physical resources including temporary staging buffers. */
  readonly liveResources: number;
  /**
   * Times a host provider's WebAssembly memory grew (each growth makes typed arrays over the old buffer
   * stale: prepared accesses re-derive theirs). Always 0 on other providers.
   */
  readonly memoryGrowths: number;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

export class Counters {
  readonly #c: Mutable<CounterSnapshot> = {
    validations: 0,
    injectivityProofs: 0,
    disjointnessProofs: 0,
    providerResolutions: 0,
    maps: 0,
    dispatches: 0,
    rootsCreated: 0,
    rootsDestroyed: 0,
    rootsRetainedForever: 0,
    resourcesCreated: 0,
    resourcesDestroyed: 0,
    doubleDestroys: 0,
    liveRoots: 0,
    liveBytes: 0,
    liveResources: 0,
    memoryGrowths: 0,
  };

  snapshot(): CounterSnapshot {
    return { ...this.#c };
  }

  bump(name: Exclude<keyof CounterSnapshot, 'liveRoots' | 'liveBytes' | 'liveResources'>, by = 1): void {
    this.#c[name] += by;
  }

  rootCreated(bytes: number): void {
    this.#c.rootsCreated++;
    this.#c.liveRoots++;
    this.#c.liveBytes += bytes;
  }

  rootDestroyed(bytes: number): void {
    this.#c.rootsDestroyed++;
    this.#c.liveRoots--;
    this.#c.liveBytes -= bytes;
  }

  resourceCreated(): void {
    this.#c.resourcesCreated++;
    this.#c.liveResources++;
  }

  resourceDestroyed(): void {
    this.#c.resourcesDestroyed++;
    this.#c.liveResources--;
  }
}

/** Why a physical allocation happened (G7). */
export type AllocationReason =
  | 'operation-output'
  | 'checkpoint-recompute-output'
  | 'explicit-duplicate-destination'
  | 'transfer-destination';

/** Why bytes were copied without being changed (G7). */
export type CopyReason = 'explicit-duplicate' | 'transfer';

export interface AllocationEvent {
  readonly kind: 'allocation';
  readonly reason: AllocationReason;
  readonly bytes: number;
  /** A root (owned memory) or a staging resource (temporary host-visible memory for a transfer). */
  readonly target: 'root' | 'staging';
  /** Root id, or the staging resource's diagnostic id. */
  readonly id: number;
}

export interface CopyEvent {
  readonly kind: 'copy';
  readonly reason: CopyReason;
  readonly bytes: number;
  /** Root id of the source, or `host` for bytes supplied by the caller. */
  readonly from: number | 'host';
  /** Root id of the destination, or `host` for a download into host memory. */
  readonly to: number | 'host';
}

export type LedgerEvent = AllocationEvent | CopyEvent;

/** Append-only list of ledger events. `mark()` + `since(mark)` gives the events of one step. */
export class Ledger {
  readonly #events: LedgerEvent[] = [];

  record(event: LedgerEvent): void {
    this.#events.push(event);
  }

  mark(): number {
    return this.#events.length;
  }

  since(mark = 0): readonly LedgerEvent[] {
    return this.#events.slice(mark);
  }
}

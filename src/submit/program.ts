// The contract between a compiled graph and the runtime that submits it. Type-only.
//
// A Program is prepared work that the runtime can admit: `bind` does every check that can fail without
// enqueueing (slots, dtypes, shapes, disjointness of writes, provider) and returns BoundWork that records
// or runs the work. `bind` runs on the runtime's thread, synchronously, while the caller still owns the
// group; it must not change the group. The runtime then moves the group into a retirement record before
// the first enqueue-capable call.
import type { AllocationGroup, DescriptorSlot, DType, Provider } from '../storage/index.js';

/** Per-submission values a graph reads from its uniform buffer (e.g. position, token count). */
export type StepValues = Readonly<Record<string, number>>;

/** A tensor the runtime allocates for a submission; it becomes a new slot of the returned group. */
export interface FreshOutputSpec {
  readonly name: string;
  readonly dtype: DType;
  readonly shape: readonly number[];
}

/** Where an output of a submission lives. */
export type OutputRef = { readonly from: 'inputs'; readonly slot: DescriptorSlot } | { readonly from: 'fresh'; readonly slot: DescriptorSlot };

export interface BoundWork {
  /** Device work: records every dispatch into one encoder. Throws only on a kernel bug. */
  readonly encode?: (encoder: GPUCommandEncoder) => void;
  /** Device work: queue uploads made at admission, just before the commands are submitted. */
  readonly upload?: (queue: GPUQueue) => void;
  /** Host work: runs every dispatch synchronously. */
  readonly run?: () => void;
  /** Dispatches this submission performs (counted by the runtime). */
  readonly dispatches: number;
  readonly outputs: readonly OutputRef[];
}

export interface Program {
  readonly name: string;
  readonly provider: Provider;
  /** The runtime that compiled it; another runtime refuses it (its pipelines and buffers are not theirs). */
  readonly owner: object;
  /** Tensors allocated for every submission (fresh outputs), in order. */
  readonly fresh: readonly FreshOutputSpec[];
  /**
   * Everything that may fail before admission. `inputs` is the caller's group (borrowed exclusively for
   * the call), `fresh` holds the freshly allocated outputs in the order of `fresh` specs.
   */
  bind(inputs: AllocationGroup, fresh: AllocationGroup, freshSlots: readonly DescriptorSlot[], step: StepValues): BoundWork;
  /** Told once per admitted submission when it retired; `proven` is false for completion-unproven. */
  settled?(proven: boolean): void;
}

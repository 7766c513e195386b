// Terminal outcomes of a detached submission (G3) and the bundle a completed one yields.
//
// Ownership: exactly one party owns what an outcome carries. `completed` carries a Bundle that owns the
// inputs group (with in-place outputs) and the fresh outputs; `retired-failed` carries the exact inputs
// group, returned only after retirement; `completion-unproven` carries diagnostics and no owner, because
// the memory was retained forever by the runtime. A member of a chain that passed its group on to a later
// member (`passed-on`, `passed-on-failed`) carries no group at all: the group comes back only with the last
// member's outcome. Readback values are plain host arrays, copies owned by whoever holds the outcome.
// Single-threaded, like the runtime.
import { TenonError } from '../errors.js';
import type { AllocationGroup, AnyTypedArray, DescriptorSlot, DType, Tensor, TensorView } from '../storage/index.js';
import type { OutputRef } from './program.js';

export interface UnprovenDiagnostics {
  /** Submission index on its runtime. */
  readonly index: number;
  readonly program: string;
  /** Why completion could not be proven (device loss reason, worker death, ...). */
  readonly reason: string;
  /** Distinct roots now retained forever (never destroyed, never reused). */
  readonly rootsRetained: number;
}

/**
 * The values of a submission's declared readback ranges, in request order: host copies (typed by the
 * descriptor's dtype) of the group's bytes as that submission left them.
 */
export type Readback = readonly AnyTypedArray[];

export type Outcome =
  | {
      readonly kind: 'completed';
      readonly bundle: Bundle;
      /** The declared readback ranges (empty when none were declared; absent on pool outcomes). */
      readonly readback?: Readback;
    }
  | { readonly kind: 'retired-failed'; readonly cause: TenonError; readonly inputs: AllocationGroup }
  | { readonly kind: 'completion-unproven'; readonly cause: TenonError; readonly diagnostics: UnprovenDiagnostics };

/**
 * Terminal outcome of one member of a chain (runtime.chain). The last member ends like a plain submission
 * (`completed`, `retired-failed`, `completion-unproven`) and alone gives the group back; a member that
 * passed the group on ends, after its own proof, `passed-on` (its work and every earlier member's reported
 * no error: its readback and fresh outputs are yours) or `passed-on-failed` (this member or an earlier one
 * reported an error: nothing of it is delivered). A chain with a failed member ends `retired-failed` with
 * the first failure as cause, once the whole chain is proven.
 */
export type ChainOutcome =
  | { readonly kind: 'completed'; readonly bundle: Bundle; readonly readback: Readback }
  | { readonly kind: 'retired-failed'; readonly cause: TenonError; readonly inputs: AllocationGroup }
  | {
      readonly kind: 'passed-on';
      /** Index of the submission the group moved on to. */
      readonly next: number;
      /** This member's fresh outputs (slot i = the program's i-th fresh output), proven and yours. */
      readonly fresh: AllocationGroup;
      readonly readback: Readback;
    }
  | { readonly kind: 'passed-on-failed'; readonly next: number; readonly cause: TenonError }
  | { readonly kind: 'completion-unproven'; readonly cause: TenonError; readonly diagnostics: UnprovenDiagnostics };

/**
 * What a completed submission returns: its inputs group (outputs written in place are slots of it) and
 * the fresh outputs (a group of their own until merged). Consuming members end the bundle.
 */
export class Bundle {
  #inputs: AllocationGroup | undefined;
  #fresh: AllocationGroup | undefined;
  readonly #outputs: readonly OutputRef[];

  constructor(inputs: AllocationGroup, fresh: AllocationGroup, outputs: readonly OutputRef[]) {
    this.#inputs = inputs;
    this.#fresh = fresh;
    this.#outputs = outputs;
  }

  get outputCount(): number {
    return this.#outputs.length;
  }

  #live(op: string): { inputs: AllocationGroup; fresh: AllocationGroup } {
    if (this.#inputs === undefined || this.#fresh === undefined) {
      throw new TenonError('EMOVED', 'bundle was consumed', { op });
    }
    return { inputs: this.#inputs, fresh: this.#fresh };
  }

  #ref(i: number, op: string): OutputRef {
    const ref = Number.isSafeInteger(i) ? this.#outputs[i] : undefined;
    if (ref === undefined) throw new TenonError('EINVAL', `no output ${String(i)}`, { op, reason: 'invalid-output', ids: { output: String(i) } });
    return ref;
  }

  /** A shared borrow of output `i` (release it before consuming the bundle). */
  output<D extends DType = DType>(i: number): TensorView<D> {
    const op = 'bundle.output';
    const groups = this.#live(op);
    const ref = this.#ref(i, op);
    return groups[ref.from === 'inputs' ? 'inputs' : 'fresh'].view<D>(ref.slot);
  }

  /** Consumes the bundle: extracts output `i` as an owner and releases everything else exactly once. */
  intoOutput<D extends DType = DType>(i: number): Tensor<D> {
    const op = 'bundle.intoOutput';
    const { inputs, fresh } = this.#live(op);
    const ref = this.#ref(i, op);
    const keepInputs = ref.from === 'inputs';
    // Move the other group out first: it fails (EBUSY) without change if a borrow of it is alive.
    const drop = (keepInputs ? fresh : inputs).take();
    let tensor: Tensor<D>;
    try {
      tensor = (keepInputs ? inputs : fresh).intoTensor<D>(ref.slot);
    } catch (err) {
      if (keepInputs) this.#fresh = drop;
      else this.#inputs = drop;
      throw err;
    }
    this.#inputs = undefined;
    this.#fresh = undefined;
    drop.dispose();
    return tensor;
  }

  /**
   * Consumes the bundle: returns the inputs group with every fresh output moved in as a new slot (no
   * copy), and the slot of each output in that group.
   */
  intoGroup(): { group: AllocationGroup; outputs: DescriptorSlot[] } {
    const op = 'bundle.intoGroup';
    const live = this.#live(op);
    // Both moves fail without change while a borrow of either group is alive.
    const fresh = live.fresh.take();
    let inputs: AllocationGroup;
    try {
      inputs = live.inputs.take();
    } catch (err) {
      this.#fresh = fresh;
      throw err;
    }
    this.#inputs = undefined;
    this.#fresh = undefined;
    const moved = new Map<number, DescriptorSlot>();
    for (const slot of fresh.descriptors()) moved.set(slot, inputs.insert(fresh.tryExtract(slot)).descriptor);
    fresh.dispose();
    return { group: inputs, outputs: this.#outputs.map((ref) => (ref.from === 'inputs' ? ref.slot : moved.get(ref.slot)!)) };
  }

  /** Releases everything the bundle owns. */
  dispose(): void {
    const live = this.#live('bundle.dispose');
    const fresh = live.fresh.take();
    let inputs: AllocationGroup;
    try {
      inputs = live.inputs.take();
    } catch (err) {
      this.#fresh = fresh;
      throw err;
    }
    this.#inputs = undefined;
    this.#fresh = undefined;
    inputs.dispose();
    fresh.dispose();
  }

  [Symbol.dispose](): void {
    if (this.#inputs !== undefined) this.dispose();
  }
}

/**
 * Thrown by submit() for any failure before admission. The inputs were not touched: `inputs` is the very
 * group the caller passed, still owned by the caller and usable.
 */
export class SubmitRejected extends TenonError {
  readonly inputs: AllocationGroup;
  override readonly cause: TenonError;

  constructor(cause: TenonError, inputs: AllocationGroup) {
    super(cause.code, `submission rejected before admission: ${cause.message}`, {
      op: 'runtime.submit',
      ...(cause.reason !== undefined ? { reason: cause.reason } : {}),
      ...(cause.ids !== undefined ? { ids: cause.ids } : {}),
      cause,
    });
    this.name = 'SubmitRejected';
    this.inputs = inputs;
    this.cause = cause;
  }
}

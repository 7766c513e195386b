// Gradients: what backward returns (seed 000 G7), a specialisation of an AllocationGroup.
//
// Ownership: the bundle owns one group; each gradient is one allocation entry (one owner per gradient
// allocation). `grad(handle)` lends a shared view; `takeGrad(handle)` moves one gradient out as an owner
// and has exactly three outcomes: a Tensor, `undefined` (no gradient for that value), or a thrown
// TenonError from the group's extraction (e.g. EBUSY while a view of the bundle is alive) that leaves the
// bundle unchanged. `dispose()` releases every gradient still inside.
// Keys are the values' handles (any handle or clone of the value finds the same gradient); a key is a
// lookup, never an authority.
// Thread: single-threaded.
import { TenonError } from '../errors.js';
import { createAllocationGroup } from '../storage/index.js';
import type { AllocationGroup, DType, DescriptorSlot, Tensor, TensorView } from '../storage/index.js';
import type { ValueHandle } from './retention.js';
import { valueId } from './ids.js';

export class Gradients {
  #group: AllocationGroup | undefined = createAllocationGroup();
  readonly #slots = new Map<string, DescriptorSlot>();

  /** Internal (src/train): moves each gradient owner in; consumes them. */
  static fromOwners(owners: ReadonlyMap<string, Tensor>): Gradients {
    const g = new Gradients();
    for (const [id, t] of owners) g.#slots.set(id, g.#group!.insert(t).descriptor);
    return g;
  }

  /** Number of gradients still in the bundle. */
  get size(): number {
    this.#live('gradients.size');
    return this.#slots.size;
  }

  /** True when the bundle holds a gradient for `value`. */
  has(value: ValueHandle): boolean {
    this.#live('gradients.has');
    return this.#slots.has(valueId(value, 'gradients.has'));
  }

  /** A shared view of `value`'s gradient, or undefined when it has none. Release it before takeGrad. */
  grad<D extends DType = DType>(value: ValueHandle): TensorView<D> | undefined {
    const op = 'gradients.grad';
    const group = this.#live(op);
    const slot = this.#slots.get(valueId(value, op));
    return slot === undefined ? undefined : group.view<D>(slot);
  }

  /**
   * Moves `value`'s gradient out: a Tensor, or undefined when there is none. An extraction failure throws
   * the group's TenonError and the gradient stays in the bundle.
   */
  takeGrad<D extends DType = DType>(value: ValueHandle): Tensor<D> | undefined {
    const op = 'gradients.takeGrad';
    const group = this.#live(op);
    const id = valueId(value, op);
    const slot = this.#slots.get(id);
    if (slot === undefined) return undefined;
    const tensor = group.tryExtract<D>(slot);
    this.#slots.delete(id);
    return tensor;
  }

  dispose(): void {
    const group = this.#live('gradients.dispose');
    group.dispose();
    this.#group = undefined;
    this.#slots.clear();
  }

  [Symbol.dispose](): void {
    if (this.#group !== undefined) this.dispose();
  }

  #live(op: string): AllocationGroup {
    if (this.#group === undefined) throw new TenonError('EMOVED', 'the gradients bundle was disposed', { op });
    return this.#group;
  }
}

// AllocationGroup (G2): one owner of many allocations and many logical values over them.
//
// Ownership: the group owns every occupied allocation entry (a Claim holding one root retainer). Entries
// have stable indices; moving an owner out leaves a hole and nothing is renumbered. Descriptor slots are
// append-only: a removed descriptor's slot stays vacant for the group's lifetime. A slot is only a lookup
// key under a borrow of this group; it carries no authority and resolves against whatever group it is
// given to.
// Borrows: the whole group has one BorrowNode. `view` lends it shared, `viewMut` exclusively, `splitMut`
// lends N exclusive children after the central disjointness proof (disjoint.ts). Table changes (insert,
// alias, remove, extract) and consuming calls need the group unborrowed.
// Validation: `insert` retains the tensor's checked layout (no revalidation); `alias` validates its new
// layout once; view/viewMut/splitMut/extract only resolve slots. Every failure leaves the group unchanged.
// Single-threaded.
import { TenonError } from '../errors.js';
import { BorrowNode } from './borrow.js';
import { checkDType } from './dtype.js';
import type { DType } from './dtype.js';
import { proveDisjoint } from './disjoint.js';
import type { SplitRequest } from './disjoint.js';
import { checkLayout } from './layout.js';
import type { LayoutSpec } from './layout.js';
import { INTERNAL, TensorView, TensorViewMut, consumeTensor, newTensor } from './tensor.js';
import type { Target, Tensor } from './tensor.js';
import type { Claim } from './root.js';
import type { AnyTypedArray } from './dtype.js';
import type { CheckedLayout } from './layout.js';
import type { ProviderCore } from './provider.js';
import type { HostProvider } from './host.js';
import type { HostMemory } from './host-memory.js';
import { typedView, dtypeSize } from './dtype.js';

declare const allocationSlotBrand: unique symbol;
declare const descriptorSlotBrand: unique symbol;
/** Stable index of an allocation entry. A key, not a capability. */
export type AllocationSlot = number & { readonly [allocationSlotBrand]: true };
/** Append-only index of a descriptor record. A key, not a capability. */
export type DescriptorSlot = number & { readonly [descriptorSlotBrand]: true };

interface DescriptorRecord extends Target {
  readonly allocation: AllocationSlot;
}

/** How a dispatch uses a descriptor: reads may alias each other; a write must be disjoint from all else. */
export type BindingAccess = 'read' | 'write';

export interface DispatchBindingRequest {
  readonly slot: DescriptorSlot;
  readonly access: BindingAccess;
}

interface BindingStateBase {
  readonly slot: DescriptorSlot;
  readonly access: BindingAccess;
  readonly layout: CheckedLayout;
  /** Diagnostic id of the root the binding reaches. */
  readonly rootId: number;
}

/**
 * Device binding state for one dispatch binding: a lifetime-only handle (G5). It grants no ownership and
 * is valid only while the group that produced it is owned by whoever dispatches (a retirement record).
 */
export interface DeviceBindingState extends BindingStateBase {
  readonly binding: GPUBufferBinding;
  /** Index of element [0, ...] counted in elements from the binding's first byte. */
  readonly elementOffset: number;
}

/**
 * Host binding state: a typed array over the layout's envelope in the root itself (zero-copy), and where
 * that envelope sits in its provider's memory. `array` is made when the binding is prepared; if the
 * provider's WebAssembly memory grows before it is used, it goes stale: `liveHostArray(state)` gives one
 * over the current buffer. `address` never changes (WebAssembly kernels take it).
 */
export interface HostBindingState extends BindingStateBase {
  readonly array: AnyTypedArray;
  /** Index of element [0, ...] inside `array`. */
  readonly elementOffset: number;
  /** Byte offset of `array[0]` in its memory (a HostMemory's buffer, or the root's own buffer). */
  readonly address: number;
  /** The memory holding the envelope, for re-deriving `array`; undefined when the root has its own buffer. */
  readonly memory: HostMemory | undefined;
}

/** `state.array`, or an array over the same elements in its memory's current buffer when growth made it stale. */
export function liveHostArray(state: HostBindingState): AnyTypedArray {
  const memory = state.memory;
  if (memory === undefined) return state.array;
  const buffer = memory.buffer;
  return state.array.buffer === buffer ? state.array : typedView(state.layout.dtype, buffer, state.address, (state.layout.envelope.end - state.layout.envelope.start) / dtypeSize(state.layout.dtype));
}

export interface InsertResult {
  readonly allocation: AllocationSlot;
  /** Descriptor carrying the inserted tensor's own layout. */
  readonly descriptor: DescriptorSlot;
}

let moveTablesImpl: (from: AllocationGroup, to: AllocationGroup) => void;
/** Source of table epochs: each new table and each table change takes the next number (never reused). */
let nextTableEpoch = 0;

export class AllocationGroup {
  /** Owned claims, one root retainer each; `undefined` marks a hole left by extraction. */
  #allocations: (Claim | undefined)[] = [];
  /** How many live descriptors reference each allocation (extraction uniqueness in O(1)). */
  #aliases: number[] = [];
  #descriptors: (DescriptorRecord | undefined)[] = [];
  readonly #node = new BorrowNode(null, true);
  /** Changes with every descriptor or allocation added, removed or extracted; moves with the tables. */
  #epoch = ++nextTableEpoch;

  static {
    moveTablesImpl = (from, to) => {
      to.#epoch = from.#epoch;
      from.#epoch = ++nextTableEpoch;
      // `to` is a new, empty group (take()): the tables change hands whole, without copying, and `from`
      // keeps `to`'s empty ones (no new arrays per move).
      const allocations = to.#allocations;
      const aliases = to.#aliases;
      const descriptors = to.#descriptors;
      to.#allocations = from.#allocations;
      to.#aliases = from.#aliases;
      to.#descriptors = from.#descriptors;
      from.#allocations = allocations;
      from.#aliases = aliases;
      from.#descriptors = descriptors;
    };
  }

  /** Number of allocation entries ever created (holes included). */
  get allocationSlots(): number {
    this.#node.checkRead('group.allocationSlots');
    return this.#allocations.length;
  }

  /** Number of descriptor slots ever created (vacant ones included). */
  get descriptorSlots(): number {
    this.#node.checkRead('group.descriptorSlots');
    return this.#descriptors.length;
  }

  /** Occupied descriptor slots in slot order. */
  descriptors(): DescriptorSlot[] {
    this.#node.checkRead('group.descriptors');
    const out: DescriptorSlot[] = [];
    this.#descriptors.forEach((record, slot) => {
      if (record !== undefined) out.push(slot as DescriptorSlot);
    });
    return out;
  }

  /** The allocation a descriptor refers to. */
  allocationOf(slot: DescriptorSlot): AllocationSlot {
    const op = 'group.allocationOf';
    this.#node.checkRead(op);
    return this.#record(slot, op).allocation;
  }

  get moved(): boolean {
    return this.#node.state === 'moved';
  }

  /** Moves `tensor` into a new allocation entry with one descriptor for its layout. Consumes the tensor. */
  insert(tensor: Tensor): InsertResult {
    const op = 'group.insert';
    this.#node.checkWrite(op);
    const target = consumeTensor(tensor, op);
    const allocation = this.#allocations.length as AllocationSlot;
    this.#allocations.push(target.claim);
    this.#aliases.push(0);
    const descriptor = this.#append({ allocation, claim: target.claim, layout: target.layout, injective: target.injective });
    return { allocation, descriptor };
  }

  /** Appends a descriptor with a new layout over an existing allocation (aliases are allowed). */
  alias(allocation: AllocationSlot, dtype: DType, layout: LayoutSpec): DescriptorSlot {
    const op = 'group.alias';
    this.#node.checkWrite(op);
    const claim = this.#allocation(allocation, op);
    checkDType(dtype, op);
    const checked = checkLayout(layout, dtype, claim.end - claim.start, claim.root.provider.meter, op, claim.start);
    return this.#append({ allocation, claim, layout: checked, injective: undefined });
  }

  /** Vacates a descriptor slot forever. The allocation stays owned by the group. */
  removeDescriptor(slot: DescriptorSlot): void {
    const op = 'group.removeDescriptor';
    this.#node.checkWrite(op);
    const record = this.#record(slot, op);
    this.#descriptors[slot] = undefined;
    this.#aliases[record.allocation]!--;
    this.#epoch = ++nextTableEpoch;
  }

  /** A shared view of one descriptor; any number may coexist. */
  view<D extends DType = DType>(slot: DescriptorSlot): TensorView<D> {
    const op = 'group.view';
    this.#node.checkRead(op);
    const record = this.#record(slot, op);
    return new TensorView<D>(INTERNAL, record, this.#node.lendShared(op), true);
  }

  /** The one exclusive view; the whole group is borrowed until it is released. */
  viewMut<D extends DType = DType>(slot: DescriptorSlot): TensorViewMut<D> {
    const op = 'group.viewMut';
    this.#node.checkWrite(op);
    const record = this.#record(slot, op);
    return new TensorViewMut<D>(INTERNAL, record, this.#node.lendExclusive(op), true);
  }

  /**
   * N simultaneous mutable views after one disjointness proof over the retained byte envelopes. Views
   * come back in request order; the group stays borrowed until all of them are released.
   */
  splitMut(slots: readonly DescriptorSlot[]): TensorViewMut[] {
    const op = 'group.splitMut';
    this.#node.checkWrite(op);
    if (!Array.isArray(slots)) throw new TenonError('EINVAL', 'slots must be an array', { op, reason: 'bad-slots' });
    // Array.from visits holes of a sparse list (as undefined), so every position is resolved or rejected.
    const requests: SplitRequest[] = Array.from(slots, (slot, index) => ({ index, slot, record: this.#record(slot, op), write: true }));
    proveDisjoint(requests, op);
    const tokens = this.#node.lendDisjoint(requests.length, op);
    return requests.map((request, i) => new TensorViewMut(INTERNAL, request.record, tokens[i]!, true));
  }

  /**
   * Moves one allocation out as an owner, when `slot` is the only descriptor over it. The descriptor and
   * allocation entries become holes; nothing is renumbered.
   */
  tryExtract<D extends DType = DType>(slot: DescriptorSlot): Tensor<D> {
    const op = 'group.tryExtract';
    this.#node.checkWrite(op);
    const record = this.#record(slot, op);
    const aliases = this.#aliases[record.allocation]!;
    if (aliases !== 1) {
      throw new TenonError('EBUSY', `${aliases - 1} other descriptor(s) alias this allocation`, {
        op,
        reason: 'aliased-allocation',
        ids: { slot, allocation: record.allocation },
      });
    }
    this.#descriptors[slot] = undefined;
    this.#aliases[record.allocation] = 0;
    this.#allocations[record.allocation] = undefined;
    this.#epoch = ++nextTableEpoch;
    return newTensor<D>({ claim: record.claim, layout: record.layout, injective: record.injective });
  }

  /** Consumes the group: returns one descriptor as an owner and releases every other allocation. */
  intoTensor<D extends DType = DType>(slot: DescriptorSlot): Tensor<D> {
    const op = 'group.intoTensor';
    this.#node.checkConsume(op);
    const record = this.#record(slot, op);
    this.#node.markMoved();
    this.#allocations.forEach((claim, index) => {
      if (claim !== undefined && index !== record.allocation) claim.root.release();
    });
    return newTensor<D>({ claim: record.claim, layout: record.layout, injective: record.injective });
  }

  /**
   * Consuming move: returns a new group object owning the same allocations and descriptors under the same
   * slots; this object is moved (EMOVED afterwards). Used to hand a group to a retirement record and back.
   */
  take(): AllocationGroup {
    const op = 'group.take';
    this.#node.checkConsume(op);
    this.#node.markMoved();
    const next = new AllocationGroup();
    moveTables(this, next);
    return next;
  }

  /**
   * Checks that the group can be bound for a dispatch now (owned, not borrowed) and returns its table
   * epoch: it changes whenever a descriptor or allocation is added, removed or extracted, travels with the
   * tables through take(), and no two different tables ever share one. Binding states prepared at an
   * epoch stay exact while it is unchanged (the records they came from are immutable and still owned).
   */
  dispatchEpoch(): number {
    this.#node.checkWrite('group.dispatchEpoch');
    return this.#epoch;
  }

  /**
   * Binding state for one dispatch over this group, derived under the exclusive group borrow the caller
   * holds (G5): every write is proven injective and disjoint from every other binding of the dispatch
   * (reads may alias), all bindings share one provider that can bind them, and on a device no GPUBuffer
   * is both read and written by the same dispatch (WebGPU usage scopes are per buffer). Layouts are not
   * validated again. The returned handles are lifetime-only: they stay valid while this group's
   * allocations stay owned (the submission moves the group into its retirement record at once).
   */
  prepareDispatch(requests: readonly DispatchBindingRequest[], target: 'device'): DeviceBindingState[];
  prepareDispatch(requests: readonly DispatchBindingRequest[], target: 'host'): HostBindingState[];
  prepareDispatch(requests: readonly DispatchBindingRequest[], target: 'device' | 'host'): DeviceBindingState[] | HostBindingState[] {
    const op = 'group.prepareDispatch';
    this.#node.checkWrite(op);
    if (!Array.isArray(requests)) throw new TenonError('EINVAL', 'requests must be an array', { op, reason: 'bad-slots' });
    const resolved = Array.from(requests, (request, index) => {
      if (request === null || typeof request !== 'object' || (request.access !== 'read' && request.access !== 'write')) {
        throw new TenonError('EINVAL', 'each request needs a slot and an access', { op, reason: 'bad-request', ids: { index } });
      }
      return { index, slot: request.slot as number, record: this.#record(request.slot, op), write: request.access === 'write' };
    });
    if (resolved.length === 0) return [];
    const provider: ProviderCore = resolved[0]!.record.claim.root.provider;
    for (const r of resolved) {
      if (r.record.claim.root.provider !== provider) {
        throw new TenonError('EINVAL', 'a dispatch binds memory of one provider only', { op, reason: 'provider-mismatch', ids: { slot: r.slot } });
      }
    }
    const caps = provider.capabilities;
    if (target === 'device' ? !caps.deviceBinding : caps.hostAccess !== 'zero-copy') {
      throw new TenonError('ENOTSUP', `provider ${provider.id} cannot bind for ${target} dispatch`, { op, reason: `no-${target}-dispatch` });
    }
    proveDisjoint(resolved, op);
    if (target === 'device') {
      for (const w of resolved) {
        if (!w.write) continue;
        const clash = resolved.find((r) => !r.write && r.record.claim.root === w.record.claim.root);
        if (clash !== undefined) {
          throw new TenonError('EINVAL', 'a dispatch cannot read and write one GPUBuffer', {
            op,
            reason: 'shared-root-read-write',
            ids: { read: clash.slot, write: w.slot, root: w.record.claim.root.id },
          });
        }
      }
    }
    provider.resolve();
    if (target === 'device') {
      return resolved.map((r) => {
        const { claim, layout } = r.record;
        return Object.freeze({
          slot: r.slot as DescriptorSlot,
          access: r.write ? 'write' : 'read',
          layout,
          rootId: claim.root.id,
          binding: provider.deviceBinding(claim, op),
          elementOffset: layout.byteOffset / dtypeSize(layout.dtype),
        }) satisfies DeviceBindingState;
      });
    }
    return resolved.map((r) => {
      const { claim, layout } = r.record;
      const item = dtypeSize(layout.dtype);
      const host = provider as HostProvider;
      const buffer = host.bufferOf(claim.root);
      const address = host.addressOf(claim.root) + claim.start + layout.envelope.start;
      return Object.freeze({
        slot: r.slot as DescriptorSlot,
        access: r.write ? 'write' : 'read',
        layout,
        rootId: claim.root.id,
        array: typedView(layout.dtype, buffer, address, (layout.envelope.end - layout.envelope.start) / item),
        elementOffset: (layout.byteOffset - layout.envelope.start) / item,
        address,
        memory: host.wasmMemory(),
      }) satisfies HostBindingState;
    });
  }

  /**
   * Terminal step for memory whose device use cannot be proven finished (G3 completion unproven):
   * consumes the group and marks every root it reaches retained forever, so none is ever destroyed or
   * reused. Returns the number of distinct roots marked. There is no way back.
   */
  retainForever(): number {
    const op = 'group.retainForever';
    this.#node.checkConsume(op);
    this.#node.markMoved();
    const roots = new Set(this.#allocations.filter((c): c is Claim => c !== undefined).map((c) => c.root));
    for (const root of roots) root.retainForever();
    return roots.size;
  }

  /** Ends the group and every allocation it still owns. */
  dispose(): void {
    const op = 'group.dispose';
    this.#node.checkConsume(op);
    this.#node.markMoved();
    for (const claim of this.#allocations) claim?.root.release();
  }

  [Symbol.dispose](): void {
    if (this.#node.state !== 'moved') this.dispose();
  }

  #append(record: DescriptorRecord): DescriptorSlot {
    this.#descriptors.push(record);
    this.#epoch = ++nextTableEpoch;
    this.#aliases[record.allocation]!++;
    return (this.#descriptors.length - 1) as DescriptorSlot;
  }

  #allocation(slot: AllocationSlot, op: string): Claim {
    if (!Number.isSafeInteger(slot) || slot < 0 || slot >= this.#allocations.length) {
      throw new TenonError('EINVAL', `no allocation slot ${String(slot)}`, { op, reason: 'invalid-slot', ids: { slot } });
    }
    const claim = this.#allocations[slot];
    if (claim === undefined) throw new TenonError('EINVAL', `allocation slot ${slot} is empty`, { op, reason: 'empty-slot', ids: { slot } });
    return claim;
  }

  #record(slot: DescriptorSlot, op: string): DescriptorRecord {
    if (!Number.isSafeInteger(slot) || slot < 0 || slot >= this.#descriptors.length) {
      throw new TenonError('EINVAL', `no descriptor slot ${String(slot)}`, { op, reason: 'invalid-slot', ids: { slot: String(slot) } });
    }
    const record = this.#descriptors[slot];
    if (record === undefined) throw new TenonError('EINVAL', `descriptor slot ${slot} is empty`, { op, reason: 'empty-slot', ids: { slot } });
    return record;
  }
}

function moveTables(from: AllocationGroup, to: AllocationGroup): void {
  moveTablesImpl(from, to);
}

export function createAllocationGroup(): AllocationGroup {
  return new AllocationGroup();
}

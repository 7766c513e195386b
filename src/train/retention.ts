// Retention (seed 000 G7): how a tape or checkpoint store keeps primal values alive for backward.
//
// Ownership: a RetentionContainer directly owns one AllocationGroup; every retained value is one
// allocation entry of it (moved in, never copied: retention records no ledger event). Retainers of a
// container are counted: its owning tape or checkpoint store (one, until disposed) plus every live
// ValueHandle over one of its values. A value's storage is released when no handle refers to it any
// more; the group itself is disposed when the last retainer lets go. Surviving handles keep their value
// (and its container) alive after the tape is gone. A release that meets a still-borrowed view of the
// group (a `value()` view not yet released) is deferred, never forced: it completes at the next
// train-layer call after the view is gone (sweepRetention). Releasing never throws.
// Handles: a ValueHandle is a read-only descriptor reference. `clone()` adds a retainer (no storage,
// descriptor or write authority is cloned); `value()` lends a shared view; `duplicateValue()` is the
// explicit copy; `intoValue()` is the only way to an owner, and it checks structural uniqueness (this
// handle is the container's only retainer) before any group extraction. Nothing hands out a mutable view.
// A ValueKey is only a lookup key inside its container: it never proves uniqueness or grants access.
// Thread: single-threaded, the provider's thread.
import { TenonError } from '../errors.js';
import { createAllocationGroup } from '../storage/index.js';
import type { AllocationGroup, DType, DescriptorSlot, Tensor, TensorView } from '../storage/index.js';

declare const valueKeyBrand: unique symbol;
/** Local associative key of a value inside its container. Not a capability. */
export type ValueKey = number & { readonly [valueKeyBrand]: true };

interface Entry {
  /** Undefined once the storage was released or moved out. */
  slot: DescriptorSlot | undefined;
  /** Live handles over this value (user handles and the tape's own retention handles). */
  handles: number;
}

/** Why a container gives no owner: shared ownership, or a G2 extraction failure. */
export type IntoValueFailure = 'not-unique' | 'extract';

/**
 * `intoValue` failure. `handle` is the very handle the call was made on, still usable. `reason` is
 * `not-unique` (another retainer of the container exists; nothing was extracted) or `extract` (the group
 * refused the extraction, see `cause`). The kind of the other retainer is deliberately not reported.
 */
export class IntoValueError extends TenonError {
  readonly handle: ValueHandle;
  constructor(reason: IntoValueFailure, handle: ValueHandle, cause?: unknown) {
    super('EBUSY', reason === 'not-unique' ? 'the value is shared' : 'the value could not be extracted', { op: 'handle.intoValue', reason, cause });
    this.handle = handle;
  }
}

let nextContainerId = 0;

/**
 * Containers with a release that met a borrowed view of their group (a value to free, or the whole group
 * once nothing retains it): finished by the next `sweepRetention()` after the view is released.
 */
const deferred = new Set<RetentionContainer>();

/** Finishes deferred releases. Every tape call and every adoption runs it first; cheap when idle. */
export function sweepRetention(): void {
  for (const c of [...deferred]) {
    c.sweep();
    c.finish();
  }
}

/** Owns one group of retained values for one tape or checkpoint store. Internal to src/train. */
export class RetentionContainer {
  readonly label: string;
  /** Process-unique diagnostic id (with a ValueKey it names a value in gradient maps). */
  readonly id = nextContainerId++;
  #group: AllocationGroup | undefined = createAllocationGroup();
  readonly #entries = new Map<ValueKey, Entry>();
  #nextKey = 0;
  /** Owner (tape/store, until disposed) + live handles. */
  #retainers = 1;
  #ownerLive = true;
  /** Values whose storage could not be released while the group was borrowed; retried later. */
  readonly #pending = new Set<ValueKey>();

  constructor(label: string) {
    this.label = label;
  }

  /** Moves `tensor` in (no copy, no allocation) and returns a first handle over it. */
  adopt(tensor: Tensor, requiresGrad: boolean): ValueHandle {
    const group = this.#live('container.adopt');
    sweepRetention();
    this.sweep();
    const meta = { dtype: tensor.dtype, shape: tensor.shape };
    const { descriptor } = group.insert(tensor);
    const key = this.#nextKey++ as ValueKey;
    this.#entries.set(key, { slot: descriptor, handles: 0 });
    return this.#handle(key, meta, requiresGrad);
  }

  /** Number of values whose storage this container still owns. */
  get liveValues(): number {
    let n = 0;
    for (const e of this.#entries.values()) if (e.slot !== undefined) n++;
    return n;
  }

  /** Retainers: the owner while alive plus live handles. */
  get retainers(): number {
    return this.#retainers;
  }

  /** The owning tape or store lets go (its handles are released separately). */
  releaseOwner(): void {
    if (!this.#ownerLive) return;
    this.#ownerLive = false;
    this.#drop();
  }

  /** Retries releases that a borrow of the group deferred. */
  sweep(): void {
    const group = this.#group;
    if (group === undefined) return;
    for (const key of [...this.#pending]) {
      const entry = this.#entries.get(key)!;
      try {
        group.tryExtract(entry.slot!).dispose();
      } catch {
        return;
      }
      entry.slot = undefined;
      this.#pending.delete(key);
    }
    if (this.#pending.size === 0 && this.#retainers !== 0) deferred.delete(this);
  }

  view(key: ValueKey, op: string): TensorView {
    return this.#live(op).view(this.#slot(key, op));
  }

  /** Moves the value's allocation out (G2 extraction). Throws the group's error with nothing changed. */
  extract(key: ValueKey, op: string): Tensor {
    const tensor = this.#live(op).tryExtract(this.#slot(key, op));
    this.#entries.get(key)!.slot = undefined;
    return tensor;
  }

  /** Internal: a new handle over `key` (one more retainer). */
  handleFor(key: ValueKey, meta: ValueMeta, requiresGrad: boolean): ValueHandle {
    return this.#handle(key, meta, requiresGrad);
  }

  /** Internal: called once by each handle when it lets go. */
  handleReleased(key: ValueKey): void {
    const entry = this.#entries.get(key)!;
    entry.handles--;
    if (entry.handles === 0) this.#releaseValue(key, entry);
    this.#drop();
  }

  #handle(key: ValueKey, meta: ValueMeta, requiresGrad: boolean): ValueHandle {
    this.#entries.get(key)!.handles++;
    this.#retainers++;
    return new ValueHandle(INTERNAL_KEY, { container: this, key, dtype: meta.dtype, shape: meta.shape, requiresGrad });
  }

  #releaseValue(key: ValueKey, entry: Entry): void {
    if (entry.slot === undefined || this.#group === undefined) return;
    try {
      this.#group.tryExtract(entry.slot).dispose();
      entry.slot = undefined;
    } catch {
      this.#pending.add(key);
      deferred.add(this);
    }
  }

  #drop(): void {
    this.#retainers--;
    if (this.#retainers === 0) this.finish();
  }

  /** Internal: disposes the group once nothing retains it; defers (orphan) while a view is borrowed. */
  finish(): void {
    const group = this.#group;
    if (group === undefined || this.#retainers !== 0) return;
    try {
      group.dispose();
    } catch {
      deferred.add(this);
      return;
    }
    this.#group = undefined;
    this.#pending.clear();
    deferred.delete(this);
  }

  #live(op: string): AllocationGroup {
    if (this.#group === undefined) throw new TenonError('EMOVED', `${this.label} was released`, { op });
    return this.#group;
  }

  #slot(key: ValueKey, op: string): DescriptorSlot {
    const slot = this.#entries.get(key)?.slot;
    if (slot === undefined) throw new TenonError('EMOVED', 'the value was released', { op, reason: 'value-released', ids: { key } });
    return slot;
  }
}

export interface ValueMeta {
  readonly dtype: DType;
  readonly shape: readonly number[];
}

/** The record a handle shares: read-only metadata plus the direct container reference. */
export interface AdValueRecord extends ValueMeta {
  readonly container: RetentionContainer;
  readonly key: ValueKey;
  readonly requiresGrad: boolean;
}

const INTERNAL_KEY = Symbol('train.internal');

let recordOfImpl: (handle: ValueHandle, op: string) => AdValueRecord;

/** src/train only (not exported by the layer): the record behind a live handle, or EMOVED. */
export function recordOf(handle: ValueHandle, op: string): AdValueRecord {
  if (!(handle instanceof ValueHandle)) throw new TenonError('EINVAL', 'expected a ValueHandle', { op, reason: 'not-a-handle' });
  return recordOfImpl(handle, op);
}

/**
 * A read-only reference to one value retained by a tape or checkpoint store. Copy the JS reference freely;
 * `clone()` makes an independent retainer. `dispose()` (or `using`) lets go; afterwards every member throws
 * EMOVED. There is no member that yields an owner except the consuming, uniqueness-checked `intoValue()`.
 */
export class ValueHandle {
  #record: AdValueRecord | undefined;

  static {
    recordOfImpl = (handle, op) => handle.#get(op);
  }

  constructor(key: symbol, record: AdValueRecord) {
    if (key !== INTERNAL_KEY) throw new TenonError('EINVAL', 'value handles are made by tapes', { op: 'ValueHandle', reason: 'private-constructor' });
    this.#record = record;
  }

  get dtype(): DType {
    return this.#get('handle.dtype').dtype;
  }

  get shape(): readonly number[] {
    return this.#get('handle.shape').shape;
  }

  get requiresGrad(): boolean {
    return this.#get('handle.requiresGrad').requiresGrad;
  }

  /** Local key inside the value's container (a lookup key, nothing more). */
  get key(): ValueKey {
    return this.#get('handle.key').key;
  }

  get released(): boolean {
    return this.#record === undefined;
  }

  #get(op: string): AdValueRecord {
    if (this.#record === undefined) throw new TenonError('EMOVED', 'the handle was released or consumed', { op });
    return this.#record;
  }

  /** Another retainer of the same value: no storage, descriptor or authority is copied. */
  clone(): ValueHandle {
    const r = this.#get('handle.clone');
    return r.container.handleFor(r.key, r, r.requiresGrad);
  }

  /**
   * A shared, read-only borrow of the value (eager values are always materialised). Release it before the
   * next table change of the same tape (an op recording into it), which otherwise fails EBUSY.
   */
  async value<D extends DType = DType>(): Promise<TensorView<D>> {
    const r = this.#get('handle.value');
    return r.container.view(r.key, 'handle.value') as unknown as TensorView<D>;
  }

  /** An explicit copy into a new owner (ledger: explicit-duplicate-destination + explicit-duplicate). */
  async duplicateValue<D extends DType = DType>(): Promise<Tensor<D>> {
    const r = this.#get('handle.duplicateValue');
    using view = r.container.view(r.key, 'handle.duplicateValue');
    return (await view.duplicate()) as unknown as Tensor<D>;
  }

  /**
   * Consumes the handle and returns the value's owner. Fails with IntoValueError (`handle` = this handle,
   * unchanged and usable): `not-unique` when any other retainer (tape, store, handle) shares the container,
   * checked before anything is extracted; `extract` when the group refuses (e.g. a view is still borrowed).
   */
  intoValue<D extends DType = DType>(): Tensor<D> {
    const op = 'handle.intoValue';
    const r = this.#get(op);
    if (r.container.retainers !== 1) throw new IntoValueError('not-unique', this);
    let tensor: Tensor;
    try {
      tensor = r.container.extract(r.key, op);
    } catch (err) {
      throw new IntoValueError('extract', this, err);
    }
    this.#record = undefined;
    r.container.handleReleased(r.key);
    return tensor as unknown as Tensor<D>;
  }

  /** Lets go of this retainer. Idempotent. */
  dispose(): void {
    const r = this.#record;
    if (r === undefined) return;
    this.#record = undefined;
    r.container.handleReleased(r.key);
  }

  [Symbol.dispose](): void {
    this.dispose();
  }
}

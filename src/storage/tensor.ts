// Tensor (owner), TensorView (shared borrow), TensorViewMut (exclusive borrow): G1 and G4.
//
// Ownership: a Tensor owns one Claim and holds one retainer on its Root; `dispose()` gives it back and
// the root is destroyed when its last retainer goes. Consuming calls (`dispose`, `split`, `intoLayout`,
// inserting into a group) move the value: afterwards every member throws EMOVED. A consuming call that
// fails throws before changing anything, so the tensor stays usable.
// Borrows: `view()` / `viewMut()` register tokens on the owner's BorrowNode (see borrow.ts) and are
// Disposable; `asView()` / `asViewMut()` are unregistered reborrows that check the owner's state on
// every use and allocate nothing (they are created once per object and cached).
// Method homes: read members live once on TensorView, mutation once on TensorViewMut, and the other
// families get delegating members generated from methods.ts (the single source of truth).
// Layouts are validated once (layout.ts) and retained; no member here validates a layout again except the
// ones that build a new one (split, intoLayout, duplicate's rebased copy).
// Single-threaded: tensors live on their provider's thread.
import { TenonError } from '../errors.js';
import { alignDown, alignUp, checkedMul } from './arith.js';
import { BorrowNode } from './borrow.js';
import type { AllocationReason } from './counters.js';
import { arrayMatches, checkDType, dtypeSize, newArray, typedView } from './dtype.js';
import type { AnyTypedArray, ArrayOf, DType } from './dtype.js';
import { checkLayout, proveInjective } from './layout.js';
import type { CheckedLayout, LayoutSpec } from './layout.js';
import { CONSUMING_METHODS, MUTATION_METHODS, READ_GETTERS, READ_METHODS } from './methods.js';
import {
  PreparedDeviceRead,
  PreparedDeviceWrite,
  prepareHostVariant,
} from './prepared.js';
import type { PreparedHostRead, PreparedHostWrite } from './prepared.js';
import type { Provider, ProviderCore } from './provider.js';
import type { Claim } from './root.js';

/** What a borrow reaches: a claim, the layout checked against it, and the retained injectivity proof. */
export interface Target {
  readonly claim: Claim;
  readonly layout: CheckedLayout;
  /** Write injectivity, computed at most once and then retained (undefined until first needed). */
  injective: boolean | undefined;
}

/** Gate for the constructors: only this module and group.ts make tensors and views. */
export const INTERNAL: unique symbol = Symbol('tenon.storage.internal');

function checkInternal(key: unknown, op: string): void {
  if (key !== INTERNAL) throw new TenonError('EINVAL', 'tensors and views are created by providers and owners', { op, reason: 'private-constructor' });
}

function providerOf(target: Target): ProviderCore {
  return target.claim.root.provider;
}

/** The host provider's kernel-internal access to a root's bytes (src/storage/host.ts). */
interface HostRootMemory {
  bufferOf(root: Claim['root']): ArrayBufferLike;
  addressOf(root: Claim['root']): number;
}

/** Root-relative byte range reachable by the target's layout. */
function rootRange(target: Target): { start: number; end: number } {
  const { claim, layout } = target;
  return { start: claim.start + layout.envelope.start, end: claim.start + layout.envelope.end };
}

/** Computes write injectivity once and retains it; throws EINVAL when it cannot be proven. */
export function ensureInjective(target: Target, op: string): void {
  if (target.injective === undefined) target.injective = proveInjective(target.layout, providerOf(target).meter);
  if (!target.injective) {
    throw new TenonError('EINVAL', 'layout may reach one element twice; it cannot be written', {
      op,
      reason: 'non-injective',
      ids: { root: target.claim.root.id },
    });
  }
}

export interface TensorDiagnostics {
  readonly provider: string;
  readonly root: number;
  readonly dtype: DType;
  readonly kind: CheckedLayout['kind'];
  readonly shape: readonly number[];
  readonly strides: readonly number[];
  readonly byteOffset: number;
  /** Claim range inside its root. */
  readonly claim: { readonly start: number; readonly end: number };
  /** Bytes the layout reaches, relative to the claim. */
  readonly envelope: { readonly start: number; readonly end: number };
}

/** Read members shared by every family (G4: implemented once, on TensorView). */
export interface TensorReadApi<D extends DType> {
  readonly dtype: D;
  readonly shape: readonly number[];
  readonly strides: readonly number[];
  readonly rank: number;
  /** Number of logical elements. */
  readonly size: number;
  /** Bytes of the logical elements (size x element size). */
  readonly byteLength: number;
  readonly byteOffset: number;
  readonly layout: CheckedLayout;
  readonly provider: Provider;
  readonly isContiguous: boolean;
  /** A registered shared borrow; release it (or `using`) to let writers and consumers in again. */
  view(): TensorView<D>;
  /** Host access for reading: zero-copy on host, a staging download on WebGPU. */
  prepareHost(): Promise<PreparedHostRead<D>>;
  /** Read binding state for a dispatch (device providers only; ENOTSUP on host). */
  prepareDevice(): PreparedDeviceRead;
  /** An explicit copy of the elements into a new host array in row-major order. */
  toArray(): Promise<ArrayOf<D>>;
  /** An explicit copy into a new owner on the same provider (recorded in the ledger). */
  duplicate(): Promise<Tensor<D>>;
  diagnostics(): TensorDiagnostics;
}

export interface HostWriteOptions {
  /** Skip loading current contents (contiguous layouts only; the caller overwrites every element). */
  readonly discard?: boolean;
}

/** Mutation members (G4: implemented once, on TensorViewMut). */
export interface TensorWriteApi<D extends DType> {
  /** A registered exclusive borrow. */
  viewMut(): TensorViewMut<D>;
  /** Host access for writing; changes are committed when the prepared access is released. */
  prepareHostMut(options?: HostWriteOptions): Promise<PreparedHostWrite<D>>;
  /** Write binding state for a dispatch (device providers only). */
  prepareDeviceMut(): PreparedDeviceWrite;
  /** Copies `src` (row-major, exactly `size` elements of this dtype) into the tensor. */
  write(src: ArrayOf<D>): Promise<void>;
  /** Sets every element to `value`. */
  fill(value: number): Promise<void>;
  /**
   * Sets elements [start, end) (row-major, contiguous layouts only) to `value`, touching only those bytes:
   * no download, one upload of end - start elements on WebGPU.
   */
  fillRange(value: number, start: number, end: number): Promise<void>;
}

// ---------------------------------------------------------------------------------------------------
// TensorView: the one home of read behaviour.

export class TensorView<D extends DType = DType> implements TensorReadApi<D> {
  readonly #target: Target;
  /** The node reads are checked against: our own token, or the lender's node for asView(). */
  readonly #node: BorrowNode;
  /** Registered views own their token and release it; unregistered reborrows release nothing. */
  readonly #registered: boolean;

  constructor(key: typeof INTERNAL, target: Target, node: BorrowNode, registered: boolean) {
    checkInternal(key, 'TensorView');
    this.#target = target;
    this.#node = node;
    this.#registered = registered;
  }

  #read(op: string): Target {
    this.#node.checkRead(op);
    return this.#target;
  }

  get dtype(): D {
    return this.#read('view.dtype').layout.dtype as D;
  }
  get shape(): readonly number[] {
    return this.#read('view.shape').layout.shape;
  }
  get strides(): readonly number[] {
    return this.#read('view.strides').layout.strides;
  }
  get rank(): number {
    return this.#read('view.rank').layout.shape.length;
  }
  get size(): number {
    return this.#read('view.size').layout.size;
  }
  get byteLength(): number {
    const { layout } = this.#read('view.byteLength');
    return layout.size * dtypeSize(layout.dtype);
  }
  get byteOffset(): number {
    return this.#read('view.byteOffset').layout.byteOffset;
  }
  get layout(): CheckedLayout {
    return this.#read('view.layout').layout;
  }
  get provider(): Provider {
    return providerOf(this.#read('view.provider'));
  }
  get isContiguous(): boolean {
    return this.#read('view.isContiguous').layout.kind === 'contiguous';
  }

  view(): TensorView<D> {
    const target = this.#read('view.view');
    return new TensorView<D>(INTERNAL, target, this.#node.lendShared('view.view'), true);
  }

  async prepareHost(): Promise<PreparedHostRead<D>> {
    const op = 'view.prepareHost';
    const target = this.#read(op);
    const token = this.#node.lendShared(op);
    try {
      const provider = providerOf(target).resolve();
      const mapping = await provider.mapRead(target.claim.root, rootRange(target), op);
      return prepareHostVariant<D>(token, target.layout, mapping, false) as PreparedHostRead<D>;
    } catch (err) {
      token.release(op);
      throw err;
    }
  }

  prepareDevice(): PreparedDeviceRead {
    const op = 'view.prepareDevice';
    const target = this.#read(op);
    const token = this.#node.lendShared(op);
    try {
      const binding = providerOf(target).resolve().deviceBinding(target.claim, op);
      return new PreparedDeviceRead(token, target.layout, binding);
    } catch (err) {
      token.release(op);
      throw err;
    }
  }

  toArray(): Promise<ArrayOf<D>> {
    // A contiguous tensor of a host provider is copied straight out of its root's memory under the same
    // shared borrow, resolution and checks prepareHost() takes (same counters, same errors as rejections),
    // without a prepared access or an async hop (a decode step reads its logits through here).
    const op = 'view.prepareHost';
    let target: Target;
    try {
      target = this.#read(op);
    } catch (err) {
      return Promise.reject(err);
    }
    const core = providerOf(target);
    if (core.kind !== 'host' || target.layout.kind !== 'contiguous') return this.#toArrayPrepared();
    let token: BorrowNode;
    try {
      token = this.#node.lendShared(op);
    } catch (err) {
      return Promise.reject(err);
    }
    try {
      const host = core.resolve() as unknown as HostRootMemory;
      const { layout, claim } = target;
      const start = host.addressOf(claim.root) + claim.start + layout.envelope.start;
      const elements = (layout.envelope.end - layout.envelope.start) / dtypeSize(layout.dtype);
      return Promise.resolve(typedView(layout.dtype as D, host.bufferOf(claim.root), start, elements).slice() as ArrayOf<D>);
    } catch (err) {
      return Promise.reject(err);
    } finally {
      token.release(op);
    }
  }

  async #toArrayPrepared(): Promise<ArrayOf<D>> {
    // try/finally rather than `using`: the same release on every exit, without the lowered disposal
    // stack per call.
    const prepared = await this.prepareHost();
    try {
      if (prepared.kind === 'contiguous') return prepared.asArray().slice() as ArrayOf<D>;
      const out = newArray(prepared.layout.dtype, prepared.layout.size) as ArrayOf<D>;
      let i = 0;
      for (const c = prepared.cursor(); !c.done; c.advance()) out[i++] = c.array[c.index]!;
      return out;
    } finally {
      prepared[Symbol.dispose]();
    }
  }

  async duplicate(): Promise<Tensor<D>> {
    const op = 'view.duplicate';
    const target = this.#read(op);
    const token = this.#node.lendShared(op);
    try {
      const provider = providerOf(target).resolve();
      const { layout, claim } = target;
      const range = rootRange(target);
      const align = provider.capabilities.writeGranularity;
      const start = layout.size === 0 ? range.start : alignDown(range.start, align);
      const bytes = layout.size === 0 ? 0 : alignUp(range.end, align) - start;
      const rebased = checkLayout(
        { shape: layout.shape, strides: layout.strides, byteOffset: layout.size === 0 ? 0 : claim.start + layout.byteOffset - start },
        layout.dtype,
        bytes,
        provider.meter,
        op,
      );
      const dst = await provider.allocateRoot(bytes, 'explicit-duplicate-destination', op);
      dst.retain();
      try {
        await provider.copyBytes(claim.root, start, dst, 0, bytes, op);
      } catch (err) {
        dst.release();
        throw err;
      }
      provider.ledger.record({ kind: 'copy', reason: 'explicit-duplicate', bytes, from: claim.root.id, to: dst.id });
      return newTensor<D>({ claim: { root: dst, start: 0, end: bytes }, layout: rebased, injective: target.injective });
    } finally {
      token.release(op);
    }
  }

  diagnostics(): TensorDiagnostics {
    const { claim, layout } = this.#read('view.diagnostics');
    return Object.freeze({
      provider: claim.root.provider.id,
      root: claim.root.id,
      dtype: layout.dtype,
      kind: layout.kind,
      shape: layout.shape,
      strides: layout.strides,
      byteOffset: layout.byteOffset,
      claim: Object.freeze({ start: claim.start, end: claim.end }),
      envelope: layout.envelope,
    });
  }

  /** Ends this borrow. Unregistered reborrows (asView()) have nothing to end. */
  release(): void {
    if (this.#registered) this.#node.release('view.release');
    else this.#node.checkRead('view.release');
  }

  [Symbol.dispose](): void {
    if (!this.#registered || this.#node.state === 'live') this.release();
  }
}

// ---------------------------------------------------------------------------------------------------
// TensorViewMut: the one home of mutation behaviour.

export interface TensorViewMut<D extends DType = DType> extends TensorReadApi<D> {}

export class TensorViewMut<D extends DType = DType> implements TensorWriteApi<D> {
  readonly #target: Target;
  /** Writable node: our own exclusive token, or the owner's node for asViewMut(). */
  readonly #node: BorrowNode;
  readonly #registered: boolean;
  readonly #asView: TensorView<D>;

  constructor(key: typeof INTERNAL, target: Target, node: BorrowNode, registered: boolean) {
    checkInternal(key, 'TensorViewMut');
    this.#target = target;
    this.#node = node;
    this.#registered = registered;
    this.#asView = new TensorView<D>(INTERNAL, target, node, false);
  }

  /** Unregistered shared reborrow; reads through it fail while this view-mut is lent out exclusively. */
  asView(): TensorView<D> {
    return this.#asView;
  }

  viewMut(): TensorViewMut<D> {
    const op = 'viewMut.viewMut';
    return new TensorViewMut<D>(INTERNAL, this.#target, this.#node.lendExclusive(op), true);
  }

  async prepareHostMut(options: HostWriteOptions = {}): Promise<PreparedHostWrite<D>> {
    const op = 'viewMut.prepareHostMut';
    const target = this.#target;
    this.#node.checkWrite(op);
    ensureInjective(target, op);
    const token = this.#node.lendExclusive(op);
    try {
      const provider = providerOf(target).resolve();
      const load = !(options.discard === true && target.layout.kind === 'contiguous');
      const mapping = await provider.mapWrite(target.claim.root, rootRange(target), load, op);
      return prepareHostVariant<D>(token, target.layout, mapping, true) as PreparedHostWrite<D>;
    } catch (err) {
      token.release(op);
      throw err;
    }
  }

  prepareDeviceMut(): PreparedDeviceWrite {
    const op = 'viewMut.prepareDeviceMut';
    const target = this.#target;
    this.#node.checkWrite(op);
    ensureInjective(target, op);
    const token = this.#node.lendExclusive(op);
    try {
      const binding = providerOf(target).resolve().deviceBinding(target.claim, op);
      return new PreparedDeviceWrite(token, target.layout, binding);
    } catch (err) {
      token.release(op);
      throw err;
    }
  }

  async write(src: ArrayOf<D>): Promise<void> {
    const op = 'viewMut.write';
    const target = this.#target;
    this.#node.checkWrite(op);
    checkSource(target.layout, src, op);
    if (target.layout.kind === 'contiguous') {
      const token = this.#node.lendExclusive(op);
      try {
        const provider = providerOf(target).resolve();
        const bytes = new Uint8Array(src.buffer, src.byteOffset, src.byteLength);
        await provider.writeBytes(target.claim.root, rootRange(target).start, bytes, op);
      } finally {
        token.release(op);
      }
      return;
    }
    using prepared = await this.prepareHostMut();
    if (prepared.kind !== 'strided') throw new TenonError('EINVAL', 'unexpected variant', { op, reason: 'wrong-variant' });
    let i = 0;
    for (const c = prepared.cursor(); !c.done; c.advance()) c.array[c.index] = src[i++]!;
  }

  async fill(value: number): Promise<void> {
    const op = 'viewMut.fill';
    if (typeof value !== 'number') throw new TenonError('EINVAL', 'fill value must be a number', { op, reason: 'bad-value' });
    using prepared = await this.prepareHostMut({ discard: true });
    if (prepared.kind === 'contiguous') {
      prepared.asArray().fill(value);
      return;
    }
    for (const c = prepared.cursor(); !c.done; c.advance()) c.array[c.index] = value;
  }

  async fillRange(value: number, start: number, end: number): Promise<void> {
    const op = 'viewMut.fillRange';
    const target = this.#target;
    this.#node.checkWrite(op);
    const { layout } = target;
    if (typeof value !== 'number') throw new TenonError('EINVAL', 'fill value must be a number', { op, reason: 'bad-value' });
    if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || start < 0 || end < start || end > layout.size) {
      throw new TenonError('EINVAL', `range [${start}, ${end}) is not within ${layout.size} elements`, { op, reason: 'bad-range' });
    }
    if (layout.kind !== 'contiguous') throw new TenonError('EINVAL', 'ranged fill needs a contiguous layout', { op, reason: 'not-contiguous' });
    if (start === end) return;
    const item = dtypeSize(layout.dtype);
    const values = newArray(layout.dtype, end - start);
    values.fill(value);
    const token = this.#node.lendExclusive(op);
    try {
      const provider = providerOf(target).resolve();
      await provider.writeBytes(target.claim.root, rootRange(target).start + start * item, new Uint8Array(values.buffer), op);
    } finally {
      token.release(op);
    }
  }

  /** Ends this exclusive borrow. */
  release(): void {
    if (this.#registered) this.#node.release('viewMut.release');
    else this.#node.checkWrite('viewMut.release');
  }

  [Symbol.dispose](): void {
    if (!this.#registered || this.#node.state === 'live') this.release();
  }
}

function checkSource(layout: CheckedLayout, src: unknown, op: string): asserts src is AnyTypedArray {
  if (!arrayMatches(layout.dtype, src)) {
    throw new TenonError('EINVAL', `source must be the ${layout.dtype} host array type`, { op, reason: 'dtype-mismatch' });
  }
  if ((src as AnyTypedArray).length !== layout.size) {
    throw new TenonError('EINVAL', `source has ${(src as AnyTypedArray).length} elements, expected ${layout.size}`, {
      op,
      reason: 'length-mismatch',
    });
  }
}

// ---------------------------------------------------------------------------------------------------
// Tensor: the owner. Only consuming behaviour lives here.

export interface Tensor<D extends DType = DType> extends TensorReadApi<D>, TensorWriteApi<D> {}

let consumeImpl: (tensor: Tensor, op: string) => Target;

export class Tensor<D extends DType = DType> {
  readonly #target: Target;
  /** Owner node: writable, root of every borrow of this tensor. */
  readonly #node = new BorrowNode(null, true);
  readonly #asView: TensorView<D>;
  readonly #asViewMut: TensorViewMut<D>;

  static {
    consumeImpl = (tensor, op) => {
      tensor.#node.checkConsume(op);
      tensor.#node.markMoved();
      return tensor.#target;
    };
  }

  constructor(key: typeof INTERNAL, target: Target) {
    checkInternal(key, 'Tensor');
    this.#target = target;
    this.#asView = new TensorView<D>(INTERNAL, target, this.#node, false);
    this.#asViewMut = new TensorViewMut<D>(INTERNAL, target, this.#node, false);
  }

  /** Unregistered shared reborrow (G4 canonicalization): O(1), allocation-free, no provider work. */
  asView(): TensorView<D> {
    return this.#asView;
  }

  /** Unregistered exclusive reborrow: mutation members check the owner on every use. */
  asViewMut(): TensorViewMut<D> {
    return this.#asViewMut;
  }

  /** Whether this owner was consumed (moved or disposed). Never throws. */
  get moved(): boolean {
    return this.#node.state === 'moved';
  }

  /** Ends the owner: gives its retainer back to the root. */
  dispose(): void {
    const op = 'tensor.dispose';
    this.#node.checkConsume(op);
    this.#node.markMoved();
    this.#target.claim.root.release();
  }

  /** `using` support: disposes a live owner; a moved owner has nothing to release. */
  [Symbol.dispose](): void {
    if (this.#node.state !== 'moved') this.dispose();
  }

  /**
   * Splits a contiguous tensor along its first axis into owners of `counts[i]` rows each. The children's
   * claims partition this claim; each retains the root. Consumes this tensor.
   */
  split(counts: readonly number[]): Tensor<D>[] {
    const op = 'tensor.split';
    this.#node.checkConsume(op);
    const { claim, layout } = this.#target;
    const provider = claim.root.provider;
    if (layout.kind !== 'contiguous' || layout.shape.length === 0) {
      throw new TenonError('EINVAL', 'only contiguous tensors of rank >= 1 split', { op, reason: 'not-splittable' });
    }
    if (!Array.isArray(counts) || counts.length === 0 || !counts.every((n) => Number.isSafeInteger(n) && n >= 0)) {
      throw new TenonError('EINVAL', 'counts must be non-negative safe integers', { op, reason: 'bad-split' });
    }
    const rows = layout.shape[0]!;
    const total = counts.reduce((a, b) => a + b, 0);
    if (total !== rows) throw new TenonError('EINVAL', `counts sum to ${total}, axis 0 has ${rows}`, { op, reason: 'bad-split' });
    const rest = layout.shape.slice(1);
    let rowBytes = dtypeSize(layout.dtype);
    for (const n of rest) rowBytes = checkedMul(rowBytes, n, op, 'row bytes');

    const boundaries = [claim.start];
    let prefix = 0;
    for (let i = 0; i < counts.length - 1; i++) {
      prefix += counts[i]!;
      const at = claim.start + layout.byteOffset + checkedMul(prefix, rowBytes, op, 'split point');
      if (at % provider.capabilities.claimAlignment !== 0) {
        throw new TenonError('EINVAL', `split point ${at} is not a multiple of ${provider.capabilities.claimAlignment}`, {
          op,
          reason: 'misaligned-split',
          range: { start: at, end: at },
        });
      }
      boundaries.push(at);
    }
    boundaries.push(claim.end);
    const children = counts.map((n, i) => {
      const childClaim: Claim = { root: claim.root, start: boundaries[i]!, end: boundaries[i + 1]! };
      const childLayout = checkLayout(
        { shape: [n, ...rest], byteOffset: i === 0 ? layout.byteOffset : 0 },
        layout.dtype,
        childClaim.end - childClaim.start,
        provider.meter,
        op,
        childClaim.start,
      );
      return { claim: childClaim, layout: childLayout, injective: true };
    });
    // Every check passed: move the retainer from this owner to the children.
    this.#node.markMoved();
    for (let i = 0; i < children.length; i++) claim.root.retain();
    claim.root.release();
    return children.map((target) => newTensor<D>(target));
  }

  /** Consuming reinterpretation: a new layout (and optionally dtype) over the same claim, never wider. */
  intoLayout<E extends DType = D>(spec: LayoutSpec, dtype?: E): Tensor<E> {
    const op = 'tensor.intoLayout';
    this.#node.checkConsume(op);
    const { claim, layout } = this.#target;
    const nextDType = dtype === undefined ? layout.dtype : checkDType(dtype, op);
    const checked = checkLayout(spec, nextDType, claim.end - claim.start, claim.root.provider.meter, op, claim.start);
    this.#node.markMoved();
    return newTensor<E>({ claim, layout: checked, injective: undefined });
  }
}

/** Moves the target out of a tensor (used by AllocationGroup.insert). Throws without change if borrowed. */
export function consumeTensor(tensor: Tensor, op: string): Target {
  if (!(tensor instanceof Tensor)) throw new TenonError('EINVAL', 'expected a Tensor', { op, reason: 'not-a-tensor' });
  return consumeImpl(tensor, op);
}

export function newTensor<D extends DType>(target: Target): Tensor<D> {
  return new Tensor<D>(INTERNAL, target);
}

// ---------------------------------------------------------------------------------------------------
// Delegating members, generated from the canonical lists (G4).

function installGetters(proto: object, via: (self: never) => object): void {
  for (const name of READ_GETTERS) {
    const getter = Object.getOwnPropertyDescriptor(TensorView.prototype, name)!.get!;
    Object.defineProperty(proto, name, {
      configurable: true,
      get(this: never) {
        return getter.call(via(this));
      },
    });
  }
}

function installMethods(proto: object, source: object, names: readonly string[], via: (self: never) => object): void {
  for (const name of names) {
    const method = (source as Record<string, (...args: unknown[]) => unknown>)[name]!;
    Object.defineProperty(proto, name, {
      configurable: true,
      writable: true,
      value: function (this: never, ...args: unknown[]) {
        return method.apply(via(this), args);
      },
    });
  }
}

installGetters(TensorViewMut.prototype, (self: TensorViewMut) => self.asView());
installMethods(TensorViewMut.prototype, TensorView.prototype, READ_METHODS, (self: TensorViewMut) => self.asView());
installGetters(Tensor.prototype, (self: Tensor) => self.asView());
installMethods(Tensor.prototype, TensorView.prototype, READ_METHODS, (self: Tensor) => self.asView());
installMethods(Tensor.prototype, TensorViewMut.prototype, MUTATION_METHODS, (self: Tensor) => self.asViewMut());

void CONSUMING_METHODS;

// ---------------------------------------------------------------------------------------------------
// Allocation.

export interface AllocateOptions {
  /** Why this allocation happens (ledger); defaults to `operation-output`. */
  readonly reason?: AllocationReason;
  /** Claim size in bytes; defaults to exactly what the layout reaches from byte 0. */
  readonly capacityBytes?: number;
}

/** A zero-filled owner with `layout` over a fresh root. The layout is validated once, before allocating. */
export async function allocate<D extends DType>(
  provider: Provider,
  dtype: D,
  layout: LayoutSpec,
  options: AllocateOptions = {},
): Promise<Tensor<D>> {
  const op = 'allocate';
  const core = provider as ProviderCore;
  checkDType(dtype, op);
  const capacity = options.capacityBytes ?? defaultCapacity(layout, dtype, op);
  if (!Number.isSafeInteger(capacity) || capacity < 0) {
    throw new TenonError('EINVAL', 'capacityBytes must be a non-negative safe integer', { op, reason: 'bad-size' });
  }
  const checked = checkLayout(layout, dtype, capacity, core.meter, op);
  const root = await core.resolve().allocateRoot(capacity, options.reason ?? 'operation-output', op);
  root.retain();
  return newTensor<D>({ claim: { root, start: 0, end: capacity }, layout: checked, injective: undefined });
}

function defaultCapacity(layout: LayoutSpec, dtype: DType, op: string): number {
  if (layout === null || typeof layout !== 'object' || !Array.isArray(layout.shape)) {
    throw new TenonError('EINVAL', 'layout must have a shape', { op, reason: 'bad-shape' });
  }
  if (layout.strides !== undefined || layout.byteOffset !== undefined) {
    throw new TenonError('EINVAL', 'strided or offset layouts need capacityBytes', { op, reason: 'capacity-required' });
  }
  let n = dtypeSize(dtype);
  for (const d of layout.shape) {
    if (!Number.isSafeInteger(d) || d < 0) throw new TenonError('EINVAL', 'shape must be non-negative safe integers', { op, reason: 'bad-shape' });
    n = checkedMul(n, d, op, 'capacity');
  }
  return n;
}

/** A zero-filled contiguous owner of `shape`. */
export function zeros<D extends DType>(provider: Provider, dtype: D, shape: readonly number[]): Promise<Tensor<D>> {
  return allocate(provider, dtype, { shape });
}

/** A contiguous owner holding a copy of `data` (shape defaults to [data.length]). */
export async function fromArray<D extends DType>(
  provider: Provider,
  dtype: D,
  data: ArrayOf<D>,
  shape: readonly number[] = [data?.length],
): Promise<Tensor<D>> {
  const op = 'fromArray';
  checkDType(dtype, op);
  if (!arrayMatches(dtype, data)) throw new TenonError('EINVAL', `data must be the ${dtype} host array type`, { op, reason: 'dtype-mismatch' });
  const count = defaultCapacity({ shape }, 'u8', op);
  if (count !== data.length) {
    throw new TenonError('EINVAL', `shape holds ${count} elements, data has ${data.length}`, { op, reason: 'length-mismatch' });
  }
  const tensor = await allocate(provider, dtype, { shape });
  try {
    await tensor.write(data);
  } catch (err) {
    tensor.dispose();
    throw err;
  }
  return tensor;
}

// Prepared access (G1 "Validate once, then traverse"; G5 prepared binding).
//
// A prepared access is the only way to touch a tensor's elements. It is made from a view (or owner) whose
// CheckedLayout was validated at construction, holds its own borrow token for as long as it lives, and
// does only access-time work: nothing for host roots, a staging download (and upload on commit) for
// WebGPU roots. Exactly one variant is returned:
//   - host contiguous: `asArray()` is a typed array over exactly the logical elements;
//   - host strided: `cursor()` walks the elements with precomputed stride/carry increments only;
//   - device read / device write: binding state for a dispatch, with no host pointer.
// `release()` (or `using`) ends the access: it commits host writes, unmaps and destroys staging memory,
// and returns the borrow. After release every method throws ERELEASED.
// On the host provider `asArray()` aliases the root itself (zero-copy); keeping that array past
// release() breaks the borrow contract in a way JavaScript cannot revoke, so callers must not. Roots of
// a host provider live in one WebAssembly memory that grows when an allocation does not fit: growth
// replaces the memory's buffer, so an array (or cursor) taken before an allocation may be stale after it;
// `asArray()`, `cursor()` and `runs()` always derive a live one (same bytes, new buffer).
import { TenonError } from '../errors.js';
import type { BorrowNode } from './borrow.js';
import { dtypeSize, typedView } from './dtype.js';
import type { ArrayOf, DType } from './dtype.js';
import type { CheckedLayout, StridedPlan } from './layout.js';
import type { MappedRange } from './provider.js';

/**
 * The outer dimensions of a strided plan (all but the innermost): moves a position to the start of the
 * next innermost run by precomputed stride and carry increments, and says when every run was visited.
 */
class OuterDims {
  done = false;
  readonly #plan: StridedPlan;
  readonly #counters: Float64Array;

  constructor(plan: StridedPlan) {
    this.#plan = plan;
    this.#counters = new Float64Array(Math.max(plan.extents.length - 1, 0));
  }

  /** `pos` is the start of the current run; returns the start of the next one (sets `done` after the last). */
  advance(pos: number): number {
    const { extents, strides, backstrides } = this.#plan;
    const counters = this.#counters;
    for (let d = counters.length - 1; d >= 0; d--) {
      if (++counters[d]! < extents[d]!) return pos + strides[d]!;
      counters[d] = 0;
      pos -= backstrides[d]!;
    }
    this.done = true;
    return pos;
  }
}

/**
 * Walks a strided layout element by element.
 * Use: `for (const c = p.cursor(); !c.done; c.advance()) use(c.array[c.index])`.
 * `advance()` only adds precomputed strides and carries; it allocates nothing and checks nothing. The
 * innermost dimension is kept in plain fields so the common step is one compare and one add.
 */
export class StridedCursor<D extends DType> {
  /** The envelope of the layout; `index` points into it. */
  readonly array: ArrayOf<D>;
  /** Index in `array` of the current element. */
  index: number;
  /** True once every element was visited (at once for an empty layout). */
  done: boolean;
  #inner = 0;
  readonly #innerExtent: number;
  readonly #innerStride: number;
  readonly #innerBack: number;
  readonly #outer: OuterDims;

  constructor(array: ArrayOf<D>, plan: StridedPlan, size: number) {
    const last = plan.extents.length - 1;
    this.array = array;
    this.index = plan.firstIndex;
    this.done = size === 0;
    this.#innerExtent = plan.extents[last] ?? 1;
    this.#innerStride = plan.strides[last] ?? 0;
    this.#innerBack = plan.backstrides[last] ?? 0;
    this.#outer = new OuterDims(plan);
  }

  advance(): void {
    if (++this.#inner < this.#innerExtent) {
      this.index += this.#innerStride;
      return;
    }
    this.#inner = 0;
    this.index = this.#outer.advance(this.index - this.#innerBack);
    if (this.#outer.done) this.done = true;
  }
}

/**
 * Walks a strided layout one innermost run at a time, so the caller's inner loop is a plain typed-array
 * loop: `for (const r = p.runs(); r.next(); ) for (let k = 0, i = r.start; k < r.length; k++, i += r.stride) ...`.
 * `next()` only adds precomputed strides and carries for the outer dimensions.
 */
export class StridedRuns<D extends DType> {
  /** The envelope of the layout; run indices point into it. */
  readonly array: ArrayOf<D>;
  /** Index in `array` of the first element of the current run. */
  start: number;
  /** Elements in every run (the innermost extent). */
  readonly length: number;
  /** Step between consecutive elements of a run. */
  readonly stride: number;
  /** Runs left after the current one. */
  remaining: number;
  #started = false;
  readonly #outer: OuterDims;

  constructor(array: ArrayOf<D>, plan: StridedPlan, size: number) {
    const last = plan.extents.length - 1;
    this.array = array;
    this.start = plan.firstIndex;
    this.length = plan.extents[last] ?? 1;
    this.stride = plan.strides[last] ?? 0;
    this.remaining = size === 0 ? 0 : size / this.length;
    this.#outer = new OuterDims(plan);
  }

  /** Moves to the next run; false when there is none. The first call selects the first run. */
  next(): boolean {
    if (this.remaining === 0) return false;
    this.remaining--;
    if (!this.#started) {
      this.#started = true;
      return true;
    }
    this.start = this.#outer.advance(this.start);
    return true;
  }
}

abstract class PreparedBase {
  readonly #token: BorrowNode;
  #onRelease: ((commit: boolean) => void) | undefined;

  protected constructor(token: BorrowNode, onRelease: (commit: boolean) => void) {
    this.#token = token;
    this.#onRelease = onRelease;
  }

  protected check(op: string): void {
    if (this.#onRelease === undefined) throw new TenonError('ERELEASED', 'prepared access was released', { op });
  }

  /** Ends the access (committing writes) and returns the borrow. */
  release(): void {
    this.check('prepared.release');
    const done = this.#onRelease!;
    this.#onRelease = undefined;
    try {
      done(this.commitOnRelease);
    } finally {
      this.#token.release('prepared.release');
    }
  }

  [Symbol.dispose](): void {
    if (this.#onRelease !== undefined) this.release();
  }

  protected abstract readonly commitOnRelease: boolean;
}

abstract class PreparedHostBase<D extends DType> extends PreparedBase {
  readonly layout: CheckedLayout;
  readonly #mapping: MappedRange;
  readonly #elements: number;
  #envelope: ArrayOf<D>;

  constructor(token: BorrowNode, layout: CheckedLayout, mapping: MappedRange) {
    super(token, (commit) => mapping.release(commit));
    this.layout = layout;
    this.#mapping = mapping;
    this.#elements = (layout.envelope.end - layout.envelope.start) / dtypeSize(layout.dtype);
    this.#envelope = typedView(layout.dtype as D, mapping.buffer, mapping.byteOffset, this.#elements);
  }

  /**
   * The envelope over the mapping's current buffer. A host provider's WebAssembly memory may have grown
   * since the last call (another allocation), which replaces its buffer and detaches (or leaves short)
   * arrays over the old one: then the array is derived again, over the same bytes, which never move.
   */
  #current(): ArrayOf<D> {
    const buffer = this.#mapping.buffer;
    if (this.#envelope.buffer !== buffer) this.#envelope = typedView(this.layout.dtype as D, buffer, this.#mapping.byteOffset, this.#elements);
    return this.#envelope;
  }

  /**
   * Typed array over exactly the logical elements (contiguous variant only). On a host provider an array
   * from an earlier call goes stale when the provider's memory grows; this call always returns a live one.
   */
  protected contiguousArray(op: string): ArrayOf<D> {
    this.check(op);
    return this.#current();
  }

  protected newCursor(op: string): StridedCursor<D> {
    const plan = this.#plan(op);
    return new StridedCursor(this.#current(), plan, this.layout.size);
  }

  protected newRuns(op: string): StridedRuns<D> {
    const plan = this.#plan(op);
    return new StridedRuns(this.#current(), plan, this.layout.size);
  }

  #plan(op: string): StridedPlan {
    this.check(op);
    const layout = this.layout;
    if (layout.kind !== 'strided') throw new TenonError('EINVAL', 'contiguous access has no cursor', { op, reason: 'wrong-variant' });
    return layout.plan;
  }
}

/** Contiguous variant: one typed array over exactly the logical elements. */
abstract class PreparedContiguous<D extends DType> extends PreparedHostBase<D> {
  readonly kind = 'contiguous' as const;
  asArray(): ArrayOf<D> {
    return this.contiguousArray('prepared.asArray');
  }
}

/** Strided variant: an element cursor or a run-by-run walker over the envelope. */
abstract class PreparedStrided<D extends DType> extends PreparedHostBase<D> {
  readonly kind = 'strided' as const;
  cursor(): StridedCursor<D> {
    return this.newCursor('prepared.cursor');
  }
  runs(): StridedRuns<D> {
    return this.newRuns('prepared.runs');
  }
}

export class PreparedContiguousRead<D extends DType> extends PreparedContiguous<D> {
  protected readonly commitOnRelease = false;
}

export class PreparedStridedRead<D extends DType> extends PreparedStrided<D> {
  protected readonly commitOnRelease = false;
}

export class PreparedContiguousWrite<D extends DType> extends PreparedContiguous<D> {
  protected readonly commitOnRelease = true;
}

export class PreparedStridedWrite<D extends DType> extends PreparedStrided<D> {
  protected readonly commitOnRelease = true;
}

export type PreparedHostRead<D extends DType> = PreparedContiguousRead<D> | PreparedStridedRead<D>;
export type PreparedHostWrite<D extends DType> = PreparedContiguousWrite<D> | PreparedStridedWrite<D>;

export function prepareHostVariant<D extends DType>(
  token: BorrowNode,
  layout: CheckedLayout,
  mapping: MappedRange,
  write: boolean,
): PreparedHostRead<D> | PreparedHostWrite<D> {
  if (layout.kind === 'contiguous') {
    return write ? new PreparedContiguousWrite<D>(token, layout, mapping) : new PreparedContiguousRead<D>(token, layout, mapping);
  }
  return write ? new PreparedStridedWrite<D>(token, layout, mapping) : new PreparedStridedRead<D>(token, layout, mapping);
}

abstract class PreparedDeviceBase extends PreparedBase {
  readonly layout: CheckedLayout;
  /** Element index of element [0, ...] counted from the binding's first byte. */
  readonly elementOffset: number;
  readonly #binding: GPUBufferBinding;

  constructor(token: BorrowNode, layout: CheckedLayout, binding: GPUBufferBinding) {
    super(token, () => {});
    this.layout = layout;
    this.#binding = Object.freeze({ ...binding });
    this.elementOffset = layout.byteOffset / dtypeSize(layout.dtype);
  }

  /** The buffer range to bind. A lifetime-only handle: it grants no ownership and ends with release(). */
  binding(): GPUBufferBinding {
    this.check('prepared.binding');
    return this.#binding;
  }
}

export class PreparedDeviceRead extends PreparedDeviceBase {
  readonly kind = 'device-read' as const;
  protected readonly commitOnRelease = false;
}

export class PreparedDeviceWrite extends PreparedDeviceBase {
  readonly kind = 'device-write' as const;
  protected readonly commitOnRelease = false;
}

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
// release() breaks the borrow contract in a way JavaScript cannot revoke, so callers must not.
import { TenonError } from '../errors.js';
import type { BorrowNode } from './borrow.js';
import { dtypeSize, typedView } from './dtype.js';
import type { ArrayOf, DType } from './dtype.js';
import type { CheckedLayout, StridedPlan } from './layout.js';
import type { MappedRange } from './provider.js';

/**
 * Walks a strided layout. Use: `for (const c = p.cursor(); c.remaining > 0; c.advance()) c.array[c.index]`.
 * `advance()` only adds precomputed strides and carries; it allocates nothing and checks nothing.
 */
export class StridedCursor<D extends DType> {
  /** The envelope of the layout; `index` points into it. */
  readonly array: ArrayOf<D>;
  /** Index in `array` of the current element. */
  index: number;
  /** Elements left including the current one. */
  remaining: number;
  readonly #extents: readonly number[];
  readonly #strides: readonly number[];
  readonly #backstrides: readonly number[];
  readonly #counters: Float64Array;

  constructor(array: ArrayOf<D>, plan: StridedPlan, size: number) {
    this.array = array;
    this.index = plan.firstIndex;
    this.remaining = size;
    this.#extents = plan.extents;
    this.#strides = plan.strides;
    this.#backstrides = plan.backstrides;
    this.#counters = new Float64Array(plan.extents.length);
  }

  advance(): void {
    this.remaining--;
    const counters = this.#counters;
    for (let d = counters.length - 1; d >= 0; d--) {
      if (++counters[d]! < this.#extents[d]!) {
        this.index += this.#strides[d]!;
        return;
      }
      counters[d] = 0;
      this.index -= this.#backstrides[d]!;
    }
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
  readonly #envelope: ArrayOf<D>;

  constructor(token: BorrowNode, layout: CheckedLayout, mapping: MappedRange) {
    super(token, (commit) => mapping.release(commit));
    this.layout = layout;
    const elements = (layout.envelope.end - layout.envelope.start) / dtypeSize(layout.dtype);
    this.#envelope = typedView(layout.dtype as D, mapping.buffer, mapping.byteOffset, elements);
  }

  /** Typed array over exactly the logical elements (contiguous variant only). */
  protected contiguousArray(op: string): ArrayOf<D> {
    this.check(op);
    return this.#envelope;
  }

  protected newCursor(op: string): StridedCursor<D> {
    this.check(op);
    const layout = this.layout;
    if (layout.kind !== 'strided') throw new TenonError('EINVAL', 'contiguous access has no cursor', { op, reason: 'wrong-variant' });
    return new StridedCursor(this.#envelope, layout.plan, layout.size);
  }
}

export class PreparedContiguousRead<D extends DType> extends PreparedHostBase<D> {
  readonly kind = 'contiguous' as const;
  protected readonly commitOnRelease = false;
  asArray(): ArrayOf<D> {
    return this.contiguousArray('prepared.asArray');
  }
}

export class PreparedStridedRead<D extends DType> extends PreparedHostBase<D> {
  readonly kind = 'strided' as const;
  protected readonly commitOnRelease = false;
  cursor(): StridedCursor<D> {
    return this.newCursor('prepared.cursor');
  }
}

export class PreparedContiguousWrite<D extends DType> extends PreparedHostBase<D> {
  readonly kind = 'contiguous' as const;
  protected readonly commitOnRelease = true;
  asArray(): ArrayOf<D> {
    return this.contiguousArray('prepared.asArray');
  }
}

export class PreparedStridedWrite<D extends DType> extends PreparedHostBase<D> {
  readonly kind = 'strided' as const;
  protected readonly commitOnRelease = true;
  cursor(): StridedCursor<D> {
    return this.newCursor('prepared.cursor');
  }
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

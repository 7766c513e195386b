// Small readbacks of a submission (G3-readback-pooled): a few declared ranges of the submitted group that
// come back with the submission's proven outcome, e.g. the 4-byte token id a decode step sampled.
//
// Planning (before admission, synchronous, while the caller or the chain still owns the group): each
// request names a contiguous descriptor and an element range of it; the range is resolved once through
// the group's read binding (no raw buffer leaves this module) and checked: inside the descriptor, 4-byte
// aligned on a device (copyBufferToBuffer works in whole words), READBACK_MAX_BYTES in all.
// Device (WebGPU): the submission's command buffer ends with a copy of its completion stamp (fence.ts)
// and of each range into one staging buffer (MAP_READ | COPY_DST) taken from this runtime's pool; right
// after queue.submit the staging buffer is mapped. Layout of a staging buffer: bytes [0, FENCE_BYTES) hold
// the stamp, the ranges follow back to back, each at a multiple of 4. When the map resolves, the stamp and
// the values are copied out and the buffer is unmapped and returned to the pool; only then can another
// submission take it, so a buffer whose map is in flight is never reused. The pool creates a buffer only
// when none is free (READBACK_POOL_LIMIT at most, then EAGAIN before admission), so a steady loop creates
// none after warm-up. Pooled buffers live as long as the runtime (never destroyed: a submission left
// unproven may still have a copy into one queued).
// Host: the values are copied out of the group's arrays right after that submission's kernels ran.
// Thread: the runtime's.
import { TenonError } from '../errors.js';
import { dtypeSize, typedArrayOver } from '../storage/index.js';
import type { AllocationGroup, AnyTypedArray, DType, DescriptorSlot, DeviceBindingState, HostBindingState, WebGPUProvider } from '../storage/index.js';
import { FENCE_BYTES, readSequence } from './fence.js';
import type { Readback } from './outcome.js';

/** Bytes all readback ranges of one submission may take together (small values only, e.g. token ids). */
export const READBACK_MAX_BYTES = 1024;
/** Staging buffers one runtime keeps at most; a chain deeper than this waits for an earlier readback. */
export const READBACK_POOL_LIMIT = 8;
/** copyBufferToBuffer offsets and sizes are multiples of this. */
const COPY_ALIGNMENT = 4;
const STAGING_BYTES = FENCE_BYTES + READBACK_MAX_BYTES;

/** One small range of the submitted group, read back with the submission's proof. */
export interface ReadbackRequest {
  /** A contiguous descriptor of the submitted group. */
  readonly slot: DescriptorSlot;
  /** First element of the descriptor to read (default 0). */
  readonly offset?: number;
  /** Elements to read (default: the rest of the descriptor). */
  readonly count?: number;
}

interface PlannedRange {
  readonly dtype: DType;
  readonly count: number;
  readonly bytes: number;
  /** Device: where the range starts in its GPU buffer. */
  readonly buffer: GPUBuffer | undefined;
  readonly byteOffset: number;
  /** Host: the group's own array and the first element of the range in it. */
  readonly array: AnyTypedArray | undefined;
  readonly start: number;
}

/** Checked readback ranges of one submission; `bytes` is their total payload. */
export interface ReadbackPlan {
  readonly ranges: readonly PlannedRange[];
  readonly bytes: number;
}

/** Resolves and checks `requests` against `group` (changes nothing; throws TenonError EINVAL). */
export function planReadback(requests: readonly ReadbackRequest[], group: AllocationGroup, target: 'device' | 'host', op: string): ReadbackPlan {
  if (!Array.isArray(requests)) throw new TenonError('EINVAL', 'readback must be an array of ranges', { op, reason: 'bad-readback' });
  const reads = Array.from(requests, (r, index) => {
    if (r === null || typeof r !== 'object') throw new TenonError('EINVAL', 'a readback range needs a slot', { op, reason: 'bad-readback', ids: { index } });
    return { slot: r.slot, access: 'read' as const };
  });
  const states = target === 'device' ? group.prepareDispatch(reads, 'device') : group.prepareDispatch(reads, 'host');
  let bytes = 0;
  const ranges = states.map((state: DeviceBindingState | HostBindingState, index): PlannedRange => {
    const request = requests[index]!;
    const { layout } = state;
    if (layout.kind !== 'contiguous') {
      throw new TenonError('EINVAL', 'only a contiguous descriptor can be read back', { op, reason: 'readback-not-contiguous', ids: { index, slot: state.slot } });
    }
    const size = layout.size;
    const offset = request.offset ?? 0;
    const count = request.count ?? size - offset;
    if (!Number.isSafeInteger(offset) || !Number.isSafeInteger(count) || offset < 0 || count < 1 || offset + count > size) {
      throw new TenonError('EINVAL', `elements ${offset}..${offset + count} are outside the descriptor's ${size}`, { op, reason: 'readback-range', ids: { index, slot: state.slot } });
    }
    const item = dtypeSize(layout.dtype);
    const rangeBytes = count * item;
    bytes += rangeBytes;
    if (bytes > READBACK_MAX_BYTES) {
      throw new TenonError('EINVAL', `readbacks take at most ${READBACK_MAX_BYTES} bytes per submission`, { op, reason: 'readback-too-large', ids: { index } });
    }
    if ('binding' in state) {
      const byteOffset = (state.binding.offset ?? 0) + (state.elementOffset + offset) * item;
      if (byteOffset % COPY_ALIGNMENT !== 0 || rangeBytes % COPY_ALIGNMENT !== 0) {
        throw new TenonError('EINVAL', 'a device readback starts and ends on a 4-byte boundary', { op, reason: 'readback-unaligned', ids: { index, slot: state.slot } });
      }
      return { dtype: layout.dtype, count, bytes: rangeBytes, buffer: state.binding.buffer, byteOffset, array: undefined, start: 0 };
    }
    return { dtype: layout.dtype, count, bytes: rangeBytes, buffer: undefined, byteOffset: 0, array: state.array, start: state.elementOffset + offset };
  });
  return { ranges, bytes };
}

/** Host: copies the planned ranges out of the group's arrays (call right after the kernels ran). */
export function copyHostReadback(plan: ReadbackPlan): Readback {
  return plan.ranges.map((r) => r.array!.slice(r.start, r.start + r.count));
}

/** Device: encodes the copy of every planned range into `staging`, after the stamp. */
export function encodeReadback(encoder: GPUCommandEncoder, plan: ReadbackPlan, staging: GPUBuffer): void {
  let at = FENCE_BYTES;
  for (const r of plan.ranges) {
    encoder.copyBufferToBuffer(r.buffer!, r.byteOffset, staging, at, r.bytes);
    at += r.bytes;
  }
}

/** What a readback map brought: the stamp it read (undefined when the map failed) and the values. */
export interface ReadbackArrival {
  readonly stamp: number | undefined;
  readonly values: Readback;
}

export interface ReadbackPoolStats {
  /** Staging buffers created so far (each one GPU buffer, kept for the runtime's life). */
  readonly created: number;
  /** Staging buffers whose map is in flight (taken by a submission, not yet back). */
  readonly inUse: number;
  readonly limit: number;
}

/** The runtime's pool of readback staging buffers (WebGPU). */
export class ReadbackPool {
  readonly #provider: WebGPUProvider;
  /** Owned by the pool for the runtime's life; a buffer is here only while no map of it is in flight. */
  readonly #free: GPUBuffer[] = [];
  #created = 0;
  #inUse = 0;

  constructor(provider: WebGPUProvider) {
    this.#provider = provider;
  }

  stats(): ReadbackPoolStats {
    return { created: this.#created, inUse: this.#inUse, limit: READBACK_POOL_LIMIT };
  }

  /** A free staging buffer, created when none is free; EAGAIN when the pool is at its limit. */
  acquire(op: string): GPUBuffer {
    let staging = this.#free.pop();
    if (staging === undefined) {
      if (this.#created >= READBACK_POOL_LIMIT) {
        throw new TenonError('EAGAIN', `all ${READBACK_POOL_LIMIT} readback staging buffers are in flight`, { op, reason: 'readback-pool-exhausted' });
      }
      staging = this.#provider.createRuntimeBuffer(STAGING_BYTES, GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST, 'tenon readback staging');
      this.#created++;
    }
    this.#inUse++;
    return staging;
  }

  /** Gives back a buffer that was acquired but never submitted (admission failed). */
  unused(staging: GPUBuffer): void {
    this.#inUse--;
    this.#free.push(staging);
  }

  /**
   * Maps `staging` after the submission that copies into it was queued; resolves with the stamp and the
   * values once the map ended, and only then returns the buffer to the pool. Never rejects.
   */
  map(staging: GPUBuffer, plan: ReadbackPlan): Promise<ReadbackArrival> {
    return staging.mapAsync(GPUMapMode.READ, 0, FENCE_BYTES + plan.bytes).then(
      () => {
        let arrival: ReadbackArrival;
        try {
          const mapped = staging.getMappedRange(0, FENCE_BYTES + plan.bytes);
          const stamp = readSequence(mapped, 0);
          let at = FENCE_BYTES;
          const values = plan.ranges.map((r) => {
            const copy = typedArrayOver(r.dtype, mapped.slice(at, at + r.bytes), 0, r.count);
            at += r.bytes;
            return copy;
          });
          arrival = { stamp, values };
        } catch {
          // Unreadable: no stamp, so the runtime proves by fence and reports the values lost.
          arrival = { stamp: undefined, values: [] };
        } finally {
          staging.unmap();
        }
        this.#returned(staging);
        return arrival;
      },
      () => {
        this.#returned(staging);
        return { stamp: undefined, values: [] };
      },
    );
  }

  #returned(staging: GPUBuffer): void {
    this.#inUse--;
    this.#free.push(staging);
  }
}

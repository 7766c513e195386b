// SPSC byte ring over one SharedArrayBuffer (seed 004 §7.3-7.4; layout and wait protocol in
// ring-layout.ts). One RingWriter (the producer's context) and one RingReader (the consumer's context)
// share the buffer; the authority only creates it and, on peer loss, replacement or a failed
// liveness watch, flips state words.
//
// Threading: every method is synchronous and never waits; waiting (Atomics.wait in workers,
// Atomics.waitAsync elsewhere) is the caller's job, using the futex words exposed here. Neither side
// allocates on its hot path except the small typed-array views needed to copy a sub-range (no payload
// buffer is ever allocated: PF4, PF6, RING7).
import { dpError } from './errors.js';
import type { TenonError } from '../errors.js';
import {
  ENDPOINT,
  RECORD,
  RECORD_ALIGN,
  RECORD_HEADER_BYTES,
  RECORD_LENGTH_MASK,
  RECORD_TYPE_SHIFT,
  RING_HEADER_BYTES,
  RING_INITIAL_CURSOR,
  RING_MAGIC,
  RING_MAX_CAPACITY,
  RING_MIN_CAPACITY,
  RING_FAULT,
  RING_WORD as W,
} from './ring-layout.js';

type EndpointState = (typeof ENDPOINT)[keyof typeof ENDPOINT];

const align = (n: number): number => (n + (RECORD_ALIGN - 1)) & ~(RECORD_ALIGN - 1);

/** Creates and initializes a ring; `capacity` must be a power of two in [RING_MIN_CAPACITY, RING_MAX_CAPACITY]. */
export function createRing(capacity: number, incarnation: number, generation: number): SharedArrayBuffer {
  if (!Number.isInteger(capacity) || capacity < RING_MIN_CAPACITY || capacity > RING_MAX_CAPACITY || (capacity & (capacity - 1)) !== 0) {
    throw dpError('EINVAL', 'ring.create', `capacity ${capacity} is not a power of two in [${RING_MIN_CAPACITY}, ${RING_MAX_CAPACITY}]`, {
      reason: 'bad-capacity',
    });
  }
  const sab = new SharedArrayBuffer(RING_HEADER_BYTES + capacity);
  const h = new Int32Array(sab, 0, RING_HEADER_BYTES / 4);
  Atomics.store(h, W.CAPACITY, capacity);
  Atomics.store(h, W.INCARNATION, incarnation | 0);
  Atomics.store(h, W.GENERATION, generation | 0);
  Atomics.store(h, W.WRITE, RING_INITIAL_CURSOR);
  Atomics.store(h, W.READ, RING_INITIAL_CURSOR);
  Atomics.store(h, W.MAGIC, RING_MAGIC);
  return sab;
}

/** Validates a ring received in a grant (K4, M7): magic, capacity, size and identity must all match. */
function checkRing(sab: unknown, incarnation: number, generation: number, op: string): Int32Array {
  if (!(sab instanceof SharedArrayBuffer) || sab.byteLength < RING_HEADER_BYTES + RING_MIN_CAPACITY) {
    throw dpError('EIO', op, 'ring buffer missing or too small', { reason: 'ring-malformed' });
  }
  const h = new Int32Array(sab, 0, RING_HEADER_BYTES / 4);
  const capacity = Atomics.load(h, W.CAPACITY);
  if (Atomics.load(h, W.MAGIC) !== RING_MAGIC || (capacity & (capacity - 1)) !== 0 || RING_HEADER_BYTES + capacity !== sab.byteLength) {
    throw dpError('EIO', op, 'ring header is corrupt', { reason: 'ring-malformed' });
  }
  if (Atomics.load(h, W.INCARNATION) !== (incarnation | 0) || Atomics.load(h, W.GENERATION) !== (generation | 0)) {
    throw dpError('ESTALE', op, 'ring belongs to another incarnation', { reason: 'ring-identity' });
  }
  return h;
}

const bump = (h: Int32Array, word: number): void => {
  Atomics.add(h, word, 1);
  Atomics.notify(h, word);
};

/** Typed access to Atomics.waitAsync (ES2024; not in this project's lib setting). */
type WaitAsyncResult = { async: false; value: 'not-equal' | 'timed-out' } | { async: true; value: Promise<'ok' | 'timed-out'> };
const waitAsync = (Atomics as unknown as { waitAsync(a: Int32Array, i: number, v: number): WaitAsyncResult }).waitAsync;

/** Waits (without blocking the thread) while `h[word] === seq`; resolves at once when it differs. */
export function waitWordAsync(h: Int32Array, word: number, seq: number): Promise<unknown> | undefined {
  const r = waitAsync(h, word, seq);
  return r.async ? r.value : undefined;
}

abstract class RingEnd {
  protected readonly h: Int32Array;
  protected readonly data: Uint8Array;
  protected readonly words: Int32Array;
  protected readonly mask: number;
  readonly capacity: number;

  constructor(sab: SharedArrayBuffer, incarnation: number, generation: number, op: string) {
    this.h = checkRing(sab, incarnation, generation, op);
    this.capacity = Atomics.load(this.h, W.CAPACITY);
    this.mask = this.capacity - 1;
    this.data = new Uint8Array(sab, RING_HEADER_BYTES, this.capacity);
    this.words = new Int32Array(sab, RING_HEADER_BYTES, this.capacity / 4);
  }

  get header(): Int32Array {
    return this.h;
  }

  /** True when the authority replaced this incarnation. */
  get stale(): boolean {
    return Atomics.load(this.h, W.STALE) !== 0;
  }

  /** The error of a ring the authority faulted (it can no longer supervise the stream), if it did. */
  protected faultError(op: string): TenonError | undefined {
    if (Atomics.load(this.h, W.FAULT) === RING_FAULT.NONE) return undefined;
    return dpError('EIO', op, 'the authority cannot watch this stream for peer loss', { reason: 'lock-watch-failed' });
  }

  /** Framed bytes currently in the ring (payload plus record headers and padding). */
  queuedBytes(): number {
    return (Atomics.load(this.h, W.WRITE) - Atomics.load(this.h, W.READ)) | 0;
  }
}

/**
 * Producer end. Owns the WRITE cursor and WRITER_STATE; reads READ and READER_STATE.
 * `tryWrite` returns how many bytes it accepted; 0 means "no room now" (wait on `spaceSeq`).
 */
export class RingWriter extends RingEnd {
  #w: number;

  constructor(sab: SharedArrayBuffer, incarnation: number, generation: number) {
    super(sab, incarnation, generation, 'ring.attachWriter');
    this.#w = Atomics.load(this.h, W.WRITE);
  }

  get state(): EndpointState {
    return Atomics.load(this.h, W.WRITER_STATE) as EndpointState;
  }

  get peerState(): EndpointState {
    return Atomics.load(this.h, W.READER_STATE) as EndpointState;
  }

  /** Futex snapshot for waiting on free space. */
  spaceSeq(): number {
    return Atomics.load(this.h, W.SPACE_SEQ);
  }

  /** Payload bytes one write could take right now (0 when full). */
  writableBytes(): number {
    const used = (this.#w - Atomics.load(this.h, W.READ)) | 0;
    return Math.max(0, Math.min(this.capacity - used - 2 * RECORD_HEADER_BYTES, RECORD_LENGTH_MASK));
  }

  /** Throws the terminal condition of the consumer side, if any (EPIPE after clean close, else ECONNRESET). */
  checkPeer(op: string): void {
    if (this.stale) throw dpError('ESTALE', op, 'stream incarnation was replaced', { reason: 'replaced' });
    const fault = this.faultError(op);
    if (fault !== undefined) throw fault;
    const peer = this.peerState;
    if (peer === ENDPOINT.CLOSED) throw dpError('EPIPE', op, 'the reader closed the stream', { reason: 'peer-closed' });
    if (peer !== ENDPOINT.OPEN) throw dpError('ECONNRESET', op, 'the reader went away', { reason: peer === ENDPOINT.ABORTED ? 'peer-aborted' : 'peer-lost' });
  }

  /** Copies up to `len` bytes of `src` from `srcOff` into one record. Never waits (S9, RING7). */
  tryWrite(src: Uint8Array, srcOff: number, len: number): number {
    this.checkPeer('ring.write');
    const n = Math.min(len, this.writableBytes());
    if (n <= 0) return 0;
    const w = this.#w;
    this.words[(w & this.mask) >> 2] = (RECORD.DATA << RECORD_TYPE_SHIFT) | n;
    const pos = (w + RECORD_HEADER_BYTES) & this.mask;
    const first = Math.min(n, this.capacity - pos);
    if (srcOff === 0 && n === src.length && first === n) this.data.set(src, pos);
    else {
      this.data.set(src.subarray(srcOff, srcOff + first), pos);
      if (first < n) this.data.set(src.subarray(srcOff + first, srcOff + n), 0);
    }
    this.#w = (w + RECORD_HEADER_BYTES + align(n)) | 0;
    Atomics.store(this.h, W.WRITE, this.#w);
    bump(this.h, W.DATA_SEQ);
    return n;
  }

  /** True once the consumer released everything published so far (flush condition). */
  drained(): boolean {
    return Atomics.load(this.h, W.READ) === this.#w;
  }

  /**
   * Appends the terminal record (EOF on close, FAULT on abort) into the reserve that writes never use,
   * then records the endpoint state. Never waits.
   */
  finish(kind: 'eof' | 'fault'): void {
    if (this.state !== ENDPOINT.OPEN) return;
    const w = this.#w;
    this.words[(w & this.mask) >> 2] = (kind === 'eof' ? RECORD.EOF : RECORD.FAULT) << RECORD_TYPE_SHIFT;
    this.#w = (w + RECORD_HEADER_BYTES) | 0;
    Atomics.store(this.h, W.WRITE, this.#w);
    Atomics.compareExchange(this.h, W.WRITER_STATE, ENDPOINT.OPEN, kind === 'eof' ? ENDPOINT.CLOSED : ENDPOINT.ABORTED);
    bump(this.h, W.DATA_SEQ);
  }
}

/**
 * Consumer end. Owns the READ cursor and READER_STATE. Keeps a cursor inside the current record so a
 * short read leaves the rest of the record pinned in the ring (RING3, PF6).
 * `tryRead` returns the bytes copied; 0 means "nothing now" unless `eof` became true.
 */
export class RingReader extends RingEnd {
  /** Released position: the start of the current (or next) record. */
  #r: number;
  #payload = 0;
  #remaining = 0;
  #recordEnd = 0;
  #eof = false;
  /** Sticky terminal fault (S7): once seen, every later read throws it again. */
  #fault: Error | undefined;

  constructor(sab: SharedArrayBuffer, incarnation: number, generation: number) {
    super(sab, incarnation, generation, 'ring.attachReader');
    this.#r = Atomics.load(this.h, W.READ);
  }

  get state(): EndpointState {
    return Atomics.load(this.h, W.READER_STATE) as EndpointState;
  }

  get peerState(): EndpointState {
    return Atomics.load(this.h, W.WRITER_STATE) as EndpointState;
  }

  /** True after the EOF record was consumed (sticky, S4). */
  get eof(): boolean {
    return this.#eof;
  }

  /** Futex snapshot for waiting on data. */
  dataSeq(): number {
    return Atomics.load(this.h, W.DATA_SEQ);
  }

  #release(to: number): void {
    this.#r = to;
    Atomics.store(this.h, W.READ, to);
    bump(this.h, W.SPACE_SEQ);
  }

  /** Copies at most `len` bytes of the stream into `dst` at `dstOff`. Never waits. */
  tryRead(dst: Uint8Array, dstOff: number, len: number): number {
    if (this.#eof) return 0;
    if (this.#fault !== undefined) throw this.#fault;
    if (this.stale) throw dpError('ESTALE', 'ring.read', 'stream incarnation was replaced', { reason: 'replaced' });
    const fault = this.faultError('ring.read');
    if (fault !== undefined) throw (this.#fault = fault);
    if (this.#remaining === 0) {
      const r = this.#r;
      const available = (Atomics.load(this.h, W.WRITE) - r) | 0;
      if (available === 0) {
        const peer = this.peerState;
        if (peer === ENDPOINT.LOST || peer === ENDPOINT.TORN_DOWN) {
          throw (this.#fault = dpError('ECONNRESET', 'ring.read', 'the writer went away before closing', { reason: 'peer-lost' }));
        }
        return 0;
      }
      const head = this.words[(r & this.mask) >> 2]!;
      const type = head >>> RECORD_TYPE_SHIFT;
      const length = head & RECORD_LENGTH_MASK;
      if (available < RECORD_HEADER_BYTES + align(length) || available > this.capacity) {
        throw (this.#fault = dpError('EIO', 'ring.read', 'record overruns the published bytes', { reason: 'ring-corrupt' }));
      }
      if (type === RECORD.EOF) {
        this.#eof = true;
        this.#release((r + RECORD_HEADER_BYTES) | 0);
        return 0;
      }
      if (type === RECORD.FAULT) {
        this.#release((r + RECORD_HEADER_BYTES) | 0);
        throw (this.#fault = dpError('ECONNRESET', 'ring.read', 'the writer aborted the stream', { reason: 'peer-aborted' }));
      }
      if (type !== RECORD.DATA || length === 0) {
        throw (this.#fault = dpError('EIO', 'ring.read', `unknown record type ${type}`, { reason: 'ring-corrupt' }));
      }
      this.#payload = (r + RECORD_HEADER_BYTES) | 0;
      this.#remaining = length;
      this.#recordEnd = (r + RECORD_HEADER_BYTES + align(length)) | 0;
    }
    const n = Math.min(len, this.#remaining);
    const pos = this.#payload & this.mask;
    const first = Math.min(n, this.capacity - pos);
    dst.set(this.data.subarray(pos, pos + first), dstOff);
    if (first < n) dst.set(this.data.subarray(0, n - first), dstOff + first);
    this.#payload = (this.#payload + n) | 0;
    this.#remaining -= n;
    if (this.#remaining === 0) this.#release(this.#recordEnd);
    return n;
  }

  /** Payload bytes of the current record still pinned by a short read. */
  get pinnedBytes(): number {
    return this.#remaining;
  }
}

/** Sets an endpoint state if it is still OPEN, then wakes both sides (C8). Stale calls are harmless (C9). */
export function settleEndpoint(sab: SharedArrayBuffer, role: 'reader' | 'writer', to: EndpointState): boolean {
  const h = new Int32Array(sab, 0, RING_HEADER_BYTES / 4);
  const word = role === 'reader' ? W.READER_STATE : W.WRITER_STATE;
  const changed = Atomics.compareExchange(h, word, ENDPOINT.OPEN, to) === ENDPOINT.OPEN;
  bump(h, W.DATA_SEQ);
  bump(h, W.SPACE_SEQ);
  return changed;
}

/** Wakes every waiter of both sides without changing any state (a spurious wakeup is harmless: A4). */
export function wakeRing(sab: SharedArrayBuffer): void {
  const h = new Int32Array(sab, 0, RING_HEADER_BYTES / 4);
  bump(h, W.DATA_SEQ);
  bump(h, W.SPACE_SEQ);
}

/** Faults a ring (a RING_FAULT value) and wakes both sides; both ends then fail with EIO. */
export function markFaulted(sab: SharedArrayBuffer, fault: (typeof RING_FAULT)[keyof typeof RING_FAULT]): void {
  const h = new Int32Array(sab, 0, RING_HEADER_BYTES / 4);
  Atomics.store(h, W.FAULT, fault);
  bump(h, W.DATA_SEQ);
  bump(h, W.SPACE_SEQ);
}

/** Marks a ring's incarnation as replaced and wakes both sides. */
export function markStale(sab: SharedArrayBuffer): void {
  const h = new Int32Array(sab, 0, RING_HEADER_BYTES / 4);
  Atomics.store(h, W.STALE, 1);
  bump(h, W.DATA_SEQ);
  bump(h, W.SPACE_SEQ);
}

export function endpointState(sab: SharedArrayBuffer, role: 'reader' | 'writer'): EndpointState {
  const h = new Int32Array(sab, 0, RING_HEADER_BYTES / 4);
  return Atomics.load(h, role === 'reader' ? W.READER_STATE : W.WRITER_STATE) as EndpointState;
}

/** Reader-side clean or abnormal detach: records the state and wakes the producer. */
export function readerFinish(sab: SharedArrayBuffer, how: 'close' | 'abort'): void {
  settleEndpoint(sab, 'reader', how === 'close' ? ENDPOINT.CLOSED : ENDPOINT.ABORTED);
}

export { ENDPOINT };

// HostMemory: the one linear memory (a WebAssembly.Memory) that holds every root of a host provider, so
// the WebAssembly kernels of src/submit read and write tensors in place, by address, with no copy in or
// out of the module. Owned by its HostProvider; lives on that provider's thread. A shared memory (the
// `shared` host provider) is backed by a SharedArrayBuffer that other threads attach to without copying.
//
// Blocks: `allocate` hands out a zero-filled block at an address that is a multiple of BLOCK_ALIGN (so
// SIMD loads of a tensor's first elements are aligned) and never 0; `free` returns it. Blocks never
// move, so an address stays valid for as long as its root lives, across growth. Freed blocks are kept in
// an address-ordered free list, merged with free neighbours, and reused first fit.
//
// Growth detaches views (the price of in-place kernels): growing an ordinary memory detaches its old
// ArrayBuffer, so every typed array over it reads as empty from then on; a shared memory's old
// SharedArrayBuffer stays valid but covers only the old length. `buffer` is always the current one, and
// `growths` counts how often it changed. Whoever keeps a typed array over this memory across an
// allocation must re-derive it from `buffer` (prepared accesses do: src/storage/prepared.ts).
//
// Scratch: `scratch(bytes)` is one block of kernel workspace (never a tensor, never in the ledger), grown
// on demand, for the synchronous kernels of this memory's thread. Growing it may grow the memory, so
// kernels ask for it before they take any view.
import { TenonError } from '../errors.js';

/** Bytes per WebAssembly page. */
export const WASM_PAGE = 65536;
/** wasm32's whole address space in pages (4 GiB): the most any memory can reach. */
const MAX_PAGES = 65536;
/** Block addresses and sizes are multiples of this: one cache line, four 128-bit vectors. */
export const BLOCK_ALIGN = 64;
/** Growth is at least this factor of the current size, so a run of allocations grows (and detaches) rarely. */
const GROWTH_FACTOR = 1.5;

interface Span {
  start: number;
  end: number;
}

const roundUp = (n: number, to: number): number => Math.ceil(n / to) * to;

export class HostMemory {
  readonly memory: WebAssembly.Memory;
  readonly shared: boolean;
  /** Free spans below `#top`, by increasing address, never adjacent (merged on free). */
  readonly #free: Span[] = [];
  /** First byte never handed out; everything from here to the end of the memory is zero. */
  #top = BLOCK_ALIGN;
  #growths = 0;
  #scratch: Span | undefined;
  readonly #onGrow: () => void;

  /** `onGrow` is told after every growth (the provider counts them). */
  constructor(shared: boolean, onGrow: () => void = () => {}) {
    this.shared = shared;
    this.#onGrow = onGrow;
    this.memory = shared ? new WebAssembly.Memory({ initial: 1, maximum: MAX_PAGES, shared: true }) : new WebAssembly.Memory({ initial: 1 });
  }

  /** The memory's current buffer (re-read after any allocation: growth replaces it). */
  get buffer(): ArrayBuffer | SharedArrayBuffer {
    return this.memory.buffer;
  }

  /** Times the memory grew (each time, views over the old buffer went stale). */
  get growths(): number {
    return this.#growths;
  }

  /** A zero-filled block of at least `bytes` bytes; ENOMEM when the address space is exhausted. */
  allocate(bytes: number, op: string): number {
    const size = Math.max(BLOCK_ALIGN, roundUp(bytes, BLOCK_ALIGN));
    for (let i = 0; i < this.#free.length; i++) {
      const span = this.#free[i]!;
      if (span.end - span.start < size) continue;
      const address = span.start;
      span.start += size;
      if (span.start === span.end) this.#free.splice(i, 1);
      new Uint8Array(this.memory.buffer, address, size).fill(0);
      return address;
    }
    const address = this.#top;
    this.#ensure(address + size, op);
    this.#top = address + size;
    return address;
  }

  /** Returns the block at `address` (of the `bytes` it was allocated with) to the free list. */
  free(address: number, bytes: number): void {
    const size = Math.max(BLOCK_ALIGN, roundUp(bytes, BLOCK_ALIGN));
    const span = { start: address, end: address + size };
    let i = 0;
    while (i < this.#free.length && this.#free[i]!.start < span.start) i++;
    this.#free.splice(i, 0, span);
    const next = this.#free[i + 1];
    if (next !== undefined && next.start === span.end) {
      span.end = next.end;
      this.#free.splice(i + 1, 1);
    }
    const prev = this.#free[i - 1];
    if (prev !== undefined && prev.end === span.start) {
      prev.end = span.end;
      this.#free.splice(i, 1);
    }
    // A free span that reaches the top is given back to the untouched region (re-zeroed on reuse).
    const last = this.#free[this.#free.length - 1];
    if (last !== undefined && last.end === this.#top) {
      new Uint8Array(this.memory.buffer, last.start, last.end - last.start).fill(0);
      this.#top = last.start;
      this.#free.pop();
    }
  }

  /** Address of a kernel workspace of at least `bytes` bytes (contents undefined). */
  scratch(bytes: number, op: string): number {
    const current = this.#scratch;
    if (current !== undefined && current.end - current.start >= bytes) return current.start;
    if (current !== undefined) this.free(current.start, current.end - current.start);
    this.#scratch = undefined;
    const size = Math.max(BLOCK_ALIGN, roundUp(bytes, BLOCK_ALIGN));
    const start = this.allocate(size, op);
    this.#scratch = { start, end: start + size };
    return start;
  }

  /** Grows the memory so that it holds at least `end` bytes. */
  #ensure(end: number, op: string): void {
    const have = this.memory.buffer.byteLength;
    if (end <= have) return;
    const havePages = have / WASM_PAGE;
    const need = Math.ceil(end / WASM_PAGE);
    if (need > MAX_PAGES) {
      throw new TenonError('ENOMEM', `host memory cannot hold ${end} bytes (wasm32 addresses end at 4 GiB)`, { op, reason: 'exceeds-limit' });
    }
    const pages = Math.min(MAX_PAGES, Math.max(need, Math.ceil(havePages * GROWTH_FACTOR)));
    try {
      this.memory.grow(pages - havePages);
    } catch (err) {
      // The engine may refuse less than the wasm32 maximum (its own limit, or no address space left).
      try {
        this.memory.grow(need - havePages);
      } catch {
        throw new TenonError('ENOMEM', `host memory could not grow to ${end} bytes`, { op, reason: 'memory-exhausted', cause: err });
      }
    }
    this.#growths++;
    this.#onGrow();
  }
}

/** Whether this engine offers WebAssembly memories (the host provider falls back to separate buffers without). */
export function hasWasmMemory(): boolean {
  return typeof WebAssembly === 'object' && typeof WebAssembly.Memory === 'function';
}

// CompletionFence: the evidence that retirement on one WebGPU queue rests on (G3-completion-proof).
//
// Every admitted submission gets a sequence number right after its queue.submit, increasing in submission
// order. To prove submissions up to N, the fence writes N into a small source buffer (queue.writeBuffer),
// submits one command buffer that copies it into a MAP_READ staging buffer, and maps that staging buffer:
//   - the queue executes in submission order, so the copy runs only after every submission before it;
//   - mapAsync resolves only once that copy finished, and rejects when the device is lost;
//   - the value read must equal N: a map that resolved although the copy never ran shows an older number.
// One successful map of N therefore proves every submission numbered <= N, and nothing above N. Records
// wait in sequence order and are proven in batches: at most MAX_FENCES_IN_FLIGHT fence maps are
// outstanding; records admitted meanwhile are covered by the next fence, submitted when a map ends.
// The fence is a submit of its own, so an invalid command buffer of a submission (the queue drops it whole)
// cannot take the proof with it; the submission's own error scopes still report its validation error.
// Nothing here reads a clock, counts tasks or reads a loss flag: a record that no successful, checked map
// covers is never proven.
// Stamps (submissions with readbacks, readback.ts): such a submission carries its own proof. While it is
// encoded, the number it will get is written into the same source buffer and its command buffer ends with a
// copy of it into the submission's readback staging buffer; when that map reads back exactly this number,
// the runtime calls witnessed(N), which proves N and everything before it just as a fence map of N would
// (same queue order, same check). A stamp that does not read back its number proves nothing: the runtime
// then asks for an ordinary fence.
// Resources: one source buffer and a fixed pool of MAX_FENCES_IN_FLIGHT staging buffers, created with the
// fence and kept for the life of its runtime (never destroyed: a record left unproven may still have a
// fence copy queued); a staging buffer whose map is in flight is never reused.
// Thread: the runtime's.
import type { WebGPUProvider } from '../storage/index.js';

/** Fence maps outstanding at once; later records wait for the next fence (they are batched into it). */
export const MAX_FENCES_IN_FLIGHT = 1;
/** A sequence number is written as two little-endian u32 words (low, high): safe far beyond 2^32. */
const FENCE_WORDS = 2;
/** Bytes of one sequence number as the GPU copies it (a fence value or a submission's stamp). */
export const FENCE_BYTES = FENCE_WORDS * Uint32Array.BYTES_PER_ELEMENT;
const WORD = 0x1_0000_0000;

export type FenceVerdict = { readonly proven: true } | { readonly proven: false; readonly reason: string };

const PROVEN: FenceVerdict = Object.freeze({ proven: true });

export interface FenceStats {
  /** Fences submitted (each one copy + one map). */
  readonly fences: number;
  /** Fences whose map was rejected or read another number than the one it was written for. */
  readonly fencesFailed: number;
  /** Highest sequence number proven so far (0 before the first proof). */
  readonly provenThrough: number;
  /** Submissions proven by their own stamp (witnessed) rather than by a fence. */
  readonly witnessed: number;
  /** GPU buffers the fence created (its source and staging buffers, all at construction). */
  readonly buffersCreated: number;
}

/** Reads a sequence number as the fence writes it (two little-endian u32 words) from mapped bytes. */
export function readSequence(bytes: ArrayBuffer, byteOffset: number): number {
  const words = new Uint32Array(bytes, byteOffset, FENCE_WORDS);
  return words[0]! + words[1]! * WORD;
}

interface Waiter {
  readonly seq: number;
  readonly settle: (verdict: FenceVerdict) => void;
}

export class CompletionFence {
  readonly #provider: WebGPUProvider;
  readonly #source: GPUBuffer;
  readonly #free: GPUBuffer[] = [];
  readonly #words = new Uint32Array(FENCE_WORDS);
  /** Records waiting for proof, in sequence order. */
  readonly #waiting: Waiter[] = [];
  #issued = 0;
  /**
   * Highest number a fence whose map is still outstanding covers (0 when none is). A record that starts
   * waiting later (a stamp that failed, say) is covered only by an outstanding or a new fence, never by
   * one that already ended.
   */
  #fenced = 0;
  #proven = 0;
  #fences = 0;
  #failed = 0;
  #witnessed = 0;
  #dropNextCopy = false;

  constructor(provider: WebGPUProvider, label: string) {
    this.#provider = provider;
    this.#source = provider.createRuntimeBuffer(FENCE_BYTES, GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST, `${label} fence source`);
    for (let i = 0; i < MAX_FENCES_IN_FLIGHT; i++) {
      this.#free.push(provider.createRuntimeBuffer(FENCE_BYTES, GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST, `${label} fence staging`));
    }
  }

  stats(): FenceStats {
    return { fences: this.#fences, fencesFailed: this.#failed, provenThrough: this.#proven, witnessed: this.#witnessed, buffersCreated: 1 + MAX_FENCES_IN_FLIGHT };
  }

  /** Numbers a submission; call right after its queue.submit, before anything else reaches the queue. */
  admitted(): number {
    return ++this.#issued;
  }

  /**
   * Stamps the submission being encoded: writes the number it will be admitted under into the source
   * buffer and encodes a copy of it into `target` at `offset`. Call while encoding it; its queue.submit
   * must follow before anything else reaches the queue. Returns the number the stamp carries.
   */
  stamp(encoder: GPUCommandEncoder, target: GPUBuffer, offset: number): number {
    const seq = this.#issued + 1;
    this.#words[0] = seq % WORD;
    this.#words[1] = Math.floor(seq / WORD);
    this.#provider.device.queue.writeBuffer(this.#source, 0, this.#words);
    encoder.copyBufferToBuffer(this.#source, 0, target, offset, FENCE_BYTES);
    return seq;
  }

  /**
   * A stamp of `seq` was mapped and read back exactly `seq`: the queue finished that submission, so it
   * and every submission numbered below it are proven.
   */
  witnessed(seq: number): void {
    this.#witnessed++;
    if (seq > this.#proven) this.#proven = seq;
    while (this.#waiting.length > 0 && this.#waiting[0]!.seq <= seq) this.#waiting.shift()!.settle(PROVEN);
  }

  /** Resolves once a checked fence map covers `seq` (proven) or the fence covering it failed. */
  prove(seq: number): Promise<FenceVerdict> {
    if (seq <= this.#proven) return Promise.resolve(PROVEN);
    // Kept in sequence order: a record whose stamp failed may start waiting after later ones.
    const verdict = new Promise<FenceVerdict>((settle) => {
      let at = this.#waiting.length;
      while (at > 0 && this.#waiting[at - 1]!.seq > seq) at--;
      this.#waiting.splice(at, 0, { seq, settle });
    });
    this.#pump();
    return verdict;
  }

  /** Fault seam: the next fence submits no copy, so its map resolves over an older number. */
  dropNextCopy(): void {
    this.#dropNextCopy = true;
  }

  /** Submits a fence for everything issued so far when a staging buffer is free and a record needs one. */
  #pump(): void {
    const last = this.#waiting[this.#waiting.length - 1];
    if (last === undefined || last.seq <= this.#fenced) return;
    const staging = this.#free.pop();
    if (staging === undefined) return; // the map that ends next submits the fence
    const value = this.#issued;
    this.#fenced = value;
    this.#fences++;
    const device = this.#provider.device;
    const encoder = device.createCommandEncoder({ label: 'tenon completion fence' });
    if (this.#dropNextCopy) {
      this.#dropNextCopy = false;
    } else {
      this.#words[0] = value % WORD;
      this.#words[1] = Math.floor(value / WORD);
      device.queue.writeBuffer(this.#source, 0, this.#words);
      encoder.copyBufferToBuffer(this.#source, 0, staging, 0, FENCE_BYTES);
    }
    device.queue.submit([encoder.finish()]);
    staging.mapAsync(GPUMapMode.READ).then(
      () => {
        let read: number;
        try {
          const words = new Uint32Array(staging.getMappedRange(0, FENCE_BYTES));
          read = words[0]! + words[1]! * WORD;
          staging.unmap();
        } catch {
          this.#ended(staging, value, 'fence-read-failed');
          return;
        }
        this.#ended(staging, value, read === value ? undefined : 'fence-value-mismatch');
      },
      () => this.#ended(staging, value, this.#provider.loss?.reason ?? 'fence-map-rejected'),
    );
  }

  #ended(staging: GPUBuffer, value: number, failure: string | undefined): void {
    this.#free.push(staging);
    if (this.#free.length === MAX_FENCES_IN_FLIGHT) this.#fenced = 0;
    if (failure === undefined) {
      if (value > this.#proven) this.#proven = value;
    } else {
      this.#failed++;
    }
    const verdict: FenceVerdict = failure === undefined ? PROVEN : Object.freeze({ proven: false, reason: failure });
    while (this.#waiting.length > 0 && this.#waiting[0]!.seq <= value) this.#waiting.shift()!.settle(verdict);
    this.#pump();
  }
}

// Descriptors: the one semantic implementation of read / write / map / close / abort (seed 004 §5.2-§10).
//
// A `Descriptor` is a thin public shell over a private open-file description (`Core`). The Core holds
// everything the seed lists for an open-file description: the granted kind, rights and capabilities,
// the blob offset or the ring endpoint, the terminal state, the mappings that still reference it. It
// lives in the context that opened it; the authority is consulted only at open and at the terminal step
// (publication or release), never per byte (PF2).
//
// Threading: offset-moving calls on one description run one at a time in call order (O4); a blocked
// stream call waits with Atomics.waitAsync (any context, never blocks the event loop: A6) or, in the
// *Sync variants that exist only in dedicated workers, with Atomics.wait. close/abort flip the state
// first, wake any blocked call of this description (which then fails with EBADF without moving a byte),
// and run their terminal step once (O6, C6).
//
// Ownership: the Core owns its BlobIO handle or its ring endpoint and its endpoint lock. Mappings hold
// the Core alive; a published blob's grant is released only when the descriptor is closed and its last
// mapping is closed (O3, M5). A FinalizationRegistry reports and aborts a dropped, still-open descriptor;
// it is a diagnostic, never the release path (D4).
import { TenonError } from '../errors.js';
import { dpError } from './errors.js';
import { recordLeak } from './diagnostics.js';
import type { BlobIO } from './blobio.js';
import { ENDPOINT, RingReader, RingWriter, readerFinish, settleEndpoint, waitWordAsync, wakeRing } from './ring.js';
import { RING_WORD } from './ring-layout.js';
import { inDedicatedWorker } from './opfs.js';
import type { ClientMessage, GrantWire, OkValue } from './protocol.js';
import type {
  AccessMode,
  Capability,
  DescriptorInfo,
  DescriptorState,
  IoOptions,
  MapRequest,
  MemoryRegion,
  ObjectKind,
  Protection,
  RegionIoOptions,
} from './types.js';

/** Size of the chunks the async iterator and the readable stream ask for. */
export const STREAM_CHUNK = 64 * 1024;

/** What a Core needs from its session (session.ts implements it). */
export interface SessionLink {
  readonly plane: string;
  /** False once the session or its authority ended; terminal steps then stay local. */
  readonly running: boolean;
  /** Takes up to `n` bytes of staging quota; throws ENOSPC when none is left (fault seam). */
  takeQuota(n: number, op: string, allOrNothing: boolean): number;
  call(build: (id: number) => ClientMessage): Promise<OkValue | undefined>;
  forget(core: Core): void;
}

export interface MappedBuffer extends Disposable {
  /** The mapped bytes. For read-only mappings writes to this view never reach the object. */
  readonly bytes: Uint8Array;
  release(): void;
}

/** A host mapping of a blob range (seed 004 §8; M1-M12). */
export interface Mapping {
  readonly offset: number;
  readonly length: number;
  readonly protection: Protection;
  /** How the bytes reach host memory: always 'staged' (OPFS cannot be memory-mapped in a browser). */
  readonly route: 'staged';
  /** Exports the mapped bytes; writable exports need a read-write mapping (M3). */
  export(options?: { readonly writable?: boolean }): Promise<MappedBuffer>;
  /** Writes a read-write mapping back to the staged blob (a synchronization point, B6). */
  sync(): Promise<void>;
  /** Unmaps; refused with EBUSY while exports are live (M12). May complete a pending publication (C2). */
  close(): Promise<void>;
}

export interface Descriptor extends AsyncIterable<Uint8Array> {
  readonly kind: ObjectKind;
  readonly access: AccessMode;
  /** The resolved path this descriptor was opened from (N8). */
  readonly path: string;
  readonly capabilities: ReadonlySet<Capability>;
  read(dst: Uint8Array, options?: IoOptions): Promise<number>;
  readInto(region: MemoryRegion, options?: RegionIoOptions): Promise<number>;
  write(src: Uint8Array, options?: IoOptions): Promise<number>;
  writeFrom(region: MemoryRegion, options?: RegionIoOptions): Promise<number>;
  /** Dedicated workers only: blocks the thread with Atomics.wait instead of returning a promise. */
  readSync(dst: Uint8Array): number;
  writeSync(src: Uint8Array): number;
  /** Stream writers: resolves once the reader consumed every accepted byte. */
  flush(options?: IoOptions): Promise<void>;
  map(request: MapRequest): Promise<Mapping>;
  close(): Promise<void>;
  abort(): Promise<void>;
  info(): DescriptorInfo;
  /** A WHATWG byte stream that reads through this descriptor and closes it at EOF. */
  readonly readable: ReadableStream<Uint8Array>;
  /** A WHATWG stream that writes through this descriptor (writeAll), closing or aborting it at the end. */
  readonly writable: WritableStream<Uint8Array>;
}

const ebadf = (op: string, reason: string, path: string): TenonError => dpError('EBADF', op, `descriptor ${reason}`, { reason, path });
const noop = (): void => undefined;

function checkBytes(b: unknown, op: string): asserts b is Uint8Array {
  if (!(b instanceof Uint8Array)) throw dpError('EINVAL', op, 'expected a Uint8Array', { reason: 'not-bytes' });
}

/** Resolves a region plus options to a checked [offset, offset + length) span (IO1, M1). */
function regionSpan(region: MemoryRegion, o: RegionIoOptions | undefined, op: string): { offset: number; length: number } {
  if (typeof region !== 'object' || region === null || (region.kind !== 'host' && region.kind !== 'device')) {
    throw dpError('EINVAL', op, 'not a memory region', { reason: 'bad-region' });
  }
  const size = region.kind === 'host' ? region.bytes.length : region.byteLength;
  const offset = o?.offset ?? 0;
  const length = o?.length ?? size - offset;
  if (!Number.isSafeInteger(offset) || !Number.isSafeInteger(length) || offset < 0 || length < 0 || offset + length > size) {
    throw dpError('EINVAL', op, 'range lies outside the region', { reason: 'region-range' });
  }
  return { offset, length };
}

type Waiting = () => void;

export class Core {
  state: DescriptorState = 'open';
  readonly kind: ObjectKind;
  readonly access: AccessMode;
  readonly path: string;
  readonly capabilities: ReadonlySet<Capability>;
  readonly token: string;
  readonly link: SessionLink;
  /** The terminal step ran (grant released or published); nothing more is owed to the authority. */
  finished = false;
  readonly routes = { direct: 0, staged: 0 };
  // blob
  readonly io: BlobIO | undefined;
  readonly length: number;
  offset = 0;
  revision: number | undefined;
  readonly staged: boolean;
  readonly declaredDigest: string | undefined;
  readonly mappings = new Set<MappingImpl>();
  writableMappings = 0;
  closeIntent = false;
  // stream
  readonly ring: SharedArrayBuffer | undefined;
  readonly reader: RingReader | undefined;
  readonly writer: RingWriter | undefined;
  releaseLock: (() => void) | undefined;
  #busy = false;
  readonly #queue: Waiting[] = [];
  #bounce: Uint8Array | undefined;
  /** The failure that ended the session, when a teardown was caused by one (reported instead of EBADF). */
  #endedBy: TenonError | undefined;

  constructor(link: SessionLink, grant: GrantWire, backend: { io?: BlobIO; reader?: RingReader; writer?: RingWriter; releaseLock?: () => void }) {
    this.link = link;
    this.kind = grant.kind;
    this.access = grant.access;
    this.path = grant.path;
    this.capabilities = new Set(grant.capabilities);
    this.token = grant.token;
    this.io = backend.io;
    this.length = grant.blob?.length ?? 0;
    this.revision = grant.blob?.revision;
    this.staged = grant.blob?.staged ?? false;
    this.declaredDigest = grant.blob?.digest !== undefined && grant.blob.staged ? grant.blob.digest : undefined;
    this.ring = grant.stream?.ring;
    this.reader = backend.reader;
    this.writer = backend.writer;
    this.releaseLock = backend.releaseLock;
  }

  // ---------------------------------------------------------------------------------------------------
  // serialization (O4)

  #enter(): Promise<void> | undefined {
    if (!this.#busy) {
      this.#busy = true;
      return undefined;
    }
    return new Promise<void>((resolve) => this.#queue.push(resolve));
  }

  #leave(): void {
    const next = this.#queue.shift();
    if (next !== undefined) next();
    else this.#busy = false;
  }

  async #serialized<T>(fn: () => Promise<T> | T): Promise<T> {
    const wait = this.#enter();
    if (wait !== undefined) await wait;
    try {
      return await fn();
    } finally {
      this.#leave();
    }
  }

  // ---------------------------------------------------------------------------------------------------
  // state checks

  /** EBADF unless open; notices a teardown the authority applied to this stream endpoint. */
  ensureOpen(op: string): void {
    if (this.state === 'open') {
      const own = this.reader?.state ?? this.writer?.state;
      if (own !== ENDPOINT.TORN_DOWN) return;
      this.#dropStreamLocally(ENDPOINT.TORN_DOWN);
      this.state = 'torn-down';
    }
    const by = this.state === 'torn-down' ? this.#endedBy : undefined;
    if (by !== undefined) throw dpError(by.code, op, 'the session ended after a failure', { ...(by.reason === undefined ? {} : { reason: by.reason }), path: this.path, cause: by });
    throw ebadf(op, this.state === 'torn-down' ? 'session-closed' : 'closed', this.path);
  }

  #canRead(op: string): void {
    if (this.access === 'write') throw ebadf(op, 'not-readable', this.path);
  }

  #canWrite(op: string): void {
    if (this.access === 'read') throw ebadf(op, 'not-writable', this.path);
  }

  // ---------------------------------------------------------------------------------------------------
  // read / write

  async read(dst: Uint8Array, o?: IoOptions): Promise<number> {
    const op = 'descriptor.read';
    this.ensureOpen(op);
    checkBytes(dst, op);
    this.#canRead(op);
    if (dst.length === 0) return 0;
    return this.#serialized(() => this.#readCore(dst, 0, dst.length, o?.signal, op));
  }

  async write(src: Uint8Array, o?: IoOptions): Promise<number> {
    const op = 'descriptor.write';
    this.ensureOpen(op);
    checkBytes(src, op);
    this.#canWrite(op);
    if (src.length === 0) return 0;
    return this.#serialized(() => this.#writeCore(src, 0, src.length, o?.signal, op));
  }

  readSync(dst: Uint8Array): number {
    const op = 'descriptor.readSync';
    this.ensureOpen(op);
    checkBytes(dst, op);
    this.#canRead(op);
    this.#syncAllowed(op);
    if (dst.length === 0) return 0;
    this.#busy = true;
    try {
      if (this.reader === undefined) return this.#readBlobSync(dst, 0, dst.length);
      const r = this.reader;
      for (;;) {
        const seq = r.dataSeq();
        const n = r.tryRead(dst, 0, dst.length);
        if (n > 0 || r.eof) return n;
        this.ensureOpen(op);
        Atomics.wait(r.header, RING_WORD.DATA_SEQ, seq);
        this.ensureOpen(op);
      }
    } finally {
      this.#busy = false;
    }
  }

  writeSync(src: Uint8Array): number {
    const op = 'descriptor.writeSync';
    this.ensureOpen(op);
    checkBytes(src, op);
    this.#canWrite(op);
    this.#syncAllowed(op);
    if (src.length === 0) return 0;
    this.#busy = true;
    try {
      if (this.writer === undefined) return this.#writeBlobSync(src, 0, src.length, op);
      const w = this.writer;
      for (;;) {
        const seq = w.spaceSeq();
        const n = w.tryWrite(src, 0, src.length);
        if (n > 0) return n;
        this.ensureOpen(op);
        Atomics.wait(w.header, RING_WORD.SPACE_SEQ, seq);
        this.ensureOpen(op);
      }
    } finally {
      this.#busy = false;
    }
  }

  #syncAllowed(op: string): void {
    if (!inDedicatedWorker()) throw dpError('ENOTSUP', op, 'synchronous I/O needs a dedicated worker', { reason: 'not-in-worker', path: this.path });
    if (this.io !== undefined && !this.io.sync) throw dpError('ENOTSUP', op, 'this blob backend has no synchronous access', { reason: 'not-in-worker', path: this.path });
    if (this.#busy) throw dpError('EBUSY', op, 'an asynchronous operation is in flight on this descriptor', { reason: 'operation-in-flight', path: this.path });
  }

  #readBlobSync(dst: Uint8Array, off: number, len: number): number {
    const remaining = this.length - this.offset;
    if (remaining <= 0) return 0;
    const got = this.io!.readSync(dst, off, Math.min(len, remaining), this.offset);
    this.offset += got;
    return got;
  }

  #writeBlobSync(src: Uint8Array, off: number, len: number, op: string): number {
    if (this.offset + len > this.length) throw dpError('ENOTSUP', op, 'write would grow the blob past its allocation', { reason: 'growth', path: this.path });
    const allowed = this.link.takeQuota(len, op, false);
    const put = this.io!.writeSync(src, off, allowed, this.offset);
    this.offset += put;
    return put;
  }

  async #readCore(dst: Uint8Array, off: number, len: number, signal: AbortSignal | undefined, op: string): Promise<number> {
    this.ensureOpen(op);
    if (this.reader === undefined) {
      const remaining = this.length - this.offset;
      if (remaining <= 0) return 0;
      const io = this.io!;
      const n = Math.min(len, remaining);
      const got = io.sync ? io.readSync(dst, off, n, this.offset) : await io.read(dst, off, n, this.offset);
      this.offset += got;
      return got;
    }
    const r = this.reader;
    for (;;) {
      const seq = r.dataSeq();
      const n = r.tryRead(dst, off, len);
      if (n > 0 || r.eof) return n;
      this.ensureOpen(op);
      await this.#wait(r.header, RING_WORD.DATA_SEQ, seq, signal, op);
      this.ensureOpen(op);
    }
  }

  async #writeCore(src: Uint8Array, off: number, len: number, signal: AbortSignal | undefined, op: string): Promise<number> {
    this.ensureOpen(op);
    if (this.writer === undefined) {
      if (this.offset + len > this.length) throw dpError('ENOTSUP', op, 'write would grow the blob past its allocation', { reason: 'growth', path: this.path });
      const allowed = this.link.takeQuota(len, op, false);
      const io = this.io!;
      const put = io.sync ? io.writeSync(src, off, allowed, this.offset) : await io.write(src, off, allowed, this.offset);
      this.offset += put;
      return put;
    }
    const w = this.writer;
    for (;;) {
      const seq = w.spaceSeq();
      const n = w.tryWrite(src, off, len);
      if (n > 0) return n;
      this.ensureOpen(op);
      await this.#wait(w.header, RING_WORD.SPACE_SEQ, seq, signal, op);
      this.ensureOpen(op);
    }
  }

  /** Waits while h[word] === seq, or until the signal aborts (then ECANCELED, nothing transferred: IO9). */
  async #wait(h: Int32Array, word: number, seq: number, signal: AbortSignal | undefined, op: string): Promise<void> {
    if (signal?.aborted) throw dpError('ECANCELED', op, 'cancelled', { reason: 'aborted', path: this.path });
    const p = waitWordAsync(h, word, seq);
    if (p === undefined) return;
    if (signal === undefined) {
      await p;
      return;
    }
    await new Promise<void>((resolve, reject) => {
      const onAbort = (): void => reject(dpError('ECANCELED', op, 'cancelled', { reason: 'aborted', path: this.path }));
      signal.addEventListener('abort', onAbort, { once: true });
      void p.then(() => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      });
    });
  }

  async flush(o?: IoOptions): Promise<void> {
    const op = 'descriptor.flush';
    this.ensureOpen(op);
    this.#canWrite(op);
    const w = this.writer;
    if (w === undefined) return;
    await this.#serialized(async () => {
      for (;;) {
        const seq = w.spaceSeq();
        w.checkPeer(op);
        if (w.drained()) return;
        this.ensureOpen(op);
        await this.#wait(w.header, RING_WORD.SPACE_SEQ, seq, o?.signal, op);
      }
    });
  }

  // ---------------------------------------------------------------------------------------------------
  // region I/O (seed 004 §8.1; M9, M10)

  #bounceOf(n: number): Uint8Array {
    if (this.#bounce === undefined || this.#bounce.length < n) this.#bounce = new Uint8Array(n);
    return this.#bounce.length === n ? this.#bounce : this.#bounce.subarray(0, n);
  }

  async readInto(region: MemoryRegion, o?: RegionIoOptions): Promise<number> {
    const op = 'descriptor.readInto';
    this.ensureOpen(op);
    const { offset, length } = regionSpan(region, o, op);
    if (!region.writable) throw dpError('EACCES', op, 'the region is not writable', { reason: 'region-not-writable', path: this.path });
    this.#canRead(op);
    const route = o?.route ?? 'any';
    if (region.kind === 'device' && route === 'direct' && !region.directRoutes.includes('host')) {
      throw dpError('ENOTSUP', op, 'no direct route into this device region', { reason: 'no-direct-route', path: this.path });
    }
    if (length === 0) return 0;
    return this.#serialized(async () => {
      if (region.kind === 'host' && route !== 'staged') {
        const n = await this.#readCore(region.bytes, offset, length, o?.signal, op);
        this.routes.direct++;
        return n;
      }
      const bounce = this.#bounceOf(length);
      const n = await this.#readCore(bounce, 0, length, o?.signal, op);
      if (n > 0) {
        if (region.kind === 'host') region.bytes.set(bounce.subarray(0, n), offset);
        else {
          try {
            await region.upload(bounce.subarray(0, n), offset);
          } catch (err) {
            // No byte reached the region: a blob gives them back to its offset (IO8); a stream cannot.
            if (this.reader === undefined) this.offset -= n;
            throw err instanceof TenonError ? err : dpError('EIO', op, 'device upload failed', { reason: 'device-upload', path: this.path, cause: err });
          }
        }
      }
      this.routes.staged++;
      return n;
    });
  }

  async writeFrom(region: MemoryRegion, o?: RegionIoOptions): Promise<number> {
    const op = 'descriptor.writeFrom';
    this.ensureOpen(op);
    const { offset, length } = regionSpan(region, o, op);
    if (!region.readable) throw dpError('EACCES', op, 'the region is not readable', { reason: 'region-not-readable', path: this.path });
    this.#canWrite(op);
    const route = o?.route ?? 'any';
    if (region.kind === 'device' && route === 'direct' && !region.directRoutes.includes('host')) {
      throw dpError('ENOTSUP', op, 'no direct route from this device region', { reason: 'no-direct-route', path: this.path });
    }
    if (length === 0) return 0;
    return this.#serialized(async () => {
      if (region.kind === 'host' && route !== 'staged') {
        const n = await this.#writeCore(region.bytes, offset, length, o?.signal, op);
        this.routes.direct++;
        return n;
      }
      const bounce = this.#bounceOf(length);
      if (region.kind === 'host') bounce.set(region.bytes.subarray(offset, offset + length));
      else await region.download(bounce, offset);
      const n = await this.#writeCore(bounce, 0, length, o?.signal, op);
      this.routes.staged++;
      return n;
    });
  }

  // ---------------------------------------------------------------------------------------------------
  // mappings (M1-M12)

  async map(req: MapRequest): Promise<Mapping> {
    const op = 'descriptor.map';
    this.ensureOpen(op);
    if (typeof req !== 'object' || req === null) throw dpError('EINVAL', op, 'missing map request', { reason: 'bad-request', path: this.path });
    if (this.kind === 'stream' || !this.capabilities.has('MAP_HOST')) throw dpError('ENODEV', op, 'this object cannot be mapped', { reason: 'not-mappable', path: this.path });
    if (req.protection !== 'read' && req.protection !== 'read-write') throw dpError('EINVAL', op, 'unknown protection', { reason: 'bad-protection', path: this.path });
    if ((req.sharing ?? 'shared') !== 'shared') throw dpError('ENOTSUP', op, 'only shared mappings are supported', { reason: 'sharing', path: this.path });
    if ((req.target ?? 'host') !== 'host') throw dpError('ENOTSUP', op, 'only host mappings are supported', { reason: 'target', path: this.path });
    const offset = req.offset ?? 0;
    const length = req.length ?? this.length - offset;
    if (!Number.isSafeInteger(offset) || !Number.isSafeInteger(length) || offset < 0 || length <= 0 || offset + length > this.length) {
      throw dpError('EINVAL', op, 'mapping range lies outside the blob', { reason: 'map-range', path: this.path });
    }
    const writable = req.protection === 'read-write';
    if (writable) {
      if (this.access === 'read' || !this.capabilities.has('WRITE')) throw dpError('EACCES', op, 'protection exceeds the descriptor rights', { reason: 'protection', path: this.path });
      if (this.writableMappings > 0) throw dpError('EBUSY', op, 'a writable mapping is already live', { reason: 'writable-mapping-live', path: this.path });
    } else if (this.access === 'write') throw dpError('EACCES', op, 'protection exceeds the descriptor rights', { reason: 'protection', path: this.path });
    const m = new MappingImpl(this, offset, length, req.protection);
    this.mappings.add(m);
    if (writable) this.writableMappings++;
    return m;
  }

  /** Reads a range for a mapping without touching the offset. */
  async readRange(at: number, length: number): Promise<Uint8Array> {
    const buf = new Uint8Array(length);
    const n = await this.io!.read(buf, 0, length, at);
    if (n !== length) throw dpError('EIO', 'mapping.export', 'short read of the mapped range', { reason: 'short-read', path: this.path });
    return buf;
  }

  async writeRange(at: number, bytes: Uint8Array): Promise<void> {
    this.link.takeQuota(bytes.length, 'mapping.sync', true);
    await this.io!.write(bytes, 0, bytes.length, at);
  }

  /** A mapping went away: may complete a deferred publication (C2) or release a reader's grant (O3). */
  async mappingClosed(m: MappingImpl): Promise<void> {
    this.mappings.delete(m);
    if (m.protection === 'read-write') this.writableMappings--;
    if (this.state !== 'closed' || this.finished) return;
    if (this.staged) {
      if (this.closeIntent && this.writableMappings === 0) await this.#publish();
    } else if (this.mappings.size === 0) await this.#finishBlob('close');
  }

  // ---------------------------------------------------------------------------------------------------
  // terminal steps (O6, O7, C1-C6)

  async close(): Promise<void> {
    const op = 'descriptor.close';
    this.ensureOpen(op);
    this.state = 'closed';
    if (this.ring !== undefined) wakeRing(this.ring);
    await this.#serialized(async () => {
      if (this.writer !== undefined) {
        this.writer.finish('eof');
        await this.#detachStream('close');
      } else if (this.reader !== undefined) {
        readerFinish(this.ring!, 'close');
        await this.#detachStream('close');
      } else if (this.staged) {
        if (this.writableMappings > 0) this.closeIntent = true;
        else await this.#publish();
      } else if (this.mappings.size === 0) await this.#finishBlob('close');
    });
  }

  async abort(): Promise<void> {
    const op = 'descriptor.abort';
    this.ensureOpen(op);
    this.state = 'aborted';
    if (this.ring !== undefined) wakeRing(this.ring);
    await this.#serialized(async () => {
      if (this.writer !== undefined) {
        this.writer.finish('fault');
        await this.#detachStream('abort');
      } else if (this.reader !== undefined) {
        readerFinish(this.ring!, 'abort');
        await this.#detachStream('abort');
      } else {
        this.mappings.clear();
        this.writableMappings = 0;
        await this.#finishBlob('abort');
      }
    });
  }

  /**
   * Session teardown, applied locally: no messages (the authority tears down its side itself). `fault`
   * is the failure that ended the session, if one did; later calls report it instead of EBADF.
   */
  async terminate(fault?: TenonError): Promise<void> {
    if (this.finished) return;
    if (this.state === 'open') {
      this.state = 'torn-down';
      this.#endedBy = fault;
    }
    this.finished = true;
    if (this.ring !== undefined) this.#dropStreamLocally(ENDPOINT.TORN_DOWN);
    this.mappings.clear();
    this.writableMappings = 0;
    await this.io?.close();
  }

  #dropStreamLocally(to: (typeof ENDPOINT)[keyof typeof ENDPOINT]): void {
    settleEndpoint(this.ring!, this.reader !== undefined ? 'reader' : 'writer', to);
    this.releaseLock?.();
    this.releaseLock = undefined;
    this.finished = true;
    this.link.forget(this);
  }

  async #detachStream(how: 'close' | 'abort'): Promise<void> {
    this.releaseLock?.();
    this.releaseLock = undefined;
    this.finished = true;
    this.link.forget(this);
    if (this.link.running) await this.link.call((id) => ({ t: 'release', id, token: this.token, how }));
  }

  async #finishBlob(how: 'close' | 'abort'): Promise<void> {
    if (this.finished) return;
    this.finished = true;
    await this.io!.close();
    this.link.forget(this);
    if (this.link.running) await this.link.call((id) => ({ t: 'release', id, token: this.token, how }));
  }

  /** Clean staged close: seal the bytes, then ask the authority to commit the binding (B7, B8, C2). */
  async #publish(): Promise<void> {
    if (this.finished) return;
    for (const m of this.mappings) await m.materialize();
    let digest: string | undefined;
    try {
      digest = await this.io!.seal(this.declaredDigest !== undefined);
    } catch (err) {
      await this.#finishBlob('abort');
      throw err;
    }
    this.finished = true;
    await this.io!.close();
    this.link.forget(this);
    if (!this.link.running) throw dpError('EIO', 'descriptor.close', 'the authority is gone; nothing was published', { reason: 'authority-gone', path: this.path });
    const v = await this.link.call((id) => ({ t: 'publish', id, token: this.token, ...(digest === undefined ? {} : { digest }) }));
    if (v !== undefined && 'revision' in v) this.revision = v.revision;
  }

  info(): DescriptorInfo {
    const base = { state: this.state, kind: this.kind, access: this.access, mappings: this.mappings.size, routes: { ...this.routes } };
    if (this.reader !== undefined) return { ...base, queuedBytes: this.reader.queuedBytes(), pinnedBytes: this.reader.pinnedBytes, eof: this.reader.eof };
    if (this.writer !== undefined) return { ...base, queuedBytes: this.writer.queuedBytes(), writableBytes: this.writer.writableBytes() };
    return { ...base, offset: this.offset, length: this.length, ...(this.revision === undefined ? {} : { revision: this.revision }) };
  }
}

class MappingImpl implements Mapping {
  readonly offset: number;
  readonly length: number;
  readonly protection: Protection;
  readonly route = 'staged' as const;
  readonly #core: Core;
  #bytes: Uint8Array | undefined;
  #exports = 0;
  #closed = false;

  constructor(core: Core, offset: number, length: number, protection: Protection) {
    this.#core = core;
    this.offset = offset;
    this.length = length;
    this.protection = protection;
  }

  #check(op: string): void {
    if (this.#closed) throw dpError('EBADF', op, 'mapping is closed', { reason: 'closed', path: this.#core.path });
    const s = this.#core.state;
    if (s === 'aborted' || s === 'torn-down' || !this.#core.mappings.has(this)) {
      throw dpError('EBADF', op, 'the mapped description was aborted', { reason: 'descriptor-aborted', path: this.#core.path });
    }
  }

  /** Fetches the mapped range on first use (the backing file stays referenced until then: M5, M8). */
  async materialize(): Promise<Uint8Array> {
    if (this.#bytes === undefined) this.#bytes = await this.#core.readRange(this.offset, this.length);
    return this.#bytes;
  }

  async export(options?: { readonly writable?: boolean }): Promise<MappedBuffer> {
    const op = 'mapping.export';
    this.#check(op);
    if (options?.writable === true && this.protection !== 'read-write') {
      throw dpError('EACCES', op, 'a read-only mapping cannot export writable bytes', { reason: 'read-only-mapping', path: this.#core.path });
    }
    const bytes = await this.materialize();
    this.#check(op);
    this.#exports++;
    let released = false;
    const release = (): void => {
      if (released) throw dpError('EBADF', 'mapping.release', 'export already released', { reason: 'released' });
      released = true;
      this.#exports--;
    };
    return { bytes, release, [Symbol.dispose]: () => (released ? undefined : release()) };
  }

  async sync(): Promise<void> {
    const op = 'mapping.sync';
    this.#check(op);
    if (this.protection !== 'read-write' || this.#bytes === undefined) return;
    await this.#core.writeRange(this.offset, this.#bytes);
  }

  async close(): Promise<void> {
    const op = 'mapping.close';
    this.#check(op);
    if (this.#exports > 0) throw dpError('EBUSY', op, 'exports of this mapping are still live', { reason: 'exports-live', path: this.#core.path });
    if (this.protection === 'read-write') await this.sync();
    this.#closed = true;
    await this.#core.mappingClosed(this);
  }
}

const dropped = new FinalizationRegistry<Core>((core) => {
  if (core.state !== 'open' || core.finished) return;
  recordLeak();
  core.abort().catch(noop);
});

class DescriptorImpl implements Descriptor {
  readonly #c: Core;
  #readable: ReadableStream<Uint8Array> | undefined;
  #writable: WritableStream<Uint8Array> | undefined;

  constructor(core: Core) {
    this.#c = core;
    dropped.register(this, core, core);
  }

  get kind(): ObjectKind {
    return this.#c.kind;
  }
  get access(): AccessMode {
    return this.#c.access;
  }
  get path(): string {
    return this.#c.path;
  }
  get capabilities(): ReadonlySet<Capability> {
    return this.#c.capabilities;
  }
  read(dst: Uint8Array, options?: IoOptions): Promise<number> {
    return this.#c.read(dst, options);
  }
  readInto(region: MemoryRegion, options?: RegionIoOptions): Promise<number> {
    return this.#c.readInto(region, options);
  }
  write(src: Uint8Array, options?: IoOptions): Promise<number> {
    return this.#c.write(src, options);
  }
  writeFrom(region: MemoryRegion, options?: RegionIoOptions): Promise<number> {
    return this.#c.writeFrom(region, options);
  }
  readSync(dst: Uint8Array): number {
    return this.#c.readSync(dst);
  }
  writeSync(src: Uint8Array): number {
    return this.#c.writeSync(src);
  }
  flush(options?: IoOptions): Promise<void> {
    return this.#c.flush(options);
  }
  map(request: MapRequest): Promise<Mapping> {
    return this.#c.map(request);
  }
  close(): Promise<void> {
    return this.#c.close().finally(() => dropped.unregister(this.#c));
  }
  abort(): Promise<void> {
    return this.#c.abort().finally(() => dropped.unregister(this.#c));
  }
  info(): DescriptorInfo {
    return this.#c.info();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    for (;;) {
      const chunk = new Uint8Array(STREAM_CHUNK);
      const n = await this.read(chunk);
      if (n === 0) return;
      yield chunk.subarray(0, n);
    }
  }

  get readable(): ReadableStream<Uint8Array> {
    if (this.#readable !== undefined) return this.#readable;
    const d = this;
    this.#readable = new ReadableStream({
      type: 'bytes',
      autoAllocateChunkSize: STREAM_CHUNK,
      async pull(controller) {
        const req = controller.byobRequest!;
        const v = req.view!;
        const n = await d.read(new Uint8Array(v.buffer, v.byteOffset, v.byteLength));
        if (n === 0) {
          await d.close();
          controller.close();
          req.respond(0);
        } else req.respond(n);
      },
      async cancel() {
        if (d.info().state === 'open') await d.abort();
      },
    }) as ReadableStream<Uint8Array>;
    return this.#readable;
  }

  get writable(): WritableStream<Uint8Array> {
    if (this.#writable !== undefined) return this.#writable;
    const d = this;
    this.#writable = new WritableStream<Uint8Array>({
      async write(chunk) {
        for (let done = 0; done < chunk.length; ) done += await d.write(done === 0 ? chunk : chunk.subarray(done));
      },
      async close() {
        await d.close();
      },
      async abort() {
        if (d.info().state === 'open') await d.abort();
      },
    });
    return this.#writable;
  }
}

export function newDescriptor(core: Core): Descriptor {
  return new DescriptorImpl(core);
}

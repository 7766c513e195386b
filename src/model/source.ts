// Range sources: the one interface model readers (GGUF) read through, so that a model file is never one
// ArrayBuffer. A source has a fixed size and answers `read(offset, length)` with exactly those bytes.
//
// Contract. `read` resolves to a Uint8Array of exactly `length` bytes or rejects with a TenonError: EINVAL
// `range` when [offset, offset + length) is not inside [0, size) (readers check before asking), EIO
// `short-read` when the underlying object delivered fewer bytes than it claimed to hold (the file changed
// or shrank under us), EIO `read-failed` wrapping a platform error. The bytes returned belong to the caller
// except for `bytesSource`, whose reads are zero-copy views of the caller's own array (it must not be
// changed while the reader works). Sources hold no locks and own nothing they did not create: the Blob,
// data-plane descriptor or file handle stays the caller's to close. Adapters:
// - bytesSource: a Uint8Array already in memory;
// - blobSource: a Blob or File (slice + arrayBuffer: only the requested range is read);
// - descriptorSource: a data-plane blob descriptor opened for read (a read-only host mapping per range);
// - fileHandleSource: a Node `fs.promises.FileHandle`-like object passed in by the caller (this module
//   never imports node:fs, because browser bundles import src/).
// countingSource wraps any source and counts reads and bytes (diagnostics, and tests proving that a header
// parse never reads tensor data).
// Fault seam: descriptorSource and fileHandleSource carry `faults.failReadAt(offset)`: the next read whose
// range covers that byte fails in the adapter's own read path, with the error a failing platform read
// gives (EIO `read-failed`, the range named), instead of asking the platform. Fires once. Thread: any; a source may be read concurrently.
import { TenonError } from '../errors.js';
import type { Descriptor } from '../dataplane/index.js';

export interface ByteSource {
  /** Total bytes in the object. */
  readonly size: number;
  /** A label for errors and reports (file name, path). */
  readonly name?: string;
  /** Exactly `length` bytes starting at `offset`. */
  read(offset: number, length: number): Promise<Uint8Array>;
}

const OP = 'source.read';

/** The fault seam of a range source (fires once). */
export interface SourceFaults {
  /** The next read whose range covers byte `offset` fails as a platform read error would (EIO read-failed). */
  failReadAt(offset: number): void;
}

/** A source with a fault seam (descriptorSource, fileHandleSource). */
export interface FaultableSource extends ByteSource {
  readonly faults: SourceFaults;
}

/** The seam's state: the armed offset, checked (and disarmed) by the adapter before each platform read. */
function readFaults(): { readonly faults: SourceFaults; fires(offset: number, length: number): boolean } {
  let armed: number | undefined;
  return {
    faults: {
      failReadAt(offset: number): void {
        armed = offset;
      },
    },
    fires(offset: number, length: number): boolean {
      if (armed === undefined || armed < offset || armed >= offset + length) return false;
      armed = undefined;
      return true;
    },
  };
}

/** What the seam hands the adapter's error path in place of the platform's error. */
const INJECTED_READ_FAULT = 'injected read fault (source faults seam)';

function checkRange(source: { readonly size: number; readonly name?: string }, offset: number, length: number): void {
  if (!Number.isSafeInteger(offset) || !Number.isSafeInteger(length) || offset < 0 || length < 0 || offset + length > source.size) {
    throw new TenonError('EINVAL', `range [${offset}, +${length}) lies outside the ${source.size}-byte source`, {
      op: OP,
      reason: 'range',
      ids: source.name === undefined ? { size: source.size } : { source: source.name, size: source.size },
    });
  }
}

function checkSize(size: number, op: string): void {
  if (!Number.isSafeInteger(size) || size < 0) throw new TenonError('EINVAL', `source size ${size} is not a safe non-negative integer`, { op, reason: 'bad-size' });
}

function ioError(source: ByteSource, offset: number, length: number, cause: unknown): TenonError {
  if (cause instanceof TenonError) return cause;
  return new TenonError('EIO', `reading [${offset}, +${length}) failed`, {
    op: OP,
    reason: 'read-failed',
    ...(source.name === undefined ? {} : { ids: { source: source.name } }),
    range: { start: offset, end: offset + length },
    cause,
  });
}

function shortRead(source: ByteSource, offset: number, length: number, got: number): TenonError {
  return new TenonError('EIO', `asked for ${length} bytes at ${offset}, got ${got}: the object changed under the reader`, {
    op: OP,
    reason: 'short-read',
    ...(source.name === undefined ? {} : { ids: { source: source.name } }),
    range: { start: offset, end: offset + length },
  });
}

/** A source over bytes already in memory; reads are zero-copy subarrays of `bytes`. */
export function bytesSource(bytes: Uint8Array, name?: string): ByteSource {
  if (!(bytes instanceof Uint8Array)) throw new TenonError('EINVAL', 'expected a Uint8Array', { op: 'bytesSource', reason: 'not-bytes' });
  const source: ByteSource = {
    size: bytes.length,
    ...(name === undefined ? {} : { name }),
    read(offset, length) {
      try {
        checkRange(source, offset, length);
      } catch (err) {
        return Promise.reject(err);
      }
      return Promise.resolve(bytes.subarray(offset, offset + length));
    },
  };
  return source;
}

/** A source over a Blob or File: each read slices the requested range and reads only that. */
export function blobSource(blob: Blob, name?: string): ByteSource {
  if (typeof Blob === 'undefined' || !(blob instanceof Blob)) throw new TenonError('EINVAL', 'expected a Blob or File', { op: 'blobSource', reason: 'not-blob' });
  const label = name ?? (blob as Blob & { name?: unknown }).name;
  const source: ByteSource = {
    size: blob.size,
    ...(typeof label === 'string' ? { name: label } : {}),
    async read(offset, length) {
      checkRange(source, offset, length);
      let buffer: ArrayBuffer;
      try {
        buffer = await blob.slice(offset, offset + length).arrayBuffer();
      } catch (err) {
        throw ioError(source, offset, length, err);
      }
      if (buffer.byteLength !== length) throw shortRead(source, offset, length, buffer.byteLength);
      return new Uint8Array(buffer);
    },
  };
  return source;
}

/**
 * A source over a data-plane blob descriptor opened for read. The size is the length of the revision the
 * descriptor holds (N3: it never changes under us). Each read maps the range read-only, exports it,
 * copies nothing further, and closes the mapping before resolving; the descriptor stays open (the caller
 * closes it).
 */
export function descriptorSource(descriptor: Descriptor): FaultableSource {
  const op = 'descriptorSource';
  if (typeof descriptor !== 'object' || descriptor === null || typeof descriptor.info !== 'function') {
    throw new TenonError('EINVAL', 'expected a data-plane descriptor', { op, reason: 'not-descriptor' });
  }
  const info = descriptor.info();
  if (info.kind !== 'blob' || info.length === undefined) {
    throw new TenonError('EINVAL', 'only blob descriptors have a fixed size to read ranges from', { op, reason: 'not-blob', path: descriptor.path });
  }
  if (descriptor.access === 'write') throw new TenonError('EBADF', 'the descriptor was not opened for reading', { op, reason: 'not-readable', path: descriptor.path });
  checkSize(info.length, op);
  const seam = readFaults();
  const source: FaultableSource = {
    size: info.length,
    name: descriptor.path,
    faults: seam.faults,
    async read(offset, length) {
      checkRange(source, offset, length);
      // The data plane refuses empty mappings; an empty range needs no I/O at all.
      if (length === 0) return new Uint8Array(0);
      if (seam.fires(offset, length)) throw ioError(source, offset, length, new Error(INJECTED_READ_FAULT));
      const mapping = await descriptor.map({ protection: 'read', offset, length });
      try {
        // The exported array is the mapping's private staging copy of the range (read-only mappings never
        // write back), so it stays valid after release and close: the caller takes it over.
        const exported = await mapping.export();
        const bytes = exported.bytes;
        exported.release();
        if (bytes.length !== length) throw shortRead(source, offset, length, bytes.length);
        return bytes;
      } finally {
        await mapping.close();
      }
    },
  };
  return source;
}

/** What fileHandleSource needs of a Node `fs.promises.FileHandle` (structural, so no node:fs import). */
export interface FileHandleLike {
  read(buffer: Uint8Array, offset: number, length: number, position: number): Promise<{ readonly bytesRead: number }>;
  stat(): Promise<{ readonly size: number | bigint }>;
}

export interface FileHandleSourceOptions {
  /** The file's size; when omitted, `handle.stat()` is asked once. */
  readonly size?: number;
  readonly name?: string;
}

/** A source over an open Node file handle (the caller opened it and closes it). */
export async function fileHandleSource(handle: FileHandleLike, options: FileHandleSourceOptions = {}): Promise<FaultableSource> {
  const op = 'fileHandleSource';
  if (typeof handle !== 'object' || handle === null || typeof handle.read !== 'function') {
    throw new TenonError('EINVAL', 'expected a file handle with read(buffer, offset, length, position)', { op, reason: 'not-file-handle' });
  }
  let size = options.size;
  if (size === undefined) {
    if (typeof handle.stat !== 'function') throw new TenonError('EINVAL', 'the handle has no stat(); pass options.size', { op, reason: 'not-file-handle' });
    const stat = await handle.stat();
    size = typeof stat.size === 'bigint' ? (stat.size <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(stat.size) : Number.NaN) : stat.size;
  }
  checkSize(size, op);
  const seam = readFaults();
  const source: FaultableSource = {
    size,
    ...(options.name === undefined ? {} : { name: options.name }),
    faults: seam.faults,
    async read(offset, length) {
      checkRange(source, offset, length);
      if (seam.fires(offset, length)) throw ioError(source, offset, length, new Error(INJECTED_READ_FAULT));
      const out = new Uint8Array(length);
      let done = 0;
      while (done < length) {
        let got: number;
        try {
          got = (await handle.read(out, done, length - done, offset + done)).bytesRead;
        } catch (err) {
          throw ioError(source, offset, length, err);
        }
        // End of file before `length` bytes: the file is shorter than the size we were given.
        if (got <= 0) throw shortRead(source, offset, length, done);
        done += got;
      }
      return out;
    },
  };
  return source;
}

/** Reads and bytes that went through a counting source. */
export interface ReadCounters {
  readonly reads: number;
  readonly bytes: number;
  /** The largest end offset any read reached. */
  readonly highWater: number;
}

export interface CountingSource extends ByteSource {
  readonly counters: ReadCounters;
}

/** Wraps `inner`, counting every read (requests that `inner` refuses are not counted). */
export function countingSource(inner: ByteSource): CountingSource {
  let reads = 0;
  let bytes = 0;
  let highWater = 0;
  return {
    size: inner.size,
    ...(inner.name === undefined ? {} : { name: inner.name }),
    get counters(): ReadCounters {
      return { reads, bytes, highWater };
    },
    async read(offset, length) {
      const out = await inner.read(offset, length);
      reads++;
      bytes += length;
      highWater = Math.max(highWater, offset + length);
      return out;
    },
  };
}

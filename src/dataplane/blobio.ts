// Blob byte access for one open description, in the context that opened it (DESIGN.md "Blobs on OPFS").
//
// Three backends, chosen at open and never changed:
//   SyncHandleIO   dedicated worker: a FileSystemSyncAccessHandle on the revision file ('read-only' mode,
//                  shareable by many readers) or on the staging file (exclusive read-write). Synchronous,
//                  no allocation per call (PF5): one options object is reused for every `at`.
//   FileReadIO     any other context, published revision: a File snapshot read with slice().arrayBuffer()
//                  (the async File API allocates one buffer per call; this path is the fallback).
//   MemoryStageIO  any other context, staged blob: the fixed-length staging lives in memory and is written
//                  to its OPFS file in one createWritable() at publication (so read-write and mappings
//                  behave exactly as in a worker).
// Offsets are absolute file positions; the descriptor owns the sequential offset (O4).
import { dpError, fromPlatform } from './errors.js';
import { fileHandle } from './opfs.js';

export interface BlobIO {
  /** True when readSync/writeSync work (dedicated worker). */
  readonly sync: boolean;
  readSync(dst: Uint8Array, dstOff: number, len: number, at: number): number;
  writeSync(src: Uint8Array, srcOff: number, len: number, at: number): number;
  read(dst: Uint8Array, dstOff: number, len: number, at: number): Promise<number>;
  write(src: Uint8Array, srcOff: number, len: number, at: number): Promise<number>;
  /** Staged only: makes every byte durable in the file; returns the SHA-256 (hex) when asked. */
  seal(wantDigest: boolean): Promise<string | undefined>;
  /** Releases the file handle (idempotent). */
  close(): Promise<void>;
}

const view = (a: Uint8Array, off: number, len: number): Uint8Array => (off === 0 && len === a.length ? a : a.subarray(off, off + len));

async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const d = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>));
  let hex = '';
  for (const b of d) hex += b.toString(16).padStart(2, '0');
  return hex;
}
export { sha256Hex };

interface SyncHandle {
  read(buffer: Uint8Array, options?: { at: number }): number;
  write(buffer: Uint8Array, options?: { at: number }): number;
  truncate(size: number): void;
  getSize(): number;
  flush(): void;
  close(): void;
}

class SyncHandleIO implements BlobIO {
  readonly sync = true;
  readonly #h: SyncHandle;
  readonly #length: number;
  /** Reused for every call so positioned I/O allocates nothing. */
  readonly #at = { at: 0 };
  #closed = false;

  constructor(h: SyncHandle, length: number) {
    this.#h = h;
    this.#length = length;
  }

  readSync(dst: Uint8Array, dstOff: number, len: number, at: number): number {
    this.#at.at = at;
    return this.#h.read(view(dst, dstOff, len), this.#at);
  }

  writeSync(src: Uint8Array, srcOff: number, len: number, at: number): number {
    this.#at.at = at;
    try {
      return this.#h.write(view(src, srcOff, len), this.#at);
    } catch (err) {
      throw fromPlatform(err, 'descriptor.write');
    }
  }

  async read(dst: Uint8Array, dstOff: number, len: number, at: number): Promise<number> {
    return this.readSync(dst, dstOff, len, at);
  }

  async write(src: Uint8Array, srcOff: number, len: number, at: number): Promise<number> {
    return this.writeSync(src, srcOff, len, at);
  }

  async seal(wantDigest: boolean): Promise<string | undefined> {
    try {
      this.#h.flush();
    } catch (err) {
      throw fromPlatform(err, 'descriptor.close');
    }
    if (!wantDigest) return undefined;
    const all = new Uint8Array(this.#length);
    this.#at.at = 0;
    this.#h.read(all, this.#at);
    return sha256Hex(all);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#h.close();
  }
}

class FileReadIO implements BlobIO {
  readonly sync = false;
  readonly #file: File;

  constructor(file: File) {
    this.#file = file;
  }

  readSync(): number {
    throw dpError('ENOTSUP', 'descriptor.readSync', 'synchronous blob reads need a dedicated worker', { reason: 'not-in-worker' });
  }

  writeSync(): number {
    throw dpError('EBADF', 'descriptor.writeSync', 'published revisions are read-only', { reason: 'not-writable' });
  }

  async read(dst: Uint8Array, dstOff: number, len: number, at: number): Promise<number> {
    let bytes: ArrayBuffer;
    try {
      bytes = await this.#file.slice(at, at + len).arrayBuffer();
    } catch (err) {
      throw fromPlatform(err, 'descriptor.read');
    }
    dst.set(new Uint8Array(bytes), dstOff);
    return bytes.byteLength;
  }

  async write(): Promise<number> {
    throw dpError('EBADF', 'descriptor.write', 'published revisions are read-only', { reason: 'not-writable' });
  }

  async seal(): Promise<string | undefined> {
    return undefined;
  }

  async close(): Promise<void> {}
}

class MemoryStageIO implements BlobIO {
  readonly sync = false;
  readonly #handle: FileSystemFileHandle;
  #bytes: Uint8Array | undefined;

  constructor(handle: FileSystemFileHandle, length: number) {
    this.#handle = handle;
    this.#bytes = new Uint8Array(length);
  }

  #live(op: string): Uint8Array {
    if (this.#bytes === undefined) throw dpError('EBADF', op, 'staging already released', { reason: 'closed' });
    return this.#bytes;
  }

  readSync(): number {
    throw dpError('ENOTSUP', 'descriptor.readSync', 'synchronous blob I/O needs a dedicated worker', { reason: 'not-in-worker' });
  }

  writeSync(): number {
    throw dpError('ENOTSUP', 'descriptor.writeSync', 'synchronous blob I/O needs a dedicated worker', { reason: 'not-in-worker' });
  }

  async read(dst: Uint8Array, dstOff: number, len: number, at: number): Promise<number> {
    const b = this.#live('descriptor.read');
    dst.set(b.subarray(at, at + len), dstOff);
    return len;
  }

  async write(src: Uint8Array, srcOff: number, len: number, at: number): Promise<number> {
    this.#live('descriptor.write').set(view(src, srcOff, len), at);
    return len;
  }

  async seal(wantDigest: boolean): Promise<string | undefined> {
    const b = this.#live('descriptor.close');
    try {
      const w = await this.#handle.createWritable({ keepExistingData: false });
      try {
        await w.write(b as Uint8Array<ArrayBuffer>);
        await w.close();
      } catch (err) {
        await w.abort().catch(() => undefined);
        throw err;
      }
    } catch (err) {
      throw fromPlatform(err, 'descriptor.close');
    }
    return wantDigest ? sha256Hex(b) : undefined;
  }

  async close(): Promise<void> {
    this.#bytes = undefined;
  }
}

/** Opens the backend for a grant. `staged` files are created here, in the opener's context. */
export async function openBlobIO(plane: string, file: string, length: number, staged: boolean, worker: boolean): Promise<BlobIO> {
  const op = 'dataplane.open';
  const handle = await fileHandle(plane, file, staged, op);
  try {
    if (worker) {
      const h = (await (handle as unknown as { createSyncAccessHandle(o?: { mode: string }): Promise<SyncHandle> }).createSyncAccessHandle(
        staged ? undefined : { mode: 'read-only' },
      )) as SyncHandle;
      try {
        if (staged) h.truncate(length);
        else if (h.getSize() !== length) throw dpError('EIO', op, 'revision file length does not match its binding', { reason: 'revision-corrupt' });
      } catch (err) {
        h.close();
        throw err;
      }
      return new SyncHandleIO(h, length);
    }
    if (staged) return new MemoryStageIO(handle, length);
    const f = await handle.getFile();
    if (f.size !== length) throw dpError('EIO', op, 'revision file length does not match its binding', { reason: 'revision-corrupt' });
    return new FileReadIO(f);
  } catch (err) {
    throw fromPlatform(err, op);
  }
}

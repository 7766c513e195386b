// Typed, path-first wrappers (seed 004 §13; R1-R5, P1, P2, P7). Each one is a few calls of the
// descriptor core: they keep no offset, EOF, close, publication or transport state of their own (R5),
// and learn kind and capabilities from the open grant (R1).
import { dpError } from './errors.js';
import type { Descriptor, Mapping } from './descriptor.js';
import type { Session } from './session.js';
import type { HostRegion, IoOptions, MapRequest } from './types.js';
import { STREAM_CHUNK } from './descriptor.js';

/** Reads until `dst` is full; EIO (reason 'unexpected-eof') when the object ends first. Returns dst.length. */
export async function readExact(d: Descriptor, dst: Uint8Array, options?: IoOptions): Promise<number> {
  let done = 0;
  while (done < dst.length) {
    const n = await d.read(done === 0 ? dst : dst.subarray(done), options);
    if (n === 0) throw dpError('EIO', 'readExact', `ended after ${done} of ${dst.length} bytes`, { reason: 'unexpected-eof', path: d.path });
    done += n;
  }
  return done;
}

/** Writes every byte of `src`, resubmitting after partial writes (R3). */
export async function writeAll(d: Descriptor, src: Uint8Array, options?: IoOptions): Promise<number> {
  let done = 0;
  while (done < src.length) done += await d.write(done === 0 ? src : src.subarray(done), options);
  return src.length;
}

/** Checks the granted kind; on a mismatch aborts what was opened and fails with ENXIO (R2). */
async function narrow(d: Descriptor, kind: 'blob' | 'stream', op: string): Promise<Descriptor> {
  if (d.kind === kind) return d;
  await d.abort();
  throw dpError('ENXIO', op, `expected a ${kind}`, { reason: 'wrong-kind', path: d.path });
}

/** Whole published blob at `path` (its selected revision), as one new buffer. */
export async function readBlob(session: Session, path: string, options?: IoOptions): Promise<Uint8Array> {
  const d = await narrow(await session.open(path, { access: 'read', kind: 'blob', ...(options?.signal ? { signal: options.signal } : {}) }), 'blob', 'readBlob');
  try {
    const length = d.info().length ?? 0;
    const out = new Uint8Array(length);
    if (length > 0) await readExact(d, out, options);
    await d.close();
    return out;
  } catch (err) {
    if (d.info().state === 'open') await d.abort();
    throw err;
  }
}

export interface BlobWriter extends AsyncDisposable {
  readonly descriptor: Descriptor;
  /** writeAll through the descriptor. */
  write(src: Uint8Array): Promise<void>;
  map(request: MapRequest): Promise<Mapping>;
  /** Clean close: publishes one revision and returns its number (or undefined while a writable mapping defers it). */
  seal(): Promise<number | undefined>;
  abort(): Promise<void>;
}

export interface WriteBlobOptions extends IoOptions {
  readonly digest?: string;
  readonly exclusive?: boolean;
  readonly opId?: string;
  /** Read-write staging (read back what was written, B5). */
  readonly readBack?: boolean;
}

/** Stages a fixed-length replacement (or creation) of the blob at `path`. Leaving scope unsealed aborts (P7). */
export async function writeBlob(session: Session, path: string, length: number, options: WriteBlobOptions = {}): Promise<BlobWriter> {
  const d = await narrow(
    await session.open(path, {
      access: options.readBack ? 'read-write' : 'write',
      create: true,
      truncate: true,
      kind: 'blob',
      ...(options.exclusive ? { exclusive: true } : {}),
      allocation: { length, ...(options.digest === undefined ? {} : { digest: options.digest }) },
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.opId === undefined ? {} : { opId: options.opId }),
    }),
    'blob',
    'writeBlob',
  );
  return {
    descriptor: d,
    write: async (src) => {
      await writeAll(d, src);
    },
    map: (request) => d.map(request),
    seal: async () => {
      await d.close();
      return d.info().revision;
    },
    abort: () => d.abort(),
    [Symbol.asyncDispose]: async () => {
      if (d.info().state === 'open') await d.abort();
    },
  };
}

export interface StreamReader extends AsyncIterable<Uint8Array>, AsyncDisposable {
  readonly descriptor: Descriptor;
  /** Next bytes (at most `max`), or null at clean EOF (P2). Chunk sizes are not specified. */
  read(max?: number, options?: IoOptions): Promise<Uint8Array | null>;
  readInto(dst: Uint8Array, options?: IoOptions): Promise<number>;
  close(): Promise<void>;
}

export interface StreamWriter extends AsyncDisposable {
  readonly descriptor: Descriptor;
  /** writeAll through the descriptor. */
  write(src: Uint8Array, options?: IoOptions): Promise<void>;
  /** Waits until the reader consumed every accepted byte. */
  flush(options?: IoOptions): Promise<void>;
  /** Clean close: EOF after every accepted byte (S5, C1). */
  close(): Promise<void>;
  abort(): Promise<void>;
}

export interface StreamOpenOptions extends IoOptions {
  /** Ring capacity used if this call creates the node. */
  readonly capacity?: number;
}

function reader(d: Descriptor): StreamReader {
  return {
    descriptor: d,
    read: async (max = STREAM_CHUNK, options) => {
      const buf = new Uint8Array(max);
      const n = await d.read(buf, options);
      return n === 0 ? null : buf.subarray(0, n);
    },
    readInto: (dst, options) => d.read(dst, options),
    close: () => d.close(),
    [Symbol.asyncIterator]: () => d[Symbol.asyncIterator](),
    [Symbol.asyncDispose]: async () => {
      if (d.info().state === 'open') await d.close();
    },
  };
}

function writer(d: Descriptor): StreamWriter {
  return {
    descriptor: d,
    write: async (src, options) => {
      await writeAll(d, src, options);
    },
    flush: (options) => d.flush(options),
    close: () => d.close(),
    abort: () => d.abort(),
    [Symbol.asyncDispose]: async () => {
      if (d.info().state === 'open') await d.abort();
    },
  };
}

const ensure = (session: Session, path: string, o?: StreamOpenOptions): Promise<boolean> =>
  session.ensureStream(path, o?.capacity === undefined ? {} : { capacity: o.capacity });

/** Ensures the stream node, then opens its read end (blocks until a writer comes). */
export async function readStream(session: Session, path: string, options?: StreamOpenOptions): Promise<StreamReader> {
  await ensure(session, path, options);
  const d = await session.open(path, { access: 'read', kind: 'stream', ...(options?.signal ? { signal: options.signal } : {}) });
  return reader(await narrow(d, 'stream', 'readStream'));
}

/** Ensures the stream node, then opens its write end (blocks until a reader comes). */
export async function writeStream(session: Session, path: string, options?: StreamOpenOptions): Promise<StreamWriter> {
  await ensure(session, path, options);
  const d = await session.open(path, { access: 'write', kind: 'stream', ...(options?.signal ? { signal: options.signal } : {}) });
  return writer(await narrow(d, 'stream', 'writeStream'));
}

/** Starts a fresh incarnation (old ends get ESTALE), then opens its write end. */
export async function writeStreamReplacing(session: Session, path: string, options?: IoOptions): Promise<StreamWriter> {
  await session.replaceStream(path);
  const d = await session.open(path, { access: 'write', kind: 'stream', ...(options?.signal ? { signal: options.signal } : {}) });
  return writer(await narrow(d, 'stream', 'writeStreamReplacing'));
}

/** Reads a stream to clean EOF, handing each chunk to `consumer`; returns the byte count. */
export async function collectStream(
  session: Session,
  path: string,
  consumer: (chunk: Uint8Array) => void | Promise<void>,
  options?: StreamOpenOptions,
): Promise<number> {
  const r = await readStream(session, path, options);
  let total = 0;
  try {
    for (;;) {
      const chunk = await r.read(STREAM_CHUNK, options);
      if (chunk === null) break;
      total += chunk.length;
      await consumer(chunk);
    }
    await r.close();
    return total;
  } catch (err) {
    if (r.descriptor.info().state === 'open') await r.descriptor.abort();
    throw err;
  }
}

/** A host memory region over caller bytes (for readInto / writeFrom). */
export function hostRegion(bytes: Uint8Array, rights: { readonly readable?: boolean; readonly writable?: boolean } = {}): HostRegion {
  if (!(bytes instanceof Uint8Array)) throw dpError('EINVAL', 'hostRegion', 'expected a Uint8Array', { reason: 'not-bytes' });
  return { kind: 'host', bytes, readable: rights.readable ?? true, writable: rights.writable ?? true };
}

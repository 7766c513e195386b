// Model sources: getting model and tokenizer files (a URL, or a file the user picked) into data-plane
// blobs once, and reading them back on every later visit without touching the network.
//
// Contract. cacheModelSource(store, source) returns the path of a published blob holding the source's
// bytes. If the blob for that source already exists it is reused as is (fromCache: true; no request is
// made). Otherwise the bytes are streamed into a staged blob and published by one clean close: an aborted
// or failed download, a short body or an HTTP error publishes nothing, so a later call starts over and
// never finds half a file. The blob's path is derived from the source (SHA-256 of its absolute URL, or of
// a picked file's name, size and modification time), so the same source always maps to the same blob.
// Progress is reported as bytes done of bytes expected (undefined when the server does not say).
// readModelSource reads a blob back whole, in chunks, with progress. Thread: any context holding a
// data-plane session (the page, or a worker). Errors are TenonErrors: ENOENT for HTTP 404, EIO for other
// HTTP failures and short bodies, ECANCELED when the signal aborts, and the data plane's own codes.
import { TenonError, isTenonError } from '../errors.js';
import { sha256Hex, writeBlob } from '../dataplane/index.js';
import type { Session as PlaneSession } from '../dataplane/index.js';

/** Where sources are cached unless the caller names another folder. */
export const MODEL_CACHE_DIRECTORY = '/models';
/** Bytes per read when a cached blob is read back (progress granularity). */
const READ_CHUNK = 4 << 20;
/** Hex digits of the source digest kept in the blob's name (96 bits: collisions are not a concern). */
const KEY_HEX = 24;

export type ModelSource = string | URL | Blob;

export interface ModelSourceProgress {
  readonly phase: 'download' | 'read';
  readonly loaded: number;
  /** Expected length; undefined while it is unknown (no Content-Length, or a compressed response). */
  readonly total: number | undefined;
}

export interface CacheModelSourceOptions {
  /** Folder of the cache (default `/models`). */
  readonly directory?: string;
  /** Download again even if the blob exists. */
  readonly refresh?: boolean;
  readonly signal?: AbortSignal;
  readonly onProgress?: (progress: ModelSourceProgress) => void;
  /** The fetch to use (default: globalThis.fetch). */
  readonly fetch?: typeof fetch;
}

export interface CachedModelSource {
  /** Data-plane path of the published blob. */
  readonly path: string;
  readonly length: number;
  /** True when the blob was already there and nothing was fetched or copied. */
  readonly fromCache: boolean;
  /** The source, as text (an absolute URL, or `file:<name>`). */
  readonly source: string;
}

function describe(source: ModelSource): { key: string; label: string; name: string } {
  if (typeof source === 'string' || source instanceof URL) {
    const base = typeof location === 'undefined' ? undefined : location.href;
    const url = new URL(source, base);
    const name = url.pathname.split('/').pop() ?? '';
    return { key: url.href, label: url.href, name };
  }
  const file = source as Blob & { name?: string; lastModified?: number };
  const name = file.name ?? 'blob';
  return { key: `file:${name}:${file.size}:${file.lastModified ?? 0}`, label: `file:${name}`, name };
}

/** The data-plane path cacheModelSource uses for `source` (the same source always gets the same path). */
export async function modelSourcePath(source: ModelSource, directory: string = MODEL_CACHE_DIRECTORY): Promise<string> {
  const { key, name } = describe(source);
  const digest = (await sha256Hex(new TextEncoder().encode(key))).slice(0, KEY_HEX);
  const safe = name.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 64);
  return `${directory.replace(/\/+$/, '')}/${digest}${safe === '' ? '' : `-${safe}`}`;
}

/** The cached blob for `source`, if one was published; makes no request. */
export async function findCachedModelSource(store: PlaneSession, source: ModelSource, options: { readonly directory?: string } = {}): Promise<CachedModelSource | undefined> {
  const path = await modelSourcePath(source, options.directory);
  try {
    const info = await store.stat(path);
    if (info.kind !== 'blob') return undefined;
    return { path, length: info.length, fromCache: true, source: describe(source).label };
  } catch (err) {
    if (isTenonError(err, 'ENOENT')) return undefined;
    throw err;
  }
}

/** Publishes the source's bytes as a blob (or reuses the one published earlier) and returns its path. */
export async function cacheModelSource(store: PlaneSession, source: ModelSource, options: CacheModelSourceOptions = {}): Promise<CachedModelSource> {
  const op = 'cacheModelSource';
  if (!options.refresh) {
    const cached = await findCachedModelSource(store, source, options);
    if (cached !== undefined) return cached;
  }
  const path = await modelSourcePath(source, options.directory);
  const label = describe(source).label;
  const { body, total } = await open(source, options, op);
  const report = (loaded: number): void => options.onProgress?.({ phase: 'download', loaded, total });
  report(0);
  const reader = body.getReader();
  const cancel = (): void => void reader.cancel().catch(() => undefined);
  options.signal?.addEventListener('abort', cancel, { once: true });
  try {
    if (total !== undefined) {
      // Known length: stream straight into a staged blob of exactly that length.
      const writer = await writeBlob(store, path, total, options.signal ? { signal: options.signal } : {});
      try {
        let loaded = 0;
        for (;;) {
          const { done, value } = await nextChunk(reader, options.signal, op);
          if (done) break;
          if (loaded + value.byteLength > total) throw new TenonError('EIO', `${label} is longer than announced`, { op, reason: 'long-body', path });
          await writer.write(value);
          loaded += value.byteLength;
          report(loaded);
        }
        if (loaded !== total) throw new TenonError('EIO', `${label} ended after ${loaded} of ${total} bytes`, { op, reason: 'short-body', path });
        await writer.seal();
      } catch (err) {
        if (writer.descriptor.info().state === 'open') await writer.abort().catch(() => undefined);
        throw err;
      }
      return { path, length: total, fromCache: false, source: label };
    }
    // Unknown length (no Content-Length, or a compressed body): gather, then publish exactly what came.
    const parts: Uint8Array[] = [];
    let loaded = 0;
    for (;;) {
      const { done, value } = await nextChunk(reader, options.signal, op);
      if (done) break;
      parts.push(value);
      loaded += value.byteLength;
      report(loaded);
    }
    const writer = await writeBlob(store, path, loaded, options.signal ? { signal: options.signal } : {});
    try {
      for (const part of parts) await writer.write(part);
      await writer.seal();
    } catch (err) {
      if (writer.descriptor.info().state === 'open') await writer.abort().catch(() => undefined);
      throw err;
    }
    return { path, length: loaded, fromCache: false, source: label };
  } finally {
    options.signal?.removeEventListener('abort', cancel);
  }
}

async function nextChunk(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  signal: AbortSignal | undefined,
  op: string,
): Promise<{ done: true; value?: undefined } | { done: false; value: Uint8Array }> {
  if (signal?.aborted) throw new TenonError('ECANCELED', 'aborted', { op, cause: signal.reason });
  try {
    const r = await reader.read();
    if (signal?.aborted) throw new TenonError('ECANCELED', 'aborted', { op, cause: signal.reason });
    return r.done ? { done: true } : { done: false, value: r.value };
  } catch (err) {
    if (isTenonError(err)) throw err;
    if (signal?.aborted) throw new TenonError('ECANCELED', 'aborted', { op, cause: signal.reason });
    throw new TenonError('EIO', `reading the source failed: ${String(err)}`, { op, reason: 'read-failed', cause: err });
  }
}

async function open(source: ModelSource, options: CacheModelSourceOptions, op: string): Promise<{ body: ReadableStream<Uint8Array>; total: number | undefined }> {
  if (!(typeof source === 'string' || source instanceof URL)) {
    const blob = source as Blob;
    return { body: blob.stream() as ReadableStream<Uint8Array>, total: blob.size };
  }
  const url = describe(source).label;
  const doFetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  let response: Response;
  try {
    response = await doFetch(url, options.signal ? { signal: options.signal } : {});
  } catch (err) {
    if (options.signal?.aborted) throw new TenonError('ECANCELED', 'aborted', { op, cause: options.signal.reason });
    throw new TenonError('EIO', `fetching ${url} failed: ${String(err)}`, { op, reason: 'fetch-failed', cause: err });
  }
  if (!response.ok || response.body === null) {
    throw new TenonError(response.status === 404 ? 'ENOENT' : 'EIO', `fetching ${url} gave HTTP ${response.status}`, {
      op,
      reason: `http-${response.status}`,
    });
  }
  // A compressed response's Content-Length counts compressed bytes, not what the body stream yields.
  const length = response.headers.get('content-length');
  const encoded = (response.headers.get('content-encoding') ?? 'identity') !== 'identity';
  const total = length !== null && !encoded && /^\d+$/.test(length) ? Number(length) : undefined;
  return { body: response.body, total };
}

/** Reads the whole blob at `path` into one new buffer, in chunks, reporting progress. */
export async function readModelSource(
  store: PlaneSession,
  path: string,
  options: { readonly signal?: AbortSignal; readonly onProgress?: (progress: ModelSourceProgress) => void } = {},
): Promise<Uint8Array> {
  const d = await store.open(path, { access: 'read', kind: 'blob', ...(options.signal ? { signal: options.signal } : {}) });
  try {
    const total = d.info().length ?? 0;
    const out = new Uint8Array(total);
    let loaded = 0;
    options.onProgress?.({ phase: 'read', loaded, total });
    while (loaded < total) {
      const n = await d.read(out.subarray(loaded, Math.min(total, loaded + READ_CHUNK)), options.signal ? { signal: options.signal } : undefined);
      if (n === 0) throw new TenonError('EIO', `blob ended after ${loaded} of ${total} bytes`, { op: 'readModelSource', reason: 'unexpected-eof', path });
      loaded += n;
      options.onProgress?.({ phase: 'read', loaded, total });
    }
    await d.close();
    return out;
  } catch (err) {
    if (d.info().state === 'open') await d.abort();
    throw err;
  }
}

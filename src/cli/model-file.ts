// Model files for the `tenon` CLI (Node, main thread). A model is read through a Node file handle as a
// range source (fileHandleSource): the GGUF header, then tensor rows as the session uploads them; the
// file is never read into one buffer. A llama2.c checkpoint needs its tokenizer file, which is small and
// read whole. Node's own file errors become TenonErrors (ENOENT `no-such-file`, EACCES, EIO
// `read-failed`) naming the path.
//
// Every read of the file handle is counted (reads, bytes, the largest single read), so a run can show
// that it read ranges.
// Ownership: `openModelFile` opens the handle and the returned ModelFile owns it; `close()` closes it
// once (later calls do nothing). Everything read from the file (the LoadedModel, its tensors' readRows)
// is usable only while the handle is open.
import { open, readFile } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { TenonError, fileHandleSource, loadModel, parseGguf, tokenizerFromGguf } from '../index.js';
import type { ByteSource, FileHandleLike, LoadedModel, Tokenizer } from '../index.js';

const OP = 'cli.open';
/** "GGUF" as the first four bytes of a file. */
const GGUF_MAGIC = 'GGUF';

/** A Node file-system error as a TenonError about `path`. */
export function fileError(err: unknown, path: string): TenonError {
  if (err instanceof TenonError) return err;
  const code = (err as { code?: unknown }).code;
  if (code === 'ENOENT') return new TenonError('ENOENT', `no such file: ${path}`, { op: OP, reason: 'no-such-file', path, cause: err });
  if (code === 'EACCES' || code === 'EPERM') return new TenonError('EACCES', `permission denied: ${path}`, { op: OP, reason: 'permission-denied', path, cause: err });
  if (code === 'EISDIR') return new TenonError('EINVAL', `${path} is a directory`, { op: OP, reason: 'is-directory', path, cause: err });
  return new TenonError('EIO', `reading ${path} failed: ${String(err)}`, { op: OP, reason: 'read-failed', path, cause: err });
}

/** Reads a small file whole (tokenizer files, chat input files). */
export async function readSmallFile(path: string): Promise<Uint8Array> {
  try {
    const data = await readFile(path);
    return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  } catch (err) {
    throw fileError(err, path);
  }
}

/** What went through a model file's source. */
export interface ReadStats {
  readonly reads: number;
  readonly bytes: number;
  /** The largest single read, in bytes. */
  readonly largest: number;
  /** The file's size. */
  readonly size: number;
}

export interface ModelFile {
  readonly path: string;
  readonly source: ByteSource;
  readonly isGguf: boolean;
  readonly stats: () => ReadStats;
  /** Closes the file handle (idempotent). */
  close(): Promise<void>;
}

export async function openModelFile(path: string): Promise<ModelFile> {
  let handle: FileHandle;
  try {
    handle = await open(path, 'r');
  } catch (err) {
    throw fileError(err, path);
  }
  let closed = false;
  const close = async (): Promise<void> => {
    if (closed) return;
    closed = true;
    await handle.close();
  };
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) throw new TenonError('EINVAL', `${path} is not a regular file`, { op: OP, reason: 'not-a-file', path });
    // Every read that reaches the file is counted, at the handle: what the source really asked of the disk.
    let reads = 0;
    let bytes = 0;
    let largest = 0;
    const counted: FileHandleLike = {
      async read(buffer, offset, length, position) {
        const r = await handle.read(buffer, offset, length, position);
        reads++;
        bytes += r.bytesRead;
        largest = Math.max(largest, r.bytesRead);
        return r;
      },
      stat: () => handle.stat(),
    };
    const source = await fileHandleSource(counted, { size: stat.size, name: path });
    const stats = (): ReadStats => ({ reads, bytes, largest, size: source.size });
    const head = source.size >= GGUF_MAGIC.length ? await source.read(0, GGUF_MAGIC.length) : new Uint8Array(0);
    const isGguf = new TextDecoder().decode(head) === GGUF_MAGIC;
    return { path, source, isGguf, stats, close };
  } catch (err) {
    await close();
    throw fileError(err, path);
  }
}

/** The whole model description (GGUF, or llama2.c with `tokenizerPath`): header and catalog checked, no weights read. */
export async function loadModelFile(file: ModelFile, tokenizerPath: string | undefined): Promise<LoadedModel> {
  const tokenizer = tokenizerPath === undefined ? undefined : await readSmallFile(tokenizerPath);
  return loadModel(file.source, tokenizer === undefined ? {} : { tokenizer });
}

/**
 * The tokenizer of a model file. A GGUF file without `tokenizerPath` needs only its header (vocabulary-only
 * files such as llama3-vocab.gguf work); otherwise the model is loaded as for generation.
 */
export async function loadTokenizer(file: ModelFile, tokenizerPath: string | undefined): Promise<Tokenizer> {
  if (file.isGguf && tokenizerPath === undefined) return tokenizerFromGguf((await parseGguf(file.source)).metadata);
  return (await loadModelFile(file, tokenizerPath)).tokenizer;
}

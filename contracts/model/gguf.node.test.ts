// GGUF reader over a Node file handle (node lane only: node:fs stays out of src/, the caller opens the
// handle and passes it in). Plan: a fixture written to a temporary file and opened with fs.promises.open
// parses to the same summary and tensor bytes as the in-memory bytes; the size comes from the handle's
// stat() or from the caller; a handle that delivers fewer bytes than the size it claims (the file shrank
// after opening) is EIO short-read, not a silent short tensor; the handle is never closed by the reader.
import { mkdtemp, open, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { countingSource, fileHandleSource, parseGguf } from '../../src/index.js';
import { expectCodeAsync } from '../support/expect-error.js';
import { readGgufFixture } from '../support/gguf-fixtures.js';
import { summarize } from './gguf-summary.js';

const fixture = await readGgufFixture('tiny-llama-Q4_0.gguf');
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function tempCopy(bytes: Uint8Array): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tenon-gguf-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  const path = join(dir, 'model.gguf');
  await writeFile(path, bytes);
  return path;
}

describe('[MD-gguf-sources] a Node file handle', () => {
  it.skipIf(fixture === undefined)('[MD-gguf-sources] gives the same file and tensor bytes as in-memory bytes, reading the header only', async () => {
    const path = await tempCopy(fixture!);
    const handle = await open(path, 'r');
    cleanups.push(() => handle.close());
    const source = countingSource(await fileHandleSource(handle, { name: 'model.gguf' }));
    expect(source.size).toBe(fixture!.length);
    const fromFile = await parseGguf(source);
    const fromBytes = await parseGguf(fixture!);
    expect(summarize(fromFile)).toEqual(summarize(fromBytes));
    expect(fromFile.name).toBe('model.gguf');
    expect(source.counters.highWater).toBeLessThan(fixture!.length);
    for (const t of fromBytes.tensors) {
      const got = await fromFile.readTensor(t.name);
      expect(Buffer.compare(Buffer.from(got), Buffer.from(fixture!.subarray(t.offset, t.offset + t.byteLength))), t.name).toBe(0);
    }
    // The reader left the handle open: it still reads.
    const { bytesRead } = await handle.read(new Uint8Array(4), 0, 4, 0);
    expect(bytesRead).toBe(4);
  });

  it.skipIf(fixture === undefined)('[MD-gguf-sources] a file that shrank after its size was taken gives EIO short-read for the missing range', async () => {
    const path = await tempCopy(fixture!);
    const handle = await open(path, 'r');
    cleanups.push(() => handle.close());
    const source = await fileHandleSource(handle, { size: fixture!.length });
    const file = await parseGguf(source);
    const last = file.tensors.slice().sort((a, b) => b.offset - a.offset)[0]!;
    await truncate(path, last.offset + 1);
    await expectCodeAsync(() => file.readTensor(last), 'EIO', 'short-read');
    // Ranges still inside the file read as before.
    const first = file.tensors.slice().sort((a, b) => a.offset - b.offset)[0]!;
    expect((await file.readTensor(first)).length).toBe(first.byteLength);
  });

  it('[MD-gguf-sources] a size that is not a safe non-negative integer, or a range outside the file, is EINVAL', async () => {
    const path = await tempCopy(new Uint8Array(16));
    const handle = await open(path, 'r');
    cleanups.push(() => handle.close());
    await expectCodeAsync(() => fileHandleSource(handle, { size: -1 }), 'EINVAL', 'bad-size');
    const source = await fileHandleSource(handle);
    expect(source.size).toBe(16);
    await expectCodeAsync(() => source.read(8, 9), 'EINVAL', 'range');
    expect((await source.read(8, 8)).length).toBe(8);
  });
});

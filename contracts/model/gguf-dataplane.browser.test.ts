// GGUF reader over a data-plane blob (browser lane: OPFS in real Chromium). Plan: a fixture published as a
// blob and opened for read parses to the same summary and tensor bytes as the in-memory bytes, through
// read-only range mappings (no whole-file read: the header parse stays within one chunk of the data
// offset); the descriptor stays open and usable afterwards, and closing it is the caller's step; a
// writable descriptor or a stream is refused as a source.
import { describe, expect, it } from 'vitest';
import { countingSource, descriptorSource, parseGguf } from '../../src/index.js';
import { GGUF_MAX_HEADER_CHUNK } from '../../src/index.js';
import { expectCode } from '../support/expect-error.js';
import { readGgufFixture } from '../support/gguf-fixtures.js';
import { planeWithSession, putBlob, onCleanup } from '../dataplane/support/plane.js';
import { summarize } from './gguf-summary.js';

const fixture = await readGgufFixture('tiny-llama-Q8_0.gguf');

describe('[MD-gguf-sources] a data-plane blob descriptor', () => {
  it.skipIf(fixture === undefined)('[MD-gguf-sources] gives the same file and tensor bytes as in-memory bytes, by range', async () => {
    const { s } = await planeWithSession();
    await putBlob(s, '/models/tiny.gguf', fixture!);
    const d = await s.open('/models/tiny.gguf');
    onCleanup(async () => {
      if (d.info().state === 'open') await d.close();
    });
    const source = countingSource(descriptorSource(d));
    expect(source.size).toBe(fixture!.length);
    expect(source.name).toBe('/models/tiny.gguf');
    const fromPlane = await parseGguf(source);
    const fromBytes = await parseGguf(fixture!);
    expect(summarize(fromPlane)).toEqual(summarize(fromBytes));
    expect(source.counters.highWater).toBeLessThanOrEqual(fromPlane.dataOffset + GGUF_MAX_HEADER_CHUNK);
    expect(source.counters.highWater).toBeLessThan(fixture!.length);
    for (const t of fromBytes.tensors) {
      const got = await fromPlane.readTensor(t.name);
      const want = fixture!.subarray(t.offset, t.offset + t.byteLength);
      expect(got.length, t.name).toBe(want.length);
      expect(got.every((b, i) => b === want[i]), t.name).toBe(true);
    }
    const rows = await fromPlane.readTensorRows('token_embd.weight', 10, 2);
    const embd = fromBytes.tensor('token_embd.weight');
    expect(Array.from(rows)).toEqual(Array.from(fixture!.subarray(embd.offset + 10 * embd.rowBytes, embd.offset + 12 * embd.rowBytes)));
    // Every mapping was closed: the descriptor is still open, and closes cleanly now.
    expect(d.info().state).toBe('open');
    await d.close();
    expect(d.info().state).toBe('closed');
  });

  it('[MD-gguf-sources] a write-only descriptor is not a source', async () => {
    const { s } = await planeWithSession();
    const w = await s.open('/models/staged.gguf', { access: 'write', create: true, allocation: { length: 8 } });
    onCleanup(() => w.abort());
    expectCode(() => descriptorSource(w), 'EBADF', 'not-readable');
  });
});

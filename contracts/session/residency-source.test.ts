// Bounded residency reading its weights lazily from a range source (both lanes, host provider only: the
// reads and the transaction do not depend on the provider). The source is the real one of each lane: in
// Chromium, stories260K.bin published into a data plane (OPFS) and read through a blob descriptor
// (descriptorSource, as the demo reads models); in Node, the fixture file opened with fs.promises
// (fileHandleSource). A recording wrapper on top of it lists the ranges read.
// Oracles: construction reads no byte of any layer tensor (no range read touches one; the window's
// source counters are 0); with a
// one-slot window every step reads every layer's stored bytes exactly once (the bytes the source delivered
// and the window's report agree), and the host keeps only a staging buffer of the largest tensor part;
// the logits are bit-identical to a resident session's. Fault: the source's seam
// (faults.failReadAt) fails the real read of layer 2's ffn_down range mid-layer: the step is aborted by
// the transaction (KV state bit-identical, length unchanged) with EIO layer-read-failed naming layer 2 and
// the tensor in `ids`, the source's EIO read-failed (with its byte range) as the cause; the next two
// steps give the resident session's logits. The fault runs with one slot (serial schedule) and with two
// (overlapped: layer 2 is staged while layer 1's submission is in flight).
import { describe, expect, it } from 'vitest';
import { TextSession, createHostProvider, createRuntime, descriptorSource, fileHandleSource, loadModel } from '../../src/index.js';
import type { FaultableSource, LoadedModel, StepError } from '../../src/index.js';
import { catchTenonAsync, expectCodeAsync } from '../support/expect-error.js';
import { readModelFixture } from '../support/models.js';
import { onCleanup, planeWithSession, putBlob } from '../dataplane/support/plane.js';

const PROMPT = [1, 403, 407, 261, 378];
const MAX_SEQ = 16;
const FAILING_LAYER = 2;
const NEXT = 432;
const inBrowser = typeof window !== 'undefined' && typeof document !== 'undefined';

const stories = await readModelFixture('stories260K.bin');
const tok512 = await readModelFixture('tok512.bin');
const present = stories !== undefined && tok512 !== undefined;

function bits(a: Float32Array): number[] {
  return Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length));
}

/** The lane's real range source over stories260K.bin (closed after the test). */
async function openSource(): Promise<FaultableSource> {
  if (inBrowser) {
    const { s } = await planeWithSession();
    await putBlob(s, '/models/stories260K.bin', stories!);
    const d = await s.open('/models/stories260K.bin');
    onCleanup(async () => {
      if (d.info().state === 'open') await d.close();
    });
    return descriptorSource(d);
  }
  const { open } = await import('node:fs/promises');
  const { fileURLToPath } = await import('node:url');
  const handle = await open(fileURLToPath(new URL('../../../shared/models/stories260K.bin', import.meta.url)));
  onCleanup(() => handle.close());
  return fileHandleSource(handle, { name: 'stories260K.bin' });
}

/** Wraps the lane's source, recording every range read (and the bytes) so the test can say what was read. */
function recording(inner: FaultableSource) {
  const ranges: [number, number][] = [];
  let bytes = 0;
  return {
    ranges,
    get bytes() {
      return bytes;
    },
    source: {
      size: inner.size,
      async read(offset: number, length: number) {
        const out = await inner.read(offset, length);
        ranges.push([offset, offset + length]);
        bytes += length;
        return out;
      },
    },
  };
}

/** Whether any of `ranges` touches a layer tensor's stored bytes. */
function touchesLayers(model: LoadedModel, ranges: readonly [number, number][]): boolean {
  const layer = model.tensors.filter((t) => t.layer !== undefined).map((t) => [t.sourceOffset!, t.sourceOffset! + t.geometry.byteLength] as const);
  return ranges.some(([a, b]) => layer.some(([s, e]) => a < e && s < b));
}

/** Stored bytes of a model's layer tensors: all of them, and per layer. */
function layerBytes(model: LoadedModel): number[] {
  return model.layers.map((tensors) => Object.values(tensors).reduce((n, t) => n + (t === undefined ? 0 : t.geometry.byteLength), 0));
}

describe.skipIf(!present)(`bounded residency over a ${inBrowser ? 'data-plane (OPFS)' : 'file'} range source`, () => {
  const session = async (model: LoadedModel, bytes?: number) =>
    TextSession.create({ runtime: createRuntime(await createHostProvider()), model, maxSeq: MAX_SEQ, maxBatch: 8, residency: bytes === undefined ? { kind: 'resident' } : { kind: 'bounded', bytes } });
  const resident = async () => {
    const ref = await session(await loadModel(stories!, { tokenizer: tok512! }));
    await ref.prefill(PROMPT);
    const first = await ref.decode(NEXT);
    const second = await ref.decode(first.argmax);
    ref.dispose();
    return { first, second };
  };
  /** One slot of stories260K's plan, from the refusal of a 1-byte budget. */
  const oneSlot = async (model: LoadedModel): Promise<number> => {
    const err = await expectCodeAsync(() => session(model, 1), 'EINVAL', 'budget-below-layer');
    return (err.ids as { largestLayer: number }).largestLayer;
  };

  it('[TS-residency-lazy-reads] construction reads no layer; each step reads the window by range, keeping only a staging buffer', async () => {
    const want = await resident();
    const rec = recording(await openSource());
    const model = await loadModel(rec.source, { tokenizer: tok512! });
    const perLayer = layerBytes(model);
    const allLayers = perLayer.reduce((a, b) => a + b, 0);
    const largestPart = Math.max(...model.layers.flatMap((tensors) => Object.values(tensors).map((t) => (t === undefined ? 0 : t.geometry.packedBytes))));
    const s = await session(model, await oneSlot(model));
    // Construction read the globals only: no range it read touches a layer tensor.
    expect(rec.ranges.length).toBeGreaterThan(0);
    expect(touchesLayers(model, rec.ranges)).toBe(false);
    const created = rec.ranges.length;
    const report0 = s.report().layerResidency;
    expect(report0.slots).toBe(1);
    expect(report0.sourceReads).toBe(0);
    expect(report0.sourceBytesRead).toBe(0);
    expect(report0.hostStagingBytes).toBe(largestPart);
    expect(report0.hostStagingBytes).toBeLessThan(report0.slotBytes);

    await s.prefill(PROMPT);
    expect(touchesLayers(model, rec.ranges.slice(created))).toBe(true);
    const afterPrefill = rec.bytes;
    expect(s.report().layerResidency.sourceBytesRead).toBe(allLayers);
    const first = await s.decode(NEXT);
    expect(bits(first.logits)).toEqual(bits(want.first.logits));
    // One slot: the second step read every layer again, exactly once, through the source.
    expect(rec.bytes - afterPrefill).toBe(allLayers);
    const report = s.report().layerResidency;
    expect(report.sourceBytesRead).toBe(2 * allLayers);
    expect(report.hostStagingBytes).toBe(largestPart);
    s.dispose();
  });

  for (const slots of [1, 2]) {
    it(`[TS-residency-read-fault] a failing range read of the source mid-layer aborts the step (state bit-identical, layer in ids); the next steps match resident (${slots === 1 ? 'one slot, serial' : 'two slots, overlapped'})`, async () => {
      const want = await resident();
      const inner = await openSource();
      const model = await loadModel(inner, { tokenizer: tok512! });
      const perLayer = layerBytes(model);
      const s = await session(model, slots * (await oneSlot(model)));
      expect(s.report().layerResidency.slots).toBe(slots);
      expect(s.report().layerResidency.overlap).toBe(slots > 1);
      await s.prefill(PROMPT);
      const state = await s.exportState();
      const before = s.report().layerResidency;
      const target = model.layers[FAILING_LAYER]!.ffnDown!;
      inner.faults.failReadAt(target.sourceOffset! + 1);
      const err = (await catchTenonAsync(() => s.decode(NEXT))) as StepError;
      expect(err.code).toBe('EIO');
      expect(err.outcome).toBe('aborted');
      const cause = err.cause as { code: string; reason: string; ids: { layer: number; tensor: string }; cause: { code: string; reason: string; range: { start: number; end: number } } };
      expect(cause.code).toBe('EIO');
      expect(cause.reason).toBe('layer-read-failed');
      expect(cause.ids.layer).toBe(FAILING_LAYER);
      expect(cause.ids.tensor).toBe(target.name);
      // The source's own error: its read path failed for the range holding the armed byte.
      expect(cause.cause.code).toBe('EIO');
      expect(cause.cause.reason).toBe('read-failed');
      expect(cause.cause.range.start).toBeLessThanOrEqual(target.sourceOffset! + 1);
      expect(cause.cause.range.end).toBeGreaterThan(target.sourceOffset! + 1);
      // Mid-layer: layers 0 and 1 were read whole, layer 2 in part.
      const read = s.report().layerResidency.sourceBytesRead - before.sourceBytesRead;
      expect(read).toBeGreaterThan(perLayer[0]! + perLayer[1]!);
      expect(read).toBeLessThan(perLayer[0]! + perLayer[1]! + perLayer[2]!);
      expect(s.report().layerResidency.layerUploads).toBe(before.layerUploads + FAILING_LAYER);
      expect(s.length).toBe(PROMPT.length);
      expect(s.lastOutcome).toBe('aborted');
      expect(await s.exportState()).toEqual(state);
      const first = await s.decode(NEXT);
      expect(bits(first.logits)).toEqual(bits(want.first.logits));
      const second = await s.decode(first.argmax);
      expect(bits(second.logits)).toEqual(bits(want.second.logits));
      s.dispose();
    });
  }
});

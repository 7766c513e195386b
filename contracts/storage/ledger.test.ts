// Plan: allocation and copy ledgers (G7 accounting). Each step's events are compared as exact multisets:
// one allocation event per physical allocation with its reason, one copy event per byte-preserving copy,
// and nothing at all for views, reborrows, aliases, splits, reinterpretations, extraction or retention.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allocate, createAllocationGroup, fromArray, zeros } from '../../src/index.js';
import type { HostProvider, LedgerEvent, WebGPUProvider } from '../../src/index.js';
import { providerCases } from '../support/providers.js';

/** Events reduced to comparable keys, sorted: a multiset. */
const multiset = (events: readonly LedgerEvent[]): string[] =>
  events.map((e) => (e.kind === 'allocation' ? `alloc:${e.reason}:${e.target}:${e.bytes}` : `copy:${e.reason}:${e.bytes}`)).sort();

for (const pc of providerCases()) {
  describe(`ledgers on ${pc.name}`, () => {
    let provider: HostProvider | WebGPUProvider;
    let gpu: boolean;
    beforeAll(async () => {
      provider = await pc.make();
      gpu = provider.kind === 'webgpu';
    });
    afterAll(() => {
      if (gpu) (provider as WebGPUProvider).destroy();
    });

    it('[G7-ledger-allocation] each allocation records one event with its reason and size', async () => {
      const mark = provider.ledgerMark();
      const a = await zeros(provider, 'f32', [4]);
      const b = await allocate(provider, 'u8', { shape: [10] }, { reason: 'checkpoint-recompute-output' });
      const c = await allocate(provider, 'i32', { shape: [2], byteOffset: 8 }, { capacityBytes: 16, reason: 'transfer-destination' });
      expect(multiset(provider.ledgerSince(mark))).toEqual(
        ['alloc:operation-output:root:16', 'alloc:checkpoint-recompute-output:root:10', 'alloc:transfer-destination:root:16'].sort(),
      );
      const ids = provider.ledgerSince(mark).map((e) => (e.kind === 'allocation' ? e.id : -1));
      expect(ids).toEqual([a.diagnostics().root, b.diagnostics().root, c.diagnostics().root]);
      a.dispose();
      b.dispose();
      c.dispose();
      // ending owners is not an allocation or a copy
      expect(provider.ledgerSince(mark)).toHaveLength(3);
    });

    it('[G7-ledger-copy] duplicate records one destination allocation and one explicit-duplicate copy of the same bytes', async () => {
      const t = await zeros(provider, 'f32', [8]);
      const mark = provider.ledgerMark();
      const d = await t.duplicate();
      const events = provider.ledgerSince(mark);
      expect(multiset(events)).toEqual(['alloc:explicit-duplicate-destination:root:32', 'copy:explicit-duplicate:32']);
      const copy = events.find((e) => e.kind === 'copy')!;
      expect(copy.kind === 'copy' && copy.from).toBe(t.diagnostics().root);
      expect(copy.kind === 'copy' && copy.to).toBe(d.diagnostics().root);
      t.dispose();
      d.dispose();
    });

    it('[G7-ledger-copy] views, reborrows, aliases, splits, reinterpretation, extraction and retention record nothing', async () => {
      const rowElems = Math.max(1, provider.capabilities.claimAlignment / 4);
      const t = await zeros(provider, 'f32', [2, rowElems]);
      const mark = provider.ledgerMark();
      {
        using v = t.view();
        using w = v.view();
        expect(w.size).toBe(2 * rowElems);
      }
      {
        using m = t.viewMut();
        using inner = m.viewMut();
        expect(inner.asView().rank).toBe(2);
      }
      const [top, bottom] = t.split([1, 1]);
      const flat = top!.intoLayout({ shape: [rowElems] });
      const g = createAllocationGroup();
      const { allocation, descriptor } = g.insert(flat);
      const alias = g.alias(allocation, 'u32', { shape: [rowElems] });
      {
        const [x] = g.splitMut([alias]);
        x!.release();
      }
      g.removeDescriptor(alias);
      const back = g.tryExtract(descriptor);
      g.insert(bottom!);
      expect(provider.ledgerSince(mark)).toEqual([]);
      back.dispose();
      g.dispose();
      expect(provider.ledgerSince(mark)).toEqual([]);
    });

    it('[G7-ledger-copy] a ranged fill writes only its elements: one transfer of exactly those bytes on a device, nothing on host', async () => {
      const t = await fromArray(provider, 'f32', Float32Array.from({ length: 12 }, (_, i) => i + 1));
      const mark = provider.ledgerMark();
      const before = provider.counters();
      await t.fillRange(0, 3, 7);
      expect(multiset(provider.ledgerSince(mark))).toEqual(gpu ? ['copy:transfer:16'] : []);
      expect(provider.counters().maps).toBe(before.maps); // no download
      expect(Array.from(await t.toArray())).toEqual([1, 2, 3, 0, 0, 0, 0, 8, 9, 10, 11, 12]);
      // refusals change nothing
      const strided = t.intoLayout({ shape: [6], strides: [2] });
      await expect(strided.fillRange(1, 0, 2)).rejects.toMatchObject({ code: 'EINVAL', reason: 'not-contiguous' });
      const flat = strided.intoLayout({ shape: [12] });
      await expect(flat.fillRange(1, 5, 13)).rejects.toMatchObject({ code: 'EINVAL', reason: 'bad-range' });
      await expect(flat.fillRange(1, 4, 3)).rejects.toMatchObject({ code: 'EINVAL', reason: 'bad-range' });
      expect(Array.from(await flat.toArray())).toEqual([1, 2, 3, 0, 0, 0, 0, 8, 9, 10, 11, 12]);
      await flat.fillRange(5, 11, 12);
      expect((await flat.toArray())[11]).toBe(5);
      flat.dispose();
    });

    it('[G7-ledger-copy] host transfers are ledgered exactly where bytes cross the host/device boundary', async () => {
      const mark = provider.ledgerMark();
      const t = await fromArray(provider, 'f32', Float32Array.from([1, 2, 3, 4]));
      const afterUpload = multiset(provider.ledgerSince(mark));
      const mid = provider.ledgerMark();
      expect(Array.from(await t.toArray())).toEqual([1, 2, 3, 4]);
      const afterDownload = multiset(provider.ledgerSince(mid));
      if (gpu) {
        // upload: one root + one transfer from host; download: one staging buffer + one transfer to host
        expect(afterUpload).toEqual(['alloc:operation-output:root:16', 'copy:transfer:16']);
        expect(afterDownload).toEqual(['alloc:transfer-destination:staging:16', 'copy:transfer:16']);
      } else {
        // host memory is the host: a store and a zero-copy read cross nothing
        expect(afterUpload).toEqual(['alloc:operation-output:root:16']);
        expect(afterDownload).toEqual([]);
      }
      t.dispose();
    });
  });
}

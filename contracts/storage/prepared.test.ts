// Guarantee suite: prepared access (G1 "validate once, then traverse"; G5 prepared binding).
//
// Plan. Every test runs on every provider of the lane (node: host + WebGPU/Dawn; browser: WebGPU/Chromium
// + host over SharedArrayBuffer) through the public API only:
//   - validate once: building a tensor is one validation, reinterpretation/alias one more, and no view,
//     reborrow, preparation, binding, write or read validates again (each preparation hands out the very
//     layout object checked at build time);
//   - host variants: contiguous layouts give one typed array over exactly the logical elements (aliasing
//     the root on host providers: zero-copy, no ledger event); strided layouts give a cursor whose walk
//     equals a reference computed from shape/strides/byteOffset (examples + property);
//   - download: on WebGPU one prepareHost is one map, one staging allocation and one transfer copy, and
//     the staging buffer is gone after release; on host nothing is mapped or recorded;
//   - commit: changes through prepareHostMut are visible after release and touch only the layout's
//     elements (canaries in the gaps); `discard` skips the download on contiguous layouts; a release whose
//     device was lost fails with ENODEV (the access still ends, its staging memory is freed);
//   - device: WebGPU yields buffer/offset/size binding state (checked by copying through it) and no host
//     members; host rejects with ENOTSUP 'no-device' and changes nothing;
//   - constant cost: validations, provider resolutions and maps per access are the same for 1 and 10^6
//     elements, contiguous or transposed, and equal to the expected small constants;
//   - release: a prepared access holds its borrow until released (EBUSY meanwhile), then every member
//     throws ERELEASED; `using` releases at scope end, also on throw;
//   - failure: a failing preparation (device lost on a separate WebGPU provider, non-injective, no device,
//     empty binding, busy) leaves the borrow free, the view usable and live memory unchanged.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  TenonError,
  allocate,
  createAllocationGroup,
  dtypeSize,
  fromArray,
  zeros,
} from '../../src/index.js';
import type {
  AnyTypedArray,
  DType,
  HostProvider,
  PreparedHostRead,
  PreparedHostWrite,
  Tensor,
  WebGPUProvider,
} from '../../src/index.js';
import { expectCode, expectCodeAsync } from '../support/expect-error.js';
import { fc, fcParams } from '../support/fc.js';
import { providerCases } from '../support/providers.js';
import { HOST_ARRAY, backingValues, isContiguousRef, isInjectiveRef, isNestedRef, makeArray, offsetsOf, rowMajor, valueAt } from '../support/layout-reference.js';
import type { LayoutRef } from '../support/layout-reference.js';

type AnyProvider = HostProvider | WebGPUProvider;

// ---------------------------------------------------------------------------------------------------
// Reference model: contracts/support/layout-reference.ts (shared with layout.test.ts).

type LayoutCase = LayoutRef;

function caseOf(dtype: DType, shape: number[], strides: number[], first: number, backing: number): LayoutCase {
  return { dtype, shape, strides, first, backing, offsets: offsetsOf(shape, strides, first) };
}

const caseArb: fc.Arbitrary<LayoutCase> = fc
  .record({
    dtype: fc.constantFrom<DType>('f32', 'f16', 'i32', 'u32', 'u8'),
    dims: fc.array(
      fc.record({
        n: fc.oneof(
          { weight: 1, arbitrary: fc.constant(0) },
          { weight: 2, arbitrary: fc.constant(1) },
          { weight: 12, arbitrary: fc.integer({ min: 2, max: 4 }) },
        ),
        s: fc.integer({ min: -4, max: 4 }),
        key: fc.nat(100),
        flip: fc.boolean(),
      }),
      { maxLength: 4 },
    ),
    mode: fc.constantFrom('row-major', 'permuted', 'reversed', 'random'),
    front: fc.nat(3),
    back: fc.nat(3),
  })
  .map((r) => {
    const shape = r.dims.map((d) => d.n);
    let strides: number[];
    if (r.mode === 'row-major') strides = rowMajor(shape);
    else if (r.mode === 'reversed') strides = rowMajor(shape).map((s, d) => (r.dims[d]!.flip ? -s : s));
    else if (r.mode === 'random') strides = r.dims.map((d) => d.s);
    else {
      const order = shape.map((_, d) => d).sort((a, b) => r.dims[a]!.key - r.dims[b]!.key || a - b);
      strides = new Array<number>(shape.length);
      let acc = 1;
      for (let i = shape.length - 1; i >= 0; i--) {
        strides[order[i]!] = acc;
        acc *= Math.max(shape[order[i]!]!, 1);
      }
    }
    const size = shape.reduce((a, b) => a * b, 1);
    let low = 0;
    let high = 0;
    if (size > 0) {
      shape.forEach((n, d) => {
        const reach = strides[d]! * (n - 1);
        if (reach < 0) low += reach;
        else high += reach;
      });
    }
    const first = size === 0 ? r.front : -low + r.front;
    const backing = size === 0 ? first + r.back : first + high + 1 + r.back;
    return caseOf(r.dtype, shape, strides, first, backing);
  });

// ---------------------------------------------------------------------------------------------------
// Helpers on the public API.

function memory(p: AnyProvider): { liveRoots: number; liveBytes: number; rootsCreated: number } {
  const { liveRoots, liveBytes, rootsCreated } = p.counters();
  return { liveRoots, liveBytes, rootsCreated };
}

async function buildTensor(p: AnyProvider, c: LayoutCase): Promise<Tensor> {
  const backing = await fromArray(p, c.dtype, makeArray(c.dtype, backingValues(c)));
  return backing.intoLayout({ shape: c.shape, strides: c.strides, byteOffset: c.first * dtypeSize(c.dtype) });
}

/** Elements of a prepared host access in logical order: the array, or the cursor's walk. */
function walk(p: PreparedHostRead<DType> | PreparedHostWrite<DType>): number[] {
  if (p.kind === 'contiguous') return Array.from(p.asArray());
  const out: number[] = [];
  for (const c = p.cursor(); !c.done; c.advance()) out.push(c.array[c.index]!);
  return out;
}

/** The same elements through the run-at-a-time walk of a strided access. */
function walkRuns(p: PreparedHostRead<DType> | PreparedHostWrite<DType>): number[] {
  if (p.kind === 'contiguous') throw new Error('runs() exists on strided accesses only');
  const out: number[] = [];
  for (const r = p.runs(); r.next(); ) {
    for (let k = 0, i = r.start; k < r.length; k++, i += r.stride) out.push(r.array[i]!);
  }
  return out;
}

function numbers(a: ArrayLike<number>): number[] {
  return Array.from(a);
}

function expectFree(t: Tensor): void {
  expect(t.moved).toBe(false);
  t.viewMut().release();
}

interface Cost {
  validations: number;
  providerResolutions: number;
  maps: number;
}

async function costOf(p: AnyProvider, fn: () => unknown): Promise<Cost> {
  const a = p.counters();
  await fn();
  const b = p.counters();
  return {
    validations: b.validations - a.validations,
    providerResolutions: b.providerResolutions - a.providerResolutions,
    maps: b.maps - a.maps,
  };
}

/** Copies `bytes` bytes starting at the binding's offset into host memory, outside the kernel. */
async function readThroughBinding(p: WebGPUProvider, binding: GPUBufferBinding, bytes: number): Promise<ArrayBuffer> {
  const size = Math.ceil(bytes / 4) * 4;
  const staging = p.device.createBuffer({ size, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const encoder = p.device.createCommandEncoder();
  encoder.copyBufferToBuffer(binding.buffer, binding.offset ?? 0, staging, 0, size);
  p.device.queue.submit([encoder.finish()]);
  await staging.mapAsync(GPUMapMode.READ);
  const out = staging.getMappedRange().slice(0);
  staging.unmap();
  staging.destroy();
  return out;
}

for (const pc of providerCases()) {
  describe(`prepared access on ${pc.name}`, () => {
    let provider: AnyProvider;
    const webgpu = pc.kind === 'webgpu';
    /** Maps one host preparation costs: a staging download on WebGPU, nothing on host. */
    const m = webgpu ? 1 : 0;

    beforeAll(async () => {
      provider = await pc.make();
    });

    afterAll(() => {
      if (provider?.kind === 'webgpu') provider.destroy();
    });

    // -----------------------------------------------------------------------------------------------
    // G1-validate-once

    it('[G1-validate-once] building a tensor is exactly one validation (fromArray, zeros, allocate, duplicate)', async () => {
      const validations = () => provider.counters().validations;
      let v = validations();
      const a = await fromArray(provider, 'f32', new Float32Array(12).map((_, i) => i));
      expect(validations() - v).toBe(1);
      v = validations();
      const b = await zeros(provider, 'u8', [3, 5]);
      expect(validations() - v).toBe(1);
      v = validations();
      const c = await allocate(provider, 'f32', { shape: [3, 4], strides: [1, 3], byteOffset: 16 }, { capacityBytes: 64 });
      expect(validations() - v).toBe(1);
      v = validations();
      const d = await c.duplicate();
      expect(validations() - v).toBe(1);
      expect(d.layout.kind).toBe('strided');
      for (const t of [a, b, c, d]) t.dispose();
    });

    it('[G1-validate-once] views, reborrows, preparation, binding, writes and reads never validate again', async () => {
      const contiguous = await fromArray(provider, 'f32', new Float32Array(12).map((_, i) => i));
      const strided = (await fromArray(provider, 'f32', new Float32Array(12).map((_, i) => i))).intoLayout({
        shape: [4, 3],
        strides: [1, 4],
      });
      for (const t of [contiguous, strided]) {
        const ops: [string, () => unknown][] = [
          ['view', () => t.view().release()],
          ['view of view', () => {
            const v = t.view();
            v.view().release();
            v.release();
          }],
          ['asView', () => [t.asView().shape, t.asView().layout, t.asView().diagnostics()]],
          ['asViewMut', () => t.asViewMut().size],
          ['getters', () => [t.dtype, t.shape, t.strides, t.rank, t.size, t.byteLength, t.byteOffset, t.layout, t.isContiguous]],
          ['viewMut and reborrows', async () => {
            const vm = t.viewMut();
            vm.viewMut().release();
            await vm.asView().toArray();
            (await vm.prepareHost()).release();
            vm.release();
          }],
          ['prepareHost', async () => (await t.prepareHost()).release()],
          ['prepareHostMut', async () => (await t.prepareHostMut()).release()],
          ['prepareHostMut discard', async () => (await t.prepareHostMut({ discard: true })).release()],
          ['write', () => t.write(new Float32Array(12).map((_, i) => 11 - i))],
          ['fill', () => t.fill(3)],
          ['toArray', () => t.toArray()],
        ];
        if (webgpu) {
          ops.push(['prepareDevice', () => t.prepareDevice().release()]);
          ops.push(['prepareDeviceMut', () => t.prepareDeviceMut().release()]);
        }
        for (const [name, op] of ops) {
          const cost = await costOf(provider, op);
          expect(cost.validations, `${t.layout.kind} ${name}`).toBe(0);
        }
        // Every preparation hands out the very layout checked when the tensor was built, never one derived
        // again (a re-validation would return a fresh object).
        const built = t.layout;
        const prepared: [string, () => Promise<{ readonly layout: unknown; release(): void }>][] = [
          ['prepareHost', () => t.prepareHost()],
          ['asView prepareHost', () => t.asView().prepareHost()],
          ['prepareHostMut', () => t.prepareHostMut()],
          ['prepareHostMut discard', () => t.prepareHostMut({ discard: true })],
        ];
        if (webgpu) {
          prepared.push(['prepareDevice', async () => t.prepareDevice()]);
          prepared.push(['prepareDeviceMut', async () => t.prepareDeviceMut()]);
        }
        for (const [name, prepare] of prepared) {
          const access = await prepare();
          expect(access.layout, `${built.kind} ${name}`).toBe(built);
          access.release();
        }
      }
      // Moving an owner into a group keeps its checked layout; group views resolve slots only.
      const group = createAllocationGroup();
      let cost = await costOf(provider, () => group.insert(strided));
      expect(cost.validations).toBe(0);
      const { descriptor } = group.insert(contiguous);
      cost = await costOf(provider, async () => {
        const v = group.view(descriptor);
        await v.toArray();
        v.release();
        const vm = group.viewMut(descriptor);
        await vm.write(new Float32Array(12));
        vm.release();
      });
      expect(cost.validations).toBe(0);
      group.dispose();
    });

    it('[G1-validate-once] a reinterpretation (intoLayout) or a group alias is exactly one new validation', async () => {
      const t = await fromArray(provider, 'u32', new Uint32Array([1, 2, 3, 4, 5, 6]));
      let v = provider.counters().validations;
      const transposed = t.intoLayout({ shape: [3, 2], strides: [1, 3] });
      expect(provider.counters().validations - v).toBe(1);
      v = provider.counters().validations;
      const bytes = transposed.intoLayout({ shape: [24] }, 'u8');
      expect(provider.counters().validations - v).toBe(1);
      const group = createAllocationGroup();
      v = provider.counters().validations;
      const { allocation } = group.insert(bytes);
      expect(provider.counters().validations - v).toBe(0);
      const alias = group.alias(allocation, 'f16', { shape: [4], strides: [-2], byteOffset: 12 });
      expect(provider.counters().validations - v).toBe(1);
      v = provider.counters().validations;
      {
        using view = group.view(alias);
        expect(numbers(await view.toArray())).toEqual([4, 3, 2, 1]); // low halves of u32 4, 3, 2, 1
      }
      expect(provider.counters().validations - v).toBe(0);
      group.dispose();
    });

    // -----------------------------------------------------------------------------------------------
    // G5-prepared-host-contiguous

    it('[G5-prepared-host-contiguous] contiguous preparation is one typed array over exactly the logical elements', async () => {
      const data = new Float32Array(16).map((_, i) => i * 1.5);
      const cases: { spec: { shape: number[]; strides?: number[]; byteOffset?: number }; values: number[] }[] = [
        { spec: { shape: [16] }, values: numbers(data) },
        { spec: { shape: [0], byteOffset: 24 }, values: [] },
        { spec: { shape: [], byteOffset: 20 }, values: [7.5] },
        { spec: { shape: [7], byteOffset: 12 }, values: numbers(data.subarray(3, 10)) },
        { spec: { shape: [2, 1, 3], strides: [3, 99, 1], byteOffset: 36 }, values: numbers(data.subarray(9, 15)) },
      ];
      for (const { spec, values } of cases) {
        const t = (await fromArray(provider, 'f32', data)).intoLayout(spec);
        {
          using p = await t.prepareHost();
          if (p.kind !== 'contiguous') throw new Error(`expected contiguous for ${JSON.stringify(spec)}`);
          const a = p.asArray();
          expect(a).toBeInstanceOf(Float32Array);
          expect(a.length).toBe(t.size);
          expect(numbers(a)).toEqual(values);
          expect(p.asArray()).toBe(a); // one array per access, not one per call
          expect('cursor' in p).toBe(false);
        }
        {
          using w = await t.prepareHostMut();
          expect(w.kind).toBe('contiguous');
          if (w.kind === 'contiguous') expect(numbers(w.asArray())).toEqual(values);
        }
        t.dispose();
      }
      // Other dtypes get their own host array type (f16 as raw bits).
      for (const dtype of ['f16', 'i32', 'u32', 'u8'] as const) {
        const t = await fromArray(provider, dtype, makeArray(dtype, [1, 2, 3, 4, 5]) as never);
        using p = await t.prepareHost();
        if (p.kind !== 'contiguous') throw new Error('expected contiguous');
        expect(p.asArray()).toBeInstanceOf(HOST_ARRAY[dtype]);
        expect(numbers(p.asArray())).toEqual([1, 2, 3, 4, 5]);
        p.release();
        t.dispose();
      }
    });

    it('[G5-prepared-host-contiguous] on host the array aliases the root (zero-copy, no ledger event); on WebGPU it is a download', async () => {
      const t = (await fromArray(provider, 'f32', new Float32Array([0, 1, 2, 3, 4, 5, 6, 7]))).intoLayout({ shape: [4], byteOffset: 8 });
      const mark = provider.ledgerMark();
      const before = provider.counters();
      const w = await t.prepareHostMut();
      if (w.kind !== 'contiguous') throw new Error('expected contiguous');
      const written = w.asArray();
      written[1] = 42;
      w.release();
      const r1 = await t.prepareHost();
      const r2 = await t.prepareHost();
      if (r1.kind !== 'contiguous' || r2.kind !== 'contiguous') throw new Error('expected contiguous');
      expect(numbers(r1.asArray())).toEqual([2, 42, 4, 5]);
      if (!webgpu) {
        // The same memory every time: the write's array, both reads, all over the root itself.
        expect(r1.asArray().buffer).toBe(written.buffer);
        expect(r2.asArray().buffer).toBe(written.buffer);
        expect(r1.asArray().byteOffset).toBe(written.byteOffset);
        expect(r1.asArray().buffer instanceof SharedArrayBuffer).toBe(provider.capabilities.sharedMemory);
        expect(provider.capabilities.hostAccess).toBe('zero-copy');
        expect(provider.ledgerSince(mark)).toEqual([]);
        expect(provider.counters().maps - before.maps).toBe(0);
        expect(provider.counters().resourcesCreated - before.resourcesCreated).toBe(0);
      } else {
        // Contrary facts: every access has its own staging copy, recorded in the ledger.
        expect(provider.capabilities.hostAccess).toBe('download');
        expect(r1.asArray().buffer).not.toBe(r2.asArray().buffer);
        expect(r1.asArray().buffer).not.toBe(written.buffer);
        expect(provider.ledgerSince(mark).length).toBeGreaterThan(0);
      }
      r1.release();
      r2.release();
      expect(numbers(await t.toArray())).toEqual([2, 42, 4, 5]);
      t.dispose();
    });

    // -----------------------------------------------------------------------------------------------
    // G5-prepared-host-strided

    it('[G5-prepared-host-strided] a strided plan with no negative stride starts its cursor at +0, never -0 (a -0 index would force heap-number indexing)', async () => {
      const t = await fromArray(provider, 'f32', Float32Array.from({ length: 12 }, (_, i) => i), [12]);
      const transposed = t.intoLayout({ shape: [3, 4], strides: [1, 3] });
      const layout = transposed.layout;
      expect(layout.kind).toBe('strided');
      if (layout.kind === 'strided') expect(Object.is(layout.plan.firstIndex, 0)).toBe(true);
      using p = await transposed.prepareHost();
      if (p.kind === 'strided') expect(Object.is(p.cursor().index, 0)).toBe(true);
      p.release();
      transposed.dispose();
    });

    it('[G5-prepared-host-strided] strided layouts give a cursor walking the reference order; contiguous ones do not', async () => {
      const examples: { c: LayoutCase; kind: 'strided' | 'contiguous' }[] = [
        { c: caseOf('f32', [4, 3], [1, 4], 0, 12), kind: 'strided' }, // transposed
        { c: caseOf('f32', [3, 4], [-4, -1], 11, 12), kind: 'strided' }, // fully reversed
        { c: caseOf('i32', [2, 3], [6, 2], 1, 12), kind: 'strided' }, // stepped
        { c: caseOf('u32', [3, 2], [0, 1], 4, 12), kind: 'strided' }, // broadcast (read only)
        { c: caseOf('f16', [2, 2, 2], [1, 6, -3], 3, 12), kind: 'strided' }, // mixed, reverse innermost
        { c: caseOf('u8', [5], [-2], 9, 12), kind: 'strided' },
        { c: caseOf('f32', [2, 1, 3], [3, -7, 1], 2, 12), kind: 'contiguous' }, // extent-1 stride ignored
        { c: caseOf('f32', [3, 0], [1, 5], 12, 12), kind: 'contiguous' }, // empty
        { c: caseOf('f32', [1, 1], [-1, 3], 6, 12), kind: 'contiguous' }, // singleton
      ];
      for (const { c, kind } of examples) {
        const values = backingValues(c);
        const expected = c.offsets.map((o) => values[o]);
        const t = await buildTensor(provider, c);
        expect(t.layout.kind).toBe(kind);
        {
          using p = await t.prepareHost();
          expect(p.kind, JSON.stringify(c.shape) + JSON.stringify(c.strides)).toBe(kind);
          expect(walk(p)).toEqual(expected);
          if (p.kind === 'strided') {
            expect(walkRuns(p)).toEqual(expected);
            expect('asArray' in p).toBe(false);
            const one = p.cursor();
            const two = p.cursor();
            expect(one.done).toBe(false);
            one.advance();
            expect(two.done).toBe(false); // independent cursors
            expect(two.array[two.index]).toBe(expected[0]);
            expect(one.array[one.index]).toBe(expected[1]);
            expect(one.array.length).toBe((t.layout.envelope.end - t.layout.envelope.start) / dtypeSize(c.dtype));
          } else {
            expect('cursor' in p).toBe(false);
            expect('runs' in p).toBe(false);
          }
        }
        if (isInjectiveRef(c)) {
          using w = await t.prepareHostMut();
          expect(w.kind).toBe(kind);
          expect(walk(w)).toEqual(expected);
        }
        t.dispose();
      }
    });

    it('[G5-prepared-host-strided] for random layouts the variant and the walk match the reference (property)', async () => {
      await fc.assert(
        fc.asyncProperty(caseArb, async (c) => {
          const values = backingValues(c);
          const expected = c.offsets.map((o) => values[o]);
          const t = await buildTensor(provider, c);
          const kind = isContiguousRef(c) ? 'contiguous' : 'strided';
          {
            using p = await t.prepareHost();
            expect(p.kind).toBe(kind);
            expect(walk(p)).toEqual(expected);
            if (p.kind === 'strided') expect(walkRuns(p)).toEqual(expected);
          }
          if (isInjectiveRef(c) && kind === 'strided') {
            // Writable strided layouts walk the same way (when the conservative proof accepts them; it must
            // accept every layout that meets the documented nesting condition).
            const w = await t.prepareHostMut().catch((err: unknown) => {
              expect(err).toBeInstanceOf(TenonError);
              expect((err as TenonError).code).toBe('EINVAL');
              expect((err as TenonError).reason).toBe('non-injective');
              expect(isNestedRef(c), `${JSON.stringify(c.shape)} ${JSON.stringify(c.strides)} meets the nesting condition`).toBe(false);
              return undefined;
            });
            if (w !== undefined) {
              expect(w.kind).toBe('strided');
              expect(walk(w)).toEqual(expected);
              w.release();
            }
          }
          t.dispose();
        }),
        fcParams(webgpu ? 25 : 200),
      );
    });

    // -----------------------------------------------------------------------------------------------
    // G5-prepared-download

    it('[G5-prepared-download] one host read is one map, one staging allocation and one transfer on WebGPU; nothing on host', async () => {
      const sources: { name: string; make: () => Promise<Tensor>; windowBytes: number }[] = [
        {
          name: 'contiguous with offset',
          make: async () => (await fromArray(provider, 'f32', new Float32Array(64).map((_, i) => i))).intoLayout({ shape: [16], byteOffset: 64 }),
          windowBytes: 64,
        },
        {
          name: 'transposed',
          make: async () => (await fromArray(provider, 'f32', new Float32Array(64).map((_, i) => i))).intoLayout({ shape: [8, 8], strides: [1, 8] }),
          windowBytes: 256,
        },
        {
          name: 'u8, unaligned window',
          make: async () => (await fromArray(provider, 'u8', new Uint8Array(12).map((_, i) => i))).intoLayout({ shape: [5], byteOffset: 3 }),
          windowBytes: 8, // bytes [3, 8) widen to the 4-byte window [0, 8)
        },
      ];
      for (const { name, make, windowBytes } of sources) {
        const t = await make();
        const root = t.diagnostics().root;
        const expected = numbers(await t.toArray());
        const before = provider.counters();
        const mark = provider.ledgerMark();
        const p = await t.prepareHost();
        const during = provider.counters();
        const events = provider.ledgerSince(mark);
        expect(walk(p), name).toEqual(expected);
        if (webgpu) {
          expect(during.maps - before.maps, name).toBe(1);
          expect(during.liveResources - before.liveResources, name).toBe(1);
          expect(events.length, name).toBe(2);
          const [alloc, copy] = events;
          expect(alloc, name).toMatchObject({ kind: 'allocation', target: 'staging', reason: 'transfer-destination', bytes: windowBytes });
          expect(copy, name).toEqual({ kind: 'copy', reason: 'transfer', bytes: windowBytes, from: root, to: 'host' });
        } else {
          expect(during.maps - before.maps).toBe(0);
          expect(during.liveResources - before.liveResources).toBe(0);
          expect(during.resourcesCreated - before.resourcesCreated).toBe(0);
          expect(events).toEqual([]);
        }
        p.release();
        const after = provider.counters();
        expect(after.liveResources, name).toBe(before.liveResources);
        expect(after.maps, name).toBe(during.maps);
        expect(after.doubleDestroys).toBe(0);
        expect(provider.ledgerSince(mark), name).toEqual(events); // release records nothing more
        t.dispose();
      }
      // toArray is the same explicit download, no hidden extra copy.
      const t = await fromArray(provider, 'f32', new Float32Array([1, 2, 3]));
      const mark = provider.ledgerMark();
      const cost = await costOf(provider, () => t.toArray());
      expect(cost.maps).toBe(m);
      expect(provider.ledgerSince(mark).map((e) => `${e.kind}:${e.reason}`)).toEqual(
        webgpu ? ['allocation:transfer-destination', 'copy:transfer'] : [],
      );
      t.dispose();
    });

    // -----------------------------------------------------------------------------------------------
    // G5-prepared-write-commit

    it('[G5-prepared-write-commit] contiguous writes are visible after release; discard skips the download', async () => {
      const t = await fromArray(provider, 'f32', new Float32Array([1, 2, 3, 4, 5, 6]));
      const w = await t.prepareHostMut();
      if (w.kind !== 'contiguous') throw new Error('expected contiguous');
      expect(numbers(w.asArray())).toEqual([1, 2, 3, 4, 5, 6]); // loaded by default
      w.asArray()[2] = -3;
      w.asArray()[5] = -6;
      w.release();
      expect(numbers(await t.toArray())).toEqual([1, 2, -3, 4, 5, -6]);

      // discard: no download (WebGPU), every element overwritten, committed with one upload on release.
      const canaried = (await fromArray(provider, 'f32', new Float32Array(12).map((_, i) => -1 - i))).intoLayout({
        shape: [2, 3],
        byteOffset: 12,
      });
      const root = canaried.diagnostics().root;
      const before = provider.counters();
      const mark = provider.ledgerMark();
      const d = await canaried.prepareHostMut({ discard: true });
      if (d.kind !== 'contiguous') throw new Error('expected contiguous');
      expect(provider.counters().maps - before.maps).toBe(0);
      d.asArray().set([10, 11, 12, 13, 14, 15]);
      d.release();
      expect(provider.ledgerSince(mark)).toEqual(webgpu ? [{ kind: 'copy', reason: 'transfer', bytes: 24, from: 'host', to: root }] : []);
      expect(numbers(await canaried.toArray())).toEqual([10, 11, 12, 13, 14, 15]);
      const whole = canaried.intoLayout({ shape: [12] });
      expect(numbers(await whole.toArray())).toEqual([-1, -2, -3, 10, 11, 12, 13, 14, 15, -10, -11, -12]);

      // discard over an unaligned byte window still keeps the neighbouring bytes.
      const bytes = (await fromArray(provider, 'u8', new Uint8Array(12).map((_, i) => 200 + i))).intoLayout({ shape: [5], byteOffset: 3 });
      {
        using b = await bytes.prepareHostMut({ discard: true });
        if (b.kind !== 'contiguous') throw new Error('expected contiguous');
        b.asArray().set([1, 2, 3, 4, 5]);
      }
      const allBytes = bytes.intoLayout({ shape: [12] });
      expect(numbers(await allBytes.toArray())).toEqual([200, 201, 202, 1, 2, 3, 4, 5, 208, 209, 210, 211]);

      // A write access released without changes changes nothing.
      (await t.prepareHostMut()).release();
      expect(numbers(await t.toArray())).toEqual([1, 2, -3, 4, 5, -6]);
      for (const x of [t, whole, allBytes]) x.dispose();
    });

    it('[G5-prepared-write-commit] strided writes change exactly the layout elements; canaries in the gaps survive', async () => {
      const layouts: { dtype: DType; c: LayoutCase }[] = [
        { dtype: 'f32', c: caseOf('f32', [2, 3], [9, 3], 1, 20) }, // stepped, gaps of two
        { dtype: 'i32', c: caseOf('i32', [3, 2], [-6, 1], 13, 20) }, // reversed rows
        { dtype: 'u8', c: caseOf('u8', [3], [-5], 13, 16) }, // bytes in unaligned windows
        { dtype: 'f16', c: caseOf('f16', [2, 2], [1, 5], 3, 12) }, // transposed halves
      ];
      for (const { dtype, c } of layouts) {
        const canary = (i: number): number => (dtype === 'u8' ? 250 - i : dtype === 'f16' ? 60000 - i : -(1000 + i));
        const backing = Array.from({ length: c.backing }, (_, i) => canary(i));
        const t = (await fromArray(provider, dtype, makeArray(dtype, backing) as never)).intoLayout({
          shape: c.shape,
          strides: c.strides,
          byteOffset: c.first * dtypeSize(dtype),
        });
        expect(t.layout.kind).toBe('strided');
        const w = await t.prepareHostMut();
        if (w.kind !== 'strided') throw new Error('expected strided');
        expect(walk(w)).toEqual(c.offsets.map((o) => backing[o])); // loaded before writing
        let k = 0;
        for (const cur = w.cursor(); !cur.done; cur.advance()) cur.array[cur.index] = 7 + k++;
        w.release();
        const fresh = c.offsets.map((_, i) => 7 + i);
        expect(numbers(await t.toArray())).toEqual(fresh);
        const expected = backing.slice();
        c.offsets.forEach((o, i) => (expected[o] = fresh[i]!));
        const whole = t.intoLayout({ shape: [c.backing] });
        expect(numbers(await whole.toArray()), dtype).toEqual(expected);
        whole.dispose();
      }
      // discard is only a hint for contiguous layouts: a strided write access always loads first.
      const s = (await fromArray(provider, 'f32', new Float32Array([1, 2, 3, 4, 5, 6]))).intoLayout({ shape: [3], strides: [2] });
      {
        using w = await s.prepareHostMut({ discard: true });
        expect(walk(w)).toEqual([1, 3, 5]);
        if (w.kind === 'strided') {
          const cur = w.cursor();
          cur.advance();
          cur.array[cur.index] = 33;
        }
      }
      const all = s.intoLayout({ shape: [6] });
      expect(numbers(await all.toArray())).toEqual([1, 2, 33, 4, 5, 6]);
      all.dispose();
    });

    it('[G5-prepared-write-commit] a write whose device was lost before release fails with ENODEV and ends the access, never resolves as committed', async () => {
      if (!webgpu) {
        // host roots have no device to lose: release commits in place
        const t = await fromArray(provider, 'f32', new Float32Array([1, 2]));
        {
          using w = await t.prepareHostMut();
          if (w.kind === 'contiguous') w.asArray()[0] = 5;
        }
        expect(numbers(await t.toArray())).toEqual([5, 2]);
        t.dispose();
        return;
      }
      const lossy = (await pc.make()) as WebGPUProvider;
      try {
        const t = await fromArray(lossy, 'f32', new Float32Array([1, 2, 3, 4]));
        const s = (await fromArray(lossy, 'f32', new Float32Array([1, 2, 3, 4, 5, 6]))).intoLayout({ shape: [3], strides: [2] });
        const baseline = lossy.counters().liveResources;
        const w = await t.prepareHostMut();
        const ws = await s.prepareHostMut();
        if (w.kind === 'contiguous') w.asArray()[0] = 10;
        lossy.faults.loseDevice();
        const mark = lossy.ledgerMark();
        expectCode(() => w.release(), 'ENODEV', 'device-lost');
        expectCode(() => w.release(), 'ERELEASED'); // the access ended all the same
        // through `using`, the scope that held the write rejects instead of resolving
        await expectCodeAsync(async () => {
          using held = ws;
          if (held.kind === 'strided') held.cursor().array[0] = 9;
        }, 'ENODEV', 'device-lost');
        expect(lossy.ledgerSince(mark)).toEqual([]); // no transfer was recorded for the dropped bytes
        expect(lossy.counters().liveResources).toBe(baseline); // both staging buffers were destroyed
        expectFree(t);
        expectFree(s);
        t.dispose();
        s.dispose();
      } finally {
        lossy.destroy();
      }
    });

    // -----------------------------------------------------------------------------------------------
    // G5-prepared-device

    it('[G5-prepared-device] device preparation is binding state over the claim with no host members; host rejects it first', async () => {
      const data = new Float32Array(32).map((_, i) => i + 0.25);
      const t = await allocate(provider, 'f32', { shape: [4, 4], byteOffset: 32 }, { capacityBytes: 128 });
      await t.write(data.subarray(0, 16));
      if (provider.kind === 'webgpu') {
        const p = provider;
        const r = t.prepareDevice();
        expect(r.kind).toBe('device-read');
        const b = r.binding();
        expect(b.offset).toBe(t.diagnostics().claim.start);
        expect(b.offset).toBe(0);
        expect(b.size).toBeGreaterThanOrEqual(t.layout.envelope.end);
        expect(b.size! % 4).toBe(0);
        expect(r.elementOffset).toBe(8);
        expect(r.layout).toBe(t.layout);
        for (const member of ['asArray', 'cursor', 'buffer', 'array']) expect(member in r).toBe(false);
        expect(Object.isFrozen(b)).toBe(true);
        // The binding really is the tensor's memory: the elements sit at elementOffset.
        const raw = new Float32Array(await readThroughBinding(p, b, b.size!));
        expect(numbers(raw.subarray(r.elementOffset, r.elementOffset + 16))).toEqual(numbers(data.subarray(0, 16)));
        expectCode(() => t.viewMut(), 'EBUSY', 'shared-borrowed');
        r.release();

        const wr = t.prepareDeviceMut();
        expect(wr.kind).toBe('device-write');
        const wb = wr.binding();
        expect(wb.buffer).toBe(b.buffer);
        expect(wr.elementOffset).toBe(8);
        for (const member of ['asArray', 'cursor']) expect(member in wr).toBe(false);
        expectCode(() => t.view(), 'EBUSY', 'exclusively-borrowed');
        // Writing through the binding lands in the tensor.
        p.device.queue.writeBuffer(wb.buffer, (wb.offset ?? 0) + wr.elementOffset * 4, new Float32Array([-1, -2]));
        wr.release();
        expect(numbers(await t.toArray()).slice(0, 3)).toEqual([-1, -2, 2.25]);

        // A split child binds from its own claim start (a multiple of the offset alignment).
        const parent = await zeros(provider, 'f32', [128]);
        const [sibling, child] = parent.split([64, 64]);
        await child!.write(new Float32Array(64).map((_, i) => 100 + i));
        const cr = child!.prepareDevice();
        const cb = cr.binding();
        const claim = child!.diagnostics().claim;
        expect(cb.offset).toBe(claim.start);
        expect(cb.offset).toBe(256);
        expect(cb.size).toBe(256);
        expect(cb.offset! % p.device.limits.minStorageBufferOffsetAlignment).toBe(0);
        const childRaw = new Float32Array(await readThroughBinding(p, cb, 256));
        expect(childRaw[0]).toBe(100);
        expect(childRaw[63]).toBe(163);
        cr.release();
        child!.dispose();
        sibling!.dispose();
        // A half-precision offset counts elements of two bytes.
        const half = await allocate(provider, 'f16', { shape: [3], byteOffset: 6 }, { capacityBytes: 16 });
        const hb = half.prepareDevice();
        expect(hb.elementOffset).toBe(3);
        hb.release();
        half.dispose();
      } else {
        const before = memory(provider);
        const v = t.view();
        expectCode(() => v.prepareDevice(), 'ENOTSUP', 'no-device');
        expectCode(() => t.prepareDevice(), 'ENOTSUP', 'no-device');
        expect(numbers(await v.toArray())).toEqual(numbers(data.subarray(0, 16))); // the view still works
        v.release(); // and holds no leaked reborrow
        expectCode(() => t.prepareDeviceMut(), 'ENOTSUP', 'no-device');
        {
          using vm = t.viewMut();
          expectCode(() => vm.prepareDeviceMut(), 'ENOTSUP', 'no-device');
          expect(vm.size).toBe(16);
        }
        expectFree(t);
        expect(memory(provider)).toEqual(before);
        expect(provider.capabilities.deviceBinding).toBe(false);
      }
      t.dispose();
    });

    // -----------------------------------------------------------------------------------------------
    // G5-prepared-constant-cost

    /** The per-access cost table for one tensor; ops whose cost depends on the variant are marked. */
    function accessCosts(t: Tensor<'f32'>): [string, () => unknown, Cost][] {
      const ops: [string, () => unknown, Cost][] = [
        ['view + release', () => t.view().release(), { validations: 0, providerResolutions: 0, maps: 0 }],
        ['asView read', () => t.asView().size, { validations: 0, providerResolutions: 0, maps: 0 }],
        ['prepareHost + release', async () => (await t.prepareHost()).release(), { validations: 0, providerResolutions: 1, maps: m }],
        ['toArray', () => t.toArray(), { validations: 0, providerResolutions: 1, maps: m }],
        ['prepareHostMut + release', async () => (await t.prepareHostMut()).release(), { validations: 0, providerResolutions: 1, maps: m }],
      ];
      if (webgpu) {
        ops.push(['prepareDevice + release', () => t.prepareDevice().release(), { validations: 0, providerResolutions: 1, maps: 0 }]);
        ops.push(['prepareDeviceMut + release', () => t.prepareDeviceMut().release(), { validations: 0, providerResolutions: 1, maps: 0 }]);
      }
      return ops;
    }

    async function measure(t: Tensor<'f32'>): Promise<Record<string, Cost>> {
      const out: Record<string, Cost> = {};
      for (const [name, op, expected] of accessCosts(t)) {
        out[name] = await costOf(provider, op);
        expect(out[name], `${name} on ${t.size} elements`).toEqual(expected);
      }
      return out;
    }

    it('[G5-prepared-constant-cost] 1 and 1,000,000 contiguous elements cost the same validations, resolutions and maps', async () => {
      const one = await fromArray(provider, 'f32', new Float32Array([5]));
      const million = await fromArray(provider, 'f32', new Float32Array(1_000_000).map((_, i) => i));
      const proofs = provider.counters().injectivityProofs;
      const small = await measure(one);
      const large = await measure(million);
      expect(large).toEqual(small);
      // Contiguous writes: one resolution, no map, whatever the size.
      const writeOne = await costOf(provider, () => one.write(new Float32Array([6])));
      const writeMillion = await costOf(provider, () => million.write(new Float32Array(1_000_000)));
      expect(writeMillion).toEqual(writeOne);
      expect(writeOne).toEqual({ validations: 0, providerResolutions: 1, maps: 0 });
      // Each tensor proved write injectivity at most once, in O(rank).
      expect(provider.counters().injectivityProofs - proofs).toBeLessThanOrEqual(2);
      expect((await million.toArray())[999_999]).toBe(0);
      one.dispose();
      million.dispose();
    });

    it('[G5-prepared-constant-cost] a transposed 1000x1000 view costs what a 2x2 transposed view and a single element cost', async () => {
      const n = 1000;
      const big = (await fromArray(provider, 'f32', new Float32Array(n * n).map((_, i) => i))).intoLayout({ shape: [n, n], strides: [1, n] });
      const tiny = (await fromArray(provider, 'f32', new Float32Array([0, 1, 2, 3]))).intoLayout({ shape: [2, 2], strides: [1, 2] });
      const one = await fromArray(provider, 'f32', new Float32Array([9]));
      expect(big.layout.kind).toBe('strided');
      expect(tiny.layout.kind).toBe('strided');
      const costs = [await measure(big), await measure(tiny), await measure(one)];
      expect(costs[0]).toEqual(costs[1]);
      expect(costs[0]).toEqual(costs[2]);
      // Strided writes go through one write preparation: the same cost for 4 and 10^6 elements.
      const w1 = await costOf(provider, () => big.write(new Float32Array(n * n).map((_, i) => -i)));
      const w2 = await costOf(provider, () => tiny.write(new Float32Array([4, 5, 6, 7])));
      expect(w1).toEqual(w2);
      expect(w1).toEqual({ validations: 0, providerResolutions: 1, maps: m });
      // The walk reaches logical element [1, 1] after n + 1 steps; it holds -(1 * n + 1) after the write.
      using p = await big.prepareHost();
      expect(p.kind).toBe('strided');
      if (p.kind === 'strided') {
        const cur = p.cursor();
        for (let i = 0; i < n + 1; i++) cur.advance(); // -> [1, 1]
        expect(cur.array[cur.index]).toBe(-(1 + n));
        let steps = n + 1;
        while (!cur.done) {
          cur.advance();
          steps++;
        }
        expect(steps).toBe(n * n);
      }
      p.release();
      for (const t of [big, tiny, one]) t.dispose();
    });

    // -----------------------------------------------------------------------------------------------
    // G5-prepared-release

    it('[G5-prepared-release] a prepared read holds a shared borrow until released, then every member is ERELEASED', async () => {
      const t = await fromArray(provider, 'f32', new Float32Array([1, 2, 3, 4]));
      const s = (await fromArray(provider, 'f32', new Float32Array([1, 2, 3, 4]))).intoLayout({ shape: [2, 2], strides: [1, 2] });
      const before = provider.counters();
      const p = await t.prepareHost();
      const q = await s.prepareHost();
      for (const owner of [t, s]) {
        expectCode(() => owner.viewMut(), 'EBUSY', 'shared-borrowed');
        expectCode(() => owner.dispose(), 'EBUSY', 'shared-borrowed');
        expectCode(() => owner.intoLayout({ shape: [4] }), 'EBUSY', 'shared-borrowed');
        await expectCodeAsync(() => owner.prepareHostMut(), 'EBUSY', 'shared-borrowed');
        await expectCodeAsync(() => owner.write(new Float32Array(4)), 'EBUSY', 'shared-borrowed');
        // Shared access goes on meanwhile.
        expect(numbers(await owner.toArray()).length).toBe(4);
        owner.view().release();
        expect(owner.moved).toBe(false);
      }
      p.release();
      q.release();
      expectCode(() => (p.kind === 'contiguous' ? p.asArray() : p.cursor()), 'ERELEASED');
      expectCode(() => (q.kind === 'strided' ? q.cursor() : q.asArray()), 'ERELEASED');
      expectCode(() => p.release(), 'ERELEASED');
      expectCode(() => q.release(), 'ERELEASED');
      p[Symbol.dispose](); // disposing a released access is a no-op
      if (provider.kind === 'webgpu') {
        const d = t.prepareDevice();
        expectCode(() => t.viewMut(), 'EBUSY', 'shared-borrowed');
        d.release();
        expectCode(() => d.binding(), 'ERELEASED');
        expectCode(() => d.release(), 'ERELEASED');
        const dw = t.prepareDeviceMut();
        expectCode(() => t.view(), 'EBUSY', 'exclusively-borrowed');
        dw.release();
        expectCode(() => dw.binding(), 'ERELEASED');
      }
      expect(provider.counters().liveResources).toBe(before.liveResources);
      // The owners work again: exclusive borrow, write, consume.
      await t.write(new Float32Array([4, 3, 2, 1]));
      expect(numbers(await t.toArray())).toEqual([4, 3, 2, 1]);
      t.dispose();
      s.dispose();
    });

    it('[G5-prepared-release] a prepared write holds an exclusive borrow: no reads, writes or consumption until release', async () => {
      const t = await fromArray(provider, 'u32', new Uint32Array([1, 2, 3]));
      const w = await t.prepareHostMut();
      expectCode(() => t.view(), 'EBUSY', 'exclusively-borrowed');
      expectCode(() => t.viewMut(), 'EBUSY', 'exclusively-borrowed');
      expectCode(() => t.size, 'EBUSY', 'exclusively-borrowed');
      expectCode(() => t.dispose(), 'EBUSY', 'exclusively-borrowed');
      await expectCodeAsync(() => t.toArray(), 'EBUSY', 'exclusively-borrowed');
      await expectCodeAsync(() => t.prepareHost(), 'EBUSY', 'exclusively-borrowed');
      await expectCodeAsync(() => t.prepareHostMut(), 'EBUSY', 'exclusively-borrowed');
      if (w.kind === 'contiguous') w.asArray()[0] = 10;
      w.release();
      expectCode(() => (w.kind === 'contiguous' ? w.asArray() : w.cursor()), 'ERELEASED');
      expectCode(() => w.release(), 'ERELEASED');
      expect(numbers(await t.toArray())).toEqual([10, 2, 3]);
      // A prepared access made through a registered view pins that view, not just the owner.
      const vm = t.viewMut();
      const inner = await vm.prepareHostMut();
      expectCode(() => vm.release(), 'EBUSY', 'reborrowed');
      await expectCodeAsync(() => vm.write(new Uint32Array(3)), 'EBUSY', 'exclusively-borrowed');
      inner.release();
      vm.release();
      const v = t.view();
      const read = await v.prepareHost();
      expectCode(() => v.release(), 'EBUSY', 'reborrowed');
      read.release();
      v.release();
      t.dispose();
    });

    it('[G5-prepared-release] `using` releases at scope end, also when the scope throws', async () => {
      const t = await fromArray(provider, 'f32', new Float32Array([1, 2, 3, 4]));
      const baseline = provider.counters().liveResources;
      let escaped: PreparedHostRead<'f32'> | undefined;
      {
        using p = await t.prepareHost();
        escaped = p;
        expectCode(() => t.viewMut(), 'EBUSY', 'shared-borrowed');
        if (webgpu) expect(provider.counters().liveResources).toBe(baseline + 1);
      }
      expectCode(() => (escaped!.kind === 'contiguous' ? escaped!.asArray() : escaped!.cursor()), 'ERELEASED');
      expect(provider.counters().liveResources).toBe(baseline);
      expectFree(t);
      {
        using w = await t.prepareHostMut();
        if (w.kind === 'contiguous') w.asArray()[3] = 40;
      }
      expect(numbers(await t.toArray())).toEqual([1, 2, 3, 40]);
      const boom = new Error('scope failed');
      await expect(
        (async () => {
          using w = await t.prepareHostMut();
          if (w.kind === 'contiguous') w.asArray()[0] = 10;
          throw boom;
        })(),
      ).rejects.toBe(boom);
      expectFree(t);
      // Release commits even on the throwing path (release is the one commit point).
      expect(numbers(await t.toArray())).toEqual([10, 2, 3, 40]);
      expect(provider.counters().liveResources).toBe(baseline);
      t.dispose();
    });

    // -----------------------------------------------------------------------------------------------
    // G5-prepared-failure-unchanged

    it('[G5-prepared-failure-unchanged] preparation failing at access time (device lost / no device) leaves borrows and memory unchanged', async () => {
      if (pc.kind === 'webgpu') {
        // A separate provider, so losing its device does not disturb the rest of the suite.
        const lossy = (await pc.make()) as WebGPUProvider;
        try {
          const t = await fromArray(lossy, 'f32', new Float32Array([1, 2, 3, 4]));
          const s = (await fromArray(lossy, 'f32', new Float32Array([1, 2, 3, 4]))).intoLayout({ shape: [2, 2], strides: [1, 2] });
          const v = t.view();
          lossy.faults.loseDevice();
          const loss = await lossy.lost;
          expect(loss.reason).toBe('destroyed');
          const before = lossy.counters();
          await expectCodeAsync(() => v.prepareHost(), 'ENODEV', 'device-lost');
          await expectCodeAsync(() => v.prepareHost(), 'ENODEV', 'device-lost');
          expect(v.shape).toEqual([4]); // the view is unchanged and usable
          v.release(); // and holds no leaked reborrow
          for (const owner of [t, s]) {
            for (let attempt = 0; attempt < 2; attempt++) {
              // Same code twice: the first failure did not leave a borrow behind (that would be EBUSY).
              await expectCodeAsync(() => owner.prepareHostMut(), 'ENODEV', 'device-lost');
              await expectCodeAsync(() => owner.prepareHost(), 'ENODEV', 'device-lost');
              await expectCodeAsync(() => owner.toArray(), 'ENODEV', 'device-lost');
              await expectCodeAsync(() => owner.write(new Float32Array(4)), 'ENODEV', 'device-lost');
              expectCode(() => owner.prepareDevice(), 'ENODEV', 'device-lost');
              expectCode(() => owner.prepareDeviceMut(), 'ENODEV', 'device-lost');
            }
          }
          const after = lossy.counters();
          expect(memory(lossy)).toEqual({ liveRoots: before.liveRoots, liveBytes: before.liveBytes, rootsCreated: before.rootsCreated });
          expect(after.liveResources).toBe(before.liveResources);
          expect(after.maps).toBe(before.maps);
          expectFree(t);
          expectFree(s);
          const roots = after.liveRoots;
          t.dispose();
          s.dispose();
          expect(lossy.counters().liveRoots).toBe(roots - 2);
        } finally {
          lossy.destroy();
        }
        // A loss while a download is in flight: a typed error (or a completed access), never a leak.
        const racing = (await pc.make()) as WebGPUProvider;
        try {
          const t = await fromArray(racing, 'f32', new Float32Array(256).map((_, i) => i));
          const baseline = racing.counters().liveResources;
          const pending = t.prepareHost();
          racing.faults.loseDevice();
          const outcome = await pending.then(
            (p) => {
              p.release();
              return undefined;
            },
            (err: unknown) => err,
          );
          if (outcome !== undefined) {
            expect(outcome).toBeInstanceOf(TenonError);
            expect(['EIO', 'ENODEV']).toContain((outcome as TenonError).code);
          }
          expect(racing.counters().liveResources).toBe(baseline);
          expectFree(t);
          t.dispose();
        } finally {
          racing.destroy();
        }
      } else {
        const t = await fromArray(provider, 'f32', new Float32Array([1, 2, 3, 4]));
        const v = t.view();
        const before = provider.counters();
        for (let attempt = 0; attempt < 2; attempt++) {
          // Same code twice: the first failure did not leave a borrow behind.
          expectCode(() => v.prepareDevice(), 'ENOTSUP', 'no-device');
          expectCode(() => t.prepareDevice(), 'ENOTSUP', 'no-device');
        }
        expect(numbers(await v.toArray())).toEqual([1, 2, 3, 4]); // the view is unchanged and usable
        v.release(); // and holds no leaked reborrow
        for (let attempt = 0; attempt < 2; attempt++) expectCode(() => t.prepareDeviceMut(), 'ENOTSUP', 'no-device');
        expectFree(t);
        const after = provider.counters();
        expect(memory(provider)).toEqual({ liveRoots: before.liveRoots, liveBytes: before.liveBytes, rootsCreated: before.rootsCreated });
        expect(after.liveResources).toBe(before.liveResources);
        t.dispose();
      }
    });

    it('[G5-prepared-failure-unchanged] a refused write preparation (non-injective, busy, empty binding) leaves the borrow free', async () => {
      const repeat = (await fromArray(provider, 'f32', new Float32Array([1, 2, 3]))).intoLayout({ shape: [2, 3], strides: [0, 1] });
      const before = provider.counters();
      for (let attempt = 0; attempt < 2; attempt++) {
        await expectCodeAsync(() => repeat.prepareHostMut(), 'EINVAL', 'non-injective');
        expectCode(() => repeat.prepareDeviceMut(), 'EINVAL', 'non-injective');
      }
      {
        // Through a registered mutable view: the view stays usable and can be released.
        const vm = repeat.viewMut();
        await expectCodeAsync(() => vm.prepareHostMut(), 'EINVAL', 'non-injective');
        expect(numbers(await vm.asView().toArray())).toEqual([1, 2, 3, 1, 2, 3]);
        vm.release();
      }
      expectFree(repeat);
      expect(numbers(await repeat.toArray())).toEqual([1, 2, 3, 1, 2, 3]);

      // Busy: a live shared view makes write preparation fail before anything is lent.
      const t = await fromArray(provider, 'f32', new Float32Array([5, 6]));
      const v = t.view();
      await expectCodeAsync(() => t.prepareHostMut(), 'EBUSY', 'shared-borrowed');
      expectCode(() => t.prepareDeviceMut(), 'EBUSY', 'shared-borrowed');
      v.release();
      {
        using w = await t.prepareHostMut();
        expect(walk(w)).toEqual([5, 6]);
      }

      // An empty claim has no binding on WebGPU (and no device on host): refused, borrow returned.
      const empty = await zeros(provider, 'f32', [0]);
      const mid = memory(provider);
      for (let attempt = 0; attempt < 2; attempt++) {
        if (webgpu) {
          expectCode(() => empty.prepareDevice(), 'EINVAL', 'empty-binding');
          expectCode(() => empty.prepareDeviceMut(), 'EINVAL', 'empty-binding');
        } else {
          expectCode(() => empty.prepareDevice(), 'ENOTSUP', 'no-device');
        }
      }
      expectFree(empty);
      {
        using p = await empty.prepareHost();
        expect(walk(p)).toEqual([]);
      }
      expect(memory(provider)).toEqual(mid);
      expect(provider.counters().liveResources).toBe(before.liveResources + 2);
      for (const x of [repeat, t, empty]) x.dispose();
      expect(provider.counters().liveRoots).toBe(before.liveRoots - 1);
    });
  });
}

// Guarantee suite: checked layouts (G1 "validate once, then traverse": shape/stride/offset arithmetic,
// bounds, alignment, dtype, layout kinds, write injectivity).
//
// Plan. Every test runs on every provider of the lane (node: host + WebGPU/Dawn; browser: WebGPU/Chromium
// + host over SharedArrayBuffer) through the public API only:
//   - exact arithmetic: element counts, stride reaches and offset + reach past Number.MAX_SAFE_INTEGER
//     are EOVERFLOW (property), and the boundaries N / N+1 around MAX_SAFE_INTEGER are exact (control);
//   - bounds: a layout reaching one element past its claim, or one element before it (reverse strides),
//     is EINVAL 'out-of-span'; the exact fit is accepted and its envelope lies inside the claim;
//   - alignment: byteOffset not a multiple of the element size is EINVAL 'misaligned' (u8 is the control);
//   - dtype: unknown dtypes are 'unknown-dtype', host arrays of another element type 'dtype-mismatch';
//   - kinds: random layouts (empty, singleton, row-major, permuted, reversed, stepped, random strides)
//     over a backing array 0..n-1 are classified and read exactly as a tiny reference computes them;
//   - injectivity: layouts that reach one element twice read fine but refuse every write path with
//     EINVAL 'non-injective'; accepted writes change exactly the layout's elements.
// Every rejected call is followed by: live roots/bytes and roots created unchanged, and the object used
// (tensor, group) still usable.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allocate, createAllocationGroup, dtypeSize, fromArray, zeros } from '../../src/index.js';
import type { AnyTypedArray, DType, HostProvider, Tensor, WebGPUProvider } from '../../src/index.js';
import { expectCode, expectCodeAsync } from '../support/expect-error.js';
import { fc, fcParams } from '../support/fc.js';
import { providerCases } from '../support/providers.js';
import { HOST_ARRAY, backingValues, isContiguousRef, isInjectiveRef, isNestedRef, makeArray, offsetsOf, rowMajor, valueAt } from '../support/layout-reference.js';
import type { LayoutRef } from '../support/layout-reference.js';

type AnyProvider = HostProvider | WebGPUProvider;

const MAX = Number.MAX_SAFE_INTEGER;
const ALL_DTYPES: readonly DType[] = ['f32', 'f16', 'i32', 'u32', 'u8'];
const WIDE_DTYPES: readonly DType[] = ['f32', 'f16', 'i32', 'u32'];


/** Every typed-array constructor a caller might hand in by mistake. */
const ARRAY_KINDS: readonly (new (length: number) => ArrayLike<number>)[] = [
  Float32Array,
  Float64Array,
  Int8Array,
  Int16Array,
  Int32Array,
  Uint8Array,
  Uint8ClampedArray,
  Uint16Array,
  Uint32Array,
];

// ---------------------------------------------------------------------------------------------------
// Reference model: element indices of a layout over a 1-D backing array, computed the slow obvious way.

interface LayoutCase extends LayoutRef {
  /** Smallest `first` that keeps the lowest reach in span (-sum of negative reaches). */
  readonly minFirst: number;
}


function specOf(c: LayoutCase): { shape: number[]; strides: number[]; byteOffset: number } {
  return { shape: c.shape, strides: c.strides, byteOffset: c.first * dtypeSize(c.dtype) };
}

const STRIDE_MODES = ['row-major', 'permuted', 'reversed', 'stepped', 'broadcast', 'random'] as const;
type StrideMode = (typeof STRIDE_MODES)[number];

const dimArb = fc.record({
  n: fc.oneof(
    { weight: 1, arbitrary: fc.constant(0) },
    { weight: 2, arbitrary: fc.constant(1) },
    { weight: 12, arbitrary: fc.integer({ min: 2, max: 4 }) },
  ),
  s: fc.integer({ min: -3, max: 3 }),
  flip: fc.boolean(),
  key: fc.nat(100),
  pad: fc.nat(2),
});

function buildCase(r: {
  dtype: DType;
  dims: { n: number; s: number; flip: boolean; key: number; pad: number }[];
  mode: StrideMode;
  inner: number;
  front: number;
  back: number;
}): LayoutCase {
  const shape = r.dims.map((d) => d.n);
  const rank = shape.length;
  let strides: number[];
  switch (r.mode) {
    case 'row-major':
      strides = rowMajor(shape);
      break;
    case 'permuted': {
      // Memory order given by the keys: a transpose of a row-major array.
      const order = shape.map((_, d) => d).sort((a, b) => r.dims[a]!.key - r.dims[b]!.key || a - b);
      strides = new Array<number>(rank);
      let acc = 1;
      for (let i = rank - 1; i >= 0; i--) {
        strides[order[i]!] = acc;
        acc *= Math.max(shape[order[i]!]!, 1);
      }
      break;
    }
    case 'reversed':
      strides = rowMajor(shape).map((s, d) => (r.dims[d]!.flip ? -s : s));
      break;
    case 'stepped': {
      // Row-major with an inner step and padding after every row: injective with gaps between elements.
      strides = new Array<number>(rank);
      let acc = r.inner;
      for (let d = rank - 1; d >= 0; d--) {
        strides[d] = acc;
        acc = acc * Math.max(shape[d]!, 1) + r.dims[d]!.pad;
      }
      break;
    }
    case 'broadcast':
      // Row-major with some dimensions repeated (stride 0): readable, never writable when extent > 1.
      strides = rowMajor(shape).map((s, d) => (r.dims[d]!.flip ? 0 : s));
      break;
    case 'random':
      strides = r.dims.map((d) => d.s);
      break;
  }
  const size = shape.reduce((a, b) => a * b, 1);
  let low = 0;
  let high = 0;
  if (size > 0) {
    for (let d = 0; d < rank; d++) {
      const reach = strides[d]! * (shape[d]! - 1);
      if (reach < 0) low += reach;
      else high += reach;
    }
  }
  const first = size === 0 ? r.front : -low + r.front;
  const backing = size === 0 ? first + r.back : first + high + 1 + r.back;
  return { dtype: r.dtype, shape, strides, first, backing, offsets: offsetsOf(shape, strides, first), minFirst: -low };
}

function caseArb(dtypes: readonly DType[] = ALL_DTYPES, modes: readonly StrideMode[] = STRIDE_MODES): fc.Arbitrary<LayoutCase> {
  return fc
    .record({
      dtype: fc.constantFrom(...dtypes),
      dims: fc.array(dimArb, { minLength: 0, maxLength: 4 }),
      mode: fc.constantFrom(...modes),
      inner: fc.integer({ min: 1, max: 3 }),
      front: fc.nat(3),
      back: fc.nat(3),
    })
    .map(buildCase);
}

// ---------------------------------------------------------------------------------------------------
// Helpers on the public API.

function memory(p: AnyProvider): { liveRoots: number; liveBytes: number; rootsCreated: number } {
  const { liveRoots, liveBytes, rootsCreated } = p.counters();
  return { liveRoots, liveBytes, rootsCreated };
}

/** A 1-D tensor holding backingValues(c), reinterpreted with the case's layout. */
async function buildTensor(p: AnyProvider, c: LayoutCase): Promise<Tensor> {
  const backing = await fromArray(p, c.dtype, makeArray(c.dtype, backingValues(c)));
  return backing.intoLayout(specOf(c));
}

/** The owner is not moved and can be borrowed exclusively (so no borrow leaked). */
function expectFree(t: Tensor): void {
  expect(t.moved).toBe(false);
  const vm = t.viewMut();
  vm.release();
}

function numbers(a: ArrayLike<number>): number[] {
  return Array.from(a);
}

for (const pc of providerCases()) {
  describe(`layouts on ${pc.name}`, () => {
    let provider: AnyProvider;
    const webgpu = pc.kind === 'webgpu';
    /** Property runs: every WebGPU read is a real GPU round trip, so keep those modest. */
    const runs = webgpu ? 30 : 200;

    beforeAll(async () => {
      provider = await pc.make();
    });

    afterAll(() => {
      if (provider?.kind === 'webgpu') provider.destroy();
    });

    // -----------------------------------------------------------------------------------------------
    // G1-layout-exact

    it('[G1-layout-exact] element counts past MAX_SAFE_INTEGER are EOVERFLOW on every constructor (property)', async () => {
      const shapeArb = fc
        .record({
          a: fc.integer({ min: 2 ** 27, max: 2 ** 40 }),
          extra: fc.nat(1000),
          ones: fc.nat(2),
          swap: fc.boolean(),
          dtype: fc.constantFrom(...ALL_DTYPES),
        })
        .map(({ a, extra, ones, swap, dtype }) => {
          const b = Math.floor(MAX / a) + 1 + extra; // a * b > MAX, both safe
          const dims = swap ? [b, a] : [a, b];
          return { dtype, shape: [...new Array<number>(ones).fill(1), ...dims] };
        });
      const host = await fromArray(provider, 'f32', new Float32Array([1, 2, 3, 4]));
      await fc.assert(
        fc.asyncProperty(shapeArb, async ({ dtype, shape }) => {
          expect(shape.reduce((x, y) => x * y, 1)).toBeGreaterThan(MAX);
          const before = memory(provider);
          await expectCodeAsync(() => allocate(provider, dtype, { shape }), 'EOVERFLOW', 'overflow');
          await expectCodeAsync(() => allocate(provider, dtype, { shape }, { capacityBytes: 64 }), 'EOVERFLOW', 'overflow');
          await expectCodeAsync(() => zeros(provider, dtype, shape), 'EOVERFLOW', 'overflow');
          expectCode(() => host.intoLayout({ shape, strides: shape.map(() => 0) }, dtype), 'EOVERFLOW', 'overflow');
          expect(memory(provider)).toEqual(before);
          expectFree(host);
        }),
        fcParams(runs),
      );
      expect(numbers(await host.toArray())).toEqual([1, 2, 3, 4]);
      host.dispose();
    });

    it('[G1-layout-exact] stride reaches and offset + reach past MAX_SAFE_INTEGER are EOVERFLOW (property)', async () => {
      const reachArb = fc
        .record({
          n: fc.integer({ min: 3, max: 2 ** 30 }),
          extra: fc.nat(2 ** 20),
          negative: fc.boolean(),
          dtype: fc.constantFrom(...ALL_DTYPES),
        })
        .map(({ n, extra, negative, dtype }) => {
          const s = Math.min(Math.floor(MAX / (n - 1)) + 1 + extra, MAX); // s * (n - 1) > MAX
          return { dtype, spec: { shape: [1, n], strides: [7, negative ? -s : s] } };
        });
      const offsetArb = fc
        .record({ dtype: fc.constantFrom(...ALL_DTYPES), k: fc.integer({ min: 2 ** 40, max: 2 ** 49 }), extra: fc.nat(2 ** 20) })
        .map(({ dtype, k, extra }) => {
          // first = k elements, reach h with k + h > MAX (each safe on its own).
          const h = Math.min(MAX - k + 1 + extra, MAX);
          return { dtype, spec: { shape: [2], strides: [h], byteOffset: k * dtypeSize(dtype) } };
        });
      const lowerArb = fc
        .record({
          dtype: fc.constantFrom(...ALL_DTYPES),
          a: fc.integer({ min: 2 ** 51, max: MAX }),
          extra: fc.nat(2 ** 20),
          k: fc.integer({ min: 0, max: MAX }),
        })
        .map(({ dtype, a, extra, k }) => {
          // Two reverse reaches whose sum passes -MAX; even the largest offset cannot make that exact.
          const b = Math.min(MAX - a + 1 + extra, MAX);
          const item = dtypeSize(dtype);
          return { dtype, spec: { shape: [2, 2], strides: [-a, -b], byteOffset: Math.floor(k / item) * item } };
        });
      const host = await fromArray(provider, 'u8', new Uint8Array([9, 8, 7, 6]));
      await fc.assert(
        fc.asyncProperty(fc.oneof(reachArb, offsetArb, lowerArb), async ({ dtype, spec }) => {
          const before = memory(provider);
          await expectCodeAsync(() => allocate(provider, dtype, spec, { capacityBytes: 64 }), 'EOVERFLOW', 'overflow');
          expectCode(() => host.intoLayout(spec, dtype), 'EOVERFLOW', 'overflow');
          expect(memory(provider)).toEqual(before);
          expectFree(host);
        }),
        fcParams(runs),
      );
      expect(numbers(await host.toArray())).toEqual([9, 8, 7, 6]);
      host.dispose();
    });

    it('[G1-layout-exact] the boundaries around MAX_SAFE_INTEGER are exact: N is checked against the claim, N+1 overflows', async () => {
      const before = memory(provider);
      const cap = { capacityBytes: 64 };
      // MAX elements of one byte end exactly at byte MAX: representable, so it is a span error with the exact range.
      let err = await expectCodeAsync(() => allocate(provider, 'u8', { shape: [MAX] }, cap), 'EINVAL', 'out-of-span');
      expect(err.range).toEqual({ start: 0, end: MAX });
      // Two bytes each: the end byte 2 * MAX is past the safe range.
      await expectCodeAsync(() => allocate(provider, 'f16', { shape: [MAX] }, cap), 'EOVERFLOW', 'overflow');
      // 2^26 * 2^27 = 2^53 elements overflows; one row fewer is exact.
      await expectCodeAsync(() => allocate(provider, 'u8', { shape: [2 ** 26, 2 ** 27] }, cap), 'EOVERFLOW', 'overflow');
      err = await expectCodeAsync(() => allocate(provider, 'u8', { shape: [2 ** 26, 2 ** 27 - 1] }, cap), 'EINVAL', 'out-of-span');
      expect(err.range).toEqual({ start: 0, end: 2 ** 53 - 2 ** 26 });
      // A stride of MAX - 1 ends at byte MAX; a stride of MAX ends one past it.
      err = await expectCodeAsync(() => allocate(provider, 'u8', { shape: [2], strides: [MAX - 1] }, cap), 'EINVAL', 'out-of-span');
      expect(err.range).toEqual({ start: 0, end: MAX });
      await expectCodeAsync(() => allocate(provider, 'u8', { shape: [2], strides: [MAX] }, cap), 'EOVERFLOW', 'overflow');
      // Reverse reach of -MAX bytes is exact for u8 (a span error below byte 0) and overflows for f32.
      err = await expectCodeAsync(() => allocate(provider, 'u8', { shape: [2], strides: [-MAX] }, cap), 'EINVAL', 'out-of-span');
      expect(err.range).toEqual({ start: -MAX, end: 1 });
      await expectCodeAsync(() => allocate(provider, 'f32', { shape: [2], strides: [-MAX] }, cap), 'EOVERFLOW', 'overflow');
      // Two reverse reaches summing to -(2^53 + 3): not representable, so it must not be rounded and then
      // compared (rounded, the largest offset would put the low end at -9 and report a span error).
      const lower = { shape: [2, 2], strides: [-(2 ** 52 + 1), -(2 ** 52 + 2)], byteOffset: MAX - 4 };
      await expectCodeAsync(() => allocate(provider, 'u8', lower, cap), 'EOVERFLOW', 'overflow');
      // The same with reaches summing to exactly -MAX is exact: low end (MAX - 4) - MAX = -4, a span error.
      err = await expectCodeAsync(
        () => allocate(provider, 'u8', { ...lower, strides: [-(2 ** 52), -(2 ** 52 - 1)] }, cap),
        'EINVAL',
        'out-of-span',
      );
      expect(err.range!.start).toBe(-4);
      // Values that are not safe integers at all are malformed input, not arithmetic.
      await expectCodeAsync(() => allocate(provider, 'u8', { shape: [2], strides: [2 ** 53] }, cap), 'EINVAL', 'bad-strides');
      await expectCodeAsync(() => allocate(provider, 'u8', { shape: [2 ** 53] }, cap), 'EINVAL', 'bad-shape');
      await expectCodeAsync(() => allocate(provider, 'u8', { shape: [2], byteOffset: 2 ** 53 }, cap), 'EINVAL', 'bad-offset');
      expect(memory(provider)).toEqual(before);
      // Control: a huge extent with stride 0 stays exact and in span (it reads one element MAX times).
      const t = await allocate(provider, 'u8', { shape: [MAX], strides: [0] }, { capacityBytes: 4 });
      expect(t.size).toBe(MAX);
      expect(t.layout.envelope).toEqual({ start: 0, end: 1 });
      t.dispose();
      expect(memory(provider).liveRoots).toBe(before.liveRoots);
    });

    // -----------------------------------------------------------------------------------------------
    // G1-layout-bounds

    it('[G1-layout-bounds] one element past the claim, or before it, is out-of-span; the exact fit is accepted (property)', async () => {
      const nonEmpty = caseArb().filter((c) => c.offsets.length > 0);
      await fc.assert(
        fc.asyncProperty(nonEmpty, fc.integer({ min: 1, max: 3 }), async (c, k) => {
          const item = dtypeSize(c.dtype);
          const top = Math.max(...c.offsets);
          const exactEnd = (top + 1) * item;
          const lowStart = Math.min(...c.offsets) * item;
          const slack = c.backing - 1 - top;
          const backing = await fromArray(provider, c.dtype, makeArray(c.dtype, backingValues(c)));
          const before = memory(provider);
          // Shifted up by k elements: the top reaches past the claim (unless the back slack absorbs it).
          const up = { ...specOf(c), byteOffset: (c.first + k + slack) * item };
          let err = expectCode(() => backing.intoLayout(up), 'EINVAL', 'out-of-span');
          expect(err.range).toEqual({
            start: lowStart + (up.byteOffset - c.first * item),
            end: exactEnd + (up.byteOffset - c.first * item),
          });
          // Shifted down below the lowest reachable element (only reachable through negative strides).
          const downFirst = c.minFirst - k;
          if (downFirst >= 0) {
            err = expectCode(() => backing.intoLayout({ ...specOf(c), byteOffset: downFirst * item }), 'EINVAL', 'out-of-span');
            expect(err.range!.start).toBe(-k * item);
          }
          // allocate: capacity one byte short of the envelope end is rejected before any root exists.
          await expectCodeAsync(() => allocate(provider, c.dtype, specOf(c), { capacityBytes: exactEnd - 1 }), 'EINVAL', 'out-of-span');
          expect(memory(provider)).toEqual(before);
          expectFree(backing);
          // Controls: the exact fit (capacity = envelope end) and the case itself are accepted, inside the claim.
          const fit = await allocate(provider, c.dtype, specOf(c), { capacityBytes: exactEnd });
          expect(fit.layout.envelope).toEqual({ start: lowStart, end: exactEnd });
          fit.dispose();
          const t = backing.intoLayout(specOf(c));
          const { envelope, claim } = t.diagnostics();
          expect(envelope).toEqual({ start: lowStart, end: exactEnd });
          expect(exactEnd).toBeLessThanOrEqual(claim.end - claim.start);
          t.dispose();
          expect(memory(provider).liveRoots).toBe(before.liveRoots - 1);
        }),
        fcParams(runs),
      );
    });

    it('[G1-layout-bounds] empty layouts may sit at the claim end but not past it; group aliases are bounded too', async () => {
      const t = await fromArray(provider, 'f32', new Float32Array([1, 2, 3, 4]));
      const before = memory(provider);
      expectCode(() => t.intoLayout({ shape: [0], byteOffset: 20 }), 'EINVAL', 'out-of-span');
      expectCode(() => t.intoLayout({ shape: [5] }), 'EINVAL', 'out-of-span');
      expectCode(() => t.intoLayout({ shape: [2, 2], strides: [1, 3] }), 'EINVAL', 'out-of-span');
      expectCode(() => t.intoLayout({ shape: [2], strides: [-1] }), 'EINVAL', 'out-of-span');
      expect(memory(provider)).toEqual(before);
      expect(numbers(await t.toArray())).toEqual([1, 2, 3, 4]);

      const group = createAllocationGroup();
      const { allocation, descriptor } = group.insert(t);
      const slots = group.descriptorSlots;
      expectCode(() => group.alias(allocation, 'f32', { shape: [2], strides: [2], byteOffset: 8 }), 'EINVAL', 'out-of-span');
      expectCode(() => group.alias(allocation, 'u8', { shape: [17] }), 'EINVAL', 'out-of-span');
      expect(group.descriptorSlots).toBe(slots);
      expect(memory(provider)).toEqual(before);
      // Controls: the same aliases one element shorter fit.
      const empty = group.alias(allocation, 'f32', { shape: [0], byteOffset: 16 });
      const bytes = group.alias(allocation, 'u8', { shape: [16] });
      const last = group.alias(allocation, 'f32', { shape: [2], strides: [-3], byteOffset: 12 });
      {
        using v = group.view(empty);
        expect(v.size).toBe(0);
        expect(v.layout.envelope).toEqual({ start: 16, end: 16 });
        expect(numbers(await v.toArray())).toEqual([]);
      }
      {
        using v = group.view(bytes);
        expect(v.size).toBe(16);
      }
      {
        using v = group.view(last);
        expect(numbers(await v.toArray())).toEqual([4, 1]);
      }
      {
        using v = group.view(descriptor);
        expect(numbers(await v.toArray())).toEqual([1, 2, 3, 4]);
      }
      group.dispose();
      expect(memory(provider).liveRoots).toBe(before.liveRoots - 1);
    });

    // -----------------------------------------------------------------------------------------------
    // G1-layout-align

    it('[G1-layout-align] a byteOffset that is not a multiple of the element size is misaligned everywhere (property)', async () => {
      const arb = fc.record({
        dtype: fc.constantFrom(...WIDE_DTYPES),
        k: fc.nat(8),
        r: fc.integer({ min: 1, max: 3 }),
        shape: fc.array(fc.integer({ min: 0, max: 3 }), { maxLength: 3 }),
      });
      const claimBytes = 256;
      const host = await fromArray(provider, 'u8', new Uint8Array(claimBytes).map((_, i) => i));
      const group = createAllocationGroup();
      const { allocation } = group.insert(await zeros(provider, 'u8', [claimBytes]));
      await fc.assert(
        fc.asyncProperty(arb, async ({ dtype, k, r, shape }) => {
          const item = dtypeSize(dtype);
          fc.pre(r < item);
          const before = memory(provider);
          const slots = group.descriptorSlots;
          const bad = { shape, byteOffset: k * item + r };
          await expectCodeAsync(() => allocate(provider, dtype, bad, { capacityBytes: claimBytes }), 'EINVAL', 'misaligned');
          expectCode(() => host.intoLayout(bad, dtype), 'EINVAL', 'misaligned');
          expectCode(() => group.alias(allocation, dtype, bad), 'EINVAL', 'misaligned');
          expect(group.descriptorSlots).toBe(slots);
          expect(memory(provider)).toEqual(before);
          expectFree(host);
          // Control: the aligned offset and any u8 offset are accepted.
          const ok = await allocate(provider, dtype, { shape, byteOffset: k * item }, { capacityBytes: claimBytes });
          expect(ok.byteOffset).toBe(k * item);
          ok.dispose();
          group.alias(allocation, 'u8', { shape, byteOffset: k * item + r });
        }),
        fcParams(runs),
      );
      // The rejected reinterpretations left the bytes alone.
      expect(numbers(await host.toArray())).toEqual(Array.from({ length: claimBytes }, (_, i) => i));
      host.dispose();
      group.dispose();
    });

    // Alignment is checked for element 0's position in the root, not in the claim: a host split may start
    // a claim at any byte (claimAlignment 1), and a wider reinterpretation of such a child must be refused
    // when it is built, never fail later when a typed array is made over it.
    it('[G1-layout-align] reinterpreting a claim that starts at a byte not aligned to the new element size is rejected when built', async () => {
      const align = provider.capabilities.claimAlignment;
      const bytes = Uint8Array.from({ length: 2 * Math.max(align, 8) }, (_, i) => i);
      const t = await fromArray(provider, 'u8', bytes);
      const head = align === 1 ? 1 : align; // a legal split point for this provider
      const [first, second] = t.split([head, bytes.length - head]);
      const before = provider.counters();
      if (head % 4 !== 0) {
        // the second claim starts at root byte 1: no f32 or f16 element can start at its byte 0
        expectCode(() => second!.intoLayout({ shape: [1] }, 'f32'), 'EINVAL', 'misaligned');
        expectCode(() => second!.intoLayout({ shape: [1] }, 'f16'), 'EINVAL', 'misaligned');
        // three bytes further in, an f32 is aligned in the root and accepted
        const ok = second!.intoLayout({ shape: [1], byteOffset: 3 }, 'f32');
        expect(ok.size).toBe(1);
        expect(Array.from(new Uint8Array((await ok.toArray()).buffer))).toEqual([4, 5, 6, 7]);
        ok.dispose();
      } else {
        // device claims start on binding boundaries, which are aligned for every dtype
        const ok = second!.intoLayout({ shape: [1] }, 'f32');
        expect(Array.from(new Uint8Array((await ok.toArray()).buffer))).toEqual(Array.from(bytes.subarray(head, head + 4)));
        ok.dispose();
      }
      expect(provider.counters().liveRoots).toBe(before.liveRoots);
      first!.dispose();
    });

    // -----------------------------------------------------------------------------------------------
    // G1-layout-dtype

    it('[G1-layout-dtype] unknown dtypes are rejected by every constructor and reinterpretation, changing nothing', async () => {
      const t = await fromArray(provider, 'i32', new Int32Array([5, -6, 7, -8]));
      const group = createAllocationGroup();
      const { allocation, descriptor } = group.insert(await fromArray(provider, 'u8', new Uint8Array([1, 2, 3, 4])));
      const before = memory(provider);
      const slots = group.descriptorSlots;
      for (const name of ['f64', 'bf16', 'F32', 'float32', '', 'constructor', 'toString']) {
        const dtype = name as DType;
        await expectCodeAsync(() => allocate(provider, dtype, { shape: [2] }), 'EINVAL', 'unknown-dtype');
        await expectCodeAsync(() => zeros(provider, dtype, [2]), 'EINVAL', 'unknown-dtype');
        await expectCodeAsync(() => fromArray(provider, dtype, new Float32Array(2) as never), 'EINVAL', 'unknown-dtype');
        expectCode(() => t.intoLayout({ shape: [4] }, dtype), 'EINVAL', 'unknown-dtype');
        expectCode(() => group.alias(allocation, dtype, { shape: [1] }), 'EINVAL', 'unknown-dtype');
      }
      expect(group.descriptorSlots).toBe(slots);
      expect(memory(provider)).toEqual(before);
      expectFree(t);
      expect(numbers(await t.toArray())).toEqual([5, -6, 7, -8]);
      {
        using v = group.view(descriptor);
        expect(numbers(await v.toArray())).toEqual([1, 2, 3, 4]);
      }
      t.dispose();
      group.dispose();
    });

    it('[G1-layout-dtype] host arrays of another element type are dtype-mismatch for fromArray and write, contiguous or strided', async () => {
      for (const dtype of ALL_DTYPES) {
        const contiguous = await fromArray(provider, dtype, makeArray(dtype, [1, 2, 3, 4, 5, 6]));
        const strided = (await fromArray(provider, dtype, makeArray(dtype, [10, 20, 30, 40, 50, 60]))).intoLayout({
          shape: [3],
          strides: [-2],
          byteOffset: 4 * dtypeSize(dtype),
        });
        const before = memory(provider);
        for (const Ctor of ARRAY_KINDS) {
          if (Ctor === HOST_ARRAY[dtype]) continue;
          await expectCodeAsync(() => fromArray(provider, dtype, new Ctor(6) as never), 'EINVAL', 'dtype-mismatch');
          await expectCodeAsync(() => contiguous.write(new Ctor(6) as never), 'EINVAL', 'dtype-mismatch');
          await expectCodeAsync(() => strided.write(new Ctor(3) as never), 'EINVAL', 'dtype-mismatch');
        }
        await expectCodeAsync(() => fromArray(provider, dtype, [1, 2] as never), 'EINVAL', 'dtype-mismatch');
        await expectCodeAsync(() => contiguous.write([1, 2, 3, 4, 5, 6] as never), 'EINVAL', 'dtype-mismatch');
        {
          // Through a registered exclusive view as well; the view stays usable.
          using vm = contiguous.viewMut();
          await expectCodeAsync(() => vm.write(new Float64Array(6) as never), 'EINVAL', 'dtype-mismatch');
          await expectCodeAsync(() => vm.write(makeArray(dtype, [1, 2, 3]) as never), 'EINVAL', 'length-mismatch');
          expect(vm.size).toBe(6);
        }
        await expectCodeAsync(() => strided.write(makeArray(dtype, [1, 2, 3, 4]) as never), 'EINVAL', 'length-mismatch');
        expect(memory(provider)).toEqual(before);
        expectFree(contiguous);
        expectFree(strided);
        expect(numbers(await contiguous.toArray())).toEqual([1, 2, 3, 4, 5, 6]);
        expect(numbers(await strided.toArray())).toEqual([50, 30, 10]);
        // Control: the right array type is accepted.
        await strided.write(makeArray(dtype, [7, 8, 9]) as never);
        expect(numbers(await strided.toArray())).toEqual([7, 8, 9]);
        contiguous.dispose();
        strided.dispose();
      }
    });

    // -----------------------------------------------------------------------------------------------
    // G1-layout-kinds

    it('[G1-layout-kinds] random layouts are classified and read exactly like the reference (property)', async () => {
      await fc.assert(
        fc.asyncProperty(caseArb(), async (c) => {
          const baseline = memory(provider).liveRoots;
          const t = await buildTensor(provider, c);
          const item = dtypeSize(c.dtype);
          const size = c.offsets.length;
          const contiguous = isContiguousRef(c);
          expect(t.size).toBe(size);
          expect(t.shape).toEqual(c.shape);
          expect(t.strides).toEqual(c.strides);
          expect(t.byteOffset).toBe(c.first * item);
          expect(t.layout.kind).toBe(contiguous ? 'contiguous' : 'strided');
          expect(t.isContiguous).toBe(contiguous);
          expect(t.layout.envelope).toEqual(
            size === 0
              ? { start: c.first * item, end: c.first * item }
              : { start: Math.min(...c.offsets) * item, end: (Math.max(...c.offsets) + 1) * item },
          );
          const values = backingValues(c);
          expect(numbers(await t.toArray())).toEqual(c.offsets.map((o) => values[o]));
          t.dispose();
          expect(memory(provider).liveRoots).toBe(baseline);
        }),
        fcParams(runs),
      );
    });

    it('[G1-layout-kinds] empty, singleton, scalar, reverse, transposed, stepped and broadcast layouts by example', async () => {
      const base = () => fromArray(provider, 'f32', new Float32Array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]));
      const cases: { spec: { shape: number[]; strides?: number[]; byteOffset?: number }; kind: string; values: number[] }[] = [
        { spec: { shape: [0] }, kind: 'contiguous', values: [] },
        { spec: { shape: [3, 0, 2], strides: [-5, 7, 3], byteOffset: 0 }, kind: 'contiguous', values: [] },
        { spec: { shape: [0], byteOffset: 48 }, kind: 'contiguous', values: [] },
        { spec: { shape: [] }, kind: 'contiguous', values: [0] },
        { spec: { shape: [], byteOffset: 44 }, kind: 'contiguous', values: [11] },
        { spec: { shape: [1, 1, 1], strides: [-9, 100, 0], byteOffset: 20 }, kind: 'contiguous', values: [5] },
        { spec: { shape: [2, 1, 3], strides: [3, -50, 1], byteOffset: 8 }, kind: 'contiguous', values: [2, 3, 4, 5, 6, 7] },
        { spec: { shape: [4], strides: [-1], byteOffset: 12 }, kind: 'strided', values: [3, 2, 1, 0] },
        { spec: { shape: [3, 4], strides: [-4, -1], byteOffset: 44 }, kind: 'strided', values: [11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0] },
        { spec: { shape: [4, 3], strides: [1, 4] }, kind: 'strided', values: [0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11] },
        { spec: { shape: [2, 3], strides: [6, 2], byteOffset: 4 }, kind: 'strided', values: [1, 3, 5, 7, 9, 11] },
        { spec: { shape: [3, 2], strides: [0, 1], byteOffset: 16 }, kind: 'strided', values: [4, 5, 4, 5, 4, 5] },
        { spec: { shape: [2, 2, 2], strides: [1, 6, -3], byteOffset: 12 }, kind: 'strided', values: [3, 0, 9, 6, 4, 1, 10, 7] },
      ];
      for (const { spec, kind, values } of cases) {
        const t = (await base()).intoLayout(spec);
        expect(t.layout.kind, JSON.stringify(spec)).toBe(kind);
        expect(numbers(await t.toArray()), JSON.stringify(spec)).toEqual(values);
        {
          using v = t.view();
          expect(v.layout.kind).toBe(kind);
          expect(numbers(await v.toArray())).toEqual(values);
        }
        t.dispose();
      }
      // Group aliases classify the same way; a reinterpretation to another dtype reads the same bytes.
      const group = createAllocationGroup();
      const { allocation } = group.insert(await base());
      const reversed = group.alias(allocation, 'f32', { shape: [4], strides: [-1], byteOffset: 12 });
      const words = group.alias(allocation, 'u32', { shape: [2], strides: [11], byteOffset: 0 });
      {
        using v = group.view(reversed);
        expect(v.layout.kind).toBe('strided');
        expect(numbers(await v.toArray())).toEqual([3, 2, 1, 0]);
      }
      {
        using v = group.view(words);
        const bits = new Uint32Array(new Float32Array([0, 11]).buffer);
        expect(numbers(await v.toArray())).toEqual(numbers(bits));
      }
      group.dispose();
    });

    // -----------------------------------------------------------------------------------------------
    // G1-write-injective

    it('[G1-write-injective] layouts that reach an element twice read fine but refuse every write; others write exactly their elements (property)', async () => {
      await fc.assert(
        fc.asyncProperty(caseArb(['f32', 'i32', 'u32', 'f16'], ['broadcast', 'random', 'stepped', 'reversed']), async (c) => {
          const values = backingValues(c);
          const t = await buildTensor(provider, c);
          const injective = isInjectiveRef(c);
          expect(numbers(await t.toArray())).toEqual(c.offsets.map((o) => values[o]));
          const fresh = c.offsets.map((_, i) => 1000 + i);
          if (!injective) {
            const before = memory(provider);
            await expectCodeAsync(() => t.prepareHostMut(), 'EINVAL', 'non-injective');
            await expectCodeAsync(() => t.write(makeArray(c.dtype, fresh) as never), 'EINVAL', 'non-injective');
            await expectCodeAsync(() => t.fill(1), 'EINVAL', 'non-injective');
            expectCode(() => t.prepareDeviceMut(), 'EINVAL', 'non-injective');
            {
              using vm = t.viewMut();
              await expectCodeAsync(() => vm.prepareHostMut(), 'EINVAL', 'non-injective');
            }
            expect(memory(provider)).toEqual(before);
            expectFree(t);
            expect(numbers(await t.toArray())).toEqual(c.offsets.map((o) => values[o]));
            t.dispose();
            return;
          }
          // The proof is conservative: an injective layout may still be refused, but only as non-injective,
          // and never one that meets the documented nesting condition.
          try {
            await t.write(makeArray(c.dtype, fresh) as never);
          } catch (err) {
            expect((err as { code?: string }).code).toBe('EINVAL');
            expect((err as { reason?: string }).reason).toBe('non-injective');
            expect(isNestedRef(c), `${JSON.stringify(c.shape)} ${JSON.stringify(c.strides)} meets the nesting condition`).toBe(false);
            expectFree(t);
            t.dispose();
            return;
          }
          expect(numbers(await t.toArray())).toEqual(fresh);
          const whole = t.intoLayout({ shape: [c.backing] });
          const expected = values.slice();
          c.offsets.forEach((o, i) => (expected[o] = fresh[i]!));
          expect(numbers(await whole.toArray())).toEqual(expected);
          whole.dispose();
        }),
        fcParams(runs),
      );
    });

    it('[G1-write-injective] exhaustive 2x2x2 sweep, strides -4..4: every layout that repeats an element is refused for writing', async () => {
      // 729 reinterpretations of one claim (each consumes the previous one): no allocation per layout.
      const values = Array.from({ length: 25 }, (_, i) => i + 1);
      let t: Tensor = await fromArray(provider, 'f32', new Float32Array(values));
      const before = memory(provider);
      let refused = 0;
      let accepted = 0;
      for (let a = -4; a <= 4; a++) {
        for (let b = -4; b <= 4; b++) {
          for (let c = -4; c <= 4; c++) {
            const strides = [a, b, c];
            const first = 12; // the farthest reach is 3 * 4 = 12 elements either way
            const offsets = offsetsOf([2, 2, 2], strides, first);
            const injective = new Set(offsets).size === offsets.length;
            t = t.intoLayout({ shape: [2, 2, 2], strides, byteOffset: first * 4 });
            let verdict: 'accepted' | 'refused';
            try {
              t.prepareDeviceMut().release(); // WebGPU: binding state only, no GPU work
              verdict = 'accepted';
            } catch (err) {
              const e = err as { code?: string; reason?: string };
              if (e.code === 'ENOTSUP') {
                // Host: no device; ask the host write path (zero-copy, no GPU work either).
                try {
                  (await t.prepareHostMut()).release();
                  verdict = 'accepted';
                } catch (inner) {
                  expect((inner as { reason?: string }).reason).toBe('non-injective');
                  verdict = 'refused';
                }
              } else {
                expect(e.code).toBe('EINVAL');
                expect(e.reason).toBe('non-injective');
                verdict = 'refused';
              }
            }
            if (!injective) expect(verdict, JSON.stringify(strides)).toBe('refused');
            const nested = isNestedRef({ dtype: 'f32', shape: [2, 2, 2], strides, first, backing: values.length, offsets });
            if (nested) expect(verdict, JSON.stringify(strides)).toBe('accepted');
            if (verdict === 'refused') refused++;
            else accepted++;
          }
        }
      }
      // Separable layouts (|strides| 1, 2, 4 in any order and sign: 48 of them) are provable: the proof is
      // conservative, not a blanket refusal.
      expect(accepted).toBeGreaterThanOrEqual(48);
      expect(refused).toBeGreaterThan(0);
      expect(memory(provider)).toEqual(before);
      // [1, 2, 3] is the classic near miss: pairwise separated, yet (1,1,0) and (0,0,1) meet.
      t = t.intoLayout({ shape: [2, 2, 2], strides: [1, 2, 3], byteOffset: 0 });
      expect(numbers(await t.toArray())).toEqual([1, 4, 3, 6, 2, 5, 4, 7]);
      await expectCodeAsync(() => t.write(new Float32Array(8)), 'EINVAL', 'non-injective');
      expectFree(t);
      t.dispose();
    });

    it('[G1-write-injective] stride 0 and overlapping strides (owners and group aliases) are read-only; the proof is retained', async () => {
      const before = memory(provider);
      const broadcast = (await fromArray(provider, 'f32', new Float32Array([1, 2, 3]))).intoLayout({
        shape: [4, 3],
        strides: [0, 1],
      });
      const overlap = (await fromArray(provider, 'f32', new Float32Array([1, 2, 3, 4, 5]))).intoLayout({
        shape: [3, 3],
        strides: [1, 1],
      });
      const singleZero = (await fromArray(provider, 'f32', new Float32Array([1, 2, 3]))).intoLayout({
        shape: [1, 3],
        strides: [0, 1],
      });
      expect(numbers(await broadcast.toArray())).toEqual([1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3]);
      expect(numbers(await overlap.toArray())).toEqual([1, 2, 3, 2, 3, 4, 3, 4, 5]);
      const mid = memory(provider);
      const proofs = provider.counters().injectivityProofs;
      for (const t of [broadcast, overlap]) {
        await expectCodeAsync(() => t.prepareHostMut(), 'EINVAL', 'non-injective');
        await expectCodeAsync(() => t.prepareHostMut({ discard: true }), 'EINVAL', 'non-injective');
        await expectCodeAsync(() => t.write(new Float32Array(t.size)), 'EINVAL', 'non-injective');
        expectCode(() => t.prepareDeviceMut(), 'EINVAL', 'non-injective');
        expectFree(t);
      }
      // One proof per layout, retained: repeating the refusals computed nothing new.
      expect(provider.counters().injectivityProofs - proofs).toBe(2);
      expect(memory(provider)).toEqual(mid);
      // Stride 0 on an extent-1 dimension is harmless: contiguous and writable.
      expect(singleZero.layout.kind).toBe('contiguous');
      await singleZero.write(new Float32Array([7, 8, 9]));
      expect(numbers(await singleZero.toArray())).toEqual([7, 8, 9]);

      // A group alias that overlaps itself: viewable, never writable through a mutable group view.
      const group = createAllocationGroup();
      const { allocation, descriptor } = group.insert(await fromArray(provider, 'u32', new Uint32Array([1, 2, 3, 4])));
      const repeat = group.alias(allocation, 'u32', { shape: [2, 2], strides: [1, 1], byteOffset: 4 });
      {
        using v = group.view(repeat);
        expect(numbers(await v.toArray())).toEqual([2, 3, 3, 4]);
      }
      {
        using vm = group.viewMut(repeat);
        await expectCodeAsync(() => vm.write(new Uint32Array(4)), 'EINVAL', 'non-injective');
        await expectCodeAsync(() => vm.prepareHostMut(), 'EINVAL', 'non-injective');
        expect(vm.size).toBe(4);
      }
      {
        using vm = group.viewMut(descriptor);
        await vm.write(new Uint32Array([9, 8, 7, 6]));
      }
      {
        using v = group.view(repeat);
        expect(numbers(await v.toArray())).toEqual([8, 7, 7, 6]);
      }
      group.dispose();
      for (const t of [broadcast, overlap, singleZero]) t.dispose();
      expect(memory(provider).liveRoots).toBe(before.liveRoots);
    });
  });
}

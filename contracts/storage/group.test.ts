// Plan: AllocationGroup (G2) on every provider of the lane, through the public face only.
// Each test drives the real group and proves its claim three ways: the values that come back (contents
// read through group views after writes through mutable views and split children), the exact counter
// deltas (validations, injectivity and disjointness proofs, map/provider work, roots created/destroyed,
// live roots and bytes), and, after every failure, a full snapshot of the group (slots, descriptors,
// allocation of each descriptor, contents, live memory) plus a write through it to show it is usable.
// Borrow interplay: shared group views block table changes and consumption; a mutable view or a set of
// split children borrows the whole group exclusively until the last one is released.
// The splitMut verdict is checked against a small independent model (element sets and envelopes of the
// generated layouts) by a seeded fast-check property; successful splits are verified by writing a
// distinct value through every child and reading each allocation back (no element written twice).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Tensor, TenonError, createAllocationGroup, fromArray, zeros } from '../../src/index.js';
import type {
  AllocationGroup,
  AllocationSlot,
  CounterSnapshot,
  DescriptorSlot,
  DType,
  HostProvider,
  LayoutSpec,
  TenonErrorCode,
  TensorViewMut,
  WebGPUProvider,
} from '../../src/index.js';
import { expectCode, expectCodeAsync } from '../support/expect-error.js';
import { fc, fcParams } from '../support/fc.js';
import { providerCases } from '../support/providers.js';

const iota = (n: number, base = 0): Float32Array => Float32Array.from({ length: n }, (_, i) => base + i);
const list = (a: ArrayLike<number>): number[] => Array.from(a);
/** A slot number as the API types it; slots are plain numbers (keys), so any number can be offered. */
const dslot = (n: unknown): DescriptorSlot => n as DescriptorSlot;
const aslot = (n: unknown): AllocationSlot => n as AllocationSlot;
/** The IEEE bits of f32 values, as a u32 alias of the same bytes reads them. */
const bitsOf = (values: Float32Array): number[] => list(new Uint32Array(Float32Array.from(values).buffer));

type Busy = 'shared-borrowed' | 'exclusively-borrowed';

/** Everything a failing group operation must leave exactly as it was. */
interface GroupState {
  readonly allocationSlots: number;
  readonly descriptorSlots: number;
  readonly descriptors: number[];
  readonly allocations: number[];
  readonly contents: number[][];
  readonly liveRoots: number;
  readonly liveBytes: number;
  readonly rootsDestroyed: number;
  readonly rootsCreated: number;
}

function* permutations<T>(items: readonly T[]): Generator<T[]> {
  if (items.length <= 1) {
    yield [...items];
    return;
  }
  for (let i = 0; i < items.length; i++) {
    const rest = [...items.slice(0, i), ...items.slice(i + 1)];
    for (const p of permutations(rest)) yield [items[i]!, ...p];
  }
}

/** `code:reason` of a splitMut call, releasing the children when it succeeds. */
function splitVerdict(group: AllocationGroup, slots: readonly DescriptorSlot[]): string {
  let kids: TensorViewMut[];
  try {
    kids = group.splitMut(slots);
  } catch (err) {
    if (err instanceof TenonError) return `${err.code}:${err.reason}`;
    throw err;
  }
  expect(kids.length).toBe(slots.length);
  for (const k of kids) k.release();
  return 'ok';
}

// ---------------------------------------------------------------------------------------------------
// Independent model of the generated descriptors (for the permutation property).

interface ModelDesc {
  readonly alloc: 0 | 1;
  readonly spec: LayoutSpec;
  /** Element indices (f32) reached, in logical row-major order. */
  readonly elems: number[];
  readonly contiguous: boolean;
  readonly injective: boolean;
}

const ALLOC_ELEMS = 16;

function modelDesc(alloc: 0 | 1, shape: number[], strides: number[], first: number): ModelDesc {
  const elems: number[] = [];
  const size = shape.reduce((a, b) => a * b, 1);
  for (let flat = 0; flat < size; flat++) {
    let rem = flat;
    let at = first;
    for (let d = shape.length - 1; d >= 0; d--) {
      at += (rem % shape[d]!) * strides[d]!;
      rem = Math.floor(rem / shape[d]!);
    }
    elems.push(at);
  }
  let acc = 1;
  const rowMajor = shape.map(() => 0);
  for (let d = shape.length - 1; d >= 0; d--) {
    rowMajor[d] = acc;
    acc *= Math.max(shape[d]!, 1);
  }
  const contiguous = size === 0 || shape.every((n, d) => n <= 1 || strides[d] === rowMajor[d]);
  return { alloc, spec: { shape, strides, byteOffset: 4 * first }, elems, contiguous, injective: new Set(elems).size === elems.length };
}

const arbAlloc = fc.constantFrom<0 | 1>(0, 1);

/** Descriptors over one 16-element f32 allocation: contiguous (maybe empty), strided, reversed, 2D blocks, broadcast. */
const arbDesc: fc.Arbitrary<ModelDesc> = fc.oneof(
  { weight: 4, arbitrary: fc.tuple(arbAlloc, fc.nat(ALLOC_ELEMS), fc.nat(ALLOC_ELEMS)).map(([a, start, len]) => modelDesc(a, [Math.min(len, ALLOC_ELEMS - start)], [1], start)) },
  {
    weight: 3,
    arbitrary: fc
      .tuple(arbAlloc, fc.nat(ALLOC_ELEMS - 1), fc.integer({ min: 2, max: 4 }), fc.integer({ min: 1, max: 8 }))
      .map(([a, start, step, count]) => modelDesc(a, [Math.min(count, Math.floor((ALLOC_ELEMS - 1 - start) / step) + 1)], [step], start)),
  },
  {
    weight: 2,
    arbitrary: fc
      .tuple(arbAlloc, fc.nat(ALLOC_ELEMS - 1), fc.integer({ min: 1, max: 8 }))
      .map(([a, start, count]) => modelDesc(a, [Math.min(count, start + 1)], [-1], start)),
  },
  {
    weight: 2,
    arbitrary: fc
      .tuple(arbAlloc, fc.nat(3), fc.nat(3), fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 4 }))
      .map(([a, r0, c0, rows, cols]) => modelDesc(a, [Math.min(rows, 4 - r0), Math.min(cols, 4 - c0)], [4, 1], 4 * r0 + c0)),
  },
  { weight: 1, arbitrary: fc.tuple(arbAlloc, fc.nat(ALLOC_ELEMS - 1), fc.integer({ min: 2, max: 3 })).map(([a, at, n]) => modelDesc(a, [n], [0], at)) },
);

type Verdict = 'ok' | 'EINVAL:overlap' | 'EINVAL:NotProvablyDisjoint' | 'EINVAL:non-injective';

/**
 * The verdict the contract requires: injectivity first (normative step 3), then pairwise envelopes on the
 * same allocation (empty descriptors reach nothing). An intersecting pair is a definite overlap when it
 * surely shares an element: a repeated slot, two contiguous layouts, or a surely-reached element of one
 * (its first, lowest or highest) inside the other's contiguous range or equal to one of the other's;
 * any other intersecting pair is not provably disjoint. The most definite reason over all pairs wins.
 */
function anchors(d: ModelDesc): number[] {
  return [d.elems[0]!, Math.min(...d.elems), Math.max(...d.elems)];
}

function surelyShared(a: ModelDesc, b: ModelDesc): boolean {
  const [aLo, aHi] = [Math.min(...a.elems), Math.max(...a.elems)];
  const inside = (x: number): boolean => a.contiguous && x >= aLo && x <= aHi;
  return anchors(b).some((x) => inside(x) || anchors(a).includes(x));
}

function modelVerdict(descs: readonly ModelDesc[], requests: readonly number[]): Verdict[] {
  if (requests.some((i) => !descs[i]!.injective)) return ['EINVAL:non-injective'];
  let definite = false;
  let unproven = false;
  for (let i = 0; i < requests.length; i++) {
    for (let j = i + 1; j < requests.length; j++) {
      const a = descs[requests[i]!]!;
      const b = descs[requests[j]!]!;
      if (a.elems.length === 0 || b.elems.length === 0 || a.alloc !== b.alloc) continue;
      const [aLo, aHi] = [Math.min(...a.elems), Math.max(...a.elems)];
      const [bLo, bHi] = [Math.min(...b.elems), Math.max(...b.elems)];
      if (aLo > bHi || bLo > aHi) continue;
      if (requests[i] === requests[j] || (a.contiguous && b.contiguous) || surelyShared(a, b) || surelyShared(b, a)) definite = true;
      else unproven = true;
    }
  }
  if (definite) return ['EINVAL:overlap'];
  if (unproven) return ['EINVAL:NotProvablyDisjoint'];
  return ['ok'];
}

for (const pc of providerCases()) {
  describe(`AllocationGroup on ${pc.name}`, () => {
    let provider: HostProvider | WebGPUProvider;
    /** Property runs: the host may afford more than a device. */
    const runs = (host: number, gpu: number): number => (pc.kind === 'webgpu' ? gpu : host);

    beforeAll(async () => {
      provider = await pc.make();
    });
    afterAll(() => {
      if (provider.kind === 'webgpu') (provider as WebGPUProvider).destroy();
    });

    const f32 = (data: Float32Array, shape?: readonly number[]): Promise<Tensor<'f32'>> => fromArray(provider, 'f32', data, shape);
    const counters = (): CounterSnapshot => provider.counters();
    /** Elements per row such that a row boundary is a valid split point on this provider. */
    const splitRows = (): number => Math.max(provider.capabilities.claimAlignment, 16) / 4;

    async function read(group: AllocationGroup, slot: DescriptorSlot): Promise<number[]> {
      using v = group.view(slot);
      return list(await v.toArray());
    }

    async function snap(group: AllocationGroup): Promise<GroupState> {
      const descriptors = group.descriptors();
      const allocations = descriptors.map((d) => group.allocationOf(d));
      const contents: number[][] = [];
      for (const d of descriptors) contents.push(await read(group, d));
      const c = counters();
      return {
        allocationSlots: group.allocationSlots,
        descriptorSlots: group.descriptorSlots,
        descriptors: [...descriptors],
        allocations: [...allocations],
        contents,
        liveRoots: c.liveRoots,
        liveBytes: c.liveBytes,
        rootsDestroyed: c.rootsDestroyed,
        rootsCreated: c.rootsCreated,
      };
    }

    /** The group is unborrowed and usable: an exclusive write lands and reads back, then the old bytes return. */
    async function expectUsable(group: AllocationGroup, slot: DescriptorSlot): Promise<void> {
      expect(group.moved).toBe(false);
      using m = group.viewMut<'f32'>(slot);
      const old = await m.toArray();
      await m.fill(-7);
      expect(list(await m.toArray())).toEqual(list(old).map(() => -7));
      await m.write(old);
      expect(list(await m.toArray())).toEqual(list(old));
    }

    function expectLiveBaseline(base: CounterSnapshot): void {
      const now = counters();
      expect(now.liveRoots).toBe(base.liveRoots);
      expect(now.liveBytes).toBe(base.liveBytes);
      expect(now.doubleDestroys).toBe(base.doubleDestroys);
    }

    // -------------------------------------------------------------------------------------------------
    // G2-slots-stable

    it('[G2-slots-stable] extracting an owner leaves a hole; no other allocation slot is renumbered or refilled', async () => {
      const base = counters();
      const group = createAllocationGroup();
      const a = group.insert(await f32(iota(4, 0)));
      const b = group.insert(await f32(iota(4, 10)));
      const c = group.insert(await f32(iota(4, 20)));
      const cTail = group.alias(c.allocation, 'f32', { shape: [2], byteOffset: 8 });
      expect([a.allocation, b.allocation, c.allocation]).toEqual([0, 1, 2]);
      expect([a.descriptor, b.descriptor, c.descriptor, cTail]).toEqual([0, 1, 2, 3]);
      expect(counters().liveRoots).toBe(base.liveRoots + 3);

      const t = group.tryExtract<'f32'>(b.descriptor);
      expect(group.allocationSlots).toBe(3);
      expect(group.descriptorSlots).toBe(4);
      expect(group.descriptors()).toEqual([0, 2, 3]);
      expect(group.allocationOf(a.descriptor)).toBe(0);
      expect(group.allocationOf(c.descriptor)).toBe(2);
      expect(group.allocationOf(cTail)).toBe(2);
      expect(await read(group, a.descriptor)).toEqual(list(iota(4, 0)));
      expect(await read(group, c.descriptor)).toEqual(list(iota(4, 20)));
      expect(await read(group, cTail)).toEqual([22, 23]);
      expect(list(await t.toArray())).toEqual(list(iota(4, 10)));
      // the owner moved out; nothing was freed
      expect(counters().liveRoots).toBe(base.liveRoots + 3);

      // the hole is no allocation any more and is never refilled: the next insert appends
      expectCode(() => group.alias(b.allocation, 'f32', { shape: [1] }), 'EINVAL', 'empty-slot');
      const d = group.insert(await f32(iota(4, 30)));
      expect(d.allocation).toBe(3);
      expect(d.descriptor).toBe(4);
      expect(group.allocationSlots).toBe(4);
      expectCode(() => group.alias(b.allocation, 'f32', { shape: [1] }), 'EINVAL', 'empty-slot');

      // the extracted owner is independent: disposing it destroys its root only
      const before = counters();
      t.dispose();
      expect(counters().rootsDestroyed).toBe(before.rootsDestroyed + 1);
      expect(counters().liveRoots).toBe(base.liveRoots + 3);
      expect(await read(group, a.descriptor)).toEqual(list(iota(4, 0)));
      expect(await read(group, c.descriptor)).toEqual(list(iota(4, 20)));
      expect(await read(group, d.descriptor)).toEqual(list(iota(4, 30)));

      group.dispose();
      expect(counters().rootsDestroyed).toBe(before.rootsDestroyed + 4);
      expectLiveBaseline(base);
    });

    it('[G2-slots-stable] property: under any sequence of inserts and extractions every survivor keeps its slot and bytes', async () => {
      const base = counters();
      const arbOps = fc.array(fc.oneof(fc.constant<'insert'>('insert'), fc.nat(7)), { minLength: 1, maxLength: 8 });
      await fc.assert(
        fc.asyncProperty(arbOps, async (ops) => {
          const group = createAllocationGroup();
          const live = new Map<number, { descriptor: DescriptorSlot; tag: number }>();
          const extracted: { tensor: Tensor<'f32'>; tag: number }[] = [];
          let inserted = 0;
          try {
            for (const op of ops) {
              if (op === 'insert') {
                const tag = inserted * 10 + 1;
                const r = group.insert(await f32(Float32Array.of(tag)));
                expect(r.allocation).toBe(inserted);
                inserted++;
                live.set(r.allocation, { descriptor: r.descriptor, tag });
              } else {
                const keys = [...live.keys()];
                if (keys.length === 0) continue;
                const allocation = keys[op % keys.length]!;
                const entry = live.get(allocation)!;
                extracted.push({ tensor: group.tryExtract<'f32'>(entry.descriptor), tag: entry.tag });
                live.delete(allocation);
              }
              expect(group.allocationSlots).toBe(inserted);
              expect(group.descriptors()).toEqual([...live.values()].map((e) => e.descriptor).sort((x, y) => x - y));
            }
            for (const [allocation, { descriptor, tag }] of live) {
              expect(group.allocationOf(descriptor)).toBe(allocation);
              expect(await read(group, descriptor)).toEqual([tag]);
            }
            for (const { tensor, tag } of extracted) expect(list(await tensor.toArray())).toEqual([tag]);
          } finally {
            for (const { tensor } of extracted) tensor.dispose();
            group.dispose();
          }
        }),
        fcParams(runs(60, 12)),
      );
      expectLiveBaseline(base);
    });

    // -------------------------------------------------------------------------------------------------
    // G2-descriptors-append-only

    it('[G2-descriptors-append-only] a removed descriptor slot stays vacant for every member and is never handed out again', async () => {
      const base = counters();
      const group = createAllocationGroup();
      const { allocation, descriptor: d0 } = group.insert(await f32(iota(8)));
      const d1 = group.alias(allocation, 'f32', { shape: [4] });
      const d2 = group.alias(allocation, 'f32', { shape: [4], byteOffset: 16 });
      expect([d0, d1, d2]).toEqual([0, 1, 2]);

      group.removeDescriptor(d1);
      expect(group.descriptors()).toEqual([0, 2]);
      expect(group.descriptorSlots).toBe(3);
      expect(counters().liveRoots).toBe(base.liveRoots + 1);
      expectCode(() => group.view(d1), 'EINVAL', 'empty-slot');
      expectCode(() => group.viewMut(d1), 'EINVAL', 'empty-slot');
      expectCode(() => group.allocationOf(d1), 'EINVAL', 'empty-slot');
      expectCode(() => group.removeDescriptor(d1), 'EINVAL', 'empty-slot');
      expectCode(() => group.tryExtract(d1), 'EINVAL', 'empty-slot');
      expectCode(() => group.splitMut([d1]), 'EINVAL', 'empty-slot');
      expectCode(() => group.intoTensor(d1), 'EINVAL', 'empty-slot');
      expect(group.moved).toBe(false);

      // new descriptors append after the last slot; the vacant one is skipped forever
      const fresh: number[] = [];
      for (let i = 0; i < 5; i++) fresh.push(group.alias(allocation, 'f32', { shape: [2], byteOffset: 4 * i }));
      expect(fresh).toEqual([3, 4, 5, 6, 7]);
      expect(group.descriptorSlots).toBe(8);
      expectCode(() => group.view(d1), 'EINVAL', 'empty-slot');
      expect(await read(group, dslot(fresh[4]))).toEqual([4, 5]);

      // removing every descriptor vacates slots only: the allocation stays owned and reachable by a new alias
      for (const d of group.descriptors()) group.removeDescriptor(d);
      expect(group.descriptors()).toEqual([]);
      expect(group.descriptorSlots).toBe(8);
      expect(group.allocationSlots).toBe(1);
      expect(counters().liveRoots).toBe(base.liveRoots + 1);
      const again = group.alias(allocation, 'f32', { shape: [8] });
      expect(again).toBe(8);
      expect(await read(group, again)).toEqual(list(iota(8)));
      group.dispose();
      expectLiveBaseline(base);
    });

    it('[G2-descriptors-append-only] property: any sequence of alias/remove appends at the table end and never revives a slot', async () => {
      const base = counters();
      const group = createAllocationGroup();
      const { allocation } = group.insert(await f32(iota(4)));
      type Op = { kind: 'add'; len: number } | { kind: 'remove'; pick: number } | { kind: 'remove-vacant'; pick: number };
      const arbOp: fc.Arbitrary<Op> = fc.oneof(
        fc.integer({ min: 0, max: 4 }).map((len): Op => ({ kind: 'add', len })),
        fc.nat().map((pick): Op => ({ kind: 'remove', pick })),
        fc.nat().map((pick): Op => ({ kind: 'remove-vacant', pick })),
      );
      try {
        fc.assert(
          fc.property(fc.array(arbOp, { maxLength: 30 }), (ops) => {
            const occupied = new Set<number>(group.descriptors());
            let total = group.descriptorSlots;
            const removedHere: number[] = [];
            for (const op of ops) {
              if (op.kind === 'add') {
                const s = group.alias(allocation, 'f32', { shape: [op.len] });
                expect(s).toBe(total);
                total++;
                occupied.add(s);
              } else if (op.kind === 'remove' && occupied.size > 0) {
                const s = [...occupied][op.pick % occupied.size]!;
                group.removeDescriptor(dslot(s));
                occupied.delete(s);
                removedHere.push(s);
              } else if (op.kind === 'remove-vacant' && removedHere.length > 0) {
                const s = removedHere[op.pick % removedHere.length]!;
                expectCode(() => group.removeDescriptor(dslot(s)), 'EINVAL', 'empty-slot');
              }
              expect(group.descriptorSlots).toBe(total);
              expect(group.descriptors()).toEqual([...occupied].sort((x, y) => x - y));
            }
            for (const s of removedHere) expectCode(() => group.view(dslot(s)), 'EINVAL', 'empty-slot');
          }),
          fcParams(runs(100, 30)),
        );
      } finally {
        group.dispose();
      }
      expectLiveBaseline(base);
    });

    // -------------------------------------------------------------------------------------------------
    // G2-alias

    it('[G2-alias] descriptors alias one allocation freely, exact duplicates included; each is validated once and copies nothing', async () => {
      const base = counters();
      const group = createAllocationGroup();
      const t = await f32(iota(8));
      const beforeInsert = counters();
      const mark = provider.ledgerMark();
      const { allocation, descriptor: whole } = group.insert(t);
      expect(t.moved).toBe(true);
      // insert retains the tensor's checked layout: no validation
      expect(counters().validations).toBe(beforeInsert.validations);

      const specs: [DType, LayoutSpec][] = [
        ['f32', { shape: [8] }], // exact duplicate of the inserted descriptor
        ['f32', { shape: [8] }], // and another one
        ['f32', { shape: [4], byteOffset: 16 }],
        ['f32', { shape: [4], strides: [2] }],
        ['f32', { shape: [2, 4] }],
        ['u32', { shape: [8] }],
        ['f32', { shape: [4], strides: [-1], byteOffset: 12 }],
      ];
      const slots: DescriptorSlot[] = [];
      for (const [dtype, spec] of specs) {
        const v0 = counters().validations;
        slots.push(group.alias(allocation, dtype, spec));
        expect(counters().validations).toBe(v0 + 1);
      }
      expect(slots).toEqual([1, 2, 3, 4, 5, 6, 7]);
      expect(slots.map((s) => group.allocationOf(s))).toEqual(slots.map(() => allocation));
      // aliases are metadata: no allocation, no copy, no provider work
      const afterAlias = counters();
      expect(provider.ledgerSince(mark)).toEqual([]);
      expect(afterAlias.rootsCreated).toBe(beforeInsert.rootsCreated);
      expect(afterAlias.providerResolutions).toBe(beforeInsert.providerResolutions);
      expect(afterAlias.liveRoots).toBe(base.liveRoots + 1);
      expect(afterAlias.liveBytes).toBe(base.liveBytes + 32);
      const [dup1, dup2, half, even, matrix, bits, reversed] = slots as [DescriptorSlot, ...DescriptorSlot[]];

      // every alias reaches the same root; reading them validates nothing
      const roots = new Set([whole, ...slots].map((s) => {
        using v = group.view(s);
        return v.diagnostics().root;
      }));
      expect(roots.size).toBe(1);
      const v1 = counters().validations;
      expect(await read(group, whole)).toEqual(list(iota(8)));
      expect(await read(group, dup1)).toEqual(list(iota(8)));
      expect(await read(group, dup2!)).toEqual(list(iota(8)));
      expect(await read(group, half!)).toEqual([4, 5, 6, 7]);
      expect(await read(group, even!)).toEqual([0, 2, 4, 6]);
      expect(await read(group, matrix!)).toEqual(list(iota(8)));
      expect(await read(group, bits!)).toEqual(bitsOf(iota(8)));
      expect(await read(group, reversed!)).toEqual([3, 2, 1, 0]);
      expect(counters().validations).toBe(v1);

      // a write through one alias is seen through every other
      {
        using m = group.viewMut<'f32'>(dup1);
        await m.write(iota(8, 100));
      }
      expect(await read(group, whole)).toEqual(list(iota(8, 100)));
      expect(await read(group, half!)).toEqual([104, 105, 106, 107]);
      expect(await read(group, bits!)).toEqual(bitsOf(iota(8, 100)));
      expect(await read(group, reversed!)).toEqual([103, 102, 101, 100]);
      group.dispose();
      expectLiveBaseline(base);
    });

    it("[G2-alias] an alias is validated against its allocation's own claim, never the rest of the root", async () => {
      const base = counters();
      const rows = splitRows();
      const [lo, hi] = (await f32(iota(2 * rows))).split([rows, rows]) as [Tensor<'f32'>, Tensor<'f32'>];
      const group = createAllocationGroup();
      const { allocation, descriptor } = group.insert(hi);
      const full = group.alias(allocation, 'f32', { shape: [rows] });
      // byte 0 of the allocation is byte 4*rows of the root
      expect(await read(group, full)).toEqual(list(iota(rows, rows)));
      expect(await read(group, descriptor)).toEqual(list(iota(rows, rows)));
      const state = await snap(group);
      expectCode(() => group.alias(allocation, 'f32', { shape: [rows + 1] }), 'EINVAL', 'out-of-span');
      expectCode(() => group.alias(allocation, 'f32', { shape: [1], byteOffset: 4 * rows }), 'EINVAL', 'out-of-span');
      expectCode(() => group.alias(allocation, 'f32', { shape: [0], byteOffset: 4 * rows + 4 }), 'EINVAL', 'out-of-span');
      expectCode(() => group.alias(allocation, 'f32', { shape: [2], strides: [-1] }), 'EINVAL', 'out-of-span');
      expect(await snap(group)).toEqual(state);
      // an empty alias may sit at the very end of the claim
      const end = group.alias(allocation, 'f32', { shape: [0], byteOffset: 4 * rows });
      expect(await read(group, end)).toEqual([]);
      // the sibling claim is untouched by writes through the widest alias
      {
        using m = group.viewMut<'f32'>(full);
        await m.fill(-1);
      }
      expect(list(await lo.toArray())).toEqual(list(iota(rows)));
      lo.dispose();
      group.dispose();
      expectLiveBaseline(base);
    });

    // -------------------------------------------------------------------------------------------------
    // G2-view-shared

    it('[G2-view-shared] shared views coexist and block every table change and consuming call until all are released', async () => {
      const base = counters();
      const group = createAllocationGroup();
      const { allocation, descriptor: d0 } = group.insert(await f32(iota(4)));
      const d1 = group.alias(allocation, 'f32', { shape: [2], byteOffset: 8 });
      const spare = await f32(iota(2, 50));
      const state = await snap(group);

      const v1 = group.view<'f32'>(d0);
      const v2 = group.view<'f32'>(d0);
      const v3 = group.view<'f32'>(d1);
      const inner = v1.view();
      expect(list(await v1.toArray())).toEqual([0, 1, 2, 3]);
      expect(list(await v2.toArray())).toEqual([0, 1, 2, 3]);
      expect(list(await v3.toArray())).toEqual([2, 3]);
      expect(list(await inner.toArray())).toEqual([0, 1, 2, 3]);
      // reading the table and taking more shared views is allowed meanwhile
      expect(group.descriptors()).toEqual([d0, d1]);
      expect(group.allocationSlots).toBe(1);
      expect(group.allocationOf(d1)).toBe(allocation);
      expect(await snap(group)).toEqual(state);

      const blocked = (reason: Busy): void => {
        expectCode(() => group.insert(spare), 'EBUSY', reason);
        expectCode(() => group.alias(allocation, 'f32', { shape: [1] }), 'EBUSY', reason);
        expectCode(() => group.removeDescriptor(d1), 'EBUSY', reason);
        expectCode(() => group.viewMut(d0), 'EBUSY', reason);
        expectCode(() => group.splitMut([d1]), 'EBUSY', reason);
        expectCode(() => group.splitMut([]), 'EBUSY', reason);
        expectCode(() => group.tryExtract(d0), 'EBUSY', reason);
        expectCode(() => group.intoTensor(d0), 'EBUSY', reason);
        expectCode(() => group.dispose(), 'EBUSY', reason);
        expect(group.moved).toBe(false);
        expect(spare.moved).toBe(false);
      };
      blocked('shared-borrowed');
      expect(await snap(group)).toEqual(state);
      expect(list(await spare.toArray())).toEqual([50, 51]);
      // a view with a live reborrow cannot end before it
      expectCode(() => v1.release(), 'EBUSY', 'reborrowed');
      inner.release();
      v1.release();
      blocked('shared-borrowed');
      v2.release();
      blocked('shared-borrowed');
      v3.release();
      await expectCodeAsync(() => v1.toArray(), 'ERELEASED');
      expectCode(() => v3.release(), 'ERELEASED');

      // every blocked call works once the last view is gone
      await expectUsable(group, d0);
      expect(group.splitMut([])).toEqual([]);
      const extra = group.alias(allocation, 'f32', { shape: [1] });
      group.removeDescriptor(extra);
      const ins = group.insert(spare);
      expect(spare.moved).toBe(true);
      const out = group.tryExtract<'f32'>(ins.descriptor);
      expect(list(await out.toArray())).toEqual([50, 51]);
      out.dispose();
      group.dispose();
      expectLiveBaseline(base);
    });

    // -------------------------------------------------------------------------------------------------
    // G2-view-mut

    it('[G2-view-mut] a mutable view borrows the whole group exclusively until it is released', async () => {
      const base = counters();
      const group = createAllocationGroup();
      const A = group.insert(await f32(iota(4)));
      const B = group.insert(await f32(iota(4, 10)));
      const spare = await f32(iota(1));

      const m = group.viewMut<'f32'>(A.descriptor);
      const blocked = (): void => {
        const reason = 'exclusively-borrowed';
        expectCode(() => group.view(B.descriptor), 'EBUSY', reason);
        expectCode(() => group.view(A.descriptor), 'EBUSY', reason);
        expectCode(() => group.viewMut(B.descriptor), 'EBUSY', reason);
        expectCode(() => group.viewMut(A.descriptor), 'EBUSY', reason);
        expectCode(() => group.splitMut([B.descriptor]), 'EBUSY', reason);
        expectCode(() => group.splitMut([]), 'EBUSY', reason);
        expectCode(() => group.descriptors(), 'EBUSY', reason);
        expectCode(() => group.allocationSlots, 'EBUSY', reason);
        expectCode(() => group.descriptorSlots, 'EBUSY', reason);
        expectCode(() => group.allocationOf(B.descriptor), 'EBUSY', reason);
        expectCode(() => group.insert(spare), 'EBUSY', reason);
        expectCode(() => group.alias(B.allocation, 'f32', { shape: [1] }), 'EBUSY', reason);
        expectCode(() => group.removeDescriptor(B.descriptor), 'EBUSY', reason);
        expectCode(() => group.tryExtract(B.descriptor), 'EBUSY', reason);
        expectCode(() => group.intoTensor(B.descriptor), 'EBUSY', reason);
        expectCode(() => group.dispose(), 'EBUSY', reason);
        expect(group.moved).toBe(false);
        expect(spare.moved).toBe(false);
      };
      blocked();
      await m.write(iota(4, 100));
      expect(list(await m.toArray())).toEqual(list(iota(4, 100)));
      // the mutable view may lend itself out again; the group stays blocked throughout
      const inner = m.viewMut();
      expectCode(() => m.shape, 'EBUSY', 'exclusively-borrowed');
      await inner.fill(7);
      inner.release();
      blocked();
      m.release();
      expect(await read(group, A.descriptor)).toEqual([7, 7, 7, 7]);
      expect(await read(group, B.descriptor)).toEqual(list(iota(4, 10)));
      await expectCodeAsync(() => m.write(iota(4)), 'ERELEASED');
      expectCode(() => m.release(), 'ERELEASED');
      expect(await read(group, A.descriptor)).toEqual([7, 7, 7, 7]);

      // the next exclusive borrow may select any descriptor
      {
        using m2 = group.viewMut<'f32'>(B.descriptor);
        await m2.write(iota(4, 20));
      }
      expect(await read(group, B.descriptor)).toEqual(list(iota(4, 20)));
      expect(await read(group, A.descriptor)).toEqual([7, 7, 7, 7]);
      spare.dispose();
      group.dispose();
      expectLiveBaseline(base);
    });

    it('[G2-view-mut] a mutable view of a strided or reversed alias writes exactly its own elements', async () => {
      const base = counters();
      const group = createAllocationGroup();
      const { allocation, descriptor: whole } = group.insert(await f32(iota(8)));
      const odd = group.alias(allocation, 'f32', { shape: [4], strides: [2], byteOffset: 4 });
      const rev = group.alias(allocation, 'f32', { shape: [4], strides: [-1], byteOffset: 12 });
      {
        using m = group.viewMut<'f32'>(odd);
        await m.write(Float32Array.of(100, 101, 102, 103));
      }
      expect(await read(group, whole)).toEqual([0, 100, 2, 101, 4, 102, 6, 103]);
      {
        using m = group.viewMut<'f32'>(rev);
        await m.write(Float32Array.of(-1, -2, -3, -4));
      }
      expect(await read(group, whole)).toEqual([-4, -3, -2, -1, 4, 102, 6, 103]);
      // a layout that reaches one element twice can be borrowed but never written through
      const twice = group.alias(allocation, 'f32', { shape: [2, 2], strides: [1, 1] });
      {
        using m = group.viewMut<'f32'>(twice);
        await expectCodeAsync(() => m.write(Float32Array.of(1, 2, 3, 4)), 'EINVAL', 'non-injective');
        expect(list(await m.toArray())).toEqual([-4, -3, -3, -2]);
      }
      expect(await read(group, whole)).toEqual([-4, -3, -2, -1, 4, 102, 6, 103]);
      group.dispose();
      expectLiveBaseline(base);
    });

    // -------------------------------------------------------------------------------------------------
    // G2-split-disjoint

    it('[G2-split-disjoint] N = 0: splitMut([]) lends nothing, validates nothing and leaves the group unborrowed', async () => {
      const base = counters();
      const group = createAllocationGroup();
      const { descriptor } = group.insert(await f32(iota(4)));
      const before = counters();
      const kids = group.splitMut([]);
      expect(kids).toEqual([]);
      const after = counters();
      expect(after.validations).toBe(before.validations);
      expect(after.injectivityProofs).toBe(before.injectivityProofs);
      expect(group.descriptors()).toEqual([descriptor]);
      await expectUsable(group, descriptor);
      const more = group.insert(await f32(iota(2)));
      expect(more.allocation).toBe(1);
      group.dispose();
      expectLiveBaseline(base);
    });

    it('[G2-split-disjoint] N = 1: one child holds the exclusive group borrow and writes every element', async () => {
      const base = counters();
      const group = createAllocationGroup();
      const { descriptor } = group.insert(await f32(iota(4)));
      const kids = group.splitMut([descriptor]);
      expect(kids.length).toBe(1);
      const [kid] = kids as [TensorViewMut<'f32'>];
      expect(kid.shape).toEqual([4]);
      expectCode(() => group.view(descriptor), 'EBUSY', 'exclusively-borrowed');
      expectCode(() => group.viewMut(descriptor), 'EBUSY', 'exclusively-borrowed');
      expectCode(() => group.descriptors(), 'EBUSY', 'exclusively-borrowed');
      expectCode(() => group.dispose(), 'EBUSY', 'exclusively-borrowed');
      await kid.write(iota(4, 40));
      expect(list(await kid.toArray())).toEqual(list(iota(4, 40)));
      kid.release();
      expect(await read(group, descriptor)).toEqual(list(iota(4, 40)));
      group.dispose();
      expectLiveBaseline(base);
    });

    it('[G2-split-disjoint] N = 2: adjacent halves are disjoint; children come back in request order and write independently', async () => {
      const base = counters();
      const group = createAllocationGroup();
      const { allocation, descriptor: whole } = group.insert(await f32(iota(8)));
      const lo = group.alias(allocation, 'f32', { shape: [4] });
      const hi = group.alias(allocation, 'f32', { shape: [4], byteOffset: 16 });
      const [a, b] = group.splitMut([hi, lo]) as [TensorViewMut<'f32'>, TensorViewMut<'f32'>];
      expect(a.byteOffset).toBe(16);
      expect(b.byteOffset).toBe(0);
      // each child may reborrow itself while the other writes
      const aInner = a.viewMut();
      await b.write(iota(4, 100));
      await aInner.write(iota(4, 200));
      aInner.release();
      expect(list(await a.toArray())).toEqual(list(iota(4, 200)));
      expect(list(await b.toArray())).toEqual(list(iota(4, 100)));
      a.release();
      // one child still alive: the group stays exclusively borrowed
      expectCode(() => group.view(whole), 'EBUSY', 'exclusively-borrowed');
      expectCode(() => group.splitMut([lo]), 'EBUSY', 'exclusively-borrowed');
      await expectCodeAsync(() => a.write(iota(4)), 'ERELEASED');
      b.release();
      expect(await read(group, whole)).toEqual([100, 101, 102, 103, 200, 201, 202, 203]);
      group.dispose();
      expectLiveBaseline(base);
    });

    it('[G2-split-disjoint] N = 5 over two allocations: contiguous, reversed, transposed and strided children all write at once', async () => {
      const base = counters();
      const group = createAllocationGroup();
      const A = group.insert(await zeros(provider, 'f32', [16]));
      const B = group.insert(await zeros(provider, 'f32', [8]));
      const specs: LayoutSpec[] = [
        { shape: [4] }, // A elements 0..3
        { shape: [4], strides: [-1], byteOffset: 28 }, // A elements 7,6,5,4
        { shape: [2, 2], strides: [1, 2], byteOffset: 32 }, // A elements 8,10,9,11
        { shape: [2], strides: [2], byteOffset: 48 }, // A elements 12,14
      ];
      const slots = specs.map((spec) => group.alias(A.allocation, 'f32', spec));
      // B's bytes sit at the same offsets as A's first children, but in another root
      const request = [...slots, B.descriptor];
      const v0 = counters().validations;
      const kids = group.splitMut(request) as TensorViewMut<'f32'>[];
      expect(counters().validations).toBe(v0);
      expect(kids.length).toBe(5);
      expect(kids.map((k) => k.strides)).toEqual([[1], [-1], [1, 2], [2], [1]]);
      for (let i = 0; i < kids.length; i++) await kids[i]!.write(iota(kids[i]!.size, 100 * (i + 1)));
      for (let i = 0; i < kids.length; i++) expect(list(await kids[i]!.toArray())).toEqual(list(iota(kids[i]!.size, 100 * (i + 1))));

      for (let i = 0; i < 4; i++) {
        kids[i]!.release();
        expectCode(() => group.view(A.descriptor), 'EBUSY', 'exclusively-borrowed');
        expectCode(() => group.viewMut(B.descriptor), 'EBUSY', 'exclusively-borrowed');
        expectCode(() => group.descriptors(), 'EBUSY', 'exclusively-borrowed');
        expectCode(() => group.splitMut([slots[i]!]), 'EBUSY', 'exclusively-borrowed');
      }
      expectCode(() => kids[0]!.release(), 'ERELEASED');
      await expectCodeAsync(() => kids[1]!.write(iota(4)), 'ERELEASED');
      kids[4]!.release();

      expect(await read(group, A.descriptor)).toEqual([100, 101, 102, 103, 203, 202, 201, 200, 300, 302, 301, 303, 400, 0, 401, 0]);
      expect(await read(group, B.descriptor)).toEqual(list(iota(8, 500)));
      group.dispose();
      expectLiveBaseline(base);
    });

    it('[G2-split-disjoint] allocations that are disjoint claims of one root are compared by root offset, not claim offset', async () => {
      const base = counters();
      const rows = splitRows();
      const [lo, hi] = (await f32(iota(2 * rows))).split([rows, rows]) as [Tensor<'f32'>, Tensor<'f32'>];
      const group = createAllocationGroup();
      const L = group.insert(lo);
      const H = group.insert(hi);
      // both first elements sit at claim offset 0 of one root
      const lFirst = group.alias(L.allocation, 'f32', { shape: [1] });
      const hFirst = group.alias(H.allocation, 'f32', { shape: [1] });
      const [k0, k1] = group.splitMut([L.descriptor, H.descriptor]) as [TensorViewMut<'f32'>, TensorViewMut<'f32'>];
      await k0.fill(1);
      await k1.fill(2);
      k0.release();
      k1.release();
      expect(splitVerdict(group, [lFirst, hFirst])).toBe('ok');
      expect(splitVerdict(group, [hFirst, L.descriptor])).toBe('ok');
      // within one claim the same offsets do overlap
      expect(splitVerdict(group, [lFirst, L.descriptor])).toBe('EINVAL:overlap');
      expect(await read(group, L.descriptor)).toEqual(Array(rows).fill(1));
      expect(await read(group, H.descriptor)).toEqual(Array(rows).fill(2));
      group.dispose();
      expectLiveBaseline(base);
    });

    it('[G2-split-write-unit] byte-sized children split at the provider write granularity, and concurrent writes all land', async () => {
      // WebGPU host writes rewrite whole 4-byte words, so children sharing a word would lose each other's
      // bytes when written at once: they are refused (shared-write-unit). On the host provider every byte
      // is its own unit. Either way, children that are accepted can be written concurrently.
      const unit = provider.capabilities.writeGranularity;
      const base = counters();
      const group = createAllocationGroup();
      const { allocation, descriptor: whole } = group.insert(await fromArray(provider, 'u8', Uint8Array.from({ length: 8 }, (_, i) => i)));
      const b0 = group.alias(allocation, 'u8', { shape: [1] });
      const b1 = group.alias(allocation, 'u8', { shape: [1], byteOffset: 1 });
      const mid = group.alias(allocation, 'u8', { shape: [2], byteOffset: 2 });
      const odd = group.alias(allocation, 'u8', { shape: [2], strides: [2], byteOffset: 5 }); // bytes 5, 7
      const even = group.alias(allocation, 'u8', { shape: [2], strides: [2], byteOffset: 4 }); // bytes 4, 6
      const word0 = group.alias(allocation, 'u8', { shape: [4] });
      const word1 = group.alias(allocation, 'u8', { shape: [4], byteOffset: 4 });
      expect(splitVerdict(group, [even, odd])).toBe('EINVAL:NotProvablyDisjoint');
      if (unit === 1) {
        const kids = group.splitMut([b0, b1, mid, odd]) as TensorViewMut<'u8'>[];
        await Promise.all([kids[0]!.write(Uint8Array.of(10)), kids[1]!.write(Uint8Array.of(20)), kids[2]!.write(Uint8Array.of(30, 31)), kids[3]!.write(Uint8Array.of(50, 51))]);
        for (const k of kids) k.release();
        expect(await read(group, whole)).toEqual([10, 20, 30, 31, 4, 50, 6, 51]);
      } else {
        expect(unit).toBe(4);
        const state = await snap(group);
        const e = expectCode(() => group.splitMut([b0, b1, mid]), 'EINVAL', 'shared-write-unit');
        expect(e.range).toEqual({ start: 0, end: 4 });
        expect(splitVerdict(group, [mid, odd])).toBe('ok'); // bytes 2..3 and 5..7: different words
        expect(splitVerdict(group, [b1, word1])).toBe('ok');
        expect(await snap(group)).toEqual(state);
        const kids = group.splitMut([word0, word1]) as TensorViewMut<'u8'>[];
        await Promise.all([kids[0]!.write(Uint8Array.of(10, 20, 30, 31)), kids[1]!.write(Uint8Array.of(4, 50, 6, 51))]);
        for (const k of kids) k.release();
        expect(await read(group, whole)).toEqual([10, 20, 30, 31, 4, 50, 6, 51]);
      }
      // sub-word children that the provider accepts never lose a byte, even written all at once
      const accepted = unit === 1 ? [b0, b1, mid, odd] : [mid, odd];
      const kids = group.splitMut(accepted) as TensorViewMut<'u8'>[];
      await Promise.all(kids.map((k, i) => k.fill(100 + i)));
      for (const k of kids) k.release();
      const after = await read(group, whole);
      expect(unit === 1 ? after : after.slice(2)).toEqual(unit === 1 ? [100, 101, 102, 102, 4, 103, 6, 103] : [100, 100, 4, 101, 6, 101]);
      group.dispose();
      expectLiveBaseline(base);
    });

    it('[G2-split-disjoint] empty descriptors reach no byte and are disjoint from everything', async () => {
      const base = counters();
      const group = createAllocationGroup();
      const { allocation, descriptor: whole } = group.insert(await f32(iota(8)));
      const empties = [
        group.alias(allocation, 'f32', { shape: [0] }),
        group.alias(allocation, 'f32', { shape: [0], byteOffset: 16 }),
        group.alias(allocation, 'f32', { shape: [2, 0], strides: [1, 1], byteOffset: 8 }),
        group.alias(allocation, 'f32', { shape: [0], byteOffset: 32 }),
      ];
      const even = group.alias(allocation, 'f32', { shape: [4], strides: [2] });
      const [e0, e1, e2, e3] = empties as [DescriptorSlot, DescriptorSlot, DescriptorSlot, DescriptorSlot];
      const kids = group.splitMut([e0, whole, e1, e2, e3]) as TensorViewMut<'f32'>[];
      expect(kids.map((k) => k.size)).toEqual([0, 8, 0, 0, 0]);
      await kids[1]!.write(iota(8, 10));
      for (const i of [0, 2, 3, 4]) {
        await kids[i]!.write(new Float32Array(0));
        expect(list(await kids[i]!.toArray())).toEqual([]);
      }
      for (const k of kids) k.release();
      expect(await read(group, whole)).toEqual(list(iota(8, 10)));
      // also next to a strided descriptor whose envelope covers them
      expect(splitVerdict(group, [e1, even, e2])).toBe('ok');
      group.dispose();
      expectLiveBaseline(base);
    });

    // -------------------------------------------------------------------------------------------------
    // G2-split-overlap

    it('[G2-split-overlap] contiguous descriptors that share a byte are rejected with reason overlap; nothing is lent', async () => {
      const base = counters();
      const group = createAllocationGroup();
      const { allocation, descriptor: whole } = group.insert(await f32(iota(8)));
      const lo5 = group.alias(allocation, 'f32', { shape: [5] }); // elements 0..4
      const hi4 = group.alias(allocation, 'f32', { shape: [4], byteOffset: 16 }); // elements 4..7
      const lo4 = group.alias(allocation, 'f32', { shape: [4] }); // elements 0..3
      const mid = group.alias(allocation, 'f32', { shape: [2, 1], byteOffset: 8 }); // elements 2..3
      const dup = group.alias(allocation, 'f32', { shape: [8] }); // exact duplicate of `whole`
      const state = await snap(group);

      const e = expectCode(() => group.splitMut([lo5, hi4]), 'EINVAL', 'overlap');
      expect(e.op).toBe('group.splitMut');
      expect(new Set([e.ids?.['slotA'], e.ids?.['slotB']])).toEqual(new Set([lo5, hi4]));
      expect(e.range).toEqual({ start: 16, end: 20 });
      expect(await snap(group)).toEqual(state);
      await expectUsable(group, whole);

      for (const pair of [
        [whole, mid],
        [mid, lo4],
        [whole, dup],
        [hi4, whole, lo4],
      ]) {
        expectCode(() => group.splitMut(pair), 'EINVAL', 'overlap');
        expect(await snap(group)).toEqual(state);
      }
      // sharing a boundary is not sharing a byte
      expect(splitVerdict(group, [lo4, hi4])).toBe('ok');
      await expectUsable(group, lo4);
      expect(await snap(group)).toEqual(state);
      group.dispose();
      expectLiveBaseline(base);
    });

    it('[G2-split-overlap] a repeated slot is an overlap, whether its layout is contiguous, strided or reversed', async () => {
      const base = counters();
      const group = createAllocationGroup();
      const { allocation, descriptor: whole } = group.insert(await f32(iota(16)));
      const even = group.alias(allocation, 'f32', { shape: [4], strides: [2] }); // elements 0,2,4,6
      const rev = group.alias(allocation, 'f32', { shape: [4], strides: [-1], byteOffset: 44 }); // 11..8
      const tail = group.alias(allocation, 'f32', { shape: [4], byteOffset: 48 }); // 12..15
      const state = await snap(group);
      for (const slot of [whole, even, rev, tail]) {
        const e = expectCode(() => group.splitMut([slot, slot]), 'EINVAL', 'overlap');
        expect([e.ids?.['slotA'], e.ids?.['slotB']]).toEqual([slot, slot]);
      }
      // among otherwise disjoint requests
      expect(splitVerdict(group, [even, rev, tail])).toBe('ok');
      const e = expectCode(() => group.splitMut([even, rev, tail, rev]), 'EINVAL', 'overlap');
      expect([e.ids?.['slotA'], e.ids?.['slotB']]).toEqual([rev, rev]);
      expect(await snap(group)).toEqual(state);
      await expectUsable(group, whole);
      group.dispose();
      expectLiveBaseline(base);
    });

    // -------------------------------------------------------------------------------------------------
    // G2-split-not-provable

    it('[G2-split-not-provable][G2-split-overlap] interleaved even/odd strided descriptors are NotProvablyDisjoint; with one that surely shares an element the request is an overlap', async () => {
      const base = counters();
      const group = createAllocationGroup();
      const A = group.insert(await f32(iota(8)));
      const even = group.alias(A.allocation, 'f32', { shape: [4], strides: [2], byteOffset: 0 });
      const odd = group.alias(A.allocation, 'f32', { shape: [4], strides: [2], byteOffset: 4 });
      const lo = group.alias(A.allocation, 'f32', { shape: [2] });
      const state = await snap(group);

      const e = expectCode(() => group.splitMut([even, odd]), 'EINVAL', 'NotProvablyDisjoint');
      expect(new Set([e.ids?.['slotA'], e.ids?.['slotB']])).toEqual(new Set([even, odd]));
      expect(e.range).toEqual({ start: 4, end: 28 });
      expect(await snap(group)).toEqual(state);
      await expectUsable(group, A.descriptor);
      // one failing pair fails the whole request: no child exists afterwards; the most definite reason
      // wins (lo surely shares element 0 with even)
      expectCode(() => group.splitMut([odd, lo, even]), 'EINVAL', 'overlap');
      expect(await snap(group)).toEqual(state);
      await expectUsable(group, A.descriptor);
      // each alone is fine
      expect(splitVerdict(group, [even])).toBe('ok');
      expect(splitVerdict(group, [odd])).toBe('ok');

      // the same interleaving over two different allocations is disjoint
      const B = group.insert(await f32(iota(8, 10)));
      const oddB = group.alias(B.allocation, 'f32', { shape: [4], strides: [2], byteOffset: 4 });
      const [k0, k1] = group.splitMut([even, oddB]) as [TensorViewMut<'f32'>, TensorViewMut<'f32'>];
      await k0.write(Float32Array.of(-1, -2, -3, -4));
      await k1.write(Float32Array.of(-5, -6, -7, -8));
      k0.release();
      k1.release();
      expect(await read(group, A.descriptor)).toEqual([-1, 1, -2, 3, -3, 5, -4, 7]);
      expect(await read(group, B.descriptor)).toEqual([10, -5, 12, -6, 14, -7, 16, -8]);
      group.dispose();
      expectLiveBaseline(base);
    });

    it('[G2-split-not-provable][G2-split-overlap] reversed and 2D-block layouts whose envelopes meet are refused: NotProvablyDisjoint, or overlap where an element is surely shared', async () => {
      const base = counters();
      const group = createAllocationGroup();
      const { allocation, descriptor: whole } = group.insert(await f32(iota(16), [4, 4]));
      const lo = group.alias(allocation, 'f32', { shape: [4] }); // elements 0..3
      const rev = group.alias(allocation, 'f32', { shape: [4], strides: [-1], byteOffset: 20 }); // 5,4,3,2
      const rev2 = group.alias(allocation, 'f32', { shape: [3], strides: [-1], byteOffset: 28 }); // 7,6,5
      const tl = group.alias(allocation, 'f32', { shape: [2, 2], strides: [4, 1] }); // 0,1,4,5
      const tr = group.alias(allocation, 'f32', { shape: [2, 2], strides: [4, 1], byteOffset: 8 }); // 2,3,6,7
      const bl = group.alias(allocation, 'f32', { shape: [2, 2], strides: [4, 1], byteOffset: 32 }); // 8,9,12,13
      const state = await snap(group);
      const cases: [DescriptorSlot[], string][] = [
        [[rev, lo], 'overlap'], // rev's lowest element (2) lies inside the contiguous lo
        [[rev, rev2], 'overlap'], // both surely reach element 5 (rev's first, rev2's lowest)
        [[tl, tr], 'NotProvablyDisjoint'], // disjoint blocks whose envelopes [0,24) and [8,32) intersect
        [[tl, lo], 'overlap'], // tl's first element (0) lies inside lo
      ];
      for (const [pair, reason] of cases) {
        expectCode(() => group.splitMut(pair), 'EINVAL', reason);
        expect(await snap(group)).toEqual(state);
      }
      // envelopes apart: provably disjoint
      const [k0, k1] = group.splitMut([tl, bl]) as [TensorViewMut<'f32'>, TensorViewMut<'f32'>];
      await k0.write(Float32Array.of(-1, -2, -3, -4));
      await k1.write(Float32Array.of(-5, -6, -7, -8));
      k0.release();
      k1.release();
      expect(await read(group, whole)).toEqual([-1, -2, 2, 3, -3, -4, 6, 7, -5, -6, 10, 11, -7, -8, 14, 15]);
      expect(splitVerdict(group, [tr, bl, rev2])).toBe('EINVAL:overlap'); // both surely reach element 7
      expect(splitVerdict(group, [bl, tr, tl])).toBe('EINVAL:NotProvablyDisjoint'); // only tl/tr intersect, unprovably
      expect(splitVerdict(group, [tr, bl])).toBe('ok');
      await expectUsable(group, whole);
      group.dispose();
      expectLiveBaseline(base);
    });

    // -------------------------------------------------------------------------------------------------
    // G2-split-permutation

    it('[G2-split-permutation] every order of fixed request sets gets the same verdict (all 120 orders of five)', async () => {
      const base = counters();
      const group = createAllocationGroup();
      const A = group.insert(await zeros(provider, 'f32', [16]));
      const B = group.insert(await zeros(provider, 'f32', [8]));
      const alias = (spec: LayoutSpec): DescriptorSlot => group.alias(A.allocation, 'f32', spec);
      const c0 = alias({ shape: [4] });
      const r1 = alias({ shape: [4], strides: [-1], byteOffset: 28 });
      const t2 = alias({ shape: [2, 2], strides: [1, 2], byteOffset: 32 });
      const s3 = alias({ shape: [2], strides: [2], byteOffset: 48 });
      const even = alias({ shape: [4], strides: [2] });
      const odd = alias({ shape: [4], strides: [2], byteOffset: 4 });
      const c23 = alias({ shape: [2], byteOffset: 8 }); // elements 2..3: overlaps c0 only, both contiguous
      const sets: [DescriptorSlot[], string][] = [
        [[c0, r1, t2, s3, B.descriptor], 'ok'],
        [[c0, r1, c23, s3, B.descriptor], 'EINVAL:overlap'],
        [[even, odd, t2, s3, B.descriptor], 'EINVAL:NotProvablyDisjoint'],
        [[c0, t2, c0, s3, B.descriptor], 'EINVAL:overlap'],
      ];
      const state = await snap(group);
      for (const [set, expected] of sets) {
        let orders = 0;
        for (const order of permutations(set)) {
          expect(splitVerdict(group, order)).toBe(expected);
          orders++;
        }
        expect(orders).toBe(120);
      }
      expect(await snap(group)).toEqual(state);
      group.dispose();
      expectLiveBaseline(base);
    });

    it('[G2-split-permutation] property: random descriptor sets get one verdict for every order, matching the model; accepted splits are truly disjoint', async () => {
      const base = counters();
      const group = createAllocationGroup();
      const A = group.insert(await zeros(provider, 'f32', [ALLOC_ELEMS]));
      const B = group.insert(await zeros(provider, 'f32', [ALLOC_ELEMS]));
      const allocations = [A.allocation, B.allocation] as const;
      const full = [A.descriptor, B.descriptor] as const;
      const arbCase = fc
        .array(arbDesc, { minLength: 1, maxLength: 6 })
        .chain((descs) =>
          fc.record({
            descs: fc.constant(descs),
            picks: fc.array(fc.nat(descs.length - 1), { maxLength: 6 }),
            keys: fc.array(fc.array(fc.nat(1000), { minLength: 6, maxLength: 6 }), { minLength: 1, maxLength: 3 }),
          }),
        );
      let accepted = 0;
      let rejected = 0;
      await fc.assert(
        fc.asyncProperty(arbCase, async ({ descs, picks, keys }) => {
          // A repeated *empty* slot is left out: empty descriptors reach no byte (disjoint from everything)
          // while a repeated slot is an overlap; the contract does not rank the two rules.
          const requests = picks.filter((p, i) => descs[p]!.elems.length > 0 || picks.indexOf(p) === i);
          const slots = descs.map((d) => group.alias(allocations[d.alloc], 'f32', d.spec));
          try {
            const expected = modelVerdict(descs, requests);
            const orders = [requests, [...requests].reverse(), ...keys.map((k) => requests.map((r, i) => [k[i]!, i, r] as const).sort((x, y) => x[0] - y[0] || x[1] - y[1]).map((x) => x[2]))];
            const before = counters();
            const verdicts = orders.map((o) => splitVerdict(group, o.map((i) => slots[i]!)));
            expect(counters().validations).toBe(before.validations);
            expect(new Set(verdicts).size).toBe(1);
            expect(expected).toContain(verdicts[0]);
            if (verdicts[0] !== 'ok') {
              rejected++;
              return;
            }
            accepted++;
            if (requests.length === 0) return;
            // soundness: a distinct value through every child element, then each allocation read once
            const kids = group.splitMut(requests.map((i) => slots[i]!)) as TensorViewMut<'f32'>[];
            const tag = (k: number, j: number): number => 1000 * (k + 1) + j;
            try {
              for (let k = 0; k < kids.length; k++) await kids[k]!.write(Float32Array.from({ length: kids[k]!.size }, (_, j) => tag(k, j)));
            } finally {
              for (const kid of kids) kid.release();
            }
            const memory = [await read(group, full[0]), await read(group, full[1])];
            requests.forEach((r, k) => {
              const d = descs[r]!;
              expect(d.elems.map((e) => memory[d.alloc]![e])).toEqual(d.elems.map((_, j) => tag(k, j)));
            });
          } finally {
            for (const s of slots) group.removeDescriptor(s);
          }
        }),
        fcParams(runs(300, 25)),
      );
      // the generator reaches both outcomes
      expect(accepted).toBeGreaterThan(0);
      expect(rejected).toBeGreaterThan(0);
      expect(group.descriptors()).toEqual([full[0], full[1]]);
      group.dispose();
      expectLiveBaseline(base);
    });

    // -------------------------------------------------------------------------------------------------
    // G2-split-no-revalidate

    it('[G2-split-no-revalidate] splitMut validates and maps nothing and proves injectivity once per descriptor', async () => {
      const base = counters();
      const group = createAllocationGroup();
      const { allocation, descriptor: whole } = group.insert(await zeros(provider, 'f32', [16]));
      const c = group.alias(allocation, 'f32', { shape: [4] }); // 0..3
      const s = group.alias(allocation, 'f32', { shape: [2], strides: [2], byteOffset: 16 }); // 4, 6
      const r = group.alias(allocation, 'f32', { shape: [4], strides: [-1], byteOffset: 44 }); // 11..8

      const measure = (fn: () => void): Record<string, number> => {
        const before = counters();
        const mark = provider.ledgerMark();
        fn();
        const after = counters();
        expect(provider.ledgerSince(mark)).toEqual([]);
        return {
          validations: after.validations - before.validations,
          injectivityProofs: after.injectivityProofs - before.injectivityProofs,
          disjointnessProofs: after.disjointnessProofs - before.disjointnessProofs,
          providerResolutions: after.providerResolutions - before.providerResolutions,
          maps: after.maps - before.maps,
          rootsCreated: after.rootsCreated - before.rootsCreated,
        };
      };
      const cost = (injectivityProofs: number): Record<string, number> => ({
        validations: 0,
        injectivityProofs,
        disjointnessProofs: 1,
        providerResolutions: 0,
        maps: 0,
        rootsCreated: 0,
      });
      const splitAndRelease = (slots: DescriptorSlot[]) => (): void => {
        for (const k of group.splitMut(slots)) k.release();
      };

      // three descriptors without a retained proof: three proofs, then none
      expect(measure(splitAndRelease([c, s, r]))).toEqual(cost(3));
      expect(measure(splitAndRelease([r, c, s]))).toEqual(cost(0));
      const t = group.alias(allocation, 'f32', { shape: [4], byteOffset: 48 }); // 12..15
      expect(measure(splitAndRelease([c, s, r, t]))).toEqual(cost(1));
      // the inserted descriptor has no proof yet either
      expect(measure(splitAndRelease([whole]))).toEqual(cost(1));
      expect(measure(splitAndRelease([whole]))).toEqual(cost(0));

      // a repeated slot is proven once, and the proof is kept although the request failed
      const fresh = group.alias(allocation, 'f32', { shape: [2], byteOffset: 56 });
      expect(measure(() => expectCode(() => group.splitMut([fresh, fresh]), 'EINVAL', 'overlap'))).toEqual(cost(1));
      expect(measure(splitAndRelease([fresh]))).toEqual(cost(0));

      // a proof retained by an earlier write through the descriptor costs nothing later
      const w = group.alias(allocation, 'f32', { shape: [2], strides: [3], byteOffset: 20 }); // 5, 8
      {
        using m = group.viewMut<'f32'>(w);
        await m.write(Float32Array.of(5, 8));
      }
      expect(measure(splitAndRelease([w, c]))).toEqual(cost(0));

      // a layout that reaches an element twice is proven (once) non-injective and refused
      const state = await snap(group);
      const bc = group.alias(allocation, 'f32', { shape: [3], strides: [0], byteOffset: 60 });
      const afterAlias = await snap(group);
      expect(measure(() => expectCode(() => group.splitMut([bc]), 'EINVAL', 'non-injective'))).toEqual(cost(1));
      expect(measure(() => expectCode(() => group.splitMut([c, bc]), 'EINVAL', 'non-injective'))).toEqual(cost(0));
      expect(await snap(group)).toEqual(afterAlias);
      expect(state.descriptors.length + 1).toBe(afterAlias.descriptors.length);
      await expectUsable(group, whole);
      group.dispose();
      expectLiveBaseline(base);
    });

    it('[G2-split-no-revalidate] a proof retained before insertion (split children) is reused: zero proofs, zero validations', async () => {
      const base = counters();
      const rows = splitRows();
      const [lo, hi] = (await f32(iota(2 * rows))).split([rows, rows]) as [Tensor<'f32'>, Tensor<'f32'>];
      const group = createAllocationGroup();
      const v0 = counters().validations;
      const L = group.insert(lo);
      const H = group.insert(hi);
      expect(counters().validations).toBe(v0);
      const before = counters();
      const kids = group.splitMut([H.descriptor, L.descriptor]);
      const after = counters();
      expect(after.validations - before.validations).toBe(0);
      expect(after.injectivityProofs - before.injectivityProofs).toBe(0);
      expect(after.disjointnessProofs - before.disjointnessProofs).toBe(1);
      expect(after.providerResolutions - before.providerResolutions).toBe(0);
      for (const k of kids) k.release();
      group.dispose();
      expectLiveBaseline(base);
    });

    // -------------------------------------------------------------------------------------------------
    // G2-extract-unique

    it('[G2-extract-unique] an aliased allocation is refused; once the alias is removed the owner moves out and leaves holes', async () => {
      const base = counters();
      const group = createAllocationGroup();
      const P = group.insert(await f32(iota(4)));
      const Q = group.insert(await f32(iota(8, 10)));
      const qa = group.alias(Q.allocation, 'f32', { shape: [4], byteOffset: 16 });
      const state = await snap(group);

      const e = expectCode(() => group.tryExtract(Q.descriptor), 'EBUSY', 'aliased-allocation');
      expect(e.op).toBe('group.tryExtract');
      expectCode(() => group.tryExtract(qa), 'EBUSY', 'aliased-allocation');
      expect(await snap(group)).toEqual(state);
      await expectUsable(group, Q.descriptor);
      // an exact duplicate is an alias too
      const pd = group.alias(P.allocation, 'f32', { shape: [4] });
      expectCode(() => group.tryExtract(P.descriptor), 'EBUSY', 'aliased-allocation');
      expectCode(() => group.tryExtract(pd), 'EBUSY', 'aliased-allocation');
      group.removeDescriptor(pd);

      group.removeDescriptor(qa);
      const before = counters();
      const mark = provider.ledgerMark();
      const t = group.tryExtract<'f32'>(Q.descriptor);
      const after = counters();
      // a move: nothing allocated, copied, destroyed or validated
      expect(provider.ledgerSince(mark)).toEqual([]);
      expect(after.liveRoots).toBe(before.liveRoots);
      expect(after.rootsDestroyed).toBe(before.rootsDestroyed);
      expect(after.validations).toBe(before.validations);
      expect(t).toBeInstanceOf(Tensor);
      expect(t.moved).toBe(false);
      expect(t.shape).toEqual([8]);
      expect(list(await t.toArray())).toEqual(list(iota(8, 10)));
      // holes: no slot renumbered, the extracted descriptor slot vacant for good
      expect(group.allocationSlots).toBe(2);
      expect(group.descriptorSlots).toBe(4);
      expect(group.descriptors()).toEqual([P.descriptor]);
      expect(group.allocationOf(P.descriptor)).toBe(P.allocation);
      expectCode(() => group.view(Q.descriptor), 'EINVAL', 'empty-slot');
      expectCode(() => group.tryExtract(Q.descriptor), 'EINVAL', 'empty-slot');
      expectCode(() => group.alias(Q.allocation, 'f32', { shape: [1] }), 'EINVAL', 'empty-slot');
      expect(await read(group, P.descriptor)).toEqual([0, 1, 2, 3]);

      // the owner lives on its own: the group's end does not touch it
      group.dispose();
      expect(counters().rootsDestroyed).toBe(before.rootsDestroyed + 1);
      await t.write(iota(8, 70));
      expect(list(await t.toArray())).toEqual(list(iota(8, 70)));
      t.dispose();
      expect(counters().rootsDestroyed).toBe(before.rootsDestroyed + 2);
      expectLiveBaseline(base);
    });

    it('[G2-extract-unique] the sole descriptor moves out with its own layout and dtype, even when it is an alias', async () => {
      const base = counters();
      const group = createAllocationGroup();
      const A = group.insert(await f32(iota(8)));
      const odd = group.alias(A.allocation, 'f32', { shape: [4], strides: [2], byteOffset: 4 });
      const B = group.insert(await f32(Float32Array.of(1.5, -2)));
      const bits = group.alias(B.allocation, 'u32', { shape: [2] });
      group.removeDescriptor(A.descriptor);
      group.removeDescriptor(B.descriptor);

      // refused while a shared view of the group lives
      const v = group.view(odd);
      expectCode(() => group.tryExtract(odd), 'EBUSY', 'shared-borrowed');
      v.release();

      const t = group.tryExtract<'f32'>(odd);
      expect(t.shape).toEqual([4]);
      expect(t.strides).toEqual([2]);
      expect(t.isContiguous).toBe(false);
      expect(list(await t.toArray())).toEqual([1, 3, 5, 7]);
      await t.write(Float32Array.of(-1, -3, -5, -7));
      expect(list(await t.toArray())).toEqual([-1, -3, -5, -7]);
      const u = group.tryExtract<'u32'>(bits);
      expect(u.dtype).toBe('u32');
      expect(list(await u.toArray())).toEqual(bitsOf(Float32Array.of(1.5, -2)));
      expect(group.descriptors()).toEqual([]);
      expect(group.allocationSlots).toBe(2);
      expect(counters().liveRoots).toBe(base.liveRoots + 2);
      group.dispose();
      expect(counters().liveRoots).toBe(base.liveRoots + 2);
      t.dispose();
      u.dispose();
      expectLiveBaseline(base);
    });

    // -------------------------------------------------------------------------------------------------
    // G2-into-tensor

    it('[G2-into-tensor] intoTensor returns one owner, destroys every other allocation exactly once and moves the group', async () => {
      const base = counters();
      const group = createAllocationGroup();
      const A = group.insert(await f32(iota(4)));
      const B = group.insert(await f32(iota(4, 10)));
      const C = group.insert(await f32(iota(4, 20)));
      const bTail = group.alias(B.allocation, 'f32', { shape: [2], byteOffset: 8 });
      group.alias(C.allocation, 'f32', { shape: [2] });
      // a hole left by an earlier extraction has nothing to release
      const D = group.insert(await f32(iota(4, 30)));
      const d = group.tryExtract<'f32'>(D.descriptor);
      const spare = await f32(iota(1));

      const before = counters();
      const mark = provider.ledgerMark();
      // select an alias of B: the other descriptors over B are discarded, never copied
      const t = group.intoTensor<'f32'>(bTail);
      const after = counters();
      expect(after.rootsDestroyed - before.rootsDestroyed).toBe(2);
      expect(after.liveRoots - before.liveRoots).toBe(-2);
      expect(after.liveBytes - before.liveBytes).toBe(-32);
      expect(after.rootsCreated).toBe(before.rootsCreated);
      expect(after.doubleDestroys).toBe(before.doubleDestroys);
      expect(provider.ledgerSince(mark)).toEqual([]);
      expect(t.shape).toEqual([2]);
      expect(list(await t.toArray())).toEqual([12, 13]);
      expect(list(await d.toArray())).toEqual(list(iota(4, 30)));

      // every member of the consumed group throws EMOVED
      expect(group.moved).toBe(true);
      expectCode(() => group.allocationSlots, 'EMOVED');
      expectCode(() => group.descriptorSlots, 'EMOVED');
      expectCode(() => group.descriptors(), 'EMOVED');
      expectCode(() => group.allocationOf(A.descriptor), 'EMOVED');
      expectCode(() => group.insert(spare), 'EMOVED');
      expect(spare.moved).toBe(false);
      expectCode(() => group.alias(A.allocation, 'f32', { shape: [1] }), 'EMOVED');
      expectCode(() => group.removeDescriptor(A.descriptor), 'EMOVED');
      expectCode(() => group.view(A.descriptor), 'EMOVED');
      expectCode(() => group.viewMut(A.descriptor), 'EMOVED');
      expectCode(() => group.splitMut([A.descriptor]), 'EMOVED');
      expectCode(() => group.splitMut([]), 'EMOVED');
      expectCode(() => group.tryExtract(A.descriptor), 'EMOVED');
      expectCode(() => group.intoTensor(A.descriptor), 'EMOVED');
      expectCode(() => group.dispose(), 'EMOVED');
      // `using` on a consumed group is a no-op, never a second release
      expect(() => group[Symbol.dispose]()).not.toThrow();
      expect(counters().rootsDestroyed).toBe(after.rootsDestroyed);

      t.dispose();
      expect(counters().rootsDestroyed).toBe(after.rootsDestroyed + 1);
      d.dispose();
      spare.dispose();
      expectLiveBaseline(base);
    });

    it('[G2-into-tensor] allocations sharing a root are released per claim: the root lives on with the selected owner', async () => {
      const base = counters();
      const rows = splitRows();
      const [lo, hi] = (await f32(iota(2 * rows))).split([rows, rows]) as [Tensor<'f32'>, Tensor<'f32'>];
      const group = createAllocationGroup();
      group.insert(lo);
      const H = group.insert(hi);
      const before = counters();
      const t = group.intoTensor<'f32'>(H.descriptor);
      expect(counters().rootsDestroyed).toBe(before.rootsDestroyed);
      expect(counters().liveRoots).toBe(before.liveRoots);
      expect(list(await t.toArray())).toEqual(list(iota(rows, rows)));
      t.dispose();
      expect(counters().rootsDestroyed).toBe(before.rootsDestroyed + 1);
      expectLiveBaseline(base);
    });

    it('[G2-into-tensor] a failed intoTensor (bad slot or borrowed group) leaves the group intact and usable', async () => {
      const base = counters();
      const group = createAllocationGroup();
      const A = group.insert(await f32(iota(4)));
      const B = group.insert(await f32(iota(4, 10)));
      const gone = group.alias(B.allocation, 'f32', { shape: [1] });
      group.removeDescriptor(gone);
      const state = await snap(group);

      expectCode(() => group.intoTensor(dslot(-1)), 'EINVAL', 'invalid-slot');
      expectCode(() => group.intoTensor(dslot(99)), 'EINVAL', 'invalid-slot');
      expectCode(() => group.intoTensor(gone), 'EINVAL', 'empty-slot');
      expect(group.moved).toBe(false);
      expect(await snap(group)).toEqual(state);

      const v = group.view(A.descriptor);
      expectCode(() => group.intoTensor(A.descriptor), 'EBUSY', 'shared-borrowed');
      v.release();
      const m = group.viewMut(B.descriptor);
      expectCode(() => group.intoTensor(A.descriptor), 'EBUSY', 'exclusively-borrowed');
      m.release();
      const kids = group.splitMut([A.descriptor, B.descriptor]);
      expectCode(() => group.intoTensor(A.descriptor), 'EBUSY', 'exclusively-borrowed');
      kids[0]!.release();
      expectCode(() => group.intoTensor(A.descriptor), 'EBUSY', 'exclusively-borrowed');
      kids[1]!.release();
      expect(group.moved).toBe(false);
      expect(await snap(group)).toEqual(state);
      await expectUsable(group, A.descriptor);

      const before = counters();
      const t = group.intoTensor<'f32'>(A.descriptor);
      expect(counters().rootsDestroyed).toBe(before.rootsDestroyed + 1);
      expect(list(await t.toArray())).toEqual([0, 1, 2, 3]);
      t.dispose();
      expectLiveBaseline(base);
    });

    // -------------------------------------------------------------------------------------------------
    // G2-failure-unchanged

    it('[G2-failure-unchanged] every failing group operation leaves slots, descriptors, contents, borrows and live memory as they were', async () => {
      const base = counters();
      const group = createAllocationGroup();
      const A = group.insert(await f32(iota(8)));
      const B = group.insert(await f32(iota(4, 10)));
      const even = group.alias(A.allocation, 'f32', { shape: [4], strides: [2] });
      const odd = group.alias(A.allocation, 'f32', { shape: [4], strides: [2], byteOffset: 4 });
      const twice = group.alias(B.allocation, 'f32', { shape: [2, 2], strides: [1, 1] });
      const vacant = group.alias(B.allocation, 'f32', { shape: [1] });
      group.removeDescriptor(vacant);
      const H = group.insert(await f32(iota(1)));
      group.tryExtract(H.descriptor).dispose(); // leaves an allocation hole
      const moved = await f32(iota(2));
      moved.dispose();
      const borrowed = await f32(iota(2));
      const state = await snap(group);

      const failures: [string, () => unknown, TenonErrorCode, string][] = [
        ['alias: invalid allocation', () => group.alias(aslot(-1), 'f32', { shape: [1] }), 'EINVAL', 'invalid-slot'],
        ['alias: hole', () => group.alias(H.allocation, 'f32', { shape: [1] }), 'EINVAL', 'empty-slot'],
        ['alias: dtype', () => group.alias(A.allocation, 'f64' as DType, { shape: [1] }), 'EINVAL', 'unknown-dtype'],
        ['alias: out of span', () => group.alias(A.allocation, 'f32', { shape: [9] }), 'EINVAL', 'out-of-span'],
        ['alias: misaligned', () => group.alias(A.allocation, 'f32', { shape: [1], byteOffset: 2 }), 'EINVAL', 'misaligned'],
        ['alias: shape', () => group.alias(A.allocation, 'f32', { shape: [-1] }), 'EINVAL', 'bad-shape'],
        ['alias: strides', () => group.alias(A.allocation, 'f32', { shape: [2], strides: [1, 1] }), 'EINVAL', 'bad-strides'],
        ['alias: offset', () => group.alias(A.allocation, 'f32', { shape: [1], byteOffset: -4 }), 'EINVAL', 'bad-offset'],
        ['removeDescriptor: invalid', () => group.removeDescriptor(dslot(42)), 'EINVAL', 'invalid-slot'],
        ['removeDescriptor: vacant', () => group.removeDescriptor(vacant), 'EINVAL', 'empty-slot'],
        ['view: invalid', () => group.view(dslot(-1)), 'EINVAL', 'invalid-slot'],
        ['viewMut: vacant', () => group.viewMut(vacant), 'EINVAL', 'empty-slot'],
        ['allocationOf: invalid', () => group.allocationOf(dslot(1.5)), 'EINVAL', 'invalid-slot'],
        ['splitMut: invalid among valid', () => group.splitMut([A.descriptor, dslot(NaN)]), 'EINVAL', 'invalid-slot'],
        ['splitMut: vacant among valid', () => group.splitMut([B.descriptor, even, vacant]), 'EINVAL', 'empty-slot'],
        ['splitMut: not an array', () => group.splitMut(0 as unknown as DescriptorSlot[]), 'EINVAL', 'bad-slots'],
        ['splitMut: sparse list', () => group.splitMut(new Array<DescriptorSlot>(2)), 'EINVAL', 'invalid-slot'],
        ['splitMut: hole among valid', () => group.splitMut(Object.assign(new Array<DescriptorSlot>(3), { 0: A.descriptor, 2: B.descriptor })), 'EINVAL', 'invalid-slot'],
        ['splitMut: overlap', () => group.splitMut([A.descriptor, B.descriptor, A.descriptor]), 'EINVAL', 'overlap'],
        ['splitMut: not provable', () => group.splitMut([B.descriptor, even, odd]), 'EINVAL', 'NotProvablyDisjoint'],
        ['splitMut: non-injective', () => group.splitMut([A.descriptor, twice]), 'EINVAL', 'non-injective'],
        ['tryExtract: aliased', () => group.tryExtract(A.descriptor), 'EBUSY', 'aliased-allocation'],
        ['tryExtract: vacant', () => group.tryExtract(vacant), 'EINVAL', 'empty-slot'],
        ['intoTensor: invalid', () => group.intoTensor(dslot(Infinity)), 'EINVAL', 'invalid-slot'],
        ['insert: moved tensor', () => group.insert(moved), 'EMOVED', ''],
        ['insert: not a tensor', () => group.insert({} as Tensor), 'EINVAL', 'not-a-tensor'],
      ];
      for (const [what, fn, code, reason] of failures) {
        const err = expectCode(fn, code, reason === '' ? undefined : reason);
        expect(err.op, what).toMatch(/^group\./);
        expect(await snap(group), what).toEqual(state);
      }
      // a borrowed tensor cannot be inserted; it stays with its owner, unchanged and usable
      {
        using v = borrowed.view();
        expectCode(() => group.insert(borrowed), 'EBUSY', 'shared-borrowed');
        expect(list(await v.toArray())).toEqual([0, 1]);
      }
      expect(borrowed.moved).toBe(false);
      expect(await snap(group)).toEqual(state);
      // a borrowed group refuses the insert without consuming the tensor
      {
        using v = group.view(A.descriptor);
        expectCode(() => group.insert(borrowed), 'EBUSY', 'shared-borrowed');
        expect(v.size).toBe(8);
      }
      expect(borrowed.moved).toBe(false);
      expect(list(await borrowed.toArray())).toEqual([0, 1]);
      expect(await snap(group)).toEqual(state);

      // the group is fully usable after all of it
      await expectUsable(group, A.descriptor);
      await expectUsable(group, B.descriptor);
      const kids = group.splitMut([B.descriptor, even]);
      for (const k of kids) k.release();
      const ins = group.insert(borrowed);
      expect(ins.allocation).toBe(3);
      expect(ins.descriptor).toBe(state.descriptorSlots);
      group.dispose();
      expectLiveBaseline(base);
    });

    // -------------------------------------------------------------------------------------------------
    // G2-slot-no-authority

    it('[G2-slot-no-authority] malformed and vacant slots are rejected by every member that takes one', async () => {
      const base = counters();
      const group = createAllocationGroup();
      const A = group.insert(await f32(iota(4)));
      const vacant = group.alias(A.allocation, 'f32', { shape: [1] });
      group.removeDescriptor(vacant);
      const state = await snap(group);
      const malformed: unknown[] = [-1, 2, 3, 1.5, NaN, Infinity, -Infinity, 2 ** 53, '0', null, undefined, {}];
      const members: [string, (s: DescriptorSlot) => unknown][] = [
        ['view', (s) => group.view(s)],
        ['viewMut', (s) => group.viewMut(s)],
        ['allocationOf', (s) => group.allocationOf(s)],
        ['removeDescriptor', (s) => group.removeDescriptor(s)],
        ['tryExtract', (s) => group.tryExtract(s)],
        ['splitMut', (s) => group.splitMut([s])],
        ['splitMut among valid', (s) => group.splitMut([A.descriptor, s])],
        ['intoTensor', (s) => group.intoTensor(s)],
      ];
      for (const [, member] of members) {
        for (const bad of malformed) expectCode(() => member(dslot(bad)), 'EINVAL', 'invalid-slot');
        expectCode(() => member(vacant), 'EINVAL', 'empty-slot');
      }
      for (const bad of [-1, 1, 0.5, NaN, '0', null]) {
        expectCode(() => group.alias(aslot(bad), 'f32', { shape: [1] }), 'EINVAL', 'invalid-slot');
      }
      expect(await snap(group)).toEqual(state);
      await expectUsable(group, A.descriptor);

      // a valid slot yields nothing without the matching borrow of its group
      const m = group.viewMut(A.descriptor);
      expectCode(() => group.view(A.descriptor), 'EBUSY', 'exclusively-borrowed');
      m.release();
      group.dispose();
      expectCode(() => group.view(A.descriptor), 'EMOVED');
      expectLiveBaseline(base);
    });

    it("[G2-slot-no-authority] a slot resolves only the table of the group it is given to, never another group's memory", async () => {
      const base = counters();
      const groupA = createAllocationGroup();
      const a0 = groupA.insert(await f32(iota(4, 0))).descriptor;
      const a1 = groupA.alias(groupA.allocationOf(a0), 'f32', { shape: [2], byteOffset: 8 });
      const groupB = createAllocationGroup();
      const b0 = groupB.insert(await f32(iota(4, 100))).descriptor;
      expect(a0).toBe(b0); // the same key in two tables
      expect(typeof a1).toBe('number'); // a plain number: nothing to carry authority
      const stateA = await snap(groupA);

      // slot 0 of A given to B selects B's record
      expect(await read(groupB, a0)).toEqual(list(iota(4, 100)));
      {
        using m = groupB.viewMut<'f32'>(a0);
        await m.write(iota(4, 200));
      }
      expect(await read(groupB, b0)).toEqual(list(iota(4, 200)));
      // slot 1 exists in A but not in B: B's error, nothing of A
      expectCode(() => groupB.view(a1), 'EINVAL', 'invalid-slot');
      expectCode(() => groupB.tryExtract(a1), 'EINVAL', 'invalid-slot');
      expectCode(() => groupB.splitMut([a1]), 'EINVAL', 'invalid-slot');
      // once B has a vacant slot 1, A's slot 1 meets B's vacancy
      const b1 = groupB.alias(groupB.allocationOf(b0), 'f32', { shape: [1] });
      groupB.removeDescriptor(b1);
      expect(b1).toBe(a1);
      expectCode(() => groupB.view(a1), 'EINVAL', 'empty-slot');
      expectCode(() => groupB.intoTensor(a1), 'EINVAL', 'empty-slot');
      // a copied key (here through JSON) is the same key and no more
      const copied = dslot(JSON.parse(JSON.stringify(a1)));
      expect(await read(groupA, copied)).toEqual([2, 3]);
      expectCode(() => groupB.view(copied), 'EINVAL', 'empty-slot');
      // A was never touched
      expect(await snap(groupA)).toEqual(stateA);
      expect(await read(groupA, a0)).toEqual(list(iota(4, 0)));

      // consuming B through A's key takes B's allocation; A keeps its own
      const t = groupB.intoTensor<'f32'>(a0);
      expect(list(await t.toArray())).toEqual(list(iota(4, 200)));
      expect(await read(groupA, a0)).toEqual(list(iota(4, 0)));
      expect(groupA.descriptors()).toEqual([a0, a1]);
      t.dispose();
      groupA.dispose();
      expectLiveBaseline(base);
    });
  });
}

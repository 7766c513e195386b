// Guarantee suite: host roots in one WebAssembly memory (issue 12 "Memory layout"; G1 roots, G5 prepared
// access on a memory that grows).
//
// Plan. Host providers of both kinds (ordinary and shared memory), through the public API:
//   - placement: every root of a `wasm` provider lies in the provider's one WebAssembly memory, at an
//     address that is a multiple of BLOCK_ALIGN, disjoint from every other live root; a disposed root's
//     block is reused by a later allocation and comes back zero-filled; `buffers` providers keep one
//     buffer per root (control);
//   - growth: with a prepared contiguous access alive (read or write), allocating a tensor larger than the
//     memory grows it (memoryGrowths counts it); on an ordinary memory the old array is then detached (the
//     hazard), and asArray() gives a live array over the same bytes, whose writes reach the tensor; cursors
//     taken after growth walk the right elements; nothing else changes (values of every tensor intact);
//   - limits: an allocation beyond wasm32's address space fails ENOMEM and leaves no root behind.
import { describe, expect, it } from 'vitest';
import { BLOCK_ALIGN, WASM_PAGE, createHostProvider, fromArray, zeros } from '../../src/index.js';
import type { Tensor } from '../../src/index.js';
import { expectCodeAsync } from '../support/expect-error.js';

const KINDS = [
  { name: 'ordinary', shared: false },
  { name: 'shared', shared: true },
] as const;

/** Address of element 0 of a contiguous host tensor: where its prepared array starts in the memory. */
async function addressOf(t: Tensor<'f32'>): Promise<{ address: number; buffer: ArrayBufferLike; bytes: number }> {
  const p = await t.prepareHost();
  try {
    if (p.kind !== 'contiguous') throw new Error('expected a contiguous tensor');
    const a = p.asArray();
    return { address: a.byteOffset, buffer: a.buffer, bytes: a.byteLength };
  } finally {
    p.release();
  }
}

describe.each(KINDS)('host memory ($name)', ({ shared }) => {
  it('[G1-host-wasm-memory] every root lies in the one memory, aligned and disjoint from every other live root', async () => {
    const provider = createHostProvider({ shared });
    expect(provider.memoryKind).toBe('wasm');
    const memory = provider.wasmMemory()!;
    const sizes = [1, 3, 16, 17, 64, 100, 1000, 4097];
    const tensors = await Promise.all(sizes.map((n) => zeros(provider, 'f32', [n])));
    try {
      const spans = await Promise.all(tensors.map(addressOf));
      for (const s of spans) {
        expect(s.buffer).toBe(memory.buffer);
        expect(s.address % BLOCK_ALIGN).toBe(0);
        expect(s.address).toBeGreaterThan(0);
      }
      const sorted = [...spans].sort((a, b) => a.address - b.address);
      for (let i = 1; i < sorted.length; i++) expect(sorted[i]!.address).toBeGreaterThanOrEqual(sorted[i - 1]!.address + sorted[i - 1]!.bytes);
      expect(memory.buffer instanceof SharedArrayBuffer).toBe(shared);
    } finally {
      for (const t of tensors) t.dispose();
    }
  });

  it('[G1-host-wasm-memory] a disposed root\'s block is reused, zero-filled; live bytes return to baseline', async () => {
    const provider = createHostProvider({ shared });
    const keep = await fromArray(provider, 'f32', new Float32Array([7, 8, 9]), [3]);
    const base = provider.counters();
    const first = await fromArray(provider, 'f32', new Float32Array(256).fill(5), [256]);
    const { address } = await addressOf(first);
    first.dispose();
    const second = await zeros(provider, 'f32', [256]);
    expect((await addressOf(second)).address).toBe(address);
    expect(Array.from(await second.toArray()).every((v) => v === 0)).toBe(true);
    second.dispose();
    expect(provider.counters().liveBytes).toBe(base.liveBytes);
    expect(provider.counters().liveRoots).toBe(base.liveRoots);
    expect(Array.from(await keep.toArray())).toEqual([7, 8, 9]);
    keep.dispose();
  });

  it('[G5-prepared-host-growth] a prepared read stays usable across growth: asArray() re-derives over the same bytes', async () => {
    const provider = createHostProvider({ shared });
    const values = Float32Array.from({ length: 1000 }, (_, i) => i * 0.5 - 3);
    const t = await fromArray(provider, 'f32', values, [1000]);
    const memory = provider.wasmMemory()!;
    using view = t.view();
    const p = await view.prepareHost();
    try {
      if (p.kind !== 'contiguous') throw new Error('contiguous expected');
      const before = p.asArray();
      const offset = before.byteOffset;
      const growths = provider.counters().memoryGrowths;
      const bufferBefore = memory.buffer;
      // Larger than the whole memory so far: it cannot fit without growing.
      const big = await zeros(provider, 'f32', [(bufferBefore.byteLength / 4) * 2]);
      try {
        expect(provider.counters().memoryGrowths).toBeGreaterThan(growths);
        expect(memory.buffer).not.toBe(bufferBefore);
        // The hazard this guards against: an ordinary memory's old buffer is detached by growth.
        if (!shared) expect(before.length).toBe(0);
        const after = p.asArray();
        expect(after.buffer).toBe(memory.buffer);
        expect(after.byteOffset).toBe(offset);
        expect(Array.from(after)).toEqual(Array.from(values));
      } finally {
        big.dispose();
      }
    } finally {
      p.release();
    }
  });

  it('[G5-prepared-host-growth] writes through a re-derived array after growth reach the tensor; a cursor taken after growth walks it', async () => {
    const provider = createHostProvider({ shared });
    const t = await zeros(provider, 'f32', [4, 6]);
    const memory = provider.wasmMemory()!;
    const w = await t.prepareHostMut();
    let big: Tensor<'f32'> | undefined;
    try {
      if (w.kind !== 'contiguous') throw new Error('contiguous expected');
      w.asArray()[0] = 1;
      const grown = memory.growths;
      big = await zeros(provider, 'f32', [memory.buffer.byteLength / 2]);
      expect(memory.growths).toBeGreaterThan(grown);
      const live = w.asArray();
      expect(live[0]).toBe(1);
      for (let i = 1; i < live.length; i++) live[i] = i;
      live[0] = 100;
    } finally {
      w.release();
    }
    const got = await t.toArray();
    expect(got[0]).toBe(100);
    expect(Array.from(got.slice(1))).toEqual(Array.from({ length: 23 }, (_, i) => i + 1));
    // A transposed view prepared after another growth walks the same elements in column order.
    const transposed = t.intoLayout({ shape: [6, 4], strides: [1, 6] });
    const huge = await zeros(provider, 'f32', [memory.buffer.byteLength / 2]);
    const walked: number[] = [];
    try {
      using tv = transposed.view();
      const r = await tv.prepareHost();
      try {
        if (r.kind !== 'strided') throw new Error('strided expected');
        for (const c = r.cursor(); !c.done; c.advance()) walked.push(c.array[c.index]!);
      } finally {
        r.release();
      }
    } finally {
      huge.dispose();
      big?.dispose();
      transposed.dispose();
    }
    const expected: number[] = [];
    for (let j = 0; j < 6; j++) for (let i = 0; i < 4; i++) expected.push(i * 6 + j === 0 ? 100 : i * 6 + j);
    expect(walked).toEqual(expected);
  });

  it('[G1-host-wasm-memory] an allocation past wasm32 addresses is ENOMEM and leaves no root behind', async () => {
    const provider = createHostProvider({ shared, maxAllocationBytes: 2 ** 33 });
    const base = provider.counters();
    // 4 GiB of f32 is more than a wasm32 memory can ever address (its first page holds the null guard).
    await expectCodeAsync(() => zeros(provider, 'f32', [(65536 * WASM_PAGE) / 4]), 'ENOMEM');
    const now = provider.counters();
    expect(now.liveRoots).toBe(base.liveRoots);
    expect(now.liveBytes).toBe(base.liveBytes);
    expect(now.rootsCreated).toBe(base.rootsCreated);
  });
});

describe('host memory (buffers)', () => {
  it('[G1-host-wasm-memory] control: a `buffers` provider gives each root its own buffer and never grows', async () => {
    const provider = createHostProvider({ memory: 'buffers' });
    expect(provider.wasmMemory()).toBeUndefined();
    const a = await zeros(provider, 'f32', [10]);
    const b = await zeros(provider, 'f32', [10]);
    const [sa, sb] = [await addressOf(a), await addressOf(b)];
    expect(sa.buffer).not.toBe(sb.buffer);
    expect(sa.address).toBe(0);
    expect(provider.counters().memoryGrowths).toBe(0);
    a.dispose();
    b.dispose();
  });
});

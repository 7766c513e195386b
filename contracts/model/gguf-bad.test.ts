// GGUF reader suite, bad files (issue 10 acceptance 4; both lanes).
// Plan: a small synthetic file from the test writer (every value type, three tensor types, 32-byte
// alignment) is the control: it parses. Truncated at every section boundary it names and at every byte,
// it is refused: EINVAL `truncated` anywhere in the header and padding, `tensor-out-of-file` once the cut
// falls in the data. The real stories260K file is cut at each of its own section boundaries (found by
// rewriting it with the writer, which reproduces it byte for byte). Then one corruption per row: magic,
// version (v1 and big-endian are ENOTSUP), counts at and past their caps (boundary N and N+1), string and
// array lengths, value types, bools, keys, nesting, alignment, ranks, dimensions, block geometry, tensor
// types, names, offsets (misaligned, past the end, overlapping; touching is the control). Every refusal
// carries its code and reason and leaves the input bytes unchanged. Last, seeded fast-check runs mutate
// headers (bytes, u32/u64 fields, truncations, splices) and require either a well-formed file or a
// TenonError, never another exception, with the bytes read bounded by the file (each read once).
import { describe, expect, it } from 'vitest';
import {
  GGUF_MAX_ARRAY_DEPTH,
  GGUF_MAX_ARRAY_ITEMS,
  GGUF_MAX_KEY_BYTES,
  GGUF_MAX_METADATA_ENTRIES,
  GGUF_MAX_STRING_BYTES,
  GGUF_MAX_TENSOR_NAME_BYTES,
  GGUF_MAX_TENSORS,
  TenonError,
  bytesSource,
  countingSource,
  parseGguf,
} from '../../src/index.js';
import type { GgufArray, GgufFile, TenonErrorCode } from '../../src/index.js';
import { catchTenonAsync } from '../support/expect-error.js';
import { fc, fcParams } from '../support/fc.js';
import { readGgufFixture } from '../support/gguf-fixtures.js';
import { gv, withU32, withU64, writeGguf } from '../support/gguf-writer.js';
import type { WriterSpec, WriterTensor, WrittenGguf } from '../support/gguf-writer.js';

const storiesGguf = await readGgufFixture('stories260K-f32.gguf');

const BASE_TENSORS: readonly WriterTensor[] = [
  { name: 'token_embd.weight', shape: [32, 4], type: 'Q8_0' },
  { name: 'output_norm.weight', shape: [32], type: 'F32' },
  { name: 'blk.0.attn_q.weight', shape: [256, 2], type: 'Q4_K' },
];

function baseSpec(overrides: Partial<WriterSpec> = {}): WriterSpec {
  return {
    metadata: [
      ['general.architecture', gv.str('llama')],
      ['general.name', gv.str('tiny test')],
      ['llama.block_count', gv.u32(1)],
      ['llama.rope.freq_base', gv.f32(10000)],
      ['tokenizer.ggml.tokens', gv.strings(['<unk>', 'a', 'é', '🙂'])],
      ['tokenizer.ggml.scores', gv.f32s([0, -1, -2.5, -3])],
      ['general.flag', gv.bool(true)],
      ['general.big', gv.u64(1n << 40n)],
      ['general.nested', gv.array({ itemType: 'array', items: [{ itemType: 'u8', items: new Uint8Array([1, 2]) }] })],
    ],
    tensors: BASE_TENSORS,
    ...overrides,
  };
}

const base = writeGguf(baseSpec());

/** Parses `bytes`; expects a TenonError with code and reason; the bytes must be unchanged afterwards. */
async function expectRefused(bytes: Uint8Array, code: TenonErrorCode, reason: string): Promise<TenonError> {
  const before = bytes.slice();
  const err = await catchTenonAsync(() => parseGguf(bytes));
  expect({ code: err.code, reason: err.reason }).toEqual({ code, reason });
  expect(firstDifference(bytes, before)).toBe(-1);
  return err;
}

function firstDifference(a: Uint8Array, b: Uint8Array): number {
  if (a.length !== b.length) return Math.min(a.length, b.length);
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return i;
  return -1;
}

/** Well-formedness of a parsed file, checked from the outside. */
function expectWellFormed(file: GgufFile): void {
  expect(file.dataOffset % file.alignment).toBe(0);
  expect(file.dataOffset).toBeLessThanOrEqual(file.size);
  const sorted = file.tensors.slice().sort((a, b) => a.offset - b.offset);
  let end = file.dataOffset;
  for (const t of sorted) {
    expect(t.offset).toBeGreaterThanOrEqual(end);
    expect((t.offset - file.dataOffset) % file.alignment).toBe(0);
    expect(t.byteLength).toBeGreaterThan(0);
    end = t.offset + t.byteLength;
  }
  expect(end).toBeLessThanOrEqual(file.size);
}

describe('[MD-gguf-bounds] truncation is refused wherever it falls', () => {
  it('[MD-gguf-bounds] control: the synthetic file (no general.alignment: 32 applies) parses, with its tensors where the writer put them', async () => {
    const file = await parseGguf(base.bytes);
    expectWellFormed(file);
    expect(file.dataOffset).toBe(base.layout.dataOffset);
    expect(file.tensors.map((t) => t.name)).toEqual(BASE_TENSORS.map((t) => t.name));
    for (const t of base.layout.tensors) expect(firstDifference(await file.readTensor(t.name), t.data), t.name).toBe(-1);
    expect(file.metadata.getArray('general.nested')).toEqual({ itemType: 'array', items: [{ itemType: 'u8', items: new Uint8Array([1, 2]) }] });
  });

  it('[MD-gguf-bounds] cut at every section boundary (and one byte either side): truncated in the header, tensor-out-of-file in the data', async () => {
    const { bytes, layout } = base;
    expect(layout.boundaries.length).toBeGreaterThan(4 + 3 * 9 + 5 * 3);
    for (const { name, at } of layout.boundaries) {
      for (const cut of [at - 1, at, at + 1]) {
        if (cut < 0 || cut >= bytes.length) continue;
        const reason = cut >= layout.dataOffset ? 'tensor-out-of-file' : 'truncated';
        const err = await expectRefused(bytes.slice(0, cut), 'EINVAL', reason);
        expect(err.reason, `${name} cut at ${cut}`).toBe(reason);
      }
    }
  });

  it('[MD-gguf-bounds] cut at every byte of the file', async () => {
    const { bytes, layout } = base;
    for (let cut = 0; cut < bytes.length; cut++) {
      const err = await catchTenonAsync(() => parseGguf(bytes.subarray(0, cut)));
      expect([err.code, err.reason], `cut at ${cut}`).toEqual(['EINVAL', cut >= layout.dataOffset ? 'tensor-out-of-file' : 'truncated']);
    }
    expectWellFormed(await parseGguf(bytes));
  });

  it.skipIf(storiesGguf === undefined)('[MD-gguf-bounds] stories260K-f32.gguf cut at each of its section boundaries', async () => {
    const real = storiesGguf!;
    const file = await parseGguf(real);
    const tensors: WriterTensor[] = [];
    for (const t of file.tensors) tensors.push({ name: t.name, shape: t.shape, type: t.type.name, offset: t.offset - file.dataOffset, data: await file.readTensor(t) });
    const rewritten = writeGguf({ metadata: [...file.metadata.keys()].map((k) => [k, file.metadata.get(k)!] as const), tensors });
    expect(firstDifference(rewritten.bytes, real)).toBe(-1);
    const { layout } = rewritten;
    expect(layout.dataOffset).toBe(file.dataOffset);
    for (const { name, at } of layout.boundaries) {
      if (at >= real.length) continue;
      const err = await catchTenonAsync(() => parseGguf(real.subarray(0, at)));
      expect([err.code, err.reason], name).toEqual(['EINVAL', at >= layout.dataOffset ? 'tensor-out-of-file' : 'truncated']);
    }
  });
});

describe('[MD-gguf-versions] magic, version and byte order', () => {
  it('[MD-gguf-versions] a wrong magic is bad-magic; a byte-reversed magic is big-endian (ENOTSUP)', async () => {
    await expectRefused(writeGguf(baseSpec({ magic: [0x47, 0x47, 0x55, 0x47] })).bytes, 'EINVAL', 'bad-magic');
    await expectRefused(new TextEncoder().encode('PK\u0003\u0004 not a gguf file at all'), 'EINVAL', 'bad-magic');
    await expectRefused(writeGguf(baseSpec({ magic: [0x46, 0x55, 0x47, 0x47] })).bytes, 'ENOTSUP', 'big-endian');
  });

  it('[MD-gguf-versions] versions 2 and 3 parse; version 1 is ENOTSUP; a byte-swapped version is big-endian; others are bad-version', async () => {
    for (const version of [2, 3]) expect((await parseGguf(writeGguf(baseSpec({ version })).bytes)).version).toBe(version);
    await expectRefused(writeGguf(baseSpec({ version: 1 })).bytes, 'ENOTSUP', 'unsupported-version');
    for (const swapped of [0x02000000, 0x03000000]) await expectRefused(writeGguf(baseSpec({ version: swapped })).bytes, 'ENOTSUP', 'big-endian');
    for (const version of [0, 4, 99, 0xffffffff]) await expectRefused(writeGguf(baseSpec({ version })).bytes, 'EINVAL', 'bad-version');
  });
});

describe('[MD-gguf-bounds] counts and lengths against caps and against the bytes left', () => {
  const { bytes, layout } = base;
  it('[MD-gguf-bounds] tensor count: past the cap is count-too-large; at the cap, more than the file holds is truncated', async () => {
    await expectRefused(withU64(bytes, layout.tensorCountAt, BigInt(GGUF_MAX_TENSORS + 1)), 'EINVAL', 'count-too-large');
    await expectRefused(withU64(bytes, layout.tensorCountAt, (1n << 64n) - 1n), 'EINVAL', 'count-too-large');
    await expectRefused(withU64(bytes, layout.tensorCountAt, BigInt(GGUF_MAX_TENSORS)), 'EINVAL', 'truncated');
  });

  it('[MD-gguf-bounds] metadata entry count: past the cap is count-too-large; at the cap, truncated', async () => {
    await expectRefused(withU64(bytes, layout.entryCountAt, BigInt(GGUF_MAX_METADATA_ENTRIES + 1)), 'EINVAL', 'count-too-large');
    await expectRefused(withU64(bytes, layout.entryCountAt, 1n << 63n), 'EINVAL', 'count-too-large');
    await expectRefused(withU64(bytes, layout.entryCountAt, BigInt(GGUF_MAX_METADATA_ENTRIES)), 'EINVAL', 'truncated');
  });

  it('[MD-gguf-bounds] key length: past the 65535-byte key limit is bad-key; within it but past the end, truncated', async () => {
    const at = layout.entries[0]!.at;
    await expectRefused(withU64(bytes, at, BigInt(GGUF_MAX_KEY_BYTES + 1)), 'EINVAL', 'bad-key');
    await expectRefused(withU64(bytes, at, (1n << 64n) - 1n), 'EINVAL', 'bad-key');
    await expectRefused(withU64(bytes, at, BigInt(GGUF_MAX_KEY_BYTES)), 'EINVAL', 'truncated');
  });

  it('[MD-gguf-bounds] string value length: past the cap is count-too-large; within it but past the end, truncated', async () => {
    const name = layout.entries.find((e) => e.key === 'general.name')!;
    await expectRefused(withU64(bytes, name.valueAt, BigInt(GGUF_MAX_STRING_BYTES + 1)), 'EINVAL', 'count-too-large');
    await expectRefused(withU64(bytes, name.valueAt, BigInt(bytes.length)), 'EINVAL', 'truncated');
    // A string inside an array is held to the same rules.
    const tokens = layout.entries.find((e) => e.key === 'tokenizer.ggml.tokens')!;
    await expectRefused(withU64(bytes, tokens.valueAt + 12, BigInt(GGUF_MAX_STRING_BYTES + 1)), 'EINVAL', 'count-too-large');
    await expectRefused(withU64(bytes, tokens.valueAt + 12, BigInt(GGUF_MAX_STRING_BYTES)), 'EINVAL', 'truncated');
  });

  it('[MD-gguf-bounds] array length: past the cap is count-too-large; at the cap, more items than bytes left is truncated', async () => {
    for (const key of ['tokenizer.ggml.tokens', 'tokenizer.ggml.scores', 'general.nested']) {
      const entry = layout.entries.find((e) => e.key === key)!;
      await expectRefused(withU64(bytes, entry.valueAt + 4, BigInt(GGUF_MAX_ARRAY_ITEMS + 1)), 'EINVAL', 'count-too-large');
      await expectRefused(withU64(bytes, entry.valueAt + 4, BigInt(GGUF_MAX_ARRAY_ITEMS)), 'EINVAL', 'truncated');
    }
  });
});

describe('[MD-gguf-metadata] keys, value types and values', () => {
  const { bytes, layout } = base;
  it('[MD-gguf-metadata] an unknown value type, at the top or as an array item type, is bad-value-type', async () => {
    for (const type of [13, 255, 0xffffffff]) {
      await expectRefused(withU32(bytes, layout.entries[2]!.typeAt, type), 'EINVAL', 'bad-value-type');
      const tokens = layout.entries.find((e) => e.key === 'tokenizer.ggml.tokens')!;
      await expectRefused(withU32(bytes, tokens.valueAt, type), 'EINVAL', 'bad-value-type');
    }
  });

  it('[MD-gguf-metadata] a bool byte other than 0 or 1 is bad-value', async () => {
    const flag = layout.entries.find((e) => e.key === 'general.flag')!;
    const out = bytes.slice();
    out[flag.valueAt] = 2;
    await expectRefused(out, 'EINVAL', 'bad-value');
  });

  it('[MD-gguf-metadata] empty, non-UTF-8 and duplicate keys are refused', async () => {
    await expectRefused(writeGguf(baseSpec({ metadata: [['', gv.u32(1)]] })).bytes, 'EINVAL', 'bad-key');
    await expectRefused(writeGguf(baseSpec({ metadata: [['k', gv.u32(1)]], rawKeys: { 0: new Uint8Array([0x6b, 0xff]) } })).bytes, 'EINVAL', 'bad-key');
    await expectRefused(writeGguf(baseSpec({ metadata: [['k', gv.u32(1)]], rawKeys: { 0: new Uint8Array([0xed, 0xa0, 0x80]) } })).bytes, 'EINVAL', 'bad-key');
    const dup = await expectRefused(writeGguf(baseSpec({ metadata: [['a', gv.u32(1)], ['b', gv.u32(2)], ['a', gv.str('x')]] })).bytes, 'EINVAL', 'duplicate-name');
    expect(dup.ids?.['key']).toBe('a');
  });

  it('[MD-gguf-metadata] a string value that is not valid UTF-8 is read with replacement characters, as TextDecoder does', async () => {
    const spec = baseSpec({ metadata: [['s', gv.str('abcd')]] });
    const written = writeGguf(spec);
    const out = written.bytes.slice();
    out[written.layout.entries[0]!.valueAt + 8 + 1] = 0xff;
    expect((await parseGguf(out)).metadata.getString('s')).toBe('a\ufffdcd');
  });

  it('[MD-gguf-metadata] arrays nest up to the depth limit and no deeper', async () => {
    const nest = (depth: number): GgufArray => (depth === 1 ? { itemType: 'u8', items: new Uint8Array([7]) } : { itemType: 'array', items: [nest(depth - 1)] });
    const ok = writeGguf(baseSpec({ metadata: [['n', gv.array(nest(GGUF_MAX_ARRAY_DEPTH))]] }));
    expect((await parseGguf(ok.bytes)).metadata.getArray('n')).toEqual(nest(GGUF_MAX_ARRAY_DEPTH));
    await expectRefused(writeGguf(baseSpec({ metadata: [['n', gv.array(nest(GGUF_MAX_ARRAY_DEPTH + 1))]] })).bytes, 'EINVAL', 'nesting-too-deep');
  });

  it('[MD-gguf-metadata] general.architecture must be a string', async () => {
    const err = await expectRefused(writeGguf(baseSpec({ metadata: [['general.architecture', gv.u32(1)]] })).bytes, 'EINVAL', 'bad-metadata');
    expect(err.ids?.['key']).toBe('general.architecture');
  });

  it('[MD-gguf-metadata] general.alignment: a power-of-two u32 moves the data section; zero, a non-power of two or another type is bad-alignment', async () => {
    for (const alignment of [1, 8, 64, 256]) {
      const w = writeGguf(baseSpec({ metadata: [['general.alignment', gv.u32(alignment)]], alignment }));
      const file = await parseGguf(w.bytes);
      expect(file.alignment).toBe(alignment);
      expect(file.dataOffset).toBe(w.layout.dataOffset);
      for (const t of w.layout.tensors) {
        expect(file.tensor(t.name).offset).toBe(t.dataAt);
        expect(firstDifference(await file.readTensor(t.name), t.data), t.name).toBe(-1);
      }
    }
    for (const value of [gv.u32(0), gv.u32(3), gv.u32(48), gv.u32(0xffffffff), gv.u64(32n), gv.i32(32)]) {
      await expectRefused(writeGguf(baseSpec({ metadata: [['general.alignment', value]] })).bytes, 'EINVAL', 'bad-alignment');
    }
  });
});

describe('[MD-gguf-tensors] tensor infos: names, ranks, shapes, types, offsets and extents', () => {
  const one = (t: Partial<WriterTensor> & { name?: string }, more: WriterTensor[] = []): Uint8Array =>
    writeGguf({ tensors: [{ name: 'w', shape: [32, 2], type: 'F32', ...t } as WriterTensor, ...more] }).bytes;

  it('[MD-gguf-tensors] names: empty, longer than ggml keeps, not UTF-8, or repeated are refused; 63 bytes is the longest accepted', async () => {
    await expectRefused(one({ name: '' }), 'EINVAL', 'bad-name');
    await expectRefused(one({ name: 'x'.repeat(GGUF_MAX_TENSOR_NAME_BYTES + 1) }), 'EINVAL', 'bad-name');
    expect((await parseGguf(one({ name: 'x'.repeat(GGUF_MAX_TENSOR_NAME_BYTES) }))).tensors[0]!.name).toHaveLength(GGUF_MAX_TENSOR_NAME_BYTES);
    const w = writeGguf({ tensors: [{ name: 'ab', shape: [8], type: 'F32' }] });
    const bad = w.bytes.slice();
    bad[w.layout.tensors[0]!.at + 8] = 0xc3; // a lead byte followed by ASCII
    await expectRefused(bad, 'EINVAL', 'bad-name');
    const dup = await expectRefused(one({ name: 'w' }, [{ name: 'w', shape: [8], type: 'F32' }]), 'EINVAL', 'duplicate-name');
    expect(dup.ids?.['tensor']).toBe('w');
  });

  it('[MD-gguf-tensors] rank outside 1-4, a zero dimension, an element count past 2^53 are bad-shape; rank 4 is accepted', async () => {
    await expectRefused(one({ shape: [] }), 'EINVAL', 'bad-shape');
    await expectRefused(one({ shape: [1, 1, 1, 1, 1] }), 'EINVAL', 'bad-shape');
    await expectRefused(one({ shape: [32, 0] }), 'EINVAL', 'bad-shape');
    await expectRefused(one({ shape: [1n << 40n, 1n << 20n], data: new Uint8Array(4) }), 'EINVAL', 'bad-shape');
    await expectRefused(one({ shape: [(1n << 64n) - 1n], data: new Uint8Array(4) }), 'EINVAL', 'bad-shape');
    expect((await parseGguf(one({ shape: [2, 2, 2, 2] }))).tensors[0]!.shape).toEqual([2, 2, 2, 2]);
    // A rank field that disagrees with the dims that follow reads the next fields as dims: refused, never a crash.
    const err = await catchTenonAsync(() => parseGguf(one({ rank: 3 })));
    expect(err.code).toBe('EINVAL');
  });

  it('[MD-gguf-tensors] a row that is not a whole number of blocks is bad-shape (N-1, N, N+1 blocks of 32)', async () => {
    await expectRefused(one({ shape: [48, 2], type: 'Q8_0', data: new Uint8Array(2 * 34 * 2) }), 'EINVAL', 'bad-shape');
    await expectRefused(one({ shape: [255, 1], type: 'Q4_K', data: new Uint8Array(144) }), 'EINVAL', 'bad-shape');
    await expectRefused(one({ shape: [31], type: 'Q4_0', data: new Uint8Array(18) }), 'EINVAL', 'bad-shape');
    expect((await parseGguf(one({ shape: [32], type: 'Q4_0' }))).tensors[0]!.byteLength).toBe(18);
    expect((await parseGguf(one({ shape: [64], type: 'Q4_0' }))).tensors[0]!.byteLength).toBe(36);
  });

  it('[MD-gguf-tensors] a type id ggml does not define is bad-tensor-type', async () => {
    for (const id of [4, 5, 31, 1000, 0xffffffff]) {
      const err = await expectRefused(one({ type: id }), 'EINVAL', 'bad-tensor-type');
      expect(err.ids?.['typeId']).toBe(id);
    }
  });

  it('[MD-gguf-tensors] offsets: misaligned, past the end, or far past the end are refused; the last byte of the file is reachable', async () => {
    await expectRefused(one({ offset: 8 }), 'EINVAL', 'tensor-misaligned');
    await expectRefused(one({ offset: 1 }), 'EINVAL', 'tensor-misaligned');
    const w = writeGguf({ tensors: [{ name: 'w', shape: [32, 2], type: 'F32' }] });
    const at = w.layout.tensors[0]!.offsetAt;
    const dataBytes = w.bytes.length - w.layout.dataOffset;
    await expectRefused(withU64(w.bytes, at, BigInt(dataBytes)), 'EINVAL', 'tensor-out-of-file');
    await expectRefused(withU64(w.bytes, at, (1n << 64n) - 32n), 'EINVAL', 'tensor-out-of-file');
    await expectRefused(withU64(w.bytes, at, 1n << 53n), 'EINVAL', 'tensor-out-of-file');
    await expectRefused(w.bytes.subarray(0, w.bytes.length - 1), 'EINVAL', 'tensor-out-of-file');
    // Control: the tensor ends exactly at the end of the file.
    const file = await parseGguf(w.bytes);
    expect(file.tensors[0]!.offset + file.tensors[0]!.byteLength).toBe(w.bytes.length);
  });

  it('[MD-gguf-tensors] overlapping tensors are refused; touching ones are not', async () => {
    const a: WriterTensor = { name: 'a', shape: [32, 2], type: 'F32', offset: 0 };
    const touching = writeGguf({ tensors: [a, { name: 'b', shape: [8], type: 'F32', offset: 256 }] });
    expectWellFormed(await parseGguf(touching.bytes));
    for (const offset of [0, 32, 224]) {
      const err = await expectRefused(writeGguf({ tensors: [a, { name: 'b', shape: [8], type: 'F32', offset }] }).bytes, 'EINVAL', 'tensor-overlap');
      expect([err.ids?.['tensor'], err.ids?.['other']].sort()).toEqual(['a', 'b']);
    }
    // Order in the header does not matter: the later-declared tensor may come first in the data.
    const reversed = await expectRefused(writeGguf({ tensors: [{ name: 'b', shape: [8], type: 'F32', offset: 224 }, a] }).bytes, 'EINVAL', 'tensor-overlap');
    expect(reversed.reason).toBe('tensor-overlap');
  });
});

// ---------------------------------------------------------------------------------------------------
// fuzz

type Mutation =
  | { readonly kind: 'byte'; readonly at: number; readonly value: number }
  | { readonly kind: 'u32'; readonly field: number; readonly value: number }
  | { readonly kind: 'u64'; readonly field: number; readonly value: bigint }
  | { readonly kind: 'cut'; readonly at: number }
  | { readonly kind: 'splice'; readonly at: number; readonly remove: number; readonly insert: readonly number[] };

/** Offsets of the u32 and u64 fields a writer layout knows about. */
function fieldsOf(w: WrittenGguf): { u32: number[]; u64: number[] } {
  const { layout } = w;
  const u32 = [layout.versionAt, ...layout.entries.map((e) => e.typeAt), ...layout.tensors.flatMap((t) => [t.rankAt, t.typeAt])];
  const u64 = [
    layout.tensorCountAt,
    layout.entryCountAt,
    ...layout.entries.flatMap((e) => [e.at, e.valueAt, e.valueAt + 4]),
    ...layout.tensors.flatMap((t) => [t.at, t.dimsAt, t.offsetAt]),
  ];
  return { u32, u64 };
}

function mutationArb(w: WrittenGguf): fc.Arbitrary<Mutation> {
  const { u32, u64 } = fieldsOf(w);
  const header = w.layout.dataOffset;
  const interesting = fc.oneof(
    fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }),
    fc.bigInt({ min: 0n, max: 4096n }),
    fc.constantFrom(BigInt(GGUF_MAX_ARRAY_ITEMS), BigInt(GGUF_MAX_ARRAY_ITEMS + 1), BigInt(GGUF_MAX_STRING_BYTES), (1n << 63n) - 1n, (1n << 53n) + 1n, BigInt(w.bytes.length)),
  );
  return fc.oneof(
    fc.record({ kind: fc.constant('byte' as const), at: fc.nat({ max: header - 1 }), value: fc.nat({ max: 255 }) }),
    fc.record({ kind: fc.constant('u32' as const), field: fc.constantFrom(...u32), value: fc.oneof(fc.nat({ max: 40 }), fc.nat({ max: 0xffffffff })) }),
    fc.record({ kind: fc.constant('u64' as const), field: fc.constantFrom(...u64), value: interesting }),
    fc.record({ kind: fc.constant('cut' as const), at: fc.nat({ max: w.bytes.length }) }),
    fc.record({ kind: fc.constant('splice' as const), at: fc.nat({ max: header }), remove: fc.nat({ max: 16 }), insert: fc.array(fc.nat({ max: 255 }), { maxLength: 16 }) }),
  );
}

function applyMutations(bytes: Uint8Array, mutations: readonly Mutation[]): Uint8Array {
  let out: Uint8Array = bytes.slice();
  for (const m of mutations) {
    if (m.kind === 'byte') {
      if (m.at < out.length) out[m.at] = m.value;
    } else if (m.kind === 'u32') {
      if (m.field + 4 <= out.length) out = withU32(out, m.field, m.value);
    } else if (m.kind === 'u64') {
      if (m.field + 8 <= out.length) out = withU64(out, m.field, m.value);
    } else if (m.kind === 'cut') out = out.slice(0, Math.min(m.at, out.length));
    else {
      const at = Math.min(m.at, out.length);
      const next = new Uint8Array(out.length - Math.min(m.remove, out.length - at) + m.insert.length);
      next.set(out.subarray(0, at), 0);
      next.set(m.insert, at);
      next.set(out.subarray(at + Math.min(m.remove, out.length - at)), at + m.insert.length);
      out = next;
    }
  }
  return out;
}

/** Parses through a counting source: a TenonError or a well-formed file, and never a byte read twice or past the file. */
async function parseMutated(bytes: Uint8Array): Promise<'parsed' | TenonErrorCode> {
  const source = countingSource(bytesSource(bytes));
  let outcome: 'parsed' | TenonErrorCode;
  try {
    expectWellFormed(await parseGguf(source, { allowUnsupportedTypes: true }));
    outcome = 'parsed';
  } catch (err) {
    if (!(err instanceof TenonError)) throw err;
    expect(['EINVAL', 'ENOTSUP']).toContain(err.code);
    expect(typeof err.reason).toBe('string');
    outcome = err.code;
  }
  const { bytes: read, highWater } = source.counters;
  expect(read).toBe(highWater);
  expect(highWater).toBeLessThanOrEqual(bytes.length);
  return outcome;
}

describe('[MD-gguf-fuzz] mutated headers never crash or run away', () => {
  it('[MD-gguf-fuzz] random mutations of the synthetic file give a well-formed file or a TenonError', async () => {
    const outcomes = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(fc.array(mutationArb(base), { minLength: 1, maxLength: 4 }), async (mutations) => {
        const outcome = await parseMutated(applyMutations(base.bytes, mutations));
        outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
      }),
      fcParams(600),
    );
    // The runs exercised both sides: some mutants still parse, most are refused.
    expect(outcomes.get('EINVAL') ?? 0).toBeGreaterThan(0);
    expect(outcomes.get('parsed') ?? 0).toBeGreaterThan(0);
  });

  it.skipIf(storiesGguf === undefined)('[MD-gguf-fuzz] random mutations of the stories260K header give a well-formed file or a TenonError', async () => {
    const real = storiesGguf!;
    const file = await parseGguf(real);
    const tensors: WriterTensor[] = [];
    for (const t of file.tensors) tensors.push({ name: t.name, shape: t.shape, type: t.type.name, offset: t.offset - file.dataOffset, data: await file.readTensor(t) });
    const rewritten = writeGguf({ metadata: [...file.metadata.keys()].map((k) => [k, file.metadata.get(k)!] as const), tensors });
    expect(firstDifference(rewritten.bytes, real)).toBe(-1);
    await fc.assert(
      fc.asyncProperty(fc.array(mutationArb(rewritten), { minLength: 1, maxLength: 3 }), async (mutations) => {
        await parseMutated(applyMutations(real, mutations));
      }),
      fcParams(200),
    );
  });

  it('[MD-gguf-fuzz] random bytes after a valid magic and version give a TenonError', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 512 }), async (tail) => {
        const bytes = new Uint8Array(8 + tail.length);
        bytes.set([0x47, 0x47, 0x55, 0x46, 3, 0, 0, 0]);
        bytes.set(tail, 8);
        await parseMutated(bytes);
      }),
      fcParams(400),
    );
  });
});


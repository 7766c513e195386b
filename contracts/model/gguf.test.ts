// GGUF reader suite, well-formed files (issue 10 "GGUF reader"; both lanes).
// Plan: every fixture in ../shared/models/gguf parses, and its metadata and tensor table agree with facts
// derived independently (the README's model dimensions, the GGUF block geometry of each type, llama.cpp's
// dense aligned data layout); stories260K-f32.gguf's tensors hold exactly the llama2.c checkpoint's
// weights; a header written by the test's own GGUF writer from the parsed file reproduces the real file
// byte for byte. Range reads: a Blob/File source gives the same file as in-memory bytes; parsing reads
// the header only (each byte once, never more than one chunk past the data offset); reading a tensor or a
// row range reads exactly that range. Typed metadata accessors return the stored values and refuse a
// missing or wrongly typed key with `bad-metadata` naming it. The type table: every type has its ggml
// geometry, and a known type that is not a lowering kind is ENOTSUP naming it unless explicitly allowed.
import { describe, expect, it } from 'vitest';
import {
  GGML_TYPES,
  GGUF_MAX_HEADER_CHUNK,
  GGUF_FIRST_HEADER_CHUNK,
  LOWERING_TYPE_NAMES,
  blobSource,
  bytesSource,
  countingSource,
  ggmlTypeById,
  parseGguf,
} from '../../src/index.js';
import type { GgufFile, GgufTensorInfo } from '../../src/index.js';
import { expectCode, expectCodeAsync } from '../support/expect-error.js';
import { GGUF_FIXTURE_NAMES, readGgufFixture } from '../support/gguf-fixtures.js';
import type { GgufFixture } from '../support/gguf-fixtures.js';
import { readModelFixture } from '../support/models.js';
import { gv, patternBytes, writeGguf } from '../support/gguf-writer.js';
import type { WriterTensor } from '../support/gguf-writer.js';
import { summarize } from './gguf-summary.js';

const fixtures = new Map<GgufFixture, Uint8Array | undefined>();
for (const name of GGUF_FIXTURE_NAMES) fixtures.set(name, await readGgufFixture(name));
const stories = await readModelFixture('stories260K.bin');

/** Block geometry per type as the GGUF format documents it (elements per block, bytes per block). */
const FORMAT_BLOCKS: Readonly<Record<string, readonly [number, number]>> = {
  F32: [1, 4],
  F16: [1, 2],
  BF16: [1, 2],
  Q8_0: [32, 34],
  Q4_0: [32, 18],
  Q4_K: [256, 144],
  Q6_K: [256, 210],
  Q5_K: [256, 176],
  Q2_K: [256, 84],
  Q3_K: [256, 110],
  IQ4_XS: [256, 136],
};

interface Facts {
  readonly arch: string;
  readonly tensors: number;
  readonly layers: number;
  readonly dim: number;
  readonly ffn: number;
  readonly heads: number;
  readonly kvHeads: number;
  readonly vocab: number;
  /** Type of the attention/FFN matrices, the embedding and the output (undefined: no output tensor). */
  readonly matrix: readonly string[];
  readonly embedding: string;
  readonly output: string | undefined;
  readonly experts?: { readonly count: number; readonly used: number; readonly ffn: number };
  readonly biases?: boolean;
}

const LLAMA = { arch: 'llama', tensors: 3 + 9 * 4, layers: 4, dim: 256, ffn: 768, heads: 8, kvHeads: 4, vocab: 512 } as const;
const MOE = { arch: 'llama', tensors: 3 + 10 * 2, layers: 2, dim: 256, ffn: 512, heads: 8, kvHeads: 4, vocab: 512, experts: { count: 4, used: 2, ffn: 512 } } as const;
const FACTS: Readonly<Record<Exclude<GgufFixture, 'llama3-vocab.gguf'>, Facts>> = {
  'stories260K-f32.gguf': { arch: 'llama', tensors: 3 + 9 * 5, layers: 5, dim: 64, ffn: 172, heads: 8, kvHeads: 4, vocab: 512, matrix: ['F32'], embedding: 'F32', output: 'F32' },
  'tiny-llama-f32.gguf': { ...LLAMA, matrix: ['F32'], embedding: 'F32', output: 'F32' },
  'tiny-llama-F16.gguf': { ...LLAMA, matrix: ['F16'], embedding: 'F16', output: 'F16' },
  'tiny-llama-Q8_0.gguf': { ...LLAMA, matrix: ['Q8_0'], embedding: 'Q8_0', output: 'Q8_0' },
  'tiny-llama-Q4_0.gguf': { ...LLAMA, matrix: ['Q4_0'], embedding: 'Q4_0', output: 'Q6_K' },
  'tiny-llama-Q4_K_M.gguf': { ...LLAMA, matrix: ['Q4_K', 'Q6_K'], embedding: 'Q4_K', output: 'Q6_K' },
  'tiny-llama-Q6_K.gguf': { ...LLAMA, matrix: ['Q6_K'], embedding: 'Q6_K', output: 'Q6_K' },
  'tiny-qwen2-Q4_K_M.gguf': { arch: 'qwen2', tensors: 2 + 12 * 2, layers: 2, dim: 256, ffn: 768, heads: 4, kvHeads: 2, vocab: 151_936, matrix: ['Q4_K', 'Q6_K'], embedding: 'Q6_K', output: undefined, biases: true },
  'tiny-moe-f32.gguf': { ...MOE, matrix: ['F32'], embedding: 'F32', output: 'F32' },
  'tiny-moe-Q8_0.gguf': { ...MOE, matrix: ['Q8_0'], embedding: 'Q8_0', output: 'Q8_0' },
  'tiny-moe-Q4_K_M.gguf': { ...MOE, matrix: ['Q4_K', 'Q6_K'], embedding: 'Q4_K', output: 'Q6_K' },
};

function expectedBytes(t: GgufTensorInfo): number {
  const [elements, bytes] = FORMAT_BLOCKS[t.type.name]!;
  const count = t.shape.reduce((a, b) => a * b, 1);
  expect(count % elements).toBe(0);
  return (count / elements) * bytes;
}

function shapeOf(file: GgufFile, name: string): readonly number[] | undefined {
  return file.findTensor(name)?.shape;
}

describe('[MD-gguf-parse] every fixture parses to its documented model', () => {
  for (const [name, facts] of Object.entries(FACTS) as [Exclude<GgufFixture, 'llama3-vocab.gguf'>, Facts][]) {
    const bytes = fixtures.get(name);
    it.skipIf(bytes === undefined)(`[MD-gguf-parse] ${name}: architecture, dimensions, tensor names, shapes and types`, async () => {
      const file = await parseGguf(bytes!);
      const m = file.metadata;
      const a = facts.arch;
      expect(file.version).toBe(3);
      expect(file.architecture).toBe(a);
      expect(file.alignment).toBe(32);
      expect(m.getU32(`${a}.block_count`)).toBe(facts.layers);
      expect(m.getU32(`${a}.embedding_length`)).toBe(facts.dim);
      expect(m.getU32(`${a}.attention.head_count`)).toBe(facts.heads);
      expect(m.getU32(`${a}.attention.head_count_kv`)).toBe(facts.kvHeads);
      expect(m.getStringArray('tokenizer.ggml.tokens')).toHaveLength(facts.vocab);
      expect(file.tensors).toHaveLength(facts.tensors);

      const { dim, vocab, layers } = facts;
      const kvDim = (dim / facts.heads) * facts.kvHeads;
      expect(shapeOf(file, 'token_embd.weight')).toEqual([dim, vocab]);
      expect(file.tensor('token_embd.weight').type.name).toBe(facts.embedding);
      expect(shapeOf(file, 'output_norm.weight')).toEqual([dim]);
      expect(file.findTensor('output.weight')?.type.name).toBe(facts.output);
      if (facts.output !== undefined) expect(shapeOf(file, 'output.weight')).toEqual([dim, vocab]);
      for (let l = 0; l < layers; l++) {
        const blk = `blk.${l}`;
        expect(shapeOf(file, `${blk}.attn_norm.weight`)).toEqual([dim]);
        expect(shapeOf(file, `${blk}.ffn_norm.weight`)).toEqual([dim]);
        expect(shapeOf(file, `${blk}.attn_q.weight`)).toEqual([dim, dim]);
        expect(shapeOf(file, `${blk}.attn_k.weight`)).toEqual([dim, kvDim]);
        expect(shapeOf(file, `${blk}.attn_v.weight`)).toEqual([dim, kvDim]);
        expect(shapeOf(file, `${blk}.attn_output.weight`)).toEqual([dim, dim]);
        if (facts.experts !== undefined) {
          const { count, ffn } = facts.experts;
          expect(shapeOf(file, `${blk}.ffn_gate_inp.weight`)).toEqual([dim, count]);
          expect(shapeOf(file, `${blk}.ffn_gate_exps.weight`)).toEqual([dim, ffn, count]);
          expect(shapeOf(file, `${blk}.ffn_up_exps.weight`)).toEqual([dim, ffn, count]);
          expect(shapeOf(file, `${blk}.ffn_down_exps.weight`)).toEqual([ffn, dim, count]);
        } else {
          expect(shapeOf(file, `${blk}.ffn_gate.weight`)).toEqual([dim, facts.ffn]);
          expect(shapeOf(file, `${blk}.ffn_up.weight`)).toEqual([dim, facts.ffn]);
          expect(shapeOf(file, `${blk}.ffn_down.weight`)).toEqual([facts.ffn, dim]);
        }
        if (facts.biases === true) {
          expect(shapeOf(file, `${blk}.attn_q.bias`)).toEqual([dim]);
          expect(shapeOf(file, `${blk}.attn_k.bias`)).toEqual([kvDim]);
          expect(shapeOf(file, `${blk}.attn_v.bias`)).toEqual([kvDim]);
        }
      }
      if (facts.experts !== undefined) {
        expect(m.getU32(`${a}.expert_count`)).toBe(facts.experts.count);
        expect(m.getU32(`${a}.expert_used_count`)).toBe(facts.experts.used);
      } else {
        expect(m.getU32(`${a}.feed_forward_length`)).toBe(facts.ffn);
      }
      // Matrices carry the file's quantization; vectors (norms, biases, the router) stay F32; the embedding
      // and the output were checked above.
      for (const t of file.tensors) {
        if (t.name === 'token_embd.weight' || t.name === 'output.weight') continue;
        if (t.shape.length === 1 || t.name.endsWith('ffn_gate_inp.weight')) expect(t.type.name, t.name).toBe('F32');
        else expect(facts.matrix, t.name).toContain(t.type.name);
      }
    });
  }

  it.skipIf(fixtures.get('llama3-vocab.gguf') === undefined)('[MD-gguf-parse] llama3-vocab.gguf: a vocabulary-only file with 128,256 tokens and 280,147 merges', async () => {
    const file = await parseGguf(fixtures.get('llama3-vocab.gguf')!);
    expect(file.tensors).toHaveLength(0);
    expect(file.dataOffset).toBe(file.size);
    const m = file.metadata;
    expect(m.getString('tokenizer.ggml.model')).toBe('gpt2');
    expect(m.getString('tokenizer.ggml.pre')).toBe('llama-bpe');
    expect(m.getStringArray('tokenizer.ggml.tokens')).toHaveLength(128_256);
    expect(m.getStringArray('tokenizer.ggml.merges')).toHaveLength(280_147);
    const types = m.getNumberArray('tokenizer.ggml.token_type');
    expect(types).toBeInstanceOf(Int32Array);
    expect(types).toHaveLength(128_256);
    // 256 control tokens (type 3 in GGUF's token-type enumeration).
    expect(Array.from(types).filter((t) => t === 3)).toHaveLength(256);
    expect(m.getString('tokenizer.chat_template')).toContain('<|start_header_id|>');
  });

  for (const name of GGUF_FIXTURE_NAMES) {
    const bytes = fixtures.get(name);
    it.skipIf(bytes === undefined)(`[MD-gguf-parse] ${name}: byte extents follow the type geometry and tile the data section densely`, async () => {
      const file = await parseGguf(bytes!);
      const sorted = file.tensors.slice().sort((x, y) => x.offset - y.offset);
      let cursor = file.dataOffset;
      for (const t of sorted) {
        expect(t.byteLength, t.name).toBe(expectedBytes(t));
        expect(t.elements).toBe(t.shape.reduce((x, y) => x * y, 1));
        expect(t.rows * t.rowBytes).toBe(t.byteLength);
        expect((t.offset - file.dataOffset) % file.alignment, t.name).toBe(0);
        // llama.cpp writes each tensor at the next aligned position after the previous one.
        expect(t.offset, t.name).toBe(Math.ceil(cursor / file.alignment) * file.alignment);
        cursor = t.offset + t.byteLength;
      }
      expect(Math.ceil(cursor / file.alignment) * file.alignment).toBe(file.size);
    });
  }
});

describe('[MD-gguf-parse] stories260K-f32.gguf holds exactly the llama2.c checkpoint weights', () => {
  const gguf = fixtures.get('stories260K-f32.gguf');
  it.skipIf(gguf === undefined || stories === undefined)('[MD-gguf-parse] every tensor equals its llama2.c counterpart byte for byte', async () => {
    const file = await parseGguf(gguf!);
    const bin = stories!;
    const header = new DataView(bin.buffer, bin.byteOffset, 28);
    const [dim, hidden, layers, heads, kvHeads, vocab] = [0, 1, 2, 3, 4, 5].map((i) => header.getInt32(i * 4, true)) as [number, number, number, number, number, number];
    const kvDim = (dim * kvHeads) / heads;
    let at = 28;
    const take = (floats: number): Uint8Array => {
      const out = bin.subarray(at, at + floats * 4);
      at += floats * 4;
      return out;
    };
    // llama2.c order: embedding, then each weight kind for all layers at once.
    const embedding = take(vocab * dim);
    const perLayer = (floats: number): Uint8Array[] => {
      const all = take(layers * floats);
      return Array.from({ length: layers }, (_, l) => all.subarray(l * floats * 4, (l + 1) * floats * 4));
    };
    const attnNorm = perLayer(dim);
    const wq = perLayer(dim * dim);
    const wk = perLayer(dim * kvDim);
    const wv = perLayer(dim * kvDim);
    const wo = perLayer(dim * dim);
    const ffnNorm = perLayer(dim);
    const w1 = perLayer(hidden * dim);
    const w2 = perLayer(dim * hidden);
    const w3 = perLayer(hidden * dim);
    const finalNorm = take(dim);

    const expected = new Map<string, Uint8Array>([
      ['token_embd.weight', embedding],
      ['output_norm.weight', finalNorm],
    ]);
    for (let l = 0; l < layers; l++) {
      expected.set(`blk.${l}.attn_norm.weight`, attnNorm[l]!);
      expected.set(`blk.${l}.attn_q.weight`, wq[l]!);
      expected.set(`blk.${l}.attn_k.weight`, wk[l]!);
      expected.set(`blk.${l}.attn_v.weight`, wv[l]!);
      expected.set(`blk.${l}.attn_output.weight`, wo[l]!);
      expected.set(`blk.${l}.ffn_norm.weight`, ffnNorm[l]!);
      expected.set(`blk.${l}.ffn_gate.weight`, w1[l]!);
      expected.set(`blk.${l}.ffn_down.weight`, w2[l]!);
      expected.set(`blk.${l}.ffn_up.weight`, w3[l]!);
    }
    // The checkpoint shares its classifier with the embedding (positive vocab size in its header).
    expect(vocab).toBeGreaterThan(0);
    expected.set('output.weight', embedding);
    expect(new Set(file.tensors.map((t) => t.name))).toEqual(new Set(expected.keys()));
    for (const [name, want] of expected) {
      const got = await file.readTensor(name);
      expect(got.length, name).toBe(want.length);
      expect(firstDifference(got, want), name).toBe(-1);
    }
  });
});

function firstDifference(a: Uint8Array, b: Uint8Array): number {
  if (a.length !== b.length) return Math.min(a.length, b.length);
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return i;
  return -1;
}

describe('[MD-gguf-parse] the test writer reproduces a real file from what the reader parsed', () => {
  for (const name of ['stories260K-f32.gguf', 'tiny-llama-Q4_K_M.gguf'] as const) {
    const bytes = fixtures.get(name);
    it.skipIf(bytes === undefined)(`[MD-gguf-parse] ${name} rewritten from its parsed metadata and tensors is byte-identical`, async () => {
      const file = await parseGguf(bytes!);
      const tensors: WriterTensor[] = [];
      for (const t of file.tensors) tensors.push({ name: t.name, shape: t.shape, type: t.type.name, offset: t.offset - file.dataOffset, data: await file.readTensor(t) });
      const metadata = [...file.metadata.keys()].map((key) => [key, file.metadata.get(key)!] as const);
      const { bytes: rewritten } = writeGguf({ version: file.version, metadata, tensors, alignment: file.alignment });
      expect(rewritten.length).toBe(bytes!.length);
      expect(firstDifference(rewritten, bytes!)).toBe(-1);
    });
  }
});

describe('[MD-gguf-sources] range sources give the same file; a parse reads the header only', () => {
  const small = fixtures.get('stories260K-f32.gguf');
  it.skipIf(small === undefined)('[MD-gguf-sources] a Blob and a File give the same metadata, tensor table and tensor bytes as in-memory bytes', async () => {
    const fromBytes = await parseGguf(bytesSource(small!, 'stories'));
    const fromBlob = await parseGguf(blobSource(new Blob([small! as Uint8Array<ArrayBuffer>])));
    const fromFile = await parseGguf(blobSource(new File([small! as Uint8Array<ArrayBuffer>], 'stories260K-f32.gguf')));
    expect(fromFile.name).toBe('stories260K-f32.gguf');
    const want = summarize(fromBytes);
    expect(summarize(fromBlob)).toEqual(want);
    expect(summarize(fromFile)).toEqual(want);
    for (const t of fromBytes.tensors) {
      const expected = await fromBytes.readTensor(t.name);
      expect(firstDifference(await fromBlob.readTensor(t.name), expected), t.name).toBe(-1);
      expect(firstDifference(await fromFile.readTensorRows(t.name, 0, t.rows), expected), t.name).toBe(-1);
    }
  });

  for (const name of ['tiny-llama-f32.gguf', 'tiny-qwen2-Q4_K_M.gguf', 'llama3-vocab.gguf'] as const) {
    const bytes = fixtures.get(name);
    it.skipIf(bytes === undefined)(`[MD-gguf-sources] ${name}: the header parse reads each header byte once, in doubling chunks, and stops within one chunk of the data`, async () => {
      const source = countingSource(bytesSource(bytes!));
      const file = await parseGguf(source);
      const { reads, bytes: read, highWater } = source.counters;
      // No byte is read twice, and nothing but the header and at most one chunk after it.
      expect(read).toBe(highWater);
      expect(highWater).toBeGreaterThanOrEqual(file.dataOffset);
      expect(highWater).toBeLessThanOrEqual(Math.min(file.size, file.dataOffset + GGUF_MAX_HEADER_CHUNK));
      expect(reads).toBeLessThanOrEqual(chunkReadsFor(file.dataOffset));
      if (file.size - file.dataOffset > GGUF_MAX_HEADER_CHUNK) expect(highWater).toBeLessThan(file.size);
    });
  }

  const tiny = fixtures.get('tiny-llama-Q4_K_M.gguf');
  it.skipIf(tiny === undefined)('[MD-gguf-sources] reading a tensor or a row range reads exactly that range', async () => {
    const source = countingSource(bytesSource(tiny!));
    const file = await parseGguf(source);
    const t = file.tensor('blk.1.ffn_down.weight');
    expect(t.type.name).toBe('Q4_K');
    const before = source.counters;
    const all = await file.readTensor(t);
    expect(source.counters.reads - before.reads).toBe(1);
    expect(source.counters.bytes - before.bytes).toBe(t.byteLength);
    expect(firstDifference(all, tiny!.subarray(t.offset, t.offset + t.byteLength))).toBe(-1);
    const rows = await file.readTensorRows(t, 3, 5);
    expect(rows.length).toBe(5 * t.rowBytes);
    expect(firstDifference(rows, all.subarray(3 * t.rowBytes, 8 * t.rowBytes))).toBe(-1);
    expect(source.counters.bytes - before.bytes).toBe(t.byteLength + 5 * t.rowBytes);
    // Boundaries: the last row is readable, one past it is not; nothing is read for a refused range.
    expect((await file.readTensorRows(t, t.rows - 1, 1)).length).toBe(t.rowBytes);
    const counted = source.counters.reads;
    await expectCodeAsync(() => file.readTensorRows(t, t.rows, 1), 'EINVAL', 'range');
    await expectCodeAsync(() => file.readTensorRows(t, -1, 1), 'EINVAL', 'range');
    await expectCodeAsync(() => file.readTensor('no.such.tensor'), 'EINVAL', 'missing-tensor');
    expect(source.counters.reads).toBe(counted);
    expectCode(() => file.tensor('no.such.tensor'), 'EINVAL', 'missing-tensor');
  });
});

describe('[MD-gguf-sources] files larger than any ArrayBuffer', () => {
  it('[MD-gguf-sources] a 10 GiB file (virtual source) parses from its header and serves rows past 2^32 exactly', async () => {
    const GiB = 2 ** 30;
    // Tensor data is never materialized: the writer emits the header only, and the source computes the
    // data bytes from their absolute offset on demand.
    const tensors: WriterTensor[] = [
      { name: 'big.f32', shape: [8192, 262_144], type: 'F32', offset: 0, data: new Uint8Array(0) },
      { name: 'big.q4k', shape: [4096, 1_048_576], type: 'Q4_K', offset: 8 * GiB, data: new Uint8Array(0) },
    ];
    const { bytes: header, layout } = writeGguf({ metadata: [['general.architecture', gv.str('llama')]], tensors });
    expect(header.length).toBe(layout.dataOffset);
    const size = layout.dataOffset + 8 * GiB + (4096 * 1_048_576 * 144) / 256;
    const dataByte = (at: number): number => (at * 7 + Math.floor(at / 4099)) & 0xff;
    const source = countingSource({
      size,
      read(offset: number, length: number): Promise<Uint8Array> {
        const out = new Uint8Array(length);
        for (let i = 0; i < length; i++) {
          const at = offset + i;
          out[i] = at < header.length ? header[at]! : dataByte(at);
        }
        return Promise.resolve(out);
      },
    });
    const file = await parseGguf(source);
    expect(file.size).toBe(size);
    expect(size).toBeGreaterThan(10 * GiB);
    const f32 = file.tensor('big.f32');
    const q4k = file.tensor('big.q4k');
    expect(f32.byteLength).toBe(8 * GiB);
    expect(q4k.offset).toBe(layout.dataOffset + 8 * GiB);
    expect(q4k.offset + q4k.byteLength).toBe(size);
    expect(source.counters.highWater).toBeLessThanOrEqual(layout.dataOffset + GGUF_MAX_HEADER_CHUNK);
    const last = await file.readTensorRows(q4k, q4k.rows - 2, 2);
    const start = q4k.offset + (q4k.rows - 2) * q4k.rowBytes;
    expect(start).toBeGreaterThan(2 ** 32);
    expect(last.length).toBe(2 * q4k.rowBytes);
    for (const i of [0, 1, 4097, last.length - 1]) expect(last[i], `byte ${i}`).toBe(dataByte(start + i));
  });
});

describe('[MD-gguf-sources] cancellation', () => {
  it('[MD-gguf-sources] an aborted signal stops the parse with ECANCELED before the source is read', async () => {
    const { bytes } = writeGguf({ metadata: [['general.architecture', gv.str('llama')]] });
    const source = countingSource(bytesSource(bytes));
    const controller = new AbortController();
    controller.abort(new Error('user stop'));
    await expectCodeAsync(() => parseGguf(source, { signal: controller.signal }), 'ECANCELED', 'aborted');
    expect(source.counters.reads).toBe(0);
    // Control: the same source parses without the signal.
    expect((await parseGguf(source)).architecture).toBe('llama');
  });
});

/** Reads a header of `headerBytes` may take: chunks start at the first size and double up to the largest. */
function chunkReadsFor(headerBytes: number): number {
  let chunk = GGUF_FIRST_HEADER_CHUNK;
  let covered = 0;
  let reads = 0;
  while (covered < headerBytes) {
    covered += chunk;
    reads++;
    chunk = Math.min(chunk * 2, GGUF_MAX_HEADER_CHUNK);
  }
  return Math.max(reads, 1);
}

describe('[MD-gguf-metadata] typed accessors', () => {
  const spec = {
    metadata: [
      ['general.architecture', gv.str('llama')],
      ['llama.block_count', gv.u32(7)],
      ['llama.small', gv.u8(200)],
      ['llama.signed', gv.i32(-5)],
      ['llama.big', gv.u64(1n << 40n)],
      ['llama.huge', gv.u64(1n << 60n)],
      ['llama.eps', gv.f32(1e-5)],
      ['llama.flag', gv.bool(true)],
      ['tokens', gv.strings(['a', 'ß', '🙂', ''])],
      ['scores', gv.f32s([0.5, -1.25])],
      ['ids', gv.i32s([3, -4])],
    ] as const,
    tensors: [{ name: 't', shape: [32], type: 'F32' } as const],
  };
  it('[MD-gguf-metadata] getters return the stored values with their types', async () => {
    const { bytes } = writeGguf(spec);
    const m = (await parseGguf(bytes)).metadata;
    expect(m.size).toBe(spec.metadata.length);
    expect([...m.keys()]).toEqual(spec.metadata.map(([k]) => k));
    expect(m.getString('general.architecture')).toBe('llama');
    expect(m.getU32('llama.block_count')).toBe(7);
    expect(m.getInt('llama.small')).toBe(200);
    expect(m.getInt('llama.signed')).toBe(-5);
    expect(m.getInt('llama.big')).toBe(2 ** 40);
    expect(m.get('llama.huge')).toEqual({ type: 'u64', value: 1n << 60n });
    expect(m.getFloat('llama.eps')).toBe(Math.fround(1e-5));
    expect(m.getBool('llama.flag')).toBe(true);
    expect(m.getStringArray('tokens')).toEqual(['a', 'ß', '🙂', '']);
    const scores = m.getNumberArray('scores');
    expect(scores).toBeInstanceOf(Float32Array);
    expect(Array.from(scores)).toEqual([0.5, -1.25]);
    expect(Array.from(m.getNumberArray('ids'))).toEqual([3, -4]);
    expect(m.optString('absent')).toBeUndefined();
    expect(m.optU32('absent')).toBeUndefined();
    expect(m.typeOf('llama.eps')).toBe('f32');
    expect(m.has('scores')).toBe(true);
    expect(m.has('absent')).toBe(false);
  });

  it('[MD-gguf-metadata] a missing or wrongly typed key is EINVAL bad-metadata naming the key', async () => {
    const { bytes } = writeGguf(spec);
    const m = (await parseGguf(bytes)).metadata;
    const cases: [() => unknown, string][] = [
      [() => m.getString('absent'), 'absent'],
      [() => m.getU32('llama.small'), 'llama.small'],
      [() => m.getU32('llama.signed'), 'llama.signed'],
      [() => m.optU32('general.architecture'), 'general.architecture'],
      [() => m.getInt('llama.huge'), 'llama.huge'],
      [() => m.getInt('llama.eps'), 'llama.eps'],
      [() => m.getFloat('llama.block_count'), 'llama.block_count'],
      [() => m.getBool('llama.small'), 'llama.small'],
      [() => m.getStringArray('scores'), 'scores'],
      [() => m.optStringArray('llama.flag'), 'llama.flag'],
      [() => m.getNumberArray('tokens'), 'tokens'],
      [() => m.getArray('general.architecture'), 'general.architecture'],
    ];
    for (const [get, key] of cases) {
      const err = expectCode(get, 'EINVAL', 'bad-metadata');
      expect(err.ids?.['key']).toBe(key);
    }
  });
});

describe('[MD-gguf-types] the GGML type table', () => {
  it('[MD-gguf-types] every type documented by the GGUF format has its id and block geometry', () => {
    const documented: Record<string, [number, number, number]> = {
      F32: [0, 1, 4], F16: [1, 1, 2], Q4_0: [2, 32, 18], Q4_1: [3, 32, 20], Q5_0: [6, 32, 22], Q5_1: [7, 32, 24],
      Q8_0: [8, 32, 34], Q8_1: [9, 32, 36], Q2_K: [10, 256, 84], Q3_K: [11, 256, 110], Q4_K: [12, 256, 144],
      Q5_K: [13, 256, 176], Q6_K: [14, 256, 210], Q8_K: [15, 256, 292], IQ2_XXS: [16, 256, 66], IQ2_XS: [17, 256, 74],
      IQ3_XXS: [18, 256, 98], IQ1_S: [19, 256, 50], IQ4_NL: [20, 32, 18], IQ3_S: [21, 256, 110], IQ2_S: [22, 256, 82],
      IQ4_XS: [23, 256, 136], I8: [24, 1, 1], I16: [25, 1, 2], I32: [26, 1, 4], I64: [27, 1, 8], F64: [28, 1, 8],
      IQ1_M: [29, 256, 56], BF16: [30, 1, 2], TQ1_0: [34, 256, 54], TQ2_0: [35, 256, 66], MXFP4: [39, 32, 17],
    };
    expect(GGML_TYPES.map((t) => t.name).sort()).toEqual(Object.keys(documented).sort());
    for (const t of GGML_TYPES) {
      expect([t.id, t.blockElements, t.blockBytes], t.name).toEqual(documented[t.name]);
      expect(ggmlTypeById(t.id)).toBe(t);
      expect(t.lowering, t.name).toBe((LOWERING_TYPE_NAMES as readonly string[]).includes(t.name));
    }
    expect(LOWERING_TYPE_NAMES.slice().sort()).toEqual(['BF16', 'F16', 'F32', 'Q4_0', 'Q4_1', 'Q4_K', 'Q5_0', 'Q5_1', 'Q6_K', 'Q8_0']);
    for (const retired of [4, 5, 31, 32, 33, 36, 37, 38, 40]) expect(ggmlTypeById(retired)).toBeUndefined();
  });

  it('[MD-gguf-types] a known type that is not a lowering kind is ENOTSUP naming it (after the whole header checked out), unless allowed', async () => {
    const tensors: WriterTensor[] = [
      { name: 'ok', shape: [256, 2], type: 'Q4_K' },
      { name: 'k5', shape: [256, 2], type: 'Q5_K', data: patternBytes(2 * 176, 9) },
    ];
    const { bytes } = writeGguf({ tensors });
    const err = await expectCodeAsync(() => parseGguf(bytes), 'ENOTSUP', 'unsupported-tensor-type');
    expect(err.ids?.['type']).toBe('Q5_K');
    expect(err.ids?.['tensor']).toBe('k5');
    const file = await parseGguf(bytes, { allowUnsupportedTypes: true });
    expect(file.tensor('k5').type.name).toBe('Q5_K');
    expect(file.tensor('k5').byteLength).toBe(2 * 176);
    // A structural fault anywhere wins over the unsupported type: the header is judged whole first.
    const broken = bytes.slice(0, bytes.length - 1);
    await expectCodeAsync(() => parseGguf(broken), 'EINVAL', 'tensor-out-of-file');
    for (const name of LOWERING_TYPE_NAMES) {
      const one = writeGguf({ tensors: [{ name: 'w', shape: [256, 1], type: name }] });
      expect((await parseGguf(one.bytes)).tensor('w').type.name).toBe(name);
    }
  });
});

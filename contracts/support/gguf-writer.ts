// A small GGUF writer for tests: builds files from a spec and reports where every section and field landed,
// so suites can truncate a file at each section boundary and corrupt one field at a time. It writes what
// the spec says, including what a reader must refuse (any version, any type id, any offset, raw u64 values
// for counts), and never validates: validation is the reader's job under test.
//
// Layout written (little-endian): magic, u32 version, u64 tensor count, u64 entry count; each entry as
// u64 key length + key bytes, u32 value type, value; each tensor info as u64 name length + name, u32 rank,
// rank x u64 dims, u32 type, u64 offset; zero padding up to the alignment; the tensor data at their offsets.
import { GGUF_VALUE_TYPES, ggmlTypeByName } from '../../src/model/index.js';
import type { GgmlTypeName, GgufArray, GgufValue, GgufValueType } from '../../src/model/index.js';

export interface WriterTensor {
  readonly name: string;
  /** ggml order (shape[0] is the row). */
  readonly shape: readonly (number | bigint)[];
  /** A type name from the table, or a raw id (e.g. an unknown one). */
  readonly type: GgmlTypeName | number;
  /** Tensor bytes; default: a pattern of the type's byte length (derived from the shape). */
  readonly data?: Uint8Array;
  /** Offset relative to the data section; default: the next aligned free position. */
  readonly offset?: number | bigint;
  /** Rank written into the file (default shape.length): lets tests lie about it. */
  readonly rank?: number;
}

export interface WriterSpec {
  readonly magic?: readonly number[];
  readonly version?: number;
  /** Written as is, in order (duplicates included). */
  readonly metadata?: readonly (readonly [string, GgufValue])[];
  readonly tensors?: readonly WriterTensor[];
  /** Alignment used to place the data section and default offsets (the file says it only through metadata). */
  readonly alignment?: number;
  /** Override the u64 counts written in the header. */
  readonly tensorCount?: bigint;
  readonly entryCount?: bigint;
  /** Raw key bytes per entry index (e.g. invalid UTF-8). */
  readonly rawKeys?: Readonly<Record<number, Uint8Array>>;
  /** Raw value type id per entry index (e.g. an unknown type). */
  readonly rawValueTypes?: Readonly<Record<number, number>>;
  /** Bytes appended after the last tensor. */
  readonly trailing?: number;
}

export interface EntryLayout {
  readonly key: string;
  readonly at: number;
  readonly typeAt: number;
  readonly valueAt: number;
  readonly end: number;
}

export interface TensorLayout {
  readonly name: string;
  readonly at: number;
  readonly rankAt: number;
  readonly dimsAt: number;
  readonly typeAt: number;
  readonly offsetAt: number;
  readonly end: number;
  /** Absolute offset of the data and its length (as written). */
  readonly dataAt: number;
  readonly byteLength: number;
  readonly data: Uint8Array;
}

export interface GgufLayout {
  readonly versionAt: number;
  readonly tensorCountAt: number;
  readonly entryCountAt: number;
  readonly entries: readonly EntryLayout[];
  readonly tensors: readonly TensorLayout[];
  /** End of the last tensor info (start of the padding). */
  readonly paddingAt: number;
  readonly dataOffset: number;
  /** Every section boundary, named, in file order. */
  readonly boundaries: readonly { readonly name: string; readonly at: number }[];
}

export interface WrittenGguf {
  readonly bytes: Uint8Array;
  readonly layout: GgufLayout;
}

const MAGIC = [0x47, 0x47, 0x55, 0x46];
const DEFAULT_ALIGNMENT = 32;
/** Explicit offsets beyond this are written into the header only (no data). */
const MAX_WRITTEN_OFFSET = 1 << 26;
const SCALAR_BYTES: Partial<Record<GgufValueType, number>> = { u8: 1, i8: 1, u16: 2, i16: 2, u32: 4, i32: 4, f32: 4, bool: 1, u64: 8, i64: 8, f64: 8 };

/** Growable little-endian byte sink. */
class Sink {
  #buf = new Uint8Array(1024);
  #view = new DataView(this.#buf.buffer);
  length = 0;

  #grow(n: number): number {
    const at = this.length;
    if (at + n > this.#buf.length) {
      const next = new Uint8Array(Math.max(this.#buf.length * 2, at + n));
      next.set(this.#buf.subarray(0, at));
      this.#buf = next;
      this.#view = new DataView(next.buffer);
    }
    this.length += n;
    return at;
  }
  // Each writer grows first and only then reads #buf/#view: growing may replace them.
  u8(v: number): void {
    const at = this.#grow(1);
    this.#view.setUint8(at, v);
  }
  u32(v: number): void {
    const at = this.#grow(4);
    this.#view.setUint32(at, v >>> 0, true);
  }
  u64(v: bigint | number): void {
    const at = this.#grow(8);
    this.#view.setBigUint64(at, BigInt.asUintN(64, BigInt(v)), true);
  }
  scalar(type: GgufValueType, v: number | bigint | boolean): void {
    const at = this.#grow(SCALAR_BYTES[type]!);
    const d = this.#view;
    switch (type) {
      case 'u8': d.setUint8(at, Number(v)); break;
      case 'i8': d.setInt8(at, Number(v)); break;
      case 'u16': d.setUint16(at, Number(v), true); break;
      case 'i16': d.setInt16(at, Number(v), true); break;
      case 'u32': d.setUint32(at, Number(v), true); break;
      case 'i32': d.setInt32(at, Number(v), true); break;
      case 'f32': d.setFloat32(at, Number(v), true); break;
      case 'f64': d.setFloat64(at, Number(v), true); break;
      case 'u64': d.setBigUint64(at, BigInt.asUintN(64, BigInt(v)), true); break;
      case 'i64': d.setBigInt64(at, BigInt.asIntN(64, BigInt(v)), true); break;
      case 'bool': d.setUint8(at, typeof v === 'boolean' ? (v ? 1 : 0) : Number(v)); break;
      default: throw new Error(`${type} is not a scalar`);
    }
  }
  bytes(b: Uint8Array): void {
    const at = this.#grow(b.length);
    this.#buf.set(b, at);
  }
  string(s: string | Uint8Array): void {
    const b = typeof s === 'string' ? new TextEncoder().encode(s) : s;
    this.u64(b.length);
    this.bytes(b);
  }
  padTo(alignment: number): void {
    const pad = (alignment - (this.length % alignment)) % alignment;
    this.#grow(pad);
  }
  zeros(n: number): void {
    this.#grow(n);
  }
  setAt(at: number, b: Uint8Array): void {
    this.#buf.set(b, at);
  }
  result(): Uint8Array {
    return this.#buf.slice(0, this.length);
  }
}

function typeId(type: GgufValueType): number {
  return GGUF_VALUE_TYPES.indexOf(type);
}

function writeArray(sink: Sink, array: GgufArray): void {
  sink.u32(typeId(array.itemType));
  sink.u64(array.items.length);
  const items = array.items as ArrayLike<unknown>;
  for (let i = 0; i < items.length; i++) {
    const item = items[i];
    if (array.itemType === 'string') sink.string(item as string);
    else if (array.itemType === 'array') writeArray(sink, item as GgufArray);
    else sink.scalar(array.itemType, item as number | bigint | boolean);
  }
}

function writeValue(sink: Sink, value: GgufValue): void {
  if (value.type === 'string') sink.string(value.value);
  else if (value.type === 'array') writeArray(sink, value.value);
  else sink.scalar(value.type, value.value);
}

/** Bytes of a tensor of this shape and type (the type table's block geometry); raw unknown ids: 4 per element. */
export function tensorBytes(type: GgmlTypeName | number, shape: readonly (number | bigint)[]): number {
  const t = typeof type === 'number' ? undefined : ggmlTypeByName(type);
  const elements = shape.reduce<number>((a, b) => a * Number(b), 1);
  if (t === undefined) return elements * 4;
  return Math.ceil(elements / t.blockElements) * t.blockBytes;
}

/** Deterministic bytes that differ between tensors (seeded by the tensor index). */
export function patternBytes(length: number, seed: number): Uint8Array {
  const out = new Uint8Array(length);
  for (let i = 0; i < length; i++) out[i] = (i * 131 + seed * 29 + (i >>> 8) * 7) & 0xff;
  return out;
}

export function writeGguf(spec: WriterSpec = {}): WrittenGguf {
  const sink = new Sink();
  const alignment = spec.alignment ?? DEFAULT_ALIGNMENT;
  const metadata = spec.metadata ?? [];
  const tensors = spec.tensors ?? [];
  const boundaries: { name: string; at: number }[] = [];
  const mark = (name: string): void => {
    boundaries.push({ name, at: sink.length });
  };

  mark('magic');
  for (const b of spec.magic ?? MAGIC) sink.u8(b);
  mark('version');
  const versionAt = sink.length;
  sink.u32(spec.version ?? 3);
  mark('tensor-count');
  const tensorCountAt = sink.length;
  sink.u64(spec.tensorCount ?? BigInt(tensors.length));
  mark('entry-count');
  const entryCountAt = sink.length;
  sink.u64(spec.entryCount ?? BigInt(metadata.length));

  const entries: EntryLayout[] = [];
  metadata.forEach(([key, value], i) => {
    mark(`entry ${i} key (${key})`);
    const at = sink.length;
    sink.string(spec.rawKeys?.[i] ?? key);
    mark(`entry ${i} type (${key})`);
    const typeAt = sink.length;
    sink.u32(spec.rawValueTypes?.[i] ?? typeId(value.type));
    mark(`entry ${i} value (${key})`);
    const valueAt = sink.length;
    writeValue(sink, value);
    entries.push({ key, at, typeAt, valueAt, end: sink.length });
  });

  // Default offsets: consecutive, each aligned.
  let next = 0;
  const placed = tensors.map((t, i) => {
    const data = t.data ?? patternBytes(tensorBytes(t.type, t.shape), i + 1);
    const offset = t.offset ?? BigInt(next);
    if (t.offset === undefined) next = Math.ceil((next + data.length) / alignment) * alignment;
    return { t, data, offset: BigInt(offset) };
  });

  const infos: Omit<TensorLayout, 'dataAt'>[] = [];
  placed.forEach(({ t, data, offset }, i) => {
    mark(`tensor ${i} name (${t.name})`);
    const at = sink.length;
    sink.string(t.name);
    mark(`tensor ${i} rank (${t.name})`);
    const rankAt = sink.length;
    sink.u32(t.rank ?? t.shape.length);
    mark(`tensor ${i} dims (${t.name})`);
    const dimsAt = sink.length;
    for (const d of t.shape) sink.u64(d);
    mark(`tensor ${i} type (${t.name})`);
    const typeAt = sink.length;
    sink.u32(typeof t.type === 'number' ? t.type : ggmlTypeByName(t.type)!.id);
    mark(`tensor ${i} offset (${t.name})`);
    const offsetAt = sink.length;
    sink.u64(offset);
    infos.push({ name: t.name, at, rankAt, dimsAt, typeAt, offsetAt, end: sink.length, byteLength: data.length, data });
  });

  mark('padding');
  const paddingAt = sink.length;
  sink.padTo(alignment);
  const dataOffset = sink.length;
  mark('data');

  // Tensor data at their offsets (overridden offsets too, when they are small enough to write out; a
  // test that wants a tensor past the end patches the offset field or slices the file instead).
  let end = dataOffset;
  const writable = (offset: bigint): boolean => offset < BigInt(MAX_WRITTEN_OFFSET);
  const layouts: TensorLayout[] = placed.map(({ data, offset }, i) => {
    const dataAt = dataOffset + Number(offset);
    if (writable(offset)) end = Math.max(end, dataAt + data.length);
    return { ...infos[i]!, dataAt };
  });
  sink.zeros(end - dataOffset);
  layouts.forEach((l, i) => {
    if (writable(placed[i]!.offset)) {
      mark(`tensor ${i} data (${l.name})`);
      sink.setAt(l.dataAt, l.data);
    }
  });
  boundaries.sort((a, b) => a.at - b.at);
  if (spec.trailing !== undefined) sink.zeros(spec.trailing);
  return {
    bytes: sink.result(),
    layout: { versionAt, tensorCountAt, entryCountAt, entries, tensors: layouts, paddingAt, dataOffset, boundaries },
  };
}

/** Helpers for metadata values. */
export const gv = {
  u8: (value: number): GgufValue => ({ type: 'u8', value }),
  u32: (value: number): GgufValue => ({ type: 'u32', value }),
  i32: (value: number): GgufValue => ({ type: 'i32', value }),
  f32: (value: number): GgufValue => ({ type: 'f32', value }),
  f64: (value: number): GgufValue => ({ type: 'f64', value }),
  u64: (value: bigint): GgufValue => ({ type: 'u64', value }),
  i64: (value: bigint): GgufValue => ({ type: 'i64', value }),
  bool: (value: boolean): GgufValue => ({ type: 'bool', value }),
  str: (value: string): GgufValue => ({ type: 'string', value }),
  strings: (items: readonly string[]): GgufValue => ({ type: 'array', value: { itemType: 'string', items } }),
  f32s: (items: readonly number[]): GgufValue => ({ type: 'array', value: { itemType: 'f32', items: new Float32Array(items) } }),
  i32s: (items: readonly number[]): GgufValue => ({ type: 'array', value: { itemType: 'i32', items: new Int32Array(items) } }),
  array: (value: GgufArray): GgufValue => ({ type: 'array', value }),
};

/** Writes a little-endian u64 into `bytes` at `at` (returns a corrupted copy). */
export function withU64(bytes: Uint8Array, at: number, value: bigint): Uint8Array {
  const out = bytes.slice();
  new DataView(out.buffer).setBigUint64(at, BigInt.asUintN(64, value), true);
  return out;
}

/** Writes a little-endian u32 into a copy of `bytes` at `at`. */
export function withU32(bytes: Uint8Array, at: number, value: number): Uint8Array {
  const out = bytes.slice();
  new DataView(out.buffer).setUint32(at, value >>> 0, true);
  return out;
}

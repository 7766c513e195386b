// GGUF reader (issue 10; DESIGN.md "src/model"): parses the header of a GGUF file (versions 2 and 3,
// little-endian) from a range source and hands back its metadata, its tensor table and a way to read one
// tensor's bytes, or a range of its rows, later.
//
// Contract.
// - Only the header is read by parseGguf, in growing chunks through the ByteSource: the magic, version and
//   counts, every metadata key/value, every tensor info, then the padding up to the data section. Tensor
//   data is read only by readTensor/readTensorRows, by range, so a model file is never one ArrayBuffer.
//   Parsed values are copied out of the chunks, so the chunks are dropped as the cursor passes them.
// - Everything is checked before anything is allocated for it: every count, string and array length is
//   compared with the bytes the file still holds (a declared extent past the end is EINVAL `truncated`) and
//   with the caps below (EINVAL `count-too-large`); tensor ranks, dimensions, types, offsets, alignment and
//   byte extents are checked with exact integer arithmetic. The work of a parse is bounded by the file:
//   every value consumes at least one byte, and the header may not exceed MAX_HEADER_BYTES.
// - Refusals are TenonErrors with op `gguf.parse` and a stable reason: EINVAL `truncated`, `bad-magic`,
//   `bad-version`, `count-too-large`, `header-too-large`, `bad-key`, `bad-value-type`, `bad-value`,
//   `nesting-too-deep`, `duplicate-name`, `bad-metadata`, `bad-alignment`, `bad-name`, `bad-shape`,
//   `bad-tensor-type`, `tensor-misaligned`, `tensor-out-of-file`, `tensor-overlap`; ENOTSUP
//   `unsupported-version` (GGUF v1), `big-endian`, and `unsupported-tensor-type` naming the type (after the
//   whole header proved well-formed; `allowUnsupportedTypes` turns that one off for inspection tools).
//   Source failures pass through (EIO from the source); an aborted signal gives ECANCELED.
// - A failed parse returns nothing and changes nothing (the source is only read). The parsed file keeps a
//   reference to the source; it never closes it (the caller owns the Blob, descriptor or file handle).
// - The reader reports `general.architecture`; whether an architecture is supported is the architecture
//   table's decision, not this module's. Thread: any.
import { TenonError } from '../errors.js';
import { ggmlByteLength, ggmlTypeById, requireLoweringType } from './ggml-types.js';
import type { GgmlType } from './ggml-types.js';
import { bytesSource } from './source.js';
import type { ByteSource } from './source.js';

const OP = 'gguf.parse';

/** "GGUF" as bytes. */
const MAGIC = [0x47, 0x47, 0x55, 0x46] as const;
/** Supported versions. Version 1 used 32-bit counts and lengths; no tool has written it since 2023. */
const SUPPORTED_VERSIONS: readonly number[] = [2, 3];
const LEGACY_VERSION = 1;
/** Bytes of magic + version + tensor count + metadata count. */
const FIXED_HEADER_BYTES = 4 + 4 + 8 + 8;
/** Data-section alignment when the file does not set `general.alignment` (GGUF specification). */
export const GGUF_DEFAULT_ALIGNMENT = 32;
const ALIGNMENT_KEY = 'general.alignment';
const ARCHITECTURE_KEY = 'general.architecture';
/** Dimensions a ggml tensor can have (GGML_MAX_DIMS). */
export const GGUF_MAX_DIMS = 4;
/** ggml keeps tensor names in a 64-byte field with a terminating NUL (GGML_MAX_NAME). */
export const GGUF_MAX_TENSOR_NAME_BYTES = 63;
/** The specification bounds keys to 65535 bytes. */
export const GGUF_MAX_KEY_BYTES = 65_535;

// Caps. Each is an order of magnitude or more above what published models use, and each bounds memory a
// hostile header could otherwise make the reader allocate before it finds out the file is lying.
/** Tensors per file: the largest published models have a few thousand (per-expert layouts included). */
export const GGUF_MAX_TENSORS = 1 << 16;
/** Metadata entries per file: real files carry a few dozen. */
export const GGUF_MAX_METADATA_ENTRIES = 1 << 16;
/** Items in one array: the largest vocabularies have ~260k tokens and ~500k merges. */
export const GGUF_MAX_ARRAY_ITEMS = 1 << 24;
/** Bytes of one string value: chat templates, the longest strings in real files, are ~10-20 KiB. */
export const GGUF_MAX_STRING_BYTES = 1 << 24;
/** Arrays of arrays: the format allows nesting; no published file goes deeper than one level. */
export const GGUF_MAX_ARRAY_DEPTH = 4;
/** Everything before the data section: Llama 3's vocabulary (the largest header we know) is ~8 MiB. */
export const GGUF_MAX_HEADER_BYTES = 256 << 20;

/** First header read; each further read doubles, up to GGUF_MAX_HEADER_CHUNK (plus what one value needs). */
export const GGUF_FIRST_HEADER_CHUNK = 64 << 10;
export const GGUF_MAX_HEADER_CHUNK = 4 << 20;

/** Metadata value types, indexed by their id in the file. */
export const GGUF_VALUE_TYPES = ['u8', 'i8', 'u16', 'i16', 'u32', 'i32', 'f32', 'bool', 'string', 'array', 'u64', 'i64', 'f64'] as const;
export type GgufValueType = (typeof GGUF_VALUE_TYPES)[number];
const STRING_TYPE = 8;
const ARRAY_TYPE = 9;

/** Fixed byte size of each scalar type; strings and arrays have none. */
const SCALAR_BYTES: Readonly<Record<GgufValueType, number>> = {
  u8: 1, i8: 1, u16: 2, i16: 2, u32: 4, i32: 4, f32: 4, bool: 1, string: 0, array: 0, u64: 8, i64: 8, f64: 8,
};
/** Smallest encoding of a value of each type: a string is at least its u64 length, an array its item type and u64 count. */
const MIN_VALUE_BYTES: Readonly<Record<GgufValueType, number>> = { ...SCALAR_BYTES, string: 8, array: 4 + 8 };
/** Smallest key/value entry: a one-byte key (u64 length + 1), the u32 type, a one-byte value. */
const MIN_ENTRY_BYTES = 8 + 1 + 4 + 1;
/** Smallest tensor info: a one-byte name, one u32 rank, one u64 dimension, the u32 type, the u64 offset. */
const MIN_TENSOR_INFO_BYTES = 8 + 1 + 4 + 8 + 4 + 8;

export type GgufNumberArray = Uint8Array | Int8Array | Uint16Array | Int16Array | Uint32Array | Int32Array | Float32Array | Float64Array;

export type GgufArray =
  | { readonly itemType: 'u8'; readonly items: Uint8Array }
  | { readonly itemType: 'i8'; readonly items: Int8Array }
  | { readonly itemType: 'u16'; readonly items: Uint16Array }
  | { readonly itemType: 'i16'; readonly items: Int16Array }
  | { readonly itemType: 'u32'; readonly items: Uint32Array }
  | { readonly itemType: 'i32'; readonly items: Int32Array }
  | { readonly itemType: 'f32'; readonly items: Float32Array }
  | { readonly itemType: 'f64'; readonly items: Float64Array }
  | { readonly itemType: 'u64'; readonly items: BigUint64Array }
  | { readonly itemType: 'i64'; readonly items: BigInt64Array }
  | { readonly itemType: 'bool'; readonly items: readonly boolean[] }
  | { readonly itemType: 'string'; readonly items: readonly string[] }
  | { readonly itemType: 'array'; readonly items: readonly GgufArray[] };

export type GgufValue =
  | { readonly type: 'u8' | 'i8' | 'u16' | 'i16' | 'u32' | 'i32' | 'f32' | 'f64'; readonly value: number }
  | { readonly type: 'u64' | 'i64'; readonly value: bigint }
  | { readonly type: 'bool'; readonly value: boolean }
  | { readonly type: 'string'; readonly value: string }
  | { readonly type: 'array'; readonly value: GgufArray };

export interface GgufTensorInfo {
  readonly name: string;
  /** ggml order: shape[0] is the contiguous dimension (a row), shape[1] counts rows, and so on. */
  readonly shape: readonly number[];
  readonly type: GgmlType;
  readonly elements: number;
  /** elements / shape[0]. */
  readonly rows: number;
  /** Bytes of one row (shape[0] elements). */
  readonly rowBytes: number;
  readonly byteLength: number;
  /** Absolute byte offset of the tensor's data in the file. */
  readonly offset: number;
}

/** Typed access to the metadata. Getters throw EINVAL `bad-metadata` naming the key when it is missing or has another type; opt* getters return undefined when it is missing (and still throw on a wrong type). */
export interface GgufMetadata {
  readonly size: number;
  keys(): IterableIterator<string>;
  has(key: string): boolean;
  get(key: string): GgufValue | undefined;
  typeOf(key: string): GgufValueType | undefined;
  getString(key: string): string;
  optString(key: string): string | undefined;
  getBool(key: string): boolean;
  optBool(key: string): boolean | undefined;
  /** A value stored as u32. */
  getU32(key: string): number;
  optU32(key: string): number | undefined;
  /** A value of any integer type, as an exact number. */
  getInt(key: string): number;
  optInt(key: string): number | undefined;
  /** A value stored as f32 or f64. */
  getFloat(key: string): number;
  optFloat(key: string): number | undefined;
  getArray(key: string): GgufArray;
  optArray(key: string): GgufArray | undefined;
  getStringArray(key: string): readonly string[];
  optStringArray(key: string): readonly string[] | undefined;
  /** An array of any 8-, 16- or 32-bit integer or float type (the stored typed array, not a copy). */
  getNumberArray(key: string): GgufNumberArray;
  optNumberArray(key: string): GgufNumberArray | undefined;
}

export interface GgufFile {
  readonly version: number;
  /** The source's size and name. */
  readonly size: number;
  readonly name: string | undefined;
  readonly alignment: number;
  /** Absolute offset of the data section (the end of the header and its padding). */
  readonly dataOffset: number;
  /** `general.architecture`, if the file names one. */
  readonly architecture: string | undefined;
  readonly metadata: GgufMetadata;
  /** Tensor infos in file order. */
  readonly tensors: readonly GgufTensorInfo[];
  findTensor(name: string): GgufTensorInfo | undefined;
  /** The named tensor; EINVAL `missing-tensor` when the file has none by that name. */
  tensor(name: string): GgufTensorInfo;
  /** The tensor's bytes, read by range through the source (for an in-memory source, a view of its bytes). */
  readTensor(tensor: string | GgufTensorInfo): Promise<Uint8Array>;
  /** Bytes of rows [firstRow, firstRow + rowCount) of the tensor; EINVAL `range` outside its rows. */
  readTensorRows(tensor: string | GgufTensorInfo, firstRow: number, rowCount: number): Promise<Uint8Array>;
}

export interface ParseGgufOptions {
  /** Accept tensors of known GGML types that are not lowering kinds (for inspection). Default false. */
  readonly allowUnsupportedTypes?: boolean;
  readonly signal?: AbortSignal;
}

function invalid(reason: string, message: string, ids?: Record<string, string | number>, at?: number): TenonError {
  return new TenonError('EINVAL', message, {
    op: OP,
    reason,
    ...(ids === undefined ? {} : { ids }),
    ...(at === undefined ? {} : { range: { start: at, end: at } }),
  });
}

const HOST_LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });
const lenientUtf8 = new TextDecoder('utf-8');

/**
 * Sequential reader over the header. Holds one window [start, start + buf.length) of the source; `has(n)`
 * is the synchronous fast path and `fill(n)` the only await, so parsing a vocabulary costs an await per
 * chunk, not per token.
 */
class Cursor {
  readonly source: ByteSource;
  readonly signal: AbortSignal | undefined;
  pos = 0;
  #start = 0;
  #buf = new Uint8Array(0);
  #view = new DataView(this.#buf.buffer);
  #chunk = GGUF_FIRST_HEADER_CHUNK;

  constructor(source: ByteSource, signal: AbortSignal | undefined) {
    this.source = source;
    this.signal = signal;
  }

  get remaining(): number {
    return this.source.size - this.pos;
  }

  /** True when the next n bytes are in the window. */
  has(n: number): boolean {
    return this.pos + n <= this.#start + this.#buf.length;
  }

  /** Fails `truncated` unless the file still holds `n` bytes from the cursor. */
  require(n: number, what: string, ids?: Record<string, string | number>): void {
    if (n > this.remaining) {
      throw invalid('truncated', `the file ends ${n - this.remaining} bytes before the end of ${what}`, { ...ids, needed: n, available: this.remaining }, this.pos);
    }
  }

  /** Brings the next n bytes into the window (n already checked against the file with `require`). */
  async fill(n: number, what: string, ids?: Record<string, string | number>): Promise<void> {
    this.require(n, what, ids);
    if (this.pos + n > GGUF_MAX_HEADER_BYTES) {
      throw invalid('header-too-large', `the header runs past ${GGUF_MAX_HEADER_BYTES} bytes`, { ...ids, limit: GGUF_MAX_HEADER_BYTES }, this.pos);
    }
    if (this.signal?.aborted === true) throw new TenonError('ECANCELED', 'parse aborted', { op: OP, reason: 'aborted', cause: this.signal.reason });
    const end = this.#start + this.#buf.length;
    const keepFrom = Math.min(this.pos, end);
    const want = Math.min(Math.max(this.pos + n - end, this.#chunk), this.source.size - end);
    const fresh = await this.source.read(end, want);
    const tail = this.#buf.subarray(keepFrom - this.#start);
    const next = new Uint8Array(tail.length + fresh.length);
    next.set(tail, 0);
    next.set(fresh, tail.length);
    this.#buf = next;
    this.#start = keepFrom;
    this.#view = new DataView(next.buffer);
    this.#chunk = Math.min(this.#chunk * 2, GGUF_MAX_HEADER_CHUNK);
  }

  #at(n: number): number {
    const at = this.pos - this.#start;
    this.pos += n;
    return at;
  }

  u8(): number {
    return this.#buf[this.#at(1)]!;
  }
  i8(): number {
    return this.#view.getInt8(this.#at(1));
  }
  u16(): number {
    return this.#view.getUint16(this.#at(2), true);
  }
  i16(): number {
    return this.#view.getInt16(this.#at(2), true);
  }
  u32(): number {
    return this.#view.getUint32(this.#at(4), true);
  }
  i32(): number {
    return this.#view.getInt32(this.#at(4), true);
  }
  f32(): number {
    return this.#view.getFloat32(this.#at(4), true);
  }
  f64(): number {
    return this.#view.getFloat64(this.#at(8), true);
  }
  u64(): bigint {
    return this.#view.getBigUint64(this.#at(8), true);
  }
  /** A u64 as a number: exact below 2^53, and above it still larger than every cap (no BigInt on the hot path). */
  u64n(): number {
    const at = this.#at(8);
    return this.#view.getUint32(at, true) + this.#view.getUint32(at + 4, true) * 2 ** 32;
  }
  i64(): bigint {
    return this.#view.getBigInt64(this.#at(8), true);
  }

  /** The next n bytes as a view of the window (valid until the next fill). */
  bytes(n: number): Uint8Array {
    const at = this.#at(n);
    return this.#buf.subarray(at, at + n);
  }

  /** The next n bytes as text (undefined when `strict` and they are not valid UTF-8). */
  text(n: number, strict: boolean): string | undefined {
    const at = this.#at(n);
    return decodeText(this.#buf, at, at + n, strict);
  }

  /** Copies n bytes into a fresh, aligned ArrayBuffer. */
  copy(n: number): ArrayBuffer {
    const at = this.#at(n);
    return this.#buf.slice(at, at + n).buffer;
  }
}

/** Code units gathered per String.fromCharCode call (well below engines' argument limits). */
const DECODE_BATCH = 4096;
const codeUnits = new Uint16Array(DECODE_BATCH);

/**
 * Decodes bytes[start, end) as UTF-8. Short strings (tokens, merges, keys: hundreds of thousands per
 * vocabulary) take a hand-written decoder that accepts only well-formed UTF-8 (no overlongs, no surrogates,
 * nothing past U+10FFFF); anything it does not accept, and long strings, go to TextDecoder: fatal when
 * `strict` (undefined on invalid input), replacing invalid sequences with U+FFFD otherwise.
 */
function decodeText(bytes: Uint8Array, start: number, end: number, strict: boolean): string | undefined {
  if (end - start <= DECODE_BATCH / 2) {
    let n = 0;
    let i = start;
    while (i < end) {
      const b0 = bytes[i]!;
      if (b0 < 0x80) {
        codeUnits[n++] = b0;
        i++;
        continue;
      }
      let cp: number;
      let len: number;
      if (b0 >= 0xc2 && b0 <= 0xdf) {
        len = 2;
        cp = b0 & 0x1f;
      } else if (b0 >= 0xe0 && b0 <= 0xef) {
        len = 3;
        cp = b0 & 0x0f;
      } else if (b0 >= 0xf0 && b0 <= 0xf4) {
        len = 4;
        cp = b0 & 0x07;
      } else break;
      if (i + len > end) break;
      let ok = true;
      for (let k = 1; k < len; k++) {
        const b = bytes[i + k]!;
        if ((b & 0xc0) !== 0x80) {
          ok = false;
          break;
        }
        cp = (cp << 6) | (b & 0x3f);
      }
      // Overlong 3- and 4-byte forms, UTF-16 surrogates and code points past U+10FFFF are not UTF-8.
      if (!ok || (len === 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) || (len === 4 && (cp < 0x10000 || cp > 0x10ffff))) break;
      if (cp >= 0x10000) {
        cp -= 0x10000;
        codeUnits[n++] = 0xd800 | (cp >> 10);
        codeUnits[n++] = 0xdc00 | (cp & 0x3ff);
      } else codeUnits[n++] = cp;
      i += len;
    }
    if (i === end) return String.fromCharCode.apply(null, codeUnits.subarray(0, n) as unknown as number[]);
  }
  const view = bytes.subarray(start, end);
  if (!strict) return lenientUtf8.decode(view);
  try {
    return strictUtf8.decode(view);
  } catch {
    return undefined;
  }
}

/** A u64 length or count as a number; values beyond `cap` fail with `reason`. */
function bounded(value: number, cap: number, reason: string, what: string, ids: Record<string, string | number> | undefined, at: number): number {
  if (value > cap) throw invalid(reason, `${what} ${value} exceeds the limit ${cap}`, { ...ids, limit: cap }, at);
  return value;
}

interface StringRule {
  readonly cap: number;
  readonly capReason: string;
  /** Invalid UTF-8 is refused with `capReason` (keys, names) instead of being replaced (values). */
  readonly strict: boolean;
  readonly what: string;
}

const KEY_RULE: StringRule = { cap: GGUF_MAX_KEY_BYTES, capReason: 'bad-key', strict: true, what: 'metadata key' };
const VALUE_RULE: StringRule = { cap: GGUF_MAX_STRING_BYTES, capReason: 'count-too-large', strict: false, what: 'string value' };
const NAME_RULE: StringRule = { cap: GGUF_MAX_TENSOR_NAME_BYTES, capReason: 'bad-name', strict: true, what: 'tensor name' };

async function readString(c: Cursor, rule: StringRule, ids?: Record<string, string | number>): Promise<string> {
  if (!c.has(8)) await c.fill(8, `a ${rule.what} length`, ids);
  const at = c.pos;
  const length = bounded(c.u64n(), rule.cap, rule.capReason, `${rule.what} length`, ids, at);
  if (!c.has(length)) await c.fill(length, `a ${rule.what}`, ids);
  return decoded(c, length, rule, ids, at);
}

function decoded(c: Cursor, length: number, rule: StringRule, ids: Record<string, string | number> | undefined, at: number): string {
  const text = c.text(length, rule.strict);
  if (text === undefined) throw invalid(rule.capReason, `${rule.what} is not valid UTF-8`, ids, at);
  return text;
}

function valueType(id: number, ids: Record<string, string | number>, at: number): GgufValueType {
  const type = GGUF_VALUE_TYPES[id];
  if (type === undefined) throw invalid('bad-value-type', `unknown metadata value type ${id}`, { ...ids, valueType: id }, at);
  return type;
}

function readBool(c: Cursor, ids: Record<string, string | number>): boolean {
  const at = c.pos;
  const b = c.u8();
  if (b > 1) throw invalid('bad-value', `a bool holds ${b}, not 0 or 1`, ids, at);
  return b === 1;
}

/** Reads one scalar (the bytes are already in the window). */
function readScalar(c: Cursor, type: GgufValueType, ids: Record<string, string | number>): GgufValue {
  switch (type) {
    case 'u8': return { type, value: c.u8() };
    case 'i8': return { type, value: c.i8() };
    case 'u16': return { type, value: c.u16() };
    case 'i16': return { type, value: c.i16() };
    case 'u32': return { type, value: c.u32() };
    case 'i32': return { type, value: c.i32() };
    case 'f32': return { type, value: c.f32() };
    case 'f64': return { type, value: c.f64() };
    case 'u64': return { type, value: c.u64() };
    case 'i64': return { type, value: c.i64() };
    case 'bool': return { type, value: readBool(c, ids) };
    default: throw new Error(`unreachable: ${type} is not a scalar`);
  }
}

async function readValue(c: Cursor, type: GgufValueType, ids: Record<string, string | number>, depth: number): Promise<GgufValue> {
  if (type === 'string') return { type, value: await readString(c, VALUE_RULE, ids) };
  if (type === 'array') return { type, value: await readArray(c, ids, depth + 1) };
  const n = SCALAR_BYTES[type];
  if (!c.has(n)) await c.fill(n, `a ${type} value`, ids);
  return readScalar(c, type, ids);
}

function typedArray(type: GgufValueType, buffer: ArrayBuffer): GgufArray {
  switch (type) {
    case 'u8': return { itemType: type, items: new Uint8Array(buffer) };
    case 'i8': return { itemType: type, items: new Int8Array(buffer) };
    case 'u16': return { itemType: type, items: new Uint16Array(buffer) };
    case 'i16': return { itemType: type, items: new Int16Array(buffer) };
    case 'u32': return { itemType: type, items: new Uint32Array(buffer) };
    case 'i32': return { itemType: type, items: new Int32Array(buffer) };
    case 'f32': return { itemType: type, items: new Float32Array(buffer) };
    case 'f64': return { itemType: type, items: new Float64Array(buffer) };
    case 'u64': return { itemType: type, items: new BigUint64Array(buffer) };
    case 'i64': return { itemType: type, items: new BigInt64Array(buffer) };
    default: throw new Error(`unreachable: ${type} has no typed array`);
  }
}

/** Reverses the byte order of each `width`-byte item in place (big-endian hosts only). */
function swapItems(buffer: ArrayBuffer, width: number): void {
  const bytes = new Uint8Array(buffer);
  for (let i = 0; i < bytes.length; i += width) bytes.subarray(i, i + width).reverse();
}

async function readArray(c: Cursor, ids: Record<string, string | number>, depth: number): Promise<GgufArray> {
  if (depth > GGUF_MAX_ARRAY_DEPTH) throw invalid('nesting-too-deep', `arrays nest deeper than ${GGUF_MAX_ARRAY_DEPTH}`, { ...ids, limit: GGUF_MAX_ARRAY_DEPTH }, c.pos);
  if (!c.has(12)) await c.fill(12, 'an array header', ids);
  const typeAt = c.pos;
  const itemType = valueType(c.u32(), ids, typeAt);
  const countAt = c.pos;
  const count = bounded(c.u64n(), GGUF_MAX_ARRAY_ITEMS, 'count-too-large', 'array length', ids, countAt);
  // Every item takes at least MIN_VALUE_BYTES: a count the rest of the file cannot hold is refused before
  // any item array is allocated.
  c.require(count * MIN_VALUE_BYTES[itemType], `a ${count}-item ${itemType} array`, ids);
  if (itemType === 'string') {
    // readString inlined: a vocabulary has hundreds of thousands of strings, and an await is taken only
    // when the window runs out, not per item.
    const items = new Array<string>(count);
    for (let i = 0; i < count; i++) {
      if (!c.has(8)) await c.fill(8, 'a string value length', ids);
      const at = c.pos;
      const length = bounded(c.u64n(), VALUE_RULE.cap, VALUE_RULE.capReason, 'string value length', ids, at);
      if (!c.has(length)) await c.fill(length, 'a string value', ids);
      items[i] = decoded(c, length, VALUE_RULE, ids, at);
    }
    return { itemType, items };
  }
  if (itemType === 'array') {
    const items = new Array<GgufArray>(count);
    for (let i = 0; i < count; i++) items[i] = await readArray(c, ids, depth + 1);
    return { itemType, items };
  }
  const width = SCALAR_BYTES[itemType];
  const total = count * width;
  if (!c.has(total)) await c.fill(total, `a ${count}-item ${itemType} array`, ids);
  if (itemType === 'bool') {
    const items = new Array<boolean>(count);
    for (let i = 0; i < count; i++) items[i] = readBool(c, ids);
    return { itemType, items };
  }
  const buffer = c.copy(total);
  if (!HOST_LITTLE_ENDIAN && width > 1) swapItems(buffer, width);
  return typedArray(itemType, buffer);
}

// ---------------------------------------------------------------------------------------------------
// metadata

const INTEGER_TYPES: ReadonlySet<GgufValueType> = new Set(['u8', 'i8', 'u16', 'i16', 'u32', 'i32', 'u64', 'i64']);
const NUMBER_ARRAY_TYPES: ReadonlySet<GgufValueType> = new Set(['u8', 'i8', 'u16', 'i16', 'u32', 'i32', 'f32', 'f64']);

class Metadata implements GgufMetadata {
  readonly #entries: ReadonlyMap<string, GgufValue>;

  constructor(entries: ReadonlyMap<string, GgufValue>) {
    this.#entries = entries;
  }

  get size(): number {
    return this.#entries.size;
  }
  keys(): IterableIterator<string> {
    return this.#entries.keys();
  }
  has(key: string): boolean {
    return this.#entries.has(key);
  }
  get(key: string): GgufValue | undefined {
    return this.#entries.get(key);
  }
  typeOf(key: string): GgufValueType | undefined {
    return this.#entries.get(key)?.type;
  }

  #wrong(key: string, expected: string, found: GgufValue | undefined): TenonError {
    const message = found === undefined ? `required metadata key ${key} is missing` : `metadata key ${key} holds ${found.type}, expected ${expected}`;
    return new TenonError('EINVAL', message, {
      op: 'gguf.metadata',
      reason: 'bad-metadata',
      ids: { key, expected, found: found === undefined ? 'missing' : found.type === 'array' ? `array<${found.value.itemType}>` : found.type },
    });
  }

  /** Looks `key` up; undefined when absent and optional, the converted value when `convert` accepts it. */
  #lookup<T>(key: string, optional: boolean, expected: string, convert: (v: GgufValue) => T | undefined): T | undefined {
    const found = this.#entries.get(key);
    if (found === undefined) {
      if (optional) return undefined;
      throw this.#wrong(key, expected, found);
    }
    const out = convert(found);
    if (out === undefined) throw this.#wrong(key, expected, found);
    return out;
  }

  #string = (v: GgufValue): string | undefined => (v.type === 'string' ? v.value : undefined);
  #bool = (v: GgufValue): boolean | undefined => (v.type === 'bool' ? v.value : undefined);
  #u32 = (v: GgufValue): number | undefined => (v.type === 'u32' ? v.value : undefined);
  #int = (v: GgufValue): number | undefined => {
    if (!INTEGER_TYPES.has(v.type)) return undefined;
    const n = Number(v.value);
    return Number.isSafeInteger(n) ? n : undefined;
  };
  #float = (v: GgufValue): number | undefined => (v.type === 'f32' || v.type === 'f64' ? v.value : undefined);
  #array = (v: GgufValue): GgufArray | undefined => (v.type === 'array' ? v.value : undefined);
  #strings = (v: GgufValue): readonly string[] | undefined => (v.type === 'array' && v.value.itemType === 'string' ? v.value.items : undefined);
  #numbers = (v: GgufValue): GgufNumberArray | undefined =>
    v.type === 'array' && NUMBER_ARRAY_TYPES.has(v.value.itemType) ? (v.value.items as GgufNumberArray) : undefined;

  getString(key: string): string {
    return this.#lookup(key, false, 'string', this.#string)!;
  }
  optString(key: string): string | undefined {
    return this.#lookup(key, true, 'string', this.#string);
  }
  getBool(key: string): boolean {
    return this.#lookup(key, false, 'bool', this.#bool)!;
  }
  optBool(key: string): boolean | undefined {
    return this.#lookup(key, true, 'bool', this.#bool);
  }
  getU32(key: string): number {
    return this.#lookup(key, false, 'u32', this.#u32)!;
  }
  optU32(key: string): number | undefined {
    return this.#lookup(key, true, 'u32', this.#u32);
  }
  getInt(key: string): number {
    return this.#lookup(key, false, 'integer', this.#int)!;
  }
  optInt(key: string): number | undefined {
    return this.#lookup(key, true, 'integer', this.#int);
  }
  getFloat(key: string): number {
    return this.#lookup(key, false, 'float', this.#float)!;
  }
  optFloat(key: string): number | undefined {
    return this.#lookup(key, true, 'float', this.#float);
  }
  getArray(key: string): GgufArray {
    return this.#lookup(key, false, 'array', this.#array)!;
  }
  optArray(key: string): GgufArray | undefined {
    return this.#lookup(key, true, 'array', this.#array);
  }
  getStringArray(key: string): readonly string[] {
    return this.#lookup(key, false, 'array<string>', this.#strings)!;
  }
  optStringArray(key: string): readonly string[] | undefined {
    return this.#lookup(key, true, 'array<string>', this.#strings);
  }
  getNumberArray(key: string): GgufNumberArray {
    return this.#lookup(key, false, 'array<number>', this.#numbers)!;
  }
  optNumberArray(key: string): GgufNumberArray | undefined {
    return this.#lookup(key, true, 'array<number>', this.#numbers);
  }
}

// ---------------------------------------------------------------------------------------------------
// tensors

interface RawTensor {
  readonly name: string;
  readonly shape: readonly number[];
  readonly type: GgmlType;
  readonly elements: number;
  readonly rowBytes: number;
  readonly byteLength: number;
  /** Offset relative to the data section, as stored (a u64 that may not be a safe number yet). */
  readonly relative: bigint;
  /** Where its info starts in the file (for error ranges). */
  readonly at: number;
}

async function readTensorInfo(c: Cursor, index: number): Promise<RawTensor> {
  const at = c.pos;
  const ids: Record<string, string | number> = { index };
  const name = await readString(c, NAME_RULE, ids);
  if (name === '') throw invalid('bad-name', `tensor ${index} has an empty name`, ids, at);
  const named = { tensor: name };
  if (!c.has(4)) await c.fill(4, 'a tensor rank', named);
  const rankAt = c.pos;
  const rank = c.u32();
  if (rank < 1 || rank > GGUF_MAX_DIMS) throw invalid('bad-shape', `tensor ${name} has rank ${rank}, not 1-${GGUF_MAX_DIMS}`, { ...named, rank }, rankAt);
  if (!c.has(rank * 8 + 4 + 8)) await c.fill(rank * 8 + 4 + 8, 'a tensor info', named);
  const shape: number[] = [];
  let elements = 1;
  for (let d = 0; d < rank; d++) {
    const dimAt = c.pos;
    const dim = c.u64();
    if (dim < 1n || dim > BigInt(Number.MAX_SAFE_INTEGER)) throw invalid('bad-shape', `tensor ${name} dimension ${d} is ${dim}`, { ...named, dim: d }, dimAt);
    elements *= Number(dim);
    if (!Number.isSafeInteger(elements)) throw invalid('bad-shape', `tensor ${name} has more elements than can be counted exactly`, named, dimAt);
    shape.push(Number(dim));
  }
  const typeAt = c.pos;
  const typeId = c.u32();
  const type = ggmlTypeById(typeId);
  if (type === undefined) throw invalid('bad-tensor-type', `tensor ${name} has unknown GGML type ${typeId}`, { ...named, typeId }, typeAt);
  const rowBytes = rowByteLength(type, shape[0]!, name, typeAt);
  const byteLength = rowBytes * (elements / shape[0]!);
  if (!Number.isSafeInteger(byteLength)) throw invalid('bad-shape', `tensor ${name} has more bytes than can be counted exactly`, named, typeAt);
  const relative = c.u64();
  return { name, shape, type, elements, rowBytes, byteLength, relative, at };
}

function rowByteLength(type: GgmlType, rowElements: number, name: string, at: number): number {
  try {
    return ggmlByteLength(type, rowElements, OP);
  } catch (err) {
    if (err instanceof TenonError) throw invalid('bad-shape', `tensor ${name}: a row of ${rowElements} is not a whole number of ${type.name} blocks (${type.blockElements})`, { tensor: name, type: type.name }, at);
    throw err;
  }
}

function alignUp(value: number, alignment: number): number {
  return Math.ceil(value / alignment) * alignment;
}

class ParsedGguf implements GgufFile {
  readonly version: number;
  readonly size: number;
  readonly name: string | undefined;
  readonly alignment: number;
  readonly dataOffset: number;
  readonly architecture: string | undefined;
  readonly metadata: GgufMetadata;
  readonly tensors: readonly GgufTensorInfo[];
  readonly #byName: ReadonlyMap<string, GgufTensorInfo>;
  /** Borrowed: the caller's source, never closed here. */
  readonly #source: ByteSource;

  constructor(source: ByteSource, version: number, alignment: number, dataOffset: number, metadata: GgufMetadata, tensors: readonly GgufTensorInfo[]) {
    this.#source = source;
    this.version = version;
    this.size = source.size;
    this.name = source.name;
    this.alignment = alignment;
    this.dataOffset = dataOffset;
    this.metadata = metadata;
    this.architecture = metadata.optString(ARCHITECTURE_KEY);
    this.tensors = tensors;
    this.#byName = new Map(tensors.map((t) => [t.name, t]));
  }

  findTensor(name: string): GgufTensorInfo | undefined {
    return this.#byName.get(name);
  }

  tensor(name: string): GgufTensorInfo {
    const found = this.#byName.get(name);
    if (found === undefined) throw new TenonError('EINVAL', `the file has no tensor ${name}`, { op: 'gguf.tensor', reason: 'missing-tensor', ids: { tensor: name } });
    return found;
  }

  #resolve(tensor: string | GgufTensorInfo, op: string): GgufTensorInfo {
    const info = typeof tensor === 'string' ? this.#byName.get(tensor) : tensor;
    if (info === undefined || this.#byName.get(info.name) !== info) {
      const name = typeof tensor === 'string' ? tensor : String((tensor as { name?: unknown })?.name);
      throw new TenonError('EINVAL', `the file has no tensor ${name}`, { op, reason: 'missing-tensor', ids: { tensor: name } });
    }
    return info;
  }

  readTensor(tensor: string | GgufTensorInfo): Promise<Uint8Array> {
    try {
      const info = this.#resolve(tensor, 'gguf.readTensor');
      return this.#source.read(info.offset, info.byteLength);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  readTensorRows(tensor: string | GgufTensorInfo, firstRow: number, rowCount: number): Promise<Uint8Array> {
    const op = 'gguf.readTensorRows';
    try {
      const info = this.#resolve(tensor, op);
      if (!Number.isSafeInteger(firstRow) || !Number.isSafeInteger(rowCount) || firstRow < 0 || rowCount < 0 || firstRow + rowCount > info.rows) {
        throw new TenonError('EINVAL', `rows [${firstRow}, +${rowCount}) lie outside the ${info.rows} rows of ${info.name}`, { op, reason: 'range', ids: { tensor: info.name, rows: info.rows } });
      }
      return this.#source.read(info.offset + firstRow * info.rowBytes, rowCount * info.rowBytes);
    } catch (err) {
      return Promise.reject(err);
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// parse

/** Reads and validates a GGUF header from `input` (a range source, or bytes already in memory). */
export async function parseGguf(input: ByteSource | Uint8Array, options: ParseGgufOptions = {}): Promise<GgufFile> {
  const source = input instanceof Uint8Array ? bytesSource(input) : input;
  if (typeof source !== 'object' || source === null || typeof source.read !== 'function' || !Number.isSafeInteger(source.size) || source.size < 0) {
    throw new TenonError('EINVAL', 'expected a ByteSource or a Uint8Array', { op: OP, reason: 'not-source' });
  }
  const c = new Cursor(source, options.signal);

  // magic and version
  await c.fill(Math.min(8, c.remaining), 'the magic and version');
  c.require(MAGIC.length, 'the magic');
  const magic = c.bytes(MAGIC.length);
  if (MAGIC.every((b, i) => magic[i] === b)) {
    // the usual case
  } else if (MAGIC.every((b, i) => magic[MAGIC.length - 1 - i] === b)) {
    throw new TenonError('ENOTSUP', 'the file is big-endian GGUF; only little-endian files are read', { op: OP, reason: 'big-endian' });
  } else {
    throw invalid('bad-magic', 'the file does not start with the GGUF magic', undefined, 0);
  }
  c.require(4, 'the version');
  const version = c.u32();
  if (!SUPPORTED_VERSIONS.includes(version)) {
    const swapped = ((version & 0xff) << 24) | ((version & 0xff00) << 8) | ((version >>> 8) & 0xff00) | (version >>> 24);
    if (version === LEGACY_VERSION) throw new TenonError('ENOTSUP', 'GGUF version 1 is not supported; convert the file to version 3', { op: OP, reason: 'unsupported-version', ids: { version } });
    if (swapped === LEGACY_VERSION || SUPPORTED_VERSIONS.includes(swapped)) {
      throw new TenonError('ENOTSUP', 'the file is big-endian GGUF; only little-endian files are read', { op: OP, reason: 'big-endian', ids: { version: swapped } });
    }
    throw invalid('bad-version', `unknown GGUF version ${version}`, { version }, MAGIC.length);
  }

  // counts
  if (!c.has(16)) await c.fill(16, 'the tensor and metadata counts');
  const tensorCount = bounded(c.u64n(), GGUF_MAX_TENSORS, 'count-too-large', 'tensor count', undefined, 8);
  const entryCount = bounded(c.u64n(), GGUF_MAX_METADATA_ENTRIES, 'count-too-large', 'metadata entry count', undefined, 16);
  c.require(entryCount * MIN_ENTRY_BYTES + tensorCount * MIN_TENSOR_INFO_BYTES, `${entryCount} metadata entries and ${tensorCount} tensor infos`, { tensors: tensorCount, entries: entryCount });

  // metadata
  const entries = new Map<string, GgufValue>();
  for (let i = 0; i < entryCount; i++) {
    const keyAt = c.pos;
    const key = await readString(c, KEY_RULE, { entry: i });
    if (key === '') throw invalid('bad-key', `metadata entry ${i} has an empty key`, { entry: i }, keyAt);
    if (entries.has(key)) throw invalid('duplicate-name', `metadata key ${key} appears twice`, { key }, keyAt);
    const ids = { key };
    if (!c.has(4)) await c.fill(4, 'a metadata value type', ids);
    const typeAt = c.pos;
    const type = valueType(c.u32(), ids, typeAt);
    entries.set(key, await readValue(c, type, ids, 0));
  }
  const metadata = new Metadata(entries);

  const alignValue = entries.get(ALIGNMENT_KEY);
  let alignment = GGUF_DEFAULT_ALIGNMENT;
  if (alignValue !== undefined) {
    if (alignValue.type !== 'u32') throw invalid('bad-alignment', `${ALIGNMENT_KEY} holds ${alignValue.type}, not u32`, { key: ALIGNMENT_KEY });
    alignment = alignValue.value;
    if (alignment === 0 || (alignment & (alignment - 1)) !== 0) throw invalid('bad-alignment', `${ALIGNMENT_KEY} ${alignment} is not a power of two`, { alignment });
  }
  const architecture = entries.get(ARCHITECTURE_KEY);
  if (architecture !== undefined && architecture.type !== 'string') {
    throw new TenonError('EINVAL', `${ARCHITECTURE_KEY} holds ${architecture.type}, not a string`, { op: OP, reason: 'bad-metadata', ids: { key: ARCHITECTURE_KEY } });
  }

  // tensor infos
  c.require(tensorCount * MIN_TENSOR_INFO_BYTES, `${tensorCount} tensor infos`, { tensors: tensorCount });
  const raw: RawTensor[] = [];
  const names = new Set<string>();
  for (let i = 0; i < tensorCount; i++) {
    const info = await readTensorInfo(c, i);
    if (names.has(info.name)) throw invalid('duplicate-name', `tensor ${info.name} appears twice`, { tensor: info.name }, info.at);
    names.add(info.name);
    raw.push(info);
  }

  // padding up to the data section
  const dataOffset = alignUp(c.pos, alignment);
  c.require(dataOffset - c.pos, 'the padding before the data section', { alignment });
  const dataBytes = source.size - dataOffset;

  // extents: aligned, inside the file, disjoint
  const tensors: GgufTensorInfo[] = [];
  for (const t of raw) {
    if (t.relative % BigInt(alignment) !== 0n) {
      throw invalid('tensor-misaligned', `tensor ${t.name} starts at data offset ${t.relative}, not a multiple of ${alignment}`, { tensor: t.name, alignment }, t.at);
    }
    if (t.relative > BigInt(dataBytes) || Number(t.relative) + t.byteLength > dataBytes) {
      throw invalid('tensor-out-of-file', `tensor ${t.name} (${t.byteLength} bytes at data offset ${t.relative}) runs past the end of the file`, { tensor: t.name, dataBytes }, t.at);
    }
    const offset = dataOffset + Number(t.relative);
    tensors.push(Object.freeze({
      name: t.name,
      shape: Object.freeze(t.shape.slice()),
      type: t.type,
      elements: t.elements,
      rows: t.elements / t.shape[0]!,
      rowBytes: t.rowBytes,
      byteLength: t.byteLength,
      offset,
    }));
  }
  const byOffset = tensors.slice().sort((a, b) => a.offset - b.offset || a.byteLength - b.byteLength);
  for (let i = 1; i < byOffset.length; i++) {
    const prev = byOffset[i - 1]!;
    const next = byOffset[i]!;
    if (next.offset < prev.offset + prev.byteLength) {
      throw invalid('tensor-overlap', `tensors ${prev.name} and ${next.name} share bytes`, { tensor: next.name, other: prev.name }, next.offset);
    }
  }

  if (options.allowUnsupportedTypes !== true) for (const t of tensors) requireLoweringType(t.type, OP, t.name);
  return new ParsedGguf(source, version, alignment, dataOffset, metadata, Object.freeze(tensors));
}

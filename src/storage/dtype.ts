// Element types the kernel stores. Pure data, no state.
//
// f16 is storage-only: its host form is the raw IEEE half bits in a Uint16Array (Node 20 has no
// Float16Array), and no kernel computes in it yet.
import { TenonError } from '../errors.js';

export interface DTypeArrays {
  f32: Float32Array;
  f16: Uint16Array;
  i32: Int32Array;
  u32: Uint32Array;
  u8: Uint8Array;
}

export type DType = keyof DTypeArrays;
export type ArrayOf<D extends DType> = DTypeArrays[D];
export type AnyTypedArray = DTypeArrays[DType];

interface DTypeInfo {
  readonly size: number;
  readonly ctor: { new (buffer: ArrayBufferLike, byteOffset: number, length: number): AnyTypedArray; new (length: number): AnyTypedArray };
}

const INFO: Readonly<Record<DType, DTypeInfo>> = {
  f32: { size: 4, ctor: Float32Array },
  f16: { size: 2, ctor: Uint16Array },
  i32: { size: 4, ctor: Int32Array },
  u32: { size: 4, ctor: Uint32Array },
  u8: { size: 1, ctor: Uint8Array },
};

export const DTYPES: readonly DType[] = Object.keys(INFO) as DType[];

export function isDType(value: unknown): value is DType {
  return typeof value === 'string' && Object.prototype.hasOwnProperty.call(INFO, value);
}

/** Validates a dtype name supplied by a caller. */
export function checkDType(value: unknown, op: string): DType {
  if (!isDType(value)) {
    throw new TenonError('EINVAL', `unknown dtype ${String(value)}`, { op, reason: 'unknown-dtype' });
  }
  return value;
}

export function dtypeSize(dtype: DType): number {
  return INFO[dtype].size;
}

/** A typed view over `length` elements of `buffer` starting at `byteOffset` (no copy). */
export function typedView<D extends DType>(dtype: D, buffer: ArrayBufferLike, byteOffset: number, length: number): ArrayOf<D> {
  return new INFO[dtype].ctor(buffer, byteOffset, length) as ArrayOf<D>;
}

/** A fresh zeroed host array of `length` elements. */
export function newArray<D extends DType>(dtype: D, length: number): ArrayOf<D> {
  return new INFO[dtype].ctor(length) as ArrayOf<D>;
}

/** True when `array` is exactly the host array type of `dtype`. */
export function arrayMatches(dtype: DType, array: unknown): boolean {
  return array instanceof INFO[dtype].ctor;
}

// Test-side reference for layouts: row-major strides and the element order a (shape, strides, first)
// layout visits, computed the obvious way (decode each logical index). Shares no code with src/storage,
// so the suites compare the kernel against an independent answer.

export function rowMajor(shape: readonly number[]): number[] {
  const strides = new Array<number>(shape.length);
  let acc = 1;
  for (let d = shape.length - 1; d >= 0; d--) {
    strides[d] = acc;
    acc *= Math.max(shape[d]!, 1);
  }
  return strides;
}

/** Backing element indices in row-major logical order. */
export function offsetsOf(shape: readonly number[], strides: readonly number[], first: number): number[] {
  const size = shape.reduce((a, b) => a * b, 1);
  const out: number[] = [];
  const idx = new Array<number>(shape.length).fill(0);
  for (let k = 0; k < size; k++) {
    let at = first;
    for (let d = 0; d < shape.length; d++) at += idx[d]! * strides[d]!;
    out.push(at);
    for (let d = shape.length - 1; d >= 0; d--) {
      if (++idx[d]! < shape[d]!) break;
      idx[d] = 0;
    }
  }
  return out;
}

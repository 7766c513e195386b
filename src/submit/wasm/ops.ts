// Which ops of the library have a WebAssembly SIMD kernel, and how each is called: the op's params and
// its operands' byte addresses (element 0 of each binding, in binding order) become the kernel's
// arguments. An op not listed here runs its scalar host() on every host provider. Each entry also says
// how much kernel scratch it needs, so the executor can reserve it before any typed array is taken (a
// scratch that grows the memory would make earlier arrays stale). WASM_OPS_Q8 is the same table with the
// q8-activation kernels for Q8_0 / Q4_0 / Q4_K / Q6_K weights (hostKernels 'wasm-q8').
// Pure dispatch glue: the arithmetic lives in wasm/*.wat, the references in src/submit/ops/*.ts.
import { attention, attentionScale } from '../ops/attention.js';
import { add } from '../ops/add.js';
import { addInplace } from '../ops/add-inplace.js';
import { matmul } from '../ops/matmul.js';
import { matmulBatched } from '../ops/matmul-batched.js';
import { matmulNT } from '../ops/matmul-nt.js';
import { QMATMUL } from '../ops/qmatmul.js';
import type { QMatmulParams } from '../ops/qmatmul.js';
import { PACKED_BLOCK, PACKED_KINDS, packedRowLayout } from '../ops/qmatmul-layout.js';
import type { PackedKind } from '../ops/qmatmul-layout.js';
import { PACKED_KIND_ID } from '../ops/qunit.js';
import { rmsnorm } from '../ops/rmsnorm.js';
import { hostRopeKv } from '../ops/fused-rope-kv.js';
import type { FusedRopeKvParams } from '../ops/fused-rope-kv.js';
import { rope, ropeTable } from '../ops/rope.js';
import type { RopeParams } from '../ops/rope.js';
import { siluMul } from '../ops/silu-mul.js';
import { softmax } from '../ops/softmax.js';
import type { AnyOpDef, OpDef } from '../ops/types.js';
import type { WasmKernels } from './kernels.js';

/** One op's WebAssembly kernel. `at` holds the byte address of each binding's element 0. */
export interface WasmOp<P> {
  /** Bytes of scratch the kernel needs for these params (0: none). */
  scratchBytes(p: P): number;
  /** Runs the kernel; `scratch` is the address of at least scratchBytes(p) bytes. */
  run(k: WasmKernels, p: P, at: readonly number[], scratch: number): void;
  /**
   * The same kernel call with its operand addresses (and the exported function) fixed once, for a
   * replayed dispatch: what `run` derives per call from `at` and `p`, the call derives only when it is
   * given another params object (static params are the same object every replay). Absent: `run` it is.
   */
  bind?(k: WasmKernels, at: readonly number[]): BoundWasmCall<P>;
}

/** A WebAssembly kernel call bound to its operands' addresses: params and scratch address per call. */
export type BoundWasmCall<P> = (p: P, scratch: number) => void;

const F32_BYTES = 4;
const none = (): number => 0;

function entry<P>(op: OpDef<P, never>, impl: WasmOp<P>): [AnyOpDef, WasmOp<never>] {
  return [op as unknown as AnyOpDef, impl as unknown as WasmOp<never>];
}

/** Bytes of rope's cos/sin table: per row, headDim cosines and headDim sines. */
function ropeTableBytes(p: RopeParams): number {
  return 2 * p.count * p.headDim * F32_BYTES;
}

/** Rope frequencies without per-pair factors, by head size and theta: derived once each, not per dispatch. */
const plainFrequencies = new Map<string, Float32Array>();
/** The entry of plainFrequencies the last plain dispatch used. */
let lastPlainFrequencies: { readonly headDim: number; readonly theta: number; readonly freq: Float32Array } | undefined;

/**
 * ropeTable(p): its values depend only on headDim, theta and the factors, never on the position. Without
 * factors (every model but Llama 3's rope_freqs) it is derived once per head size and theta; factors,
 * which a caller could change between dispatches, are applied afresh each time.
 */
function frequencies(p: RopeParams): Float32Array {
  if (p.freqFactors !== undefined) return ropeTable(p);
  // Every rope dispatch of a model asks for the same head size and theta: found again without a key string.
  const last = lastPlainFrequencies;
  if (last !== undefined && last.headDim === p.headDim && last.theta === p.theta) return last.freq;
  const key = `${p.headDim}:${p.theta}`;
  let freq = plainFrequencies.get(key);
  if (freq === undefined) {
    freq = ropeTable(p);
    plainFrequencies.set(key, freq);
  }
  lastPlainFrequencies = { headDim: p.headDim, theta: p.theta, freq };
  return freq;
}

/**
 * Writes rope's per-row tables at `table` (see wasm/f32.wat `rope`): the angles are the reference's
 * (f32 pos * f32 frequency), their cosine and sine computed once per row and pair in f64 and stored as
 * f32, laid out for the pairing.
 */
function writeRopeTable(k: WasmKernels, p: RopeParams, table: number): void {
  const freq = frequencies(p);
  const half = p.headDim / 2;
  const neox = p.style === 'neox';
  // Every rope dispatch of a decode step (q and k of each layer) asks for the same plain table: the
  // last one is kept and copied (the scratch itself is shared with other kernels, so it is not reused),
  // through the memory's kept view (no array allocated per dispatch).
  const plain = p.freqFactors === undefined;
  const last = lastRopeTable;
  if (plain && last !== undefined && last.freq === freq && last.pos0 === p.pos0 && last.count === p.count && last.neox === neox) {
    heapOf(k).set(last.values, table / F32_BYTES);
    return;
  }
  const out = new Float32Array(k.memory.buffer, table, 2 * p.count * p.headDim);
  for (let t = 0; t < p.count; t++) {
    const cos = 2 * t * p.headDim;
    const sin = cos + p.headDim;
    for (let i = 0; i < half; i++) {
      const angle = Math.fround((p.pos0 + t) * freq[i]!);
      const c = Math.cos(angle);
      const s = Math.sin(angle);
      if (neox) {
        out[cos + i] = c;
        out[sin + i] = s;
      } else {
        out[cos + 2 * i] = c;
        out[cos + 2 * i + 1] = c;
        out[sin + 2 * i] = -s;
        out[sin + 2 * i + 1] = s;
      }
    }
  }
  if (plain) {
    const values = last !== undefined && last.values.length === out.length ? last.values : new Float32Array(out.length);
    values.set(out);
    lastRopeTable = { freq, pos0: p.pos0, count: p.count, neox, values };
  }
}

/** The last plain rope table written (see writeRopeTable): its frequencies, rows, pairing and values. */
let lastRopeTable: { readonly freq: Float32Array; readonly pos0: number; readonly count: number; readonly neox: boolean; readonly values: Float32Array } | undefined;

/** An f32 view of the whole memory, derived again only when the memory grew (its buffer changed). */
let heap: Float32Array | undefined;

function heapOf(k: WasmKernels): Float32Array {
  const buffer = k.memory.buffer;
  if (heap === undefined || heap.buffer !== buffer) heap = new Float32Array(buffer);
  return heap;
}

/**
 * hostRopeKv (fused_rope_kv without biases under its own identity, src/submit/ops/fused-rope-kv.ts):
 * each row's Q, K and V columns of qkv copied to q and to rows pos0.. of the caches (kv_write's exact
 * copies), then rope's kernel over q and over the new K cache rows (contiguous: the cache's row width is
 * kvDim) with one table for both (it depends on the rows, not the heads). The same kernel over the same
 * values as rope on q and on k then kv_write, so the same bits.
 */
function fusedRopeKvRun(k: WasmKernels, p: FusedRopeKvParams, at: readonly number[], scratch: number): void {
  const f = heapOf(k);
  const { count, headDim, pos0 } = p;
  const qDim = p.heads * headDim;
  const kvDim = p.kvHeads * headDim;
  const width = qDim + 2 * kvDim;
  const qkv = at[0]! / F32_BYTES;
  const q = at[1]! / F32_BYTES;
  const kRow = at[2]! / F32_BYTES + pos0 * kvDim;
  const vRow = at[3]! / F32_BYTES + pos0 * kvDim;
  for (let t = 0; t < count; t++) {
    const row = qkv + t * width;
    f.copyWithin(q + t * qDim, row, row + qDim);
    f.copyWithin(kRow + t * kvDim, row + qDim, row + qDim + kvDim);
    f.copyWithin(vRow + t * kvDim, row + qDim + kvDim, row + width);
  }
  writeRopeTable(k, p, scratch);
  const neox = p.style === 'neox' ? 1 : 0;
  k.f32.rope(at[1]!, scratch, count, p.heads, headDim, neox);
  k.f32.rope(kRow * F32_BYTES, scratch, count, p.kvHeads, headDim, neox);
}

/** Elements per group of the groups form (wasm/quant.wat: one scale, and one min, per group). */
const GROUP = 16;

/** Elements per Q4_K sub-block (wasm/quant.wat $q4_k_rows keeps x's four lane sums per sub-block). */
const SUB_BLOCK = 32;
const SUB_SUM_BYTES = 4 * F32_BYTES;

/**
 * Scratch of wasm/quant.wat's qmatmul for a block kind: one decoded row (K quant bytes, a scale and a
 * min per group), then per row of x its sums: one f32 per group, or (Q4_K) four per sub-block of 32.
 */
export function groupsScratchBytes(m: number, k: number): number {
  const groups = k / GROUP;
  return k + 2 * groups * F32_BYTES + m * Math.max(groups * F32_BYTES, (k / SUB_BLOCK) * SUB_SUM_BYTES);
}

/** Elements per block of x in the q8-activation kernels (GGML QK8_0). */
const Q8_BLOCK = 32;
/** Lanes of a block's sum of quantized x (wasm/quant.wat $quantize_x). */
const Q8_SUM_LANES = 4;
/** Bytes per block of quantized x: 32 i16 values, an f32 scale and the block's four f32 lane sums. */
const Q8_X_BLOCK_BYTES = Q8_BLOCK * 2 + F32_BYTES + Q8_SUM_LANES * F32_BYTES;

/** Scratch of wasm/quant.wat's qmatmul_q8: per-row factors (K / 2 bytes), then every row of x quantized. */
export function q8ScratchBytes(m: number, k: number): number {
  const blocks = k / Q8_BLOCK;
  return blocks * 4 * F32_BYTES + m * blocks * Q8_X_BLOCK_BYTES;
}

/** The kinds the q8-activation choice changes (their kernel quantizes x to 8-bit blocks first). */
export const Q8_ACTIVATION_KINDS: readonly PackedKind[] = ['Q8_0', 'Q4_0', 'Q4_K', 'Q6_K'];

function qmatmulQ8Entry(kind: PackedKind): WasmOp<QMatmulParams> {
  const id = PACKED_KIND_ID[kind];
  const layouts = layoutCache(kind);
  return {
    scratchBytes: (p) => q8ScratchBytes(p.m, p.k),
    run(k, p, [x, w, out], scratch) {
      const l = layouts(p.k);
      k.quant.qmatmul_q8(id, x!, w!, out!, p.m, p.n, p.k, l.rowBytes, l.p0, l.p1, l.p2, scratch);
    },
    bind(k, at) {
      const fn = k.quant.qmatmul_q8;
      const x = at[0]!;
      const w = at[1]!;
      const out = at[2]!;
      let last: QMatmulParams | undefined;
      let m = 0, n = 0, kk = 0, rowBytes = 0, p0 = 0, p1 = 0, p2 = 0;
      return (p, scratch) => {
        if (p !== last) {
          const l = layouts(p.k);
          ({ m, n, k: kk } = p);
          ({ rowBytes, p0, p1, p2 } = l);
          last = p;
        }
        fn(id, x, w, out, m, n, kk, rowBytes, p0, p1, p2, scratch);
      };
    },
  };
}

/** A packed row layout in the kernels' terms: row and plane offsets in bytes. */
interface ByteLayout {
  readonly rowBytes: number;
  readonly p0: number;
  readonly p1: number;
  readonly p2: number;
}

/** Per kind: its byte layouts by row length, derived once each (a decode step allocates none). */
function layoutCache(kind: PackedKind): (k: number) => ByteLayout {
  const known = new Map<number, ByteLayout>();
  return (k) => {
    let l = known.get(k);
    if (l === undefined) {
      const layout = packedRowLayout(kind, k);
      const [p0, p1, p2] = layout.planes;
      l = { rowBytes: layout.rowWords * F32_BYTES, p0: p0 * F32_BYTES, p1: p1 * F32_BYTES, p2: p2 * F32_BYTES };
      known.set(k, l);
    }
    return l;
  };
}

function qmatmulEntry(kind: PackedKind): WasmOp<QMatmulParams> {
  const id = PACKED_KIND_ID[kind];
  const layouts = layoutCache(kind);
  return {
    scratchBytes: (p) => (PACKED_BLOCK[kind] === 1 ? 0 : groupsScratchBytes(p.m, p.k)),
    run(k, p, [x, w, out], scratch) {
      const l = layouts(p.k);
      // F32 rows need no decoding: four rows at a time share each load of x.
      if (kind === 'F32') k.f32.linear_rows(x!, w!, out!, p.m, p.n, p.k, l.rowBytes);
      else k.quant.qmatmul(id, x!, w!, out!, p.m, p.n, p.k, l.rowBytes, l.p0, l.p1, l.p2, scratch);
    },
    bind(k, at) {
      const x = at[0]!;
      const w = at[1]!;
      const out = at[2]!;
      let last: QMatmulParams | undefined;
      let m = 0, n = 0, kk = 0, rowBytes = 0, p0 = 0, p1 = 0, p2 = 0;
      const refresh = (p: QMatmulParams): void => {
        ({ m, n, k: kk } = p);
        ({ rowBytes, p0, p1, p2 } = layouts(p.k));
        last = p;
      };
      if (kind === 'F32') {
        const fn = k.f32.linear_rows;
        return (p) => {
          if (p !== last) refresh(p);
          fn(x, w, out, m, n, kk, rowBytes);
        };
      }
      const fn = k.quant.qmatmul;
      return (p, scratch) => {
        if (p !== last) refresh(p);
        fn(id, x, w, out, m, n, kk, rowBytes, p0, p1, p2, scratch);
      };
    },
  };
}

function table(): ReadonlyMap<AnyOpDef, WasmOp<never>> {
  const entries: [AnyOpDef, WasmOp<never>][] = [
    entry(matmulNT, { scratchBytes: none, run: (k, p, [a, w, out]) => k.f32.matmul_nt(a!, w!, out!, p.m, p.n, p.k) }),
    entry(matmul, { scratchBytes: none, run: (k, p, [a, b, out]) => k.f32.matmul(a!, b!, out!, p.m, p.n, p.k) }),
    entry(matmulBatched, {
      scratchBytes: none,
      run(k, p, [a, b, out]) {
        const { m, n, k: kk } = p;
        for (let i = 0; i < p.batch; i++) {
          k.f32.matmul(a! + i * m * kk * F32_BYTES, b! + i * kk * n * F32_BYTES, out! + i * m * n * F32_BYTES, m, n, kk);
        }
      },
    }),
    entry(rmsnorm, {
      scratchBytes: none,
      run: (k, p, [x, w, out]) => k.f32.rmsnorm(x!, w!, out!, p.rows, p.cols, Math.fround(p.eps)),
      bind(k, [x, w, out]) {
        const fn = k.f32.rmsnorm;
        return (p) => fn(x!, w!, out!, p.rows, p.cols, Math.fround(p.eps));
      },
    }),
    entry(softmax, { scratchBytes: none, run: (k, p, [x, out]) => k.f32.softmax(x!, out!, p.rows, p.cols) }),
    entry(siluMul, {
      scratchBytes: none,
      run: (k, p, [a, b, out]) => k.f32.silu_mul(a!, b!, out!, p.n),
      bind(k, [a, b, out]) {
        const fn = k.f32.silu_mul;
        return (p) => fn(a!, b!, out!, p.n);
      },
    }),
    entry(add, {
      scratchBytes: none,
      run: (k, p, [a, b, out]) => k.f32.add(a!, b!, out!, p.n),
      bind(k, [a, b, out]) {
        const fn = k.f32.add;
        return (p) => fn(a!, b!, out!, p.n);
      },
    }),
    entry(addInplace, {
      scratchBytes: none,
      run: (k, p, [acc, b]) => k.f32.add(acc!, b!, acc!, p.n),
      bind(k, [acc, b]) {
        const fn = k.f32.add;
        return (p) => fn(acc!, b!, acc!, p.n);
      },
    }),
    entry(rope, {
      scratchBytes: ropeTableBytes,
      run(k, p, [x], scratch) {
        writeRopeTable(k, p, scratch);
        k.f32.rope(x!, scratch, p.count, p.heads, p.headDim, p.style === 'neox' ? 1 : 0);
      },
    }),
    entry(hostRopeKv, { scratchBytes: ropeTableBytes, run: fusedRopeKvRun }),
    entry(attention, {
      scratchBytes: (p) => (p.pos0 + p.count) * F32_BYTES,
      run: (k, p, [q, kk, v, out], scratch) =>
        k.f32.attention(q!, kk!, v!, out!, p.count, p.heads, p.kvHeads, p.headDim, p.pos0, attentionScale(p.headDim), scratch),
      bind(k, [q, kk, v, out]) {
        const fn = k.f32.attention;
        return (p, scratch) => fn(q!, kk!, v!, out!, p.count, p.heads, p.kvHeads, p.headDim, p.pos0, attentionScale(p.headDim), scratch);
      },
    }),
  ];
  for (const kind of PACKED_KINDS) {
    const impl = qmatmulEntry(kind);
    entries.push(entry(QMATMUL[kind].plain, impl), entry(QMATMUL[kind].subgroups, impl));
  }
  return new Map(entries);
}

/** The WebAssembly kernel of each op that has one. */
export const WASM_OPS: ReadonlyMap<AnyOpDef, WasmOp<never>> = table();

/** WASM_OPS with the q8-activation kernels for Q8_0, Q4_0, Q4_K and Q6_K weights (hostKernels 'wasm-q8'). */
export const WASM_OPS_Q8: ReadonlyMap<AnyOpDef, WasmOp<never>> = (() => {
  const ops = new Map(WASM_OPS);
  for (const kind of Q8_ACTIVATION_KINDS) {
    const impl = qmatmulQ8Entry(kind);
    ops.set(QMATMUL[kind].plain as unknown as AnyOpDef, impl as unknown as WasmOp<never>);
    ops.set(QMATMUL[kind].subgroups as unknown as AnyOpDef, impl as unknown as WasmOp<never>);
  }
  return ops;
})();

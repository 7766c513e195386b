// The WebAssembly SIMD kernels of the host provider: compiled once per thread from the assembled sources
// (wasm/*.wat through scripts/wat.ts), instantiated once per host memory (a HostMemory of
// src/storage/host-memory.ts, which every tensor of one host provider lives in), so a kernel reads and
// writes tensors in place by address. Nothing here owns tensors; an instance lives as long as its memory.
//
// Feature detection: the kernels need 128-bit SIMD (and, over a shared memory, the threads proposal's
// shared memory import). `wasmKernelsAvailable` asks the engine itself: WebAssembly.validate of the very
// modules we would run. An engine that lacks either gets the scalar twins (src/submit/ops/*.ts host()).
// The seam `hostKernelFaults.unknownSimdProbe` makes detection validate a module with a SIMD opcode no
// engine knows instead, so a test sees the real fallback path that an engine without SIMD takes.
// Kernel sets: where the engine also validates the relaxed-SIMD binaries of both sources (the same
// kernels with their multiply-accumulates written f32x4.relaxed_madd, which the engine may fuse; the f32
// matrix-vector rows keep two accumulator chains per row there, since a fused chain's latency made one
// chain slower than the plain build: wasm/f32.wat $dot4; and the
// q8-activation kernels' integer dot products as i16x8.relaxed_dot_i8x16_i7x16_s, bit for bit the plain
// set's results; see scripts/wat.ts and wasm/quant.wat), they run (`relaxed-simd`: Chromium by default, Node with
// --experimental-wasm-relaxed-simd); otherwise the plain SIMD binaries (`simd`). The seam
// `hostKernelFaults.noRelaxedSimd` makes detection skip the relaxed binaries, as an engine without the
// proposal would, so both sets run in one process (tests, bench/host.bench.ts). The set is chosen per
// memory when its kernels are instantiated; `kernelSet` on WasmKernels says which.
// Compilation is synchronous (new WebAssembly.Module): the modules are a few kilobytes, and browsers lift
// the main-thread size limit for synchronous compilation (Chromium since 114).
import f32Sources from '../../../wasm/f32.wat?wasm';
import quantSources from '../../../wasm/quant.wat?wasm';
import type { HostMemory } from '../../storage/index.js';

/** Exports of wasm/f32.wat (addresses and sizes as numbers; see the file's ABI note). */
export interface F32Exports {
  dot(x: number, y: number, k: number): number;
  matmul_nt(a: number, w: number, out: number, m: number, n: number, k: number): void;
  linear_rows(a: number, w: number, out: number, m: number, n: number, k: number, rowBytes: number): void;
  matmul(a: number, b: number, out: number, m: number, n: number, k: number): void;
  rmsnorm(x: number, w: number, out: number, rows: number, cols: number, eps: number): void;
  softmax(x: number, out: number, rows: number, cols: number): void;
  silu_mul(a: number, b: number, out: number, n: number): void;
  add(a: number, b: number, out: number, n: number): void;
  rope(x: number, table: number, count: number, heads: number, headDim: number, neox: number): void;
  attention(q: number, k: number, v: number, out: number, count: number, heads: number, kvHeads: number, headDim: number, pos0: number, scale: number, scratch: number): void;
}

/** Exports of wasm/quant.wat. */
export interface QuantExports {
  qmatmul(kind: number, x: number, w: number, out: number, m: number, n: number, k: number, rowBytes: number, p0: number, p1: number, p2: number, scratch: number): void;
  /**
   * Q8_0 (3) / Q4_0 (4) / Q4_K (5) / Q6_K (6) with x quantized to 8-bit blocks first (the 'wasm-q8' choice; see
   * wasm/quant.wat). `scratch`: q8ScratchBytes(m, k) bytes (src/submit/wasm/ops.ts).
   */
  qmatmul_q8(kind: number, x: number, w: number, out: number, m: number, n: number, k: number, rowBytes: number, p0: number, p1: number, p2: number, scratch: number): void;
  /** `scratch`: groupsScratchBytes(0, k) bytes (src/submit/wasm/ops.ts) for the block kinds. */
  dequant_row(kind: number, w: number, out: number, k: number, p0: number, p1: number, p2: number, scratch: number): void;
}

/** Which binaries run: with relaxed SIMD (multiply-accumulates possibly fused) or plain 128-bit SIMD. */
export type WasmKernelSet = 'relaxed-simd' | 'simd';

/** The kernels over one host memory. */
export interface WasmKernels {
  readonly memory: HostMemory;
  readonly kernelSet: WasmKernelSet;
  readonly f32: F32Exports;
  readonly quant: QuantExports;
}

/** Fault seam (tests): detection validates a module no engine accepts, as an engine without SIMD would. */
export const hostKernelFaults = { unknownSimdProbe: false, noRelaxedSimd: false };

/**
 * A module whose one function uses SIMD opcode 0x7ff (prefix 0xfd, LEB128 ff 0f), which no version of
 * the proposal defines: every engine refuses it, exactly as an engine without SIMD refuses our kernels.
 */
export const UNKNOWN_SIMD_PROBE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version 1
  0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // type section: one type, () -> ()
  0x03, 0x02, 0x01, 0x00, // function section: one function of type 0
  0x0a, 0x07, 0x01, 0x05, 0x00, 0xfd, 0xff, 0x0f, 0x0b, // code: no locals, the unknown opcode, end
]);

type Variant = 'plain' | 'shared';
interface Compiled {
  readonly set: WasmKernelSet;
  readonly f32: WebAssembly.Module;
  readonly quant: WebAssembly.Module;
}

/** Per thread and variant: the compiled plain-SIMD modules (null where the engine refuses them) ... */
const compiled: Partial<Record<Variant, Compiled | null>> = {};
/** ... and the relaxed-SIMD ones (null where the engine lacks the proposal). */
const compiledRelaxed: Partial<Record<Variant, Compiled | null>> = {};
const instances = new WeakMap<HostMemory, WasmKernels>();

function variantOf(memory: HostMemory): Variant {
  return memory.shared ? 'shared' : 'plain';
}

function modules(variant: Variant): Compiled | null {
  if (hostKernelFaults.unknownSimdProbe) return WebAssembly.validate(UNKNOWN_SIMD_PROBE) ? compile(variant, 'simd') : null;
  let got = compiled[variant];
  if (got === undefined) {
    const ok = WebAssembly.validate(f32Sources[variant]) && WebAssembly.validate(quantSources[variant]);
    got = ok ? compile(variant, 'simd') : null;
    compiled[variant] = got;
  }
  if (got === null || hostKernelFaults.noRelaxedSimd) return got;
  let relaxed = compiledRelaxed[variant];
  if (relaxed === undefined) {
    const ok = WebAssembly.validate(f32Sources.relaxed[variant]) && WebAssembly.validate(quantSources.relaxed[variant]);
    relaxed = ok ? compile(variant, 'relaxed-simd') : null;
    compiledRelaxed[variant] = relaxed;
  }
  return relaxed ?? got;
}

function compile(variant: Variant, set: WasmKernelSet): Compiled {
  const f32 = set === 'simd' ? f32Sources : f32Sources.relaxed;
  const quant = set === 'simd' ? quantSources : quantSources.relaxed;
  return { set, f32: new WebAssembly.Module(f32[variant]), quant: new WebAssembly.Module(quant[variant]) };
}

/** Whether this engine runs the SIMD kernels over a memory of this kind (ordinary or shared). */
export function wasmKernelsAvailable(shared: boolean): boolean {
  return typeof WebAssembly === 'object' && modules(shared ? 'shared' : 'plain') !== null;
}

/** The kernels instantiated over `memory` (once per memory), or undefined where the engine lacks SIMD. */
export function wasmKernelsFor(memory: HostMemory): WasmKernels | undefined {
  const known = instances.get(memory);
  if (known !== undefined) return known;
  const mods = modules(variantOf(memory));
  if (mods === null) return undefined;
  const f32 = new WebAssembly.Instance(mods.f32, { env: { memory: memory.memory } }).exports as unknown as F32Exports;
  // The quant kernels dot their dequantized rows with f32's `dot` (a wasm-to-wasm import call).
  const quant = new WebAssembly.Instance(mods.quant, { env: { memory: memory.memory, dot: f32.dot } }).exports as unknown as QuantExports;
  const kernels: WasmKernels = Object.freeze({ memory, kernelSet: mods.set, f32, quant });
  instances.set(memory, kernels);
  return kernels;
}

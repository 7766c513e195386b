// HostExecutor: how one runtime runs kernels on its host provider. Chosen once, when the runtime is made:
//   - `wasm-simd`: ops with a WebAssembly kernel (src/submit/wasm/ops.ts) run it over the provider's
//     memory, in place, by address; the others run their scalar host();
//   - `scalar`: every op runs its host() (the reference): engines without WebAssembly SIMD, providers
//     whose roots are separate buffers, and runtimes made with `hostKernels: 'scalar'`.
// `hostKernels: 'wasm-q8'` asks for `wasm-simd` with one difference, chosen explicitly and never by
// default: Q8_0, Q4_0, Q4_K and Q6_K qmatmuls quantize x to 8-bit blocks first and dot in integers (GGML's way;
// faster, with x's rounding error in the results; its scalar twin is src/submit/wasm/q8-activation.ts).
// Where SIMD is missing it refuses as 'wasm' does.
// A dispatch whose operands are not all in the provider's memory (arrays from elsewhere) takes the scalar
// path too; `stats()` counts both paths, in total and per op name, so tests can prove which one ran.
// Before a host run the executor reserves the largest scratch any of its dispatches needs: reserving can
// grow the memory, so it happens before any typed array of the run is taken. Thread: the runtime's.
import { TenonError } from '../../errors.js';
import type { AnyTypedArray, HostBindingState, HostMemory, HostProvider } from '../../storage/index.js';
import { liveHostArray } from '../../storage/index.js';
import type { AnyOpDef } from '../ops/types.js';
import { wasmKernelsAvailable, wasmKernelsFor } from './kernels.js';
import type { WasmKernels, WasmKernelSet } from './kernels.js';
import { WASM_OPS, WASM_OPS_Q8 } from './ops.js';
import type { BoundWasmCall, WasmOp } from './ops.js';

/**
 * What a runtime asks for: the fastest available (`auto`), SIMD or refuse (`wasm`), SIMD with 8-bit
 * activations for Q8_0 / Q4_0 / Q4_K / Q6_K weights or refuse (`wasm-q8`), or the references.
 */
export type HostKernelChoice = 'auto' | 'wasm' | 'wasm-q8' | 'scalar';
/** What runs. */
export type HostKernelKind = 'wasm-simd' | 'scalar';

/** Dispatches of one op (by its name) on each path. */
export interface HostKernelCount {
  readonly wasm: number;
  readonly scalar: number;
}

export interface HostKernelStats {
  readonly kind: HostKernelKind;
  /**
   * Which WebAssembly binaries run (src/submit/wasm/kernels.ts): `relaxed-simd` where the engine has
   * relaxed SIMD (multiply-accumulates possibly fused), `simd` otherwise; `scalar` when kind is scalar.
   */
  readonly kernelSet: WasmKernelSet | 'scalar';
  /** How Q8_0 / Q4_0 / Q4_K / Q6_K qmatmuls treat x on the SIMD path: as f32 (default) or quantized to 8-bit blocks. */
  readonly activations: 'f32' | 'q8';
  /** Dispatches that ran a WebAssembly kernel. */
  readonly wasmDispatches: number;
  /** Dispatches that ran a scalar host() twin. */
  readonly scalarDispatches: number;
  /** The same two counts per op name (ops that ran at least once), so a test can name the op it expects. */
  readonly byKernel: Readonly<Record<string, HostKernelCount>>;
}

/**
 * One dispatch resolved once for replay (a prepared host step): its kernel path and the byte addresses of
 * its operands (stable across memory growth), or, on the scalar path, its binding states and the arrays
 * last derived from them. Valid only while the group its states came from keeps the same table epoch.
 */
export interface ResolvedHostDispatch {
  readonly kernel: AnyOpDef;
  /** The WebAssembly kernel, when there is one and every operand lies in the executor's memory. */
  readonly impl: WasmOp<never> | undefined;
  /** impl's call bound to `at` once (WasmOp.bind), when impl has one: what a replay calls. */
  readonly call: BoundWasmCall<never> | undefined;
  /** Address of each binding's element 0, in binding order (wasm path). */
  readonly at: readonly number[];
  readonly states: readonly HostBindingState[];
  /** Per-op counters of this dispatch's kernel ([wasm, scalar]), looked up once. */
  readonly counts: [number, number];
  /** Scalar path: arrays over `buffer`, re-derived when the memory's buffer changed (growth). */
  arrays: AnyTypedArray[] | undefined;
  buffer: ArrayBufferLike | undefined;
}

/** One dispatch as the executor sees it. */
export interface HostDispatch {
  readonly kernel: AnyOpDef;
  readonly params: never;
}

export class HostExecutor {
  readonly kind: HostKernelKind;
  readonly #kernels: WasmKernels | undefined;
  readonly #memory: HostMemory | undefined;
  readonly #ops: ReadonlyMap<AnyOpDef, WasmOp<never>>;
  readonly #activations: 'f32' | 'q8';
  #scratch = 0;
  #wasm = 0;
  #scalar = 0;
  /** Per op name: [wasm, scalar] dispatches. */
  readonly #byKernel = new Map<string, [number, number]>();

  constructor(provider: HostProvider, choice: HostKernelChoice = 'auto') {
    const op = 'createRuntime';
    if (choice !== 'auto' && choice !== 'wasm' && choice !== 'wasm-q8' && choice !== 'scalar') {
      throw new TenonError('EINVAL', `hostKernels must be 'auto', 'wasm', 'wasm-q8' or 'scalar'`, { op, reason: 'bad-option' });
    }
    const memory = choice === 'scalar' ? undefined : provider.wasmMemory();
    const kernels = memory === undefined || !wasmKernelsAvailable(memory.shared) ? undefined : wasmKernelsFor(memory);
    if ((choice === 'wasm' || choice === 'wasm-q8') && kernels === undefined) {
      const reason = provider.wasmMemory() === undefined ? 'no-wasm-memory' : 'no-wasm-simd';
      throw new TenonError('ENOTSUP', 'WebAssembly SIMD kernels are unavailable here', { op, reason, ids: { provider: provider.id } });
    }
    this.#kernels = kernels;
    this.#memory = kernels === undefined ? undefined : memory;
    this.kind = kernels === undefined ? 'scalar' : 'wasm-simd';
    this.#activations = choice === 'wasm-q8' ? 'q8' : 'f32';
    this.#ops = choice === 'wasm-q8' ? WASM_OPS_Q8 : WASM_OPS;
  }

  stats(): HostKernelStats {
    const byKernel: Record<string, HostKernelCount> = {};
    for (const [name, [wasm, scalar]] of this.#byKernel) byKernel[name] = { wasm, scalar };
    const kernelSet = this.#kernels === undefined ? 'scalar' : this.#kernels.kernelSet;
    return { kind: this.kind, kernelSet, activations: this.#activations, wasmDispatches: this.#wasm, scalarDispatches: this.#scalar, byKernel };
  }

  #count(kernel: AnyOpDef, path: 0 | 1): void {
    this.#countsOf(kernel)[path]++;
  }

  #countsOf(kernel: AnyOpDef): [number, number] {
    let counts = this.#byKernel.get(kernel.name);
    if (counts === undefined) {
      counts = [0, 0];
      this.#byKernel.set(kernel.name, counts);
    }
    return counts;
  }

  /**
   * Resolves one dispatch for replay from binding states prepared over contiguous layouts (element 0 at
   * each state's address): the WebAssembly kernel when there is one and every state lies in this
   * executor's memory, else the scalar host() over the states' arrays.
   */
  resolve(kernel: AnyOpDef, states: readonly HostBindingState[]): ResolvedHostDispatch {
    const memory = this.#memory;
    const impl = this.#kernels === undefined ? undefined : this.#ops.get(kernel);
    const inMemory = memory !== undefined && states.every((s) => s.memory === memory);
    const at = Object.freeze(states.map((s) => s.address));
    return {
      kernel,
      impl: inMemory ? impl : undefined,
      call: inMemory && impl?.bind !== undefined ? impl.bind(this.#kernels!, at) : undefined,
      at,
      states,
      counts: this.#countsOf(kernel),
      arrays: undefined,
      buffer: undefined,
    };
  }

  /** Runs a resolved dispatch (after prepare() reserved the scratch of this replay): no lookups, no checks. */
  runResolved(r: ResolvedHostDispatch, params: never): void {
    const call = r.call;
    if (call !== undefined) {
      call(params, this.#scratch);
      this.#wasm++;
      r.counts[0]++;
      return;
    }
    const impl = r.impl;
    if (impl !== undefined) {
      impl.run(this.#kernels!, params, r.at, this.#scratch);
      this.#wasm++;
      r.counts[0]++;
      return;
    }
    // The buffer liveHostArray would give, read without deriving an array.
    const first = r.states.length === 0 ? undefined : r.states[0]!;
    const buffer = first === undefined ? undefined : first.memory === undefined ? first.array.buffer : first.memory.buffer;
    if (r.arrays === undefined || r.buffer !== buffer) {
      r.arrays = r.states.map(liveHostArray);
      r.buffer = buffer;
    }
    r.kernel.host(params, r.arrays as never);
    this.#scalar++;
    r.counts[1]++;
  }

  /** Reserves the scratch the WebAssembly kernels of `dispatches` need; call before taking any array. */
  prepare(dispatches: readonly HostDispatch[]): void {
    const memory = this.#memory;
    if (memory === undefined) return;
    let bytes = 0;
    for (const d of dispatches) {
      const impl = this.#ops.get(d.kernel);
      if (impl !== undefined) bytes = Math.max(bytes, impl.scratchBytes(d.params));
    }
    this.#scratch = bytes > 0 ? memory.scratch(bytes, 'runtime.run') : 0;
  }

  /** Scratch bytes one resolved dispatch needs with these params (0 on the scalar path). */
  scratchOf(r: ResolvedHostDispatch, params: never): number {
    return r.impl === undefined ? 0 : r.impl.scratchBytes(params);
  }

  /**
   * prepare() for resolved dispatches of one replay, given the largest scratchOf() of its dispatches
   * and params; call before taking any array.
   */
  reserveBytes(bytes: number): void {
    const memory = this.#memory;
    if (memory === undefined) return;
    this.#scratch = bytes > 0 ? memory.scratch(bytes, 'runtime.run') : 0;
  }

  /**
   * Runs one dispatch over `arrays` (binding order, each starting at the operand's element 0, all live
   * over the memory's current buffer). Uses the WebAssembly kernel when there is one and every array is
   * in this executor's memory; otherwise the op's host().
   */
  run(kernel: AnyOpDef, params: never, arrays: readonly AnyTypedArray[]): void {
    const kernels = this.#kernels;
    const impl = kernels === undefined ? undefined : this.#ops.get(kernel);
    if (impl !== undefined) {
      const buffer = kernels!.memory.buffer;
      let inMemory = true;
      for (const a of arrays) if (a.buffer !== buffer) inMemory = false;
      if (inMemory) {
        impl.run(kernels!, params, arrays.map((a) => a.byteOffset), this.#scratch);
        this.#wasm++;
        this.#count(kernel, 0);
        return;
      }
    }
    kernel.host(params, arrays as never);
    this.#scalar++;
    this.#count(kernel, 1);
  }
}

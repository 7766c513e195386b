// Test-support runner for the op library on a host provider, the way a session runs it: each operand is
// a tensor of a host provider placed at an element offset inside its claim with canaries around it, all
// in one group; a one-dispatch graph is compiled on the given runtime and submitted; after completion
// every operand (and its canaries) is read back. Which kernel path ran (WebAssembly or the scalar twin)
// is returned from the runtime's host-kernel counters, so a suite can prove what it checked.
// Ownership: everything made here is disposed before it returns (also when it throws).
import { createAllocationGroup, fromArray } from '../../src/index.js';
import type { AllocationGroup, AnyTypedArray, DType, DescriptorSlot, HostProvider, Runtime } from '../../src/index.js';
import type { OpDef } from '../../src/submit/ops/index.js';

export interface HostOperand {
  readonly dtype: DType;
  readonly shape: readonly number[];
  readonly data: AnyTypedArray;
}

export interface HostRun {
  /** Every operand after the run, binding order. */
  readonly arrays: AnyTypedArray[];
  /** Dispatches of this run that took each path. */
  readonly wasm: number;
  readonly scalar: number;
}

const CANARY: Partial<Record<DType, number>> = { f32: -1234.5, u32: 0xdeadbeef, i32: -559038737 };
const TAIL = 3;

function like(dtype: DType, n: number): AnyTypedArray {
  if (dtype === 'f32') return new Float32Array(n);
  if (dtype === 'u32') return new Uint32Array(n);
  if (dtype === 'i32') return new Int32Array(n);
  throw new Error(`unsupported dtype ${dtype}`);
}

/** Runs `op` once on `runtime` (a host provider's) over copies of `operands` at element offsets `pads`. */
export async function runHostOp<P>(runtime: Runtime, op: OpDef<P, never>, operands: readonly HostOperand[], params: P, pads: readonly number[] = []): Promise<HostRun> {
  const provider = runtime.provider as HostProvider;
  let group: AllocationGroup | undefined = createAllocationGroup();
  const slots: DescriptorSlot[] = [];
  const whole: DescriptorSlot[] = [];
  try {
    for (const [i, o] of operands.entries()) {
      const pad = pads[i] ?? 0;
      const canary = CANARY[o.dtype];
      if (canary === undefined) throw new Error(`no canary for ${o.dtype}`);
      const flat = like(o.dtype, pad + o.data.length + TAIL);
      flat.fill(canary);
      flat.set(o.data as never, pad);
      const t = await fromArray(provider, o.dtype, flat as never, [flat.length]);
      const placed = group.insert(t.intoLayout({ shape: o.shape, byteOffset: pad * 4 }));
      slots.push(placed.descriptor);
      whole.push(group.alias(placed.allocation, o.dtype, { shape: [flat.length] }));
    }
    const names = operands.map((_, i) => `o${i}`);
    const graph = runtime.compile({
      name: `host ${op.name}`,
      inputs: Object.fromEntries(operands.map((o, i) => [names[i]!, { slot: slots[i]!, dtype: o.dtype, shape: o.shape }])),
      dispatches: [{ kernel: op as never, bind: names, params }],
      outputs: [],
    });
    const before = runtime.hostKernels()!;
    const outcome = await (await runtime.submit(graph, group)).wait();
    group = undefined;
    graph.dispose();
    if (outcome.kind !== 'completed') throw new Error(`${op.name}: ${outcome.kind}`);
    group = outcome.bundle.intoGroup().group;
    const after = runtime.hostKernels()!;
    const arrays: AnyTypedArray[] = [];
    for (const [i, o] of operands.entries()) {
      const pad = pads[i] ?? 0;
      using v = group.view(whole[i]!);
      const p = await v.prepareHost();
      try {
        if (p.kind !== 'contiguous') throw new Error('contiguous expected');
        const all = p.asArray() as AnyTypedArray;
        const canary = like(o.dtype, 1);
        canary[0] = CANARY[o.dtype]!;
        for (let e = 0; e < all.length; e++) {
          if (e >= pad && e < pad + o.data.length) continue;
          if (!Object.is(all[e], canary[0])) throw new Error(`${op.name}.${op.bindings[i]!.name}: canary at claim element ${e} was overwritten (${all[e]})`);
        }
        arrays.push(all.slice(pad, pad + o.data.length) as AnyTypedArray);
      } finally {
        p.release();
      }
    }
    return { arrays, wasm: after.wasmDispatches - before.wasmDispatches, scalar: after.scalarDispatches - before.scalarDispatches };
  } finally {
    group?.dispose();
  }
}

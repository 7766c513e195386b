// Tape: eager reverse-mode autodiff with group-owned retention (seed 000 G7).
//
// Ownership: a Tape owns one RetentionContainer (its group holds every value recorded on it: leaves the
// caller moved in and op outputs) and its list of nodes. Each node holds, as internal handles, exactly the
// values its backward rule declares needed (mul, matmul: both inputs; add: none); nothing else is retained
// for backward, so a value nobody needs is released as soon as the caller drops its last handle.
// Retention moves nothing and copies nothing: it records no ledger event.
// Checkpoints: `checkpoint(inputs, fn)` runs `fn` on an inner tape, moves the region's outputs into a
// CheckpointStore's own container (the boundary) and disposes the inner tape at once, so interior values
// are released at record time (unless `fn` leaked a handle to one). Backward re-runs `fn` on the retained
// boundary inputs with allocations classified `checkpoint-recompute-output`, then differentiates that.
// Allocations: op outputs are `operation-output` (recomputed ones `checkpoint-recompute-output`); gradients
// and their temporaries are `operation-output`. Every op runs eagerly (src/train/eager.ts) and is awaited.
// Failure: a failed op throws and records nothing (its output is released). `dispose()` releases the
// tape's nodes and its container's owner reference; surviving handles keep their values alive.
// Thread: the provider's, one call at a time.
import { TenonError } from '../errors.js';
import { allocate } from '../storage/index.js';
import type { AllocationReason, Provider, Tensor, TensorView } from '../storage/index.js';
import { add, matmul, matmulNT, matmulTNGrad, mul, scale } from '../submit/index.js';
import type { OpDef } from '../submit/index.js';
import { dispatch } from './eager.js';
import { Gradients } from './gradients.js';
import { valueId } from './ids.js';
import { RetentionContainer, recordOf, sweepRetention } from './retention.js';
import type { ValueHandle } from './retention.js';

const F32 = 'f32';
const RANK_MATRIX = 2;

export interface TapeOptions {
  /** Ledger reason of op outputs recorded on this tape (recompute tapes use checkpoint-recompute-output). */
  readonly reason?: AllocationReason;
}

export interface LeafOptions {
  /** Whether backward computes a gradient for this leaf (default true). */
  readonly requiresGrad?: boolean;
}

export interface BackwardOptions {
  /** Values to return gradients for (default: every leaf of this tape that requires a gradient). */
  readonly wrt?: readonly ValueHandle[];
}

/** What a custom rule's backward may use: the provider and a kernel runner into fresh owners. */
export interface BackwardContext {
  readonly provider: Provider;
  /** Runs `kernel` over `inputs` (its read bindings, in order) into a new f32 owner of `shape` (operation-output). */
  run<P>(kernel: OpDef<P, never>, inputs: readonly TensorView[], shape: readonly number[], params: P): Promise<Tensor>;
}

/**
 * A single-output op with its own backward rule (for kernels the tape has no built-in rule for). The
 * forward binds the inputs' values to the kernel's read bindings in order and a fresh f32 output of
 * `shape` to its last (read_write) binding.
 */
export interface CustomRule<P> {
  readonly kernel: OpDef<P, never>;
  readonly params: P;
  readonly shape: readonly number[];
  /** Indices of the inputs the backward rule needs: only these are retained for it. */
  readonly needs: readonly number[];
  /**
   * Returns one new owner per input (undefined for no gradient) from dY and the needed inputs' values
   * (`saved[i]` is a view of input i when i is in `needs`). `wants[i]` says whether input i needs a
   * gradient; an owner returned for an input that does not is released. Views are released after it returns.
   */
  backward(ctx: BackwardContext, dy: TensorView, saved: readonly (TensorView | undefined)[], wants: readonly boolean[]): Promise<readonly (Tensor | undefined)[]>;
}

/**
 * A checkpointed region: computes its outputs from its inputs on the tape it is given. It gets its own
 * clones of the inputs (released after it returns) and must return values it computed on that tape.
 */
export type RegionFn = (tape: Tape, inputs: readonly ValueHandle[]) => Promise<readonly ValueHandle[]>;

interface Ref {
  readonly id: string;
  readonly requiresGrad: boolean;
  readonly shape: readonly number[];
}

interface Node {
  readonly inputs: readonly Ref[];
  readonly outputs: readonly Ref[];
  /** Values this node's backward needs (internal handles; released with the node). */
  readonly saved: readonly ValueHandle[];
  readonly store?: CheckpointStore;
  /** Consumes `grads` (one per output, undefined = zero); returns one owner or undefined per input. */
  backward(tape: Tape, grads: readonly (Tensor | undefined)[]): Promise<(Tensor | undefined)[]>;
}

function refOf(h: ValueHandle, op: string): Ref {
  return { id: valueId(h, op), requiresGrad: h.requiresGrad, shape: h.shape };
}

/** Runs a region on `tape` over fresh clones of `inputs` (so the region may drop its inputs freely). */
async function runRegion(fn: RegionFn, tape: Tape, inputs: readonly ValueHandle[]): Promise<readonly ValueHandle[]> {
  const clones = inputs.map((h) => h.clone());
  try {
    return await fn(tape, clones);
  } finally {
    for (const h of clones) h.dispose();
  }
}

function disposeAll(ts: Iterable<Tensor | undefined>): void {
  for (const t of ts) t?.dispose();
}

/** What a caller may see of a recorded checkpoint. */
export interface CheckpointInfo {
  /** Values whose storage the checkpoint's own container owns (its boundary outputs still held). */
  readonly retainedValues: number;
}

/**
 * A checkpoint's retention: its own container holding the region's outputs (boundary), internal handles
 * on the region's inputs (boundary, retained for recomputation), and the region function. Interior
 * values have no record here. Internal: callers see it as CheckpointInfo.
 */
class CheckpointStore implements CheckpointInfo {
  readonly container = new RetentionContainer('checkpoint store');
  readonly inputs: readonly ValueHandle[];
  readonly fn: RegionFn;

  constructor(inputs: readonly ValueHandle[], fn: RegionFn) {
    this.inputs = inputs;
    this.fn = fn;
  }

  /** Values whose storage the checkpoint container owns (the region's outputs while anyone holds them). */
  get retainedValues(): number {
    return this.container.liveValues;
  }

  dispose(): void {
    for (const h of this.inputs) h.dispose();
    this.container.releaseOwner();
  }
}

export class Tape {
  readonly provider: Provider;
  readonly #container = new RetentionContainer('tape');
  #nodes: Node[] = [];
  readonly #leaves: Ref[] = [];
  readonly #reason: AllocationReason;
  #disposed = false;

  constructor(provider: Provider, options: TapeOptions = {}) {
    this.provider = provider;
    this.#reason = options.reason ?? 'operation-output';
    sweepRetention();
  }

  /** Values whose storage this tape's container owns right now. */
  get retainedValues(): number {
    return this.#container.liveValues;
  }

  /** Recorded nodes. */
  get nodeCount(): number {
    return this.#nodes.length;
  }

  /** The checkpoint stores recorded on this tape, in order. */
  get checkpoints(): readonly CheckpointInfo[] {
    return this.#nodes.flatMap((n) => (n.store === undefined ? [] : [n.store]));
  }

  /** Moves `tensor` onto the tape (no copy) and returns a handle over it. Consumes the tensor. */
  leaf(tensor: Tensor, options: LeafOptions = {}): ValueHandle {
    const op = 'tape.leaf';
    this.#live(op);
    if (tensor.diagnostics().provider !== this.provider.id) {
      throw new TenonError('EINVAL', 'a leaf lives on the tape\'s provider', { op, reason: 'provider-mismatch' });
    }
    const h = this.#container.adopt(tensor, options.requiresGrad ?? true);
    if (h.requiresGrad) this.#leaves.push(refOf(h, op));
    return h;
  }

  /** A leaf that needs no gradient. */
  constant(tensor: Tensor): ValueHandle {
    return this.leaf(tensor, { requiresGrad: false });
  }

  /** a + b (same shape). Backward needs neither input. */
  async add(a: ValueHandle, b: ValueHandle): Promise<ValueHandle> {
    const op = 'tape.add';
    sameShape(a, b, op);
    const n = count(a.shape);
    const [na, nb] = [a.requiresGrad, b.requiresGrad];
    return this.#record(op, add, [a, b], a.shape, { n }, [], async (tape, [g]) => {
      if (g === undefined) return [undefined, undefined];
      if (na && nb) {
        let gb: Tensor;
        {
          using gv = g.view();
          gb = await runKernel(tape.provider, scale, [gv], g.shape, { n, s: 1 });
        }
        return [g, gb];
      }
      if (na) return [g, undefined];
      if (nb) return [undefined, g];
      g.dispose();
      return [undefined, undefined];
    });
  }

  /** a * b elementwise (same shape). Backward needs both inputs. */
  async mul(a: ValueHandle, b: ValueHandle): Promise<ValueHandle> {
    const op = 'tape.mul';
    sameShape(a, b, op);
    const n = count(a.shape);
    const [na, nb] = [a.requiresGrad, b.requiresGrad];
    const shape = a.shape;
    return this.#record(op, mul, [a, b], shape, { n }, [a, b], async (tape, [g], [sa, sb]) => {
      if (g === undefined) return [undefined, undefined];
      try {
        using gv = g.view();
        const ga = na ? await runSaved(tape.provider, mul, gv, sb!, shape, { n }) : undefined;
        let gb: Tensor | undefined;
        try {
          gb = nb ? await runSaved(tape.provider, mul, gv, sa!, shape, { n }) : undefined;
        } catch (err) {
          ga?.dispose();
          throw err;
        }
        return [ga, gb];
      } finally {
        g.dispose();
      }
    });
  }

  /** a [M, K] x b [K, N]. Backward needs both inputs: dA = dY b^T (matmul_nt), dB = a^T dY (matmul_tn_grad). */
  async matmul(a: ValueHandle, b: ValueHandle): Promise<ValueHandle> {
    const op = 'tape.matmul';
    const [m, k] = matrix(a, op);
    const [k2, n] = matrix(b, op);
    if (k !== k2) throw new TenonError('EINVAL', `inner dimensions ${k} and ${k2} differ`, { op, reason: 'shape-mismatch' });
    const [na, nb] = [a.requiresGrad, b.requiresGrad];
    return this.#record(op, matmul, [a, b], [m, n], { m, n, k }, [a, b], async (tape, [g], [sa, sb]) => {
      if (g === undefined) return [undefined, undefined];
      const out: (Tensor | undefined)[] = [undefined, undefined];
      try {
        using gv = g.view();
        if (na) {
          using bv = await sb!.value();
          out[0] = await runKernel(tape.provider, matmulNT, [gv, bv], [m, k], { m, n: k, k: n });
        }
        if (nb) {
          // dB = a^T dY: matmul_tn_grad reads a [M, K] as its `dy` and dY [M, N] as its `x`.
          using av = await sa!.value();
          out[1] = await runKernel(tape.provider, matmulTNGrad, [av, gv], [k, n], { m, n: k, k: n, accumulate: false });
        }
        return out;
      } catch (err) {
        disposeAll(out);
        throw err;
      } finally {
        g.dispose();
      }
    });
  }

  /** Records `rule` over `inputs` (retaining only `rule.needs`) and returns the output's handle. */
  async custom<P>(rule: CustomRule<P>, inputs: readonly ValueHandle[]): Promise<ValueHandle> {
    const op = 'tape.custom';
    if (!rule.needs.every((i) => Number.isSafeInteger(i) && i >= 0 && i < inputs.length)) {
      throw new TenonError('EINVAL', 'needs names inputs by index', { op, reason: 'bad-needs' });
    }
    const wants = inputs.map((h) => h.requiresGrad);
    const needed = [...new Set(rule.needs)].map((i) => inputs[i]!);
    return this.#record(op, rule.kernel, inputs, rule.shape, rule.params, needed, async (tape, [g], savedOf) => {
      if (g === undefined) return inputs.map(() => undefined);
      const views: (TensorView | undefined)[] = [];
      try {
        using gv = g.view();
        for (const h of savedOf) views.push(h === undefined ? undefined : await h.value());
        const ctx: BackwardContext = { provider: tape.provider, run: (kernel, ins, shape, params) => runKernel(tape.provider, kernel, ins, shape, params) };
        const out = await rule.backward(ctx, gv, views, wants);
        if (out.length !== inputs.length) {
          disposeAll(out);
          throw new TenonError('EINVAL', 'a custom backward returns one entry per input', { op, reason: 'gradient-count' });
        }
        return out.map((t, i) => {
          if (wants[i]) return t;
          t?.dispose();
          return undefined;
        });
      } finally {
        for (const v of views) v?.release();
        g.dispose();
      }
    });
  }

  /**
   * Records a checkpointed region: `fn` runs now on an inner tape over `inputs`; its outputs (values of
   * that inner tape) move into a new CheckpointStore and come back as handles; every interior value is
   * released when this returns. Backward re-runs `fn` (allocations: checkpoint-recompute-output).
   */
  async checkpoint(inputs: readonly ValueHandle[], fn: RegionFn): Promise<ValueHandle[]> {
    const op = 'tape.checkpoint';
    this.#live(op);
    const inRefs = inputs.map((h) => refOf(h, op));
    const inner = new Tape(this.provider, { reason: this.#reason });
    const store = new CheckpointStore(
      inputs.map((h) => h.clone()),
      fn,
    );
    const outs: ValueHandle[] = [];
    try {
      const results = await runRegion(fn, inner, inputs);
      try {
        for (const h of results) outs.push(inner.#moveOut(h, store.container, op));
      } finally {
        for (const h of results) h.dispose();
      }
    } catch (err) {
      for (const h of outs) h.dispose();
      store.dispose();
      throw err;
    } finally {
      inner.dispose();
    }
    const outRefs = outs.map((h) => refOf(h, op));
    this.#nodes.push({
      inputs: inRefs,
      outputs: outRefs,
      saved: [],
      store,
      backward: async (tape, grads) => {
        const re = new Tape(tape.provider, { reason: 'checkpoint-recompute-output' });
        let handed = false;
        try {
          const results = await runRegion(store.fn, re, store.inputs);
          try {
            if (results.length !== outRefs.length) {
              throw new TenonError('EINVAL', 'a recomputed region returned a different number of outputs', { op, reason: 'region-changed' });
            }
            const seeds = new Map<string, Tensor>();
            results.forEach((h, i) => {
              const g = grads[i];
              if (g !== undefined) seeds.set(valueId(h, op), g);
            });
            handed = true;
            const got = await re.#backwardCore(seeds, new Set(inRefs.map((r) => r.id)));
            return inRefs.map((r) => got.get(r.id));
          } finally {
            for (const h of results) h.dispose();
          }
        } catch (err) {
          if (!handed) disposeAll(grads);
          throw err;
        } finally {
          re.dispose();
        }
      },
    });
    return outs;
  }

  /**
   * Reverse pass from `outputs` seeded with `seeds` (one owner per output, consumed: the gradient of a
   * scalar sum of an output is a tensor of ones of its shape). Returns the gradients bundle for `wrt`.
   */
  async backward(outputs: readonly ValueHandle[], seeds: readonly Tensor[], options: BackwardOptions = {}): Promise<Gradients> {
    const op = 'tape.backward';
    this.#live(op);
    if (outputs.length !== seeds.length) throw new TenonError('EINVAL', 'one seed per output', { op, reason: 'seed-count' });
    outputs.forEach((h, i) => {
      const s = seeds[i]!;
      if (s.shape.length !== h.shape.length || s.shape.some((d, j) => d !== h.shape[j])) {
        throw new TenonError('EINVAL', 'a seed has the shape of its output', { op, reason: 'shape-mismatch', ids: { output: i } });
      }
    });
    const want = new Set((options.wrt ?? []).map((h) => valueId(h, op)));
    if (options.wrt === undefined) for (const r of this.#leaves) want.add(r.id);
    const seedMap = new Map<string, Tensor>();
    outputs.forEach((h, i) => seedMap.set(valueId(h, op), seeds[i]!));
    const got = await this.#backwardCore(seedMap, want);
    return Gradients.fromOwners(got);
  }

  /** Releases the nodes (and what they retained) and the tape's own reference to its container. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    for (const node of this.#nodes) {
      for (const h of node.saved) h.dispose();
      node.store?.dispose();
    }
    this.#nodes = [];
    this.#container.releaseOwner();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  /** Declares `h` needed by a backward rule: the node keeps its own handle (no copy, no event). */
  async #save(h: ValueHandle): Promise<ValueHandle> {
    return h.clone();
  }

  async #record<P>(
    op: string,
    kernel: OpDef<P, never>,
    inputs: readonly ValueHandle[],
    shape: readonly number[],
    params: P,
    needed: readonly ValueHandle[],
    backward: (tape: Tape, grads: readonly (Tensor | undefined)[], saved: readonly (ValueHandle | undefined)[]) => Promise<(Tensor | undefined)[]>,
  ): Promise<ValueHandle> {
    this.#live(op);
    const refs = inputs.map((h) => refOf(h, op));
    const views: TensorView[] = [];
    let out: Tensor;
    try {
      for (const h of inputs) views.push(await h.value());
      out = await runKernel(this.provider, kernel, views, shape, params, this.#reason);
    } finally {
      for (const v of views) v.release();
    }
    let handle: ValueHandle;
    try {
      handle = this.#container.adopt(out, refs.some((r) => r.requiresGrad));
    } catch (err) {
      out.dispose();
      throw err;
    }
    const saved: ValueHandle[] = [];
    for (const h of needed) saved.push(await this.#save(h));
    const savedOf = inputs.map((h) => {
      const i = needed.indexOf(h);
      return i < 0 ? undefined : saved[i];
    });
    this.#nodes.push({ inputs: refs, outputs: [refOf(handle, op)], saved, backward: (tape, grads) => backward(tape, grads, savedOf) });
    return handle;
  }

  #moveOut(h: ValueHandle, to: RetentionContainer, op: string): ValueHandle {
    const r = recordOf(h, op);
    if (r.container !== this.#container) {
      throw new TenonError('EINVAL', 'a region returns values it computed', { op, reason: 'not-a-region-value' });
    }
    return to.adopt(this.#container.extract(r.key, op), r.requiresGrad);
  }

  async #backwardCore(seeds: Map<string, Tensor>, want: ReadonlySet<string>): Promise<Map<string, Tensor>> {
    const grads = seeds;
    try {
      for (let i = this.#nodes.length - 1; i >= 0; i--) {
        const node = this.#nodes[i]!;
        const gOut = node.outputs.map((r) => {
          const g = grads.get(r.id);
          grads.delete(r.id);
          return g;
        });
        if (gOut.every((g) => g === undefined) || node.inputs.every((r) => !r.requiresGrad)) {
          disposeAll(gOut);
          continue;
        }
        const gIn = await node.backward(this, gOut);
        for (const [j, g] of gIn.entries()) {
          if (g === undefined) continue;
          const id = node.inputs[j]!.id;
          const prev = grads.get(id);
          if (prev === undefined) {
            grads.set(id, g);
            continue;
          }
          grads.delete(id);
          try {
            using pv = prev.view();
            using gv = g.view();
            grads.set(id, await runKernel(this.provider, add, [pv, gv], g.shape, { n: count(g.shape) }));
          } finally {
            prev.dispose();
            g.dispose();
          }
        }
      }
    } catch (err) {
      disposeAll(grads.values());
      grads.clear();
      throw err;
    }
    for (const [id, g] of [...grads]) {
      if (!want.has(id)) {
        g.dispose();
        grads.delete(id);
      }
    }
    return grads;
  }

  #live(op: string): void {
    if (this.#disposed) throw new TenonError('EMOVED', 'the tape was disposed', { op });
    sweepRetention();
  }
}

/** Runs `kernel` into a fresh owner allocated with `reason` (gradients: operation-output). */
async function runKernel<P>(provider: Provider, kernel: OpDef<P, never>, inputs: readonly TensorView[], shape: readonly number[], params: P, reason: AllocationReason = 'operation-output'): Promise<Tensor> {
  const out = await allocate(provider, F32, { shape }, { reason });
  try {
    await dispatch(provider, kernel, inputs, out, params);
  } catch (err) {
    out.dispose();
    throw err;
  }
  return out;
}

/** `kernel` over a gradient view and a retained value, into an operation-output owner. */
async function runSaved<P>(provider: Provider, kernel: OpDef<P, never>, g: TensorView, saved: ValueHandle, shape: readonly number[], params: P): Promise<Tensor> {
  using sv = await saved.value();
  return await runKernel(provider, kernel, [g, sv], shape, params);
}

function count(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

function sameShape(a: ValueHandle, b: ValueHandle, op: string): void {
  const sa = a.shape;
  const sb = b.shape;
  if (sa.length !== sb.length || sa.some((d, i) => d !== sb[i])) {
    throw new TenonError('EINVAL', 'operands differ in shape', { op, reason: 'shape-mismatch' });
  }
}

function matrix(h: ValueHandle, op: string): [number, number] {
  const s = h.shape;
  if (s.length !== RANK_MATRIX) throw new TenonError('EINVAL', 'matmul takes matrices', { op, reason: 'not-a-matrix' });
  return [s[0]!, s[1]!];
}

/** A new tape on `provider`. */
export function createTape(provider: Provider): Tape {
  return new Tape(provider);
}

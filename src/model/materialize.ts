// Weight materialisation: a LoadedModel's tensors become storage on one provider (model -> storage; no
// session, no forward pass). Each stored tensor is read by rows from the model's range source, repacked by
// its lowering kind into the packed row layout the qmatmul kernels read (src/submit/ops/qmatmul-layout.ts)
// and written into tensors that one AllocationGroup owns.
//
// Contract.
// - Binding limit: a part (one allocation, bound as one storage binding) holds at most L bytes, L = the
//   smallest of the provider's maxBindingBytes, its maxAllocationBytes and `options.maxBindingBytes`. A
//   tensor whose packed bytes exceed L is split by rows into parts of whole rows (of whole expert
//   matrices when one fits), in order; the last part holds the remainder. Rows are independent in the
//   packed layout, so part p holds rows [firstRow, firstRow + rows) exactly as the unsplit tensor would.
// - Everything is validated before the first allocation: the options, the provider, and that every
//   tensor's packed row fits L (ENOMEM `row-exceeds-binding`, naming the tensor). Then parts are allocated
//   and filled one at a time. A failure part-way (a read error, an abort: ECANCELED `aborted`, an
//   allocation refused by the provider, a lost device) disposes everything created so far before the
//   error is rethrown: the provider's live roots and bytes return to what they were.
// - Memory: one part's host staging (WebGPU) or the part itself (host provider, zero-copy), plus one read
//   chunk of at most `chunkBytes` GGUF bytes; never the whole file, never an f32 copy of a quantized matrix.
// - Progress reports the stored (file) bytes read so far against the model's storedBytes, after every chunk.
// - Ownership: the result owns the group until `dispose()` or until a caller takes the group
//   (`weights.group.take()`, e.g. to add activations and KV caches before submitting); slots survive take().
//   A tied classifier is the embedding's parts (uploaded once).
// Single-threaded: the provider's thread.
import { TenonError } from '../errors.js';
import { allocate, createAllocationGroup } from '../storage/index.js';
import type { AllocationGroup, AllocationSlot, DescriptorSlot, HostProvider, Provider, WebGPUProvider } from '../storage/index.js';
import type { LayerRole, TensorRole } from './architecture.js';
import type { LoweringKindName } from './lowering/index.js';
import type { LoadedModel, ModelTensor } from './model.js';

const OP = 'model.materialize';
const WORD_BYTES = 4;
/** Stored bytes read per range read by default: large enough that per-read costs vanish, small enough to stay out of the way. */
export const DEFAULT_CHUNK_BYTES = 4 << 20;

export interface MaterializeProgress {
  /** Stored tensor bytes read so far, and in all (LoadedModel.storedBytes). */
  readonly bytesDone: number;
  readonly bytesTotal: number;
  readonly tensorsDone: number;
  readonly tensorsTotal: number;
}

export interface MaterializeOptions {
  /** A binding limit below the provider's (bytes); parts never exceed it. */
  readonly maxBindingBytes?: number;
  /** Stored bytes per range read (at least one row is read at a time). Default DEFAULT_CHUNK_BYTES. */
  readonly chunkBytes?: number;
  readonly onProgress?: (progress: MaterializeProgress) => void;
  readonly signal?: AbortSignal;
}

/** One allocation of a weight tensor: rows [firstRow, firstRow + rows), bound on its own. */
export interface WeightPart {
  readonly firstRow: number;
  readonly rows: number;
  readonly allocation: AllocationSlot;
  readonly slot: DescriptorSlot;
  readonly byteLength: number;
}

/** A materialised weight: the packed form of one model tensor, in one or more parts. */
export interface WeightTensor {
  readonly name: string;
  readonly role: TensorRole;
  readonly layer: number | undefined;
  readonly kind: LoweringKindName;
  readonly packedLayout: string;
  /**
   * Element type of the parts: F32 weights stay `f32` (norms and biases are read element-wise; qmatmul
   * reads F32 rows as f32), every other kind is packed `u32` words.
   */
  readonly dtype: 'f32' | 'u32';
  /** Logical row-major shape (e.g. [experts, ffn, dim]). */
  readonly shape: readonly number[];
  readonly rows: number;
  readonly rowElements: number;
  /** Elements (f32) or words (u32) per packed row: the parts' row width. */
  readonly packedRowWords: number;
  /** Rows of one matrix of the last two dimensions (an expert's rows for 3-D tensors; all rows for 2-D). */
  readonly matrixRows: number;
  readonly packedBytes: number;
  readonly parts: readonly WeightPart[];
}

export type GlobalWeights = {
  readonly tokenEmbedding: WeightTensor;
  readonly outputNorm: WeightTensor;
  /** `output.weight`, or the very same WeightTensor as tokenEmbedding when the model ties them. */
  readonly output: WeightTensor;
  readonly ropeFreqs: WeightTensor | undefined;
};

export type LayerWeights = Readonly<Partial<Record<LayerRole, WeightTensor>>>;

export interface MaterializedWeights extends Disposable {
  readonly model: LoadedModel;
  readonly provider: Provider;
  /** Owns every part. */
  readonly group: AllocationGroup;
  /** In the model's catalog order (stored tensors only). */
  readonly tensors: readonly WeightTensor[];
  readonly globals: GlobalWeights;
  readonly layers: readonly LayerWeights[];
  /** The binding limit parts were cut to. */
  readonly maxPartBytes: number;
  /** Packed bytes in all and by lowering kind. */
  readonly packedBytes: number;
  readonly bytesByKind: Readonly<Partial<Record<LoweringKindName, number>>>;
  /** The weight named `name`; EINVAL `missing-tensor`. */
  tensor(name: string): WeightTensor;
  /** Disposes the group (nothing, when a caller took it). */
  dispose(): void;
}

interface PartPlan {
  readonly firstRow: number;
  readonly rows: number;
  readonly shape: readonly number[];
  readonly byteLength: number;
}

interface TensorPlan {
  readonly tensor: ModelTensor;
  readonly dtype: 'f32' | 'u32';
  readonly matrixRows: number;
  readonly parts: readonly PartPlan[];
}

function invalid(reason: string, message: string, ids?: Record<string, string | number>): never {
  throw new TenonError('EINVAL', message, ids === undefined ? { op: OP, reason } : { op: OP, reason, ids });
}

function positiveOption(name: string, value: number | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!Number.isSafeInteger(value) || value < 1) invalid('bad-option', `options.${name} must be a positive integer`, { option: name });
  return value;
}

/** The binding limit L (see the contract), in whole words. */
export function bindingLimit(provider: Provider, forced?: number): number {
  const caps = provider.capabilities;
  const limit = Math.min(caps.maxBindingBytes, caps.maxAllocationBytes, forced ?? Infinity);
  return limit - (limit % WORD_BYTES);
}

/** How one tensor is cut into parts under limit L; ENOMEM when one packed row does not fit. */
function planTensor(t: ModelTensor, limit: number): TensorPlan {
  const g = t.geometry;
  const rowBytes = g.packedRowWords * WORD_BYTES;
  if (rowBytes > limit) {
    throw new TenonError('ENOMEM', `one packed row of ${t.name} takes ${rowBytes} bytes, a binding at most ${limit}`, {
      op: OP,
      reason: 'row-exceeds-binding',
      ids: { tensor: t.name, rowBytes, limit },
    });
  }
  const matrixRows = g.shape.length >= 2 ? g.shape[g.shape.length - 2]! : 1;
  let rowsPerPart = Math.min(g.rows, Math.floor(limit / rowBytes));
  // Keep whole matrices (experts) together when one fits in a part.
  if (g.shape.length >= 3 && rowsPerPart >= matrixRows) rowsPerPart -= rowsPerPart % matrixRows;
  const dtype = t.kind.name === 'F32' ? 'f32' : 'u32';
  const parts: PartPlan[] = [];
  const count = Math.ceil(g.rows / rowsPerPart);
  for (let p = 0; p < count; p++) {
    const firstRow = p * rowsPerPart;
    const rows = Math.min(rowsPerPart, g.rows - firstRow);
    const shape = g.shape.length === 1 ? [g.packedRowWords] : [rows, g.packedRowWords];
    parts.push({ firstRow, rows, shape, byteLength: rows * rowBytes });
  }
  return { tensor: t, dtype, matrixRows, parts };
}

/**
 * The parts every tensor would get under `options.maxBindingBytes` and the provider's limits, without
 * allocating anything (the same plan materializeWeights follows). Throws as materializeWeights' validation.
 */
export function planWeights(model: LoadedModel, provider: Provider, options: Pick<MaterializeOptions, 'maxBindingBytes'> = {}): { readonly maxPartBytes: number; readonly tensors: readonly { readonly name: string; readonly parts: readonly { readonly firstRow: number; readonly rows: number; readonly byteLength: number }[] }[] } {
  const limit = bindingLimit(provider, positiveOption('maxBindingBytes', options.maxBindingBytes));
  const plans = model.tensors.map((t) => planTensor(t, limit));
  return { maxPartBytes: limit, tensors: plans.map((p) => ({ name: p.tensor.name, parts: p.parts.map(({ firstRow, rows, byteLength }) => ({ firstRow, rows, byteLength })) })) };
}

function checkProvider(provider: Provider): void {
  if (provider === null || typeof provider !== 'object' || typeof provider.counters !== 'function' || typeof provider.capabilities !== 'object') {
    invalid('bad-argument', 'materializeWeights needs a provider');
  }
}

function checkAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted === true) throw new TenonError('ECANCELED', 'weight materialisation aborted', { op: OP, reason: 'aborted', cause: signal.reason });
}

/**
 * Reads, repacks and uploads every tensor of `model` to `provider` (see the module contract). Rejects
 * with EINVAL `bad-option` | `bad-argument`, ENOMEM `row-exceeds-binding` before allocating anything;
 * later failures (EIO from the source, ECANCELED `aborted`, ENOMEM / ENODEV from the provider) after
 * disposing everything it allocated.
 */
export async function materializeWeights(model: LoadedModel, provider: HostProvider | WebGPUProvider, options: MaterializeOptions = {}): Promise<MaterializedWeights> {
  checkProvider(provider);
  const forced = positiveOption('maxBindingBytes', options.maxBindingBytes);
  const chunkBytes = positiveOption('chunkBytes', options.chunkBytes) ?? DEFAULT_CHUNK_BYTES;
  if (options.onProgress !== undefined && typeof options.onProgress !== 'function') invalid('bad-option', 'options.onProgress must be a function', { option: 'onProgress' });
  const limit = bindingLimit(provider, forced);
  const plans = model.tensors.map((t) => planTensor(t, limit));
  checkAborted(options.signal);

  const group = createAllocationGroup();
  const bytesTotal = model.storedBytes;
  let bytesDone = 0;
  try {
    const weights: WeightTensor[] = [];
    for (const [index, plan] of plans.entries()) {
      const t = plan.tensor;
      const g = t.geometry;
      const parts: WeightPart[] = [];
      for (const part of plan.parts) {
        checkAborted(options.signal);
        const tensor = await allocate(provider, plan.dtype, { shape: part.shape }, { reason: 'transfer-destination' });
        try {
          const mapping = await tensor.prepareHostMut({ discard: true });
          try {
            if (mapping.kind !== 'contiguous') invalid('bad-layout', 'a weight part must be contiguous');
            const array = mapping.asArray();
            const words = new Uint32Array(array.buffer, array.byteOffset, array.length);
            const rowsPerRead = Math.max(1, Math.floor(chunkBytes / g.rowBytes));
            for (let row = 0; row < part.rows; row += rowsPerRead) {
              checkAborted(options.signal);
              const n = Math.min(rowsPerRead, part.rows - row);
              const stored = await t.readRows(part.firstRow + row, n);
              t.kind.repack(stored, g.rowElements, words.subarray(row * g.packedRowWords, (row + n) * g.packedRowWords));
              bytesDone += stored.length;
              options.onProgress?.({ bytesDone, bytesTotal, tensorsDone: index, tensorsTotal: plans.length });
            }
          } finally {
            mapping.release();
          }
        } catch (err) {
          tensor.dispose();
          throw err;
        }
        const inserted = group.insert(tensor);
        parts.push(Object.freeze({ firstRow: part.firstRow, rows: part.rows, allocation: inserted.allocation, slot: inserted.descriptor, byteLength: part.byteLength }));
      }
      weights.push(
        Object.freeze({
          name: t.name,
          role: t.role,
          layer: t.layer,
          kind: t.kind.name,
          packedLayout: t.kind.packedLayout,
          dtype: plan.dtype,
          shape: g.shape,
          rows: g.rows,
          rowElements: g.rowElements,
          packedRowWords: g.packedRowWords,
          matrixRows: plan.matrixRows,
          packedBytes: g.packedBytes,
          parts: Object.freeze(parts),
        }),
      );
      options.onProgress?.({ bytesDone, bytesTotal, tensorsDone: index + 1, tensorsTotal: plans.length });
    }
    return assemble(model, provider, group, weights, limit);
  } catch (err) {
    group.dispose();
    throw err;
  }
}

function assemble(model: LoadedModel, provider: Provider, group: AllocationGroup, weights: readonly WeightTensor[], limit: number): MaterializedWeights {
  const byName = new Map(weights.map((w) => [w.name, w]));
  const of = (t: ModelTensor | undefined): WeightTensor | undefined => (t === undefined ? undefined : byName.get(t.name));
  const globals: GlobalWeights = Object.freeze({
    tokenEmbedding: of(model.globals.tokenEmbedding)!,
    outputNorm: of(model.globals.outputNorm)!,
    output: of(model.globals.output)!,
    ropeFreqs: of(model.globals.ropeFreqs),
  });
  const layers = model.layers.map((layer) => {
    const out: Partial<Record<LayerRole, WeightTensor>> = {};
    for (const [role, t] of Object.entries(layer) as [LayerRole, ModelTensor][]) out[role] = of(t)!;
    return Object.freeze(out);
  });
  const bytesByKind: Partial<Record<LoweringKindName, number>> = {};
  for (const w of weights) bytesByKind[w.kind] = (bytesByKind[w.kind] ?? 0) + w.packedBytes;
  const dispose = (): void => {
    if (!group.moved) group.dispose();
  };
  return Object.freeze({
    model,
    provider,
    group,
    tensors: Object.freeze([...weights]),
    globals,
    layers: Object.freeze(layers),
    maxPartBytes: limit,
    packedBytes: weights.reduce((n, w) => n + w.packedBytes, 0),
    bytesByKind: Object.freeze(bytesByKind),
    tensor(name: string): WeightTensor {
      const w = byName.get(name);
      if (w === undefined) invalid('missing-tensor', `no weight ${name}`, { tensor: name });
      return w;
    },
    dispose,
    [Symbol.dispose]: dispose,
  });
}


// LlamaForward: the forward pass of every architecture in the model layer's table (src/model
// architecture.ts: llama, llama with routed experts, qwen2), built from a LoadedModel and its
// materialised weights as compiled graphs of the op library. The architecture entry and the validated
// config decide every difference, read once at construction: Q/K/V biases (entry.attentionBias), the
// RoPE pairing (entry.ropeStyle), per-frequency RoPE factors (config.ropeFreqs), a dense or routed FFN
// (entry.ffn, entry.routing), and whether the classifier is the token embedding (config.tiedOutput).
// There is no branch on an architecture's name. llama2.c checkpoints arrive as `llama` LoadedModels with
// F32 tensors and run through the same code.
//
// Weights. Every quantized or half-precision matrix is read by the qmatmul op of its lowering kind
// (src/submit/ops/qmatmul.ts); F32 matrices keep the f32 tiled matmul_nt the llama2.c path was built on
// (so a llama2.c model computes exactly what it computed before GGUF support); the token embedding is
// read by gather (F32) or qgather (other kinds); routed experts by router
// qmatmul -> moe_route -> qmatmul_expert (gate, up) -> silu_mul -> qmatmul_expert (down) -> moe_combine
// into the residual, in the same submission as everything else (the routing never visits the host).
// A weight that materializeWeights split into row parts (binding limits) runs as one dispatch per part,
// each computing the output columns of its rows with the same kernel and tiling as the unsplit weight
// (a qmatmul's tiling depends only on M and K, so every output element is summed in the same order and
// the split result is bit-identical): for one row of x the part writes its slice of the output directly;
// for M > 1 rows it writes a [M, rows] scratch whose rows kv_write then copies into place. A split
// embedding gathers each token from every part (ids outside a part give a zero row there) into a scratch
// of P blocks, and one f32 gather then selects each token's row from the block of the part holding it (an
// exact copy, so -0 and every bit survive). Expert tensors are split only between whole experts
// (qmatmul_expert's expertBase: pairs routed elsewhere keep their rows).
//
// Kernels (`kernels` option). The graphs are built from one of two per-layer dispatch lists:
// Without the option, defaultKernels picks: 'fused' on a WebGPU provider over a hardware adapter, the list
// written for real GPUs (not yet measured on one: no device has been available to this project), and
// 'unfused' on the host (dispatches cost it nothing), on a software adapter (SwiftShader emulates the fused
// list's workgroup reductions on the CPU and runs it many times slower) and under a bounded window.
// - 'unfused': rmsnorm, Q, K, V, (3 bias_add), 2 rope, 2 kv_write, attention, O, add, rmsnorm, gate, up,
//   silu_mul, down, add: 17 dispatches per dense layer (20 with biases), plus rmsnorm, classifier and
//   argmax (and the embedding) per step. A one-row (decode) step on either provider writes Q, K and V
//   side by side into one qkv row and rotates Q and K and writes the KV cache in one fused_rope_kv pass
//   (the host's kernel for it is rope's kernel plus kv_write's copies: the same bits as the four
//   dispatches): 14 per dense layer on the host. On WebGPU the same list saves dispatches and passes over memory
//   with kernels of the same per-invocation shape (no workgroup reductions): O and down with F32 weights
//   add into the residual in their epilogue (matmul_nt_add: no xb2 round trip, no add), and a one-row
//   (decode) step writes Q, K and V side by side into one qkv row (F32 weights in one part each: the
//   attention norm folded in, one matmul_nt_norm_qkv), then rotates Q and K and writes the KV cache in one
//   fused_rope_kv pass (its biases, if any, added to the row first), and with F32 gate/up computes the
//   FFN norm, gate, up and SiLU·mul in one matmul_nt_norm_glu, and with an F32 classifier folds the final
//   norm into it (matmul_nt_norm): 6 dispatches per F32 dense layer + 3 (33 per token for stories260K's 5
//   layers, 89 before), 14 per layer with quantized weights (+ 4 with a quantized classifier);
// - 'fused' (src/submit/ops/fused-*.ts, shaders/fused_*.wesl): fused_norm_qkv_rope
//   (norm folded into the Q/K/V projection, biases, RoPE and the KV-cache write in its epilogue),
//   fused_attention (one pass over the cache; for a decode step whose cache is longer than
//   `attentionSplit` positions, split over positions plus a combine dispatch), fused_matmul_add (O into the
//   residual), fused_norm_glu (norm, gate/up and SiLU), fused_matmul_add (down into the residual): 5
//   dispatches per dense layer (6 with a split decode attention), and the final norm folded into the
//   classifier: embedding, classifier, argmax per step. A decode step where useAttentionBlock holds runs
//   the first two as one fused_attention_block (one workgroup per KV head does its query group's Q/K/V,
//   RoPE, KV write and attention, so no barrier across workgroups is needed between them): 4 dispatches
//   per dense layer + 3. Otherwise five is the floor on WebGPU, which has no barrier across workgroups:
//   Q/K/V, attention, O, gate/up and down each need all of the previous step's output. Biases live after the norm weight in one combined vector per layer (filled by one
//   submission at construction), so the Q/K/V kernel binds eight storage buffers. A split matrix runs one
//   fused dispatch per part, written straight into its columns (no scratch copies; a split Q, K or V goes
//   through fused_norm_matmul into a qkv scratch, then fused_rope_kv: the same arithmetic, the same bits).
//   Routed FFNs keep rmsnorm -> router -> experts (the experts read the normed rows).
// Ownership: one AllocationGroup (the model state) owns every weight part, the per-layer KV caches and
// the activation buffers. Between steps the forward holds it, or the newest member of a chain of steps
// does (below); during a step it is moved into the runtime's retirement record and comes back through the
// bundle. If a step ends completion-unproven the state is gone for good (retained forever by the runtime)
// and the forward refuses further steps (ENODEV). Graphs are compiled per token count T (prefill chunk or 1
// for decode) and cached; the position of row 0 is a per-step value, so replaying a graph never recompiles
// anything.
// Two ways to run steps (`decode` option). 'plain' (the baseline): `run` writes the ids, submits, waits
// for proven completion and downloads what it returns, one step at a time. 'chained' (the default where
// the embedding is in one part): `enqueue` submits a step as a member of a runtime chain (G3-chain-*) on the
// live group without waiting: the host uploads nothing but the graph's uniform (position, and the token when
// the host chose it), the step's ids come from a prompt staged once before the chain (step_ids op), from
// that uniform, or straight from the `next` buffer the previous step's argmax wrote (`device` input: the
// host need not know the token to submit the step that consumes it). Only the chosen id (4 bytes) comes
// back, through the runtime's pooled readback, with the member's proof (`settle`); logits are downloaded
// only when a caller asks (`readLogits`, after `reclaim` has ended the chain and taken the group back).
// The chain's newest member holds the group until `reclaim` (or a step settled with no member after it)
// returns it; host access to the state (KV rows, logits) always reclaims first. Where the next token is
// chosen on the device (argmax of the last row into `next`, or with a `sample` choice the sample op in
// #graphFor's tail, writing the same u32; its counter is the position the token takes), a caller can
// enqueue step t+1 before it settles step t.
// Plain steps: `run(tokens, pos0)` writes the ids, submits, waits for proven completion and returns the logits
// of the last row (a run with `logits: false` downloads none: a prefill's earlier chunks only write their
// KV rows, so a long prefill reads logits back once, after its last chunk). It does not decide what is
// committed: TextSession (session.ts) wraps it in a transaction. KV rows at and past the committed length
// are kept zero by the session so that a rolled-back step leaves the state bit-identical.
// Layer observation: only a run that asks for it (`layers: true`) copies the residual stream after each
// layer into an observation buffer [nLayers * maxBatch, dim] and downloads it with the logits. That buffer
// is allocated into the state group on the first such run and its graphs are a separate family, so a
// forward whose caller never asks has neither the buffer nor the copy dispatches.
// Residency (`residency` option, residency.ts). Resident (the default) is everything above. Bounded: the
// globals are materialized as usual; the layer weights stay in the model's source (read by range when a
// slot is filled) and run from a window of slots
// (allocations of the state group, each the size of the largest layer, layer l in slot l mod slots). A
// plain step is then cut into one submission per window of layers (graphs keyed by their layer range: the
// embedding in the first, the classifier in the last; x carries the residual stream between them); each
// submission's layers are written into their slots just before it, while the group is in hand, i.e. after
// the previous reader was proven complete. With an expert cache (`experts`), each routed layer runs as
// three submissions: attention, norm, router and moe_route; then, after reading the routed ids back (the
// one place the routing visits the host), rounds of the experts graph over the cache's slots, each slot's
// expert a step value (qmatmul_expert's expertBase, so pairs routed elsewhere keep their rows); then
// moe_combine. Overlapped bounded windows (WindowPlan.overlap; see #overlapped) run a step's windows as
// one chain on the group instead, staging each later window's layers while the window before computes.
// Bounded forwards run 'plain' steps and the op-by-op list only.
// Thread: the runtime's.
import { TenonError, isTenonError } from '../errors.js';
import { classifyAdapter, zeros } from '../storage/index.js';
import type { AdapterClass, AllocationGroup, AllocationSlot, DType, DescriptorSlot, HostProvider, WebGPUProvider } from '../storage/index.js';
import {
  FUSED_ATTENTION_BLOCK,
  FUSED_MATVEC,
  ROPE_MAX_POSITION,
  addInplace,
  argmax,
  attention,
  attentionBlockFits,
  biasAdd,
  fusedAttention,
  fusedAttentionCombine,
  fusedAttentionSplit,
  fusedRopeKv,
  fusedRopeKvBias,
  gather,
  hostRopeKv,
  kvWrite,
  matmulNT,
  matmulNTAdd,
  matmulNTNorm,
  matmulNTNormGlu,
  matmulNTNormQkv,
  maxSplits,
  moeCombine,
  moeRoute,
  qgatherOp,
  qmatmulExpertOp,
  qmatmulOp,
  qmatmulVariant,
  rmsnorm,
  rope,
  ropeTable,
  siluMul,
  sample,
  stepIds,
} from '../submit/index.js';
import type { ChainHandle, CompiledGraph, DispatchSpec, FusedRopeKvParams, GraphInput, PackedKind, QMatmulVariant, Readback, RopeStyle, Runtime, SampleParams, StepIdsParams, StepValues } from '../submit/index.js';
import { bindingLimit, materializeWeights, planWeights } from '../model/index.js';
import type { ArchitectureEntry, LayerRole, LayerWeights, LoadedModel, LoweringKindName, MaterializeProgress, MaterializedWeights, ModelConfig, ModelTensor, WeightTensor } from '../model/index.js';
import type { DeviceChoice } from './sampler.js';
import { LayerWindow, checkPolicy, planWindow, residentReport } from './residency.js';
import type { ResidencyKind, ResidencyPolicy, ResidencyReport, SlotEntry } from './residency.js';

export interface LlamaForwardOptions {
  /** Cache length in positions (default: the model's context length, at most DEFAULT_MAX_SEQ; maximum: the context length). */
  readonly maxSeq?: number;
  /** Largest number of tokens one step processes (prefill chunk); default 64. */
  readonly maxBatch?: number;
  /**
   * A binding limit in bytes below the provider's: weights larger than it are split by rows into parts
   * (materializeWeights); activation buffers must fit it (ENOMEM `activation-exceeds-binding`).
   */
  readonly maxBindingBytes?: number;
  /** Progress of the weight upload (materializeWeights). */
  readonly onProgress?: (progress: MaterializeProgress) => void;
  /** Aborts the weight upload (ECANCELED `aborted`; nothing stays allocated). */
  readonly signal?: AbortSignal;
  /**
   * How steps are submitted (default 'chained'; see the module comment). A model whose token embedding
   * is split into parts runs 'plain' whatever is asked (its ids are laid out per part on the host).
   */
  readonly decode?: DecodeMode;
  /**
   * The per-layer dispatch list (see the module comment): 'fused' or 'unfused'. Default: defaultKernels
   * ('fused' on a hardware WebGPU adapter, 'unfused' on the host, a software adapter or a bounded window).
   * The fused list also runs on the host, through the fused ops' twins.
   */
  readonly kernels?: KernelMode;
  /**
   * Fused list: positions per attention split of a decode step (default ATTENTION_SPLIT_POSITIONS). A
   * cache longer than this runs decode attention split over positions plus a combine dispatch.
   */
  readonly attentionSplit?: number;
  /**
   * Layer residency (residency.ts), chosen here for the forward's life: `{ kind: 'resident' }` (the
   * default) or `{ kind: 'bounded', bytes }` (at most `bytes` of layer weights on the provider, in a
   * window of slots; steps run 'plain', ceil(layers / slots) submissions each, op-by-op kernels only).
   */
  readonly residency?: ResidencyPolicy;
}

/** Which per-layer dispatch list the graphs are built from. */
export type KernelMode = 'fused' | 'unfused';
export const KERNEL_MODES: readonly KernelMode[] = ['fused', 'unfused'];

/**
 * The dispatch list for a provider whose adapter is `adapter` (undefined: the host provider) when the
 * options name none (see the module comment): 'fused' on a hardware adapter unless `bounded`, else
 * 'unfused'.
 */
export function defaultKernels(adapter: AdapterClass | undefined, bounded: boolean): KernelMode {
  return adapter !== undefined && !adapter.software && !bounded ? 'fused' : 'unfused';
}

/**
 * Decode attention splits of this many positions: below it one workgroup per head walks the whole cache
 * (and no combine dispatch exists); past it long contexts get heads * splits workgroups.
 */
export const ATTENTION_SPLIT_POSITIONS = 1024;

/**
 * The fused list's rule for the one-dispatch attention block (fused_attention_block: norm, Q/K/V, RoPE,
 * KV write and attention of a decode row; 4 dispatches per dense layer instead of 5): a one-row step
 * whose cache fits the unsplit attention (no `attentionSplit` parts: one workgroup per KV head walks every
 * position), whose Q, K and V weights are one part each, and whose query groups fit the kernel's
 * workgroup memory (attentionBlockFits). The kernel projects Q/K/V on only kvHeads workgroups; past these
 * bounds (long contexts, split matrices, wide groups) fused_norm_qkv_rope -> fused_attention(_split) keeps
 * its parallelism.
 */
export function useAttentionBlock(rows: number, splitAttention: boolean, qkvParts: readonly number[], heads: number, kvHeads: number, headDim: number): boolean {
  return rows === 1 && !splitAttention && qkvParts.every((parts) => parts === 1) && attentionBlockFits(heads, kvHeads, headDim);
}

/** 'plain': submit and wait for proof step by step; 'chained': steps chained on the live state group. */
export type DecodeMode = 'plain' | 'chained';
export const DECODE_MODES: readonly DecodeMode[] = ['plain', 'chained'];

/** Where a chained step's ids come from: the host's tokens, or the token the previous step chose on the device. */
export type StepInput = { readonly kind: 'tokens'; readonly tokens: readonly number[] } | { readonly kind: 'device' };

/** A step submitted by `enqueue` and not yet settled: positions pos0..pos0+rows-1. */
export interface ChainedStep {
  readonly pos0: number;
  readonly rows: number;
}

/** What one step leaves behind for the caller. */
export interface StepResult {
  /** Logits of the last processed position (a copy on the host). */
  readonly logits: Float32Array;
  /** Argmax of those logits, computed on the provider. */
  readonly argmax: number;
  /** With `allRows`: the argmax of every processed position, in order (for draft verification). */
  readonly argmaxRows: readonly number[];
  /** With `allRows`: the logits of every processed position, row after row ([T, vocab]); else the last row. */
  readonly rowLogits: Float32Array;
  /** With `layers`: the hidden state after each layer, one [T, dim] array per layer (host copies). */
  readonly layers?: readonly Float32Array[];
}

export interface RunOptions {
  /** Compute logits and argmax for every row, not only the last (speculative verification). */
  readonly allRows?: boolean;
  /** Also return the hidden state after every layer (observer hooks); costs nothing when absent. */
  readonly layers?: boolean;
  /**
   * Download the logits and argmax (default true). With false nothing of them is read back: the result's
   * logits and rowLogits are empty, argmaxRows is empty and argmax is -1 (NO_ARGMAX).
   */
  readonly logits?: boolean;
}

/** The argmax of a run that did not read its logits back (`logits: false`). */
export const NO_ARGMAX = -1;
const NO_LOGITS = new Float32Array(0);

const DEFAULT_MAX_BATCH = 64;
/** Default cache length for models whose context is longer (a 128K-context model would need gigabytes of KV). */
export const DEFAULT_MAX_SEQ = 4096;
const F32_BYTES = 4;
const U32_BYTES = 4;
/** Columns per invocation of matmul_nt_norm_qkv: Q and K/V widths must be multiples of it. */
const QKV_TILE = 8;
/** An id no part holds: qgather and gather give a zero row for it. */
const NO_ROW = 0xffff_ffff;

/** Cache key of a graph: token count, per-row logits, layer observation, ids source, sample op as the choice. */
/** The chunks of a one-token step. */
const ONE_CHUNK: readonly number[] = Object.freeze([1]);

function graphKey(T: number, allRows: boolean, layers: boolean, source: IdsSource, sampled = false, range?: LayerRange): string {
  return `${T}${allRows ? ':rows' : ''}${layers ? ':layers' : ''}${source === 'ids' ? '' : `:${source}`}${sampled ? ':sample' : ''}${range === undefined ? '' : `:L${range.first}-${range.end}${range.phase ?? ''}`}`;
}

/** Layers [first, end) of one bounded submission (the embedding with the first, the classifier with the last). */
interface LayerRange {
  readonly first: number;
  readonly end: number;
  /**
   * Expert cache: one routed layer in three submissions: 'attn' (attention, FFN norm, router, moe_route),
   * 'experts' (one round of cached experts; replayed per round) and 'combine' (moe_combine).
   */
  readonly phase?: 'attn' | 'experts' | 'combine';
}

/** One expert cache slot as the graphs bind it: the held expert's gate, up and down matrices. */
interface CachedExpert {
  readonly gate: Matrix;
  readonly up: Matrix;
  readonly down: Matrix;
}

/** Step value naming the expert cache slot `i` holds (an out-of-range id when it serves no pair this round). */
function slotKey(i: number): string {
  return `expertSlot${i}`;
}

/** What feeds the embedding of a graph: the ids buffer the host writes (plain), ids the graph takes from the staged prompt or the uniform (step_ids), or the `next` buffer. */
type IdsSource = 'ids' | 'staged' | 'device';

/** A chain member this forward submitted (see enqueue); `result` is its settled outcome, taken once. */
interface Member extends ChainedStep {
  readonly handle: ChainHandle;
  result: Promise<Readback> | undefined;
}

interface GraphEntry {
  readonly graph: CompiledGraph;
  /** The ids buffer of this T: [T] ids, or for a split embedding P blocks of per-part ids and the selection. */
  readonly ids: DescriptorSlot;
  readonly logits: DescriptorSlot;
  readonly next: DescriptorSlot;
}

interface Allocation {
  readonly allocation: AllocationSlot;
  readonly slot: DescriptorSlot;
}

/** One row part of a weight as the graphs bind it. */
interface Part {
  readonly firstRow: number;
  readonly rows: number;
  readonly slot: DescriptorSlot;
  readonly shape: readonly number[];
}

/** A matrix (or expert tensor) as the graphs read it: rows of `k` elements in `parts`. */
interface Matrix {
  readonly name: string;
  readonly kind: PackedKind;
  readonly dtype: 'f32' | 'u32';
  /** Rows in all (experts * rows per expert for expert tensors). */
  readonly rows: number;
  readonly k: number;
  /** Rows of one matrix (an expert's rows; all rows for 2-D weights). */
  readonly matrixRows: number;
  readonly parts: readonly Part[];
}

interface DenseFfn {
  readonly kind: 'dense';
  readonly gate: Matrix;
  readonly up: Matrix;
  readonly down: Matrix;
}

interface RoutedFfn {
  readonly kind: 'routed';
  readonly router: Matrix;
  readonly gate: Matrix;
  readonly up: Matrix;
  readonly down: Matrix;
  readonly experts: number;
  readonly used: number;
  readonly renormalize: boolean;
  /** Expert cache: the slots of this layer's cache (the expert tensors above then have no parts). */
  readonly cache?: readonly CachedExpert[];
}

interface LayerSlots {
  readonly attnNorm: DescriptorSlot;
  readonly q: Matrix;
  readonly k: Matrix;
  readonly v: Matrix;
  readonly o: Matrix;
  /** Q/K/V biases, present exactly when the entry says the architecture has them. */
  readonly bias: { readonly q: DescriptorSlot; readonly k: DescriptorSlot; readonly v: DescriptorSlot } | undefined;
  /** Fused list with biases: [dim + qDim + 2 kvDim] = the attention norm weight, then the Q, K, V biases. */
  readonly attnVec: Allocation | undefined;
  readonly ffnNorm: DescriptorSlot;
  readonly ffn: DenseFfn | RoutedFfn;
  readonly kCache: DescriptorSlot;
  readonly vCache: DescriptorSlot;
}

/** What the forward reads of the architecture entry and config, fixed at construction. */
interface ForwardPlan {
  readonly ropeStyle: RopeStyle;
  /** Per-pair RoPE frequency divisors (rope_freqs), when the model has them. */
  readonly ropeFactors: Float32Array | undefined;
  readonly eps: number;
  readonly theta: number;
}

function unsupported(reason: string, message: string, ids?: Record<string, string | number>): never {
  throw new TenonError('ENOTSUP', message, ids === undefined ? { op: 'LlamaForward.create', reason } : { op: 'LlamaForward.create', reason, ids });
}

function matrixOf(w: WeightTensor): Matrix {
  return {
    name: w.name,
    kind: w.kind,
    dtype: w.dtype,
    rows: w.rows,
    k: w.rowElements,
    matrixRows: w.matrixRows,
    parts: w.parts.map((p) => ({ firstRow: p.firstRow, rows: p.rows, slot: p.slot, shape: [p.rows, w.packedRowWords] })),
  };
}

/** A norm weight or bias: F32, one part (architecture.ts makes vectors F32; a vector row fits any binding that fits a row). */
function vectorOf(w: WeightTensor): DescriptorSlot {
  if (w.dtype !== 'f32' || w.parts.length !== 1) unsupported('unsupported-tensor-kind', `vector ${w.name} must be one F32 part`, { tensor: w.name });
  return w.parts[0]!.slot;
}

function need<T>(value: T | undefined, name: string): T {
  if (value === undefined) unsupported('missing-tensor', `the forward pass needs ${name}`, { tensor: name });
  return value;
}

/** Reads the f32 values of rope_freqs (little-endian) and checks them (finite, positive). */
async function ropeFactorsOf(model: LoadedModel): Promise<Float32Array | undefined> {
  const t = model.globals.ropeFreqs;
  if (!model.config.ropeFreqs || t === undefined) return undefined;
  const bytes = await t.readRows(0, t.geometry.rows);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Float32Array(bytes.byteLength / F32_BYTES);
  for (let i = 0; i < out.length; i++) {
    const v = view.getFloat32(i * F32_BYTES, true);
    if (!Number.isFinite(v) || !(v > 0)) throw new TenonError('EINVAL', `rope_freqs[${i}] is ${v}; factors must be finite and positive`, { op: 'LlamaForward.create', reason: 'bad-rope-freqs', ids: { index: i } });
    out[i] = v;
  }
  return out;
}

/** One row copy at construction: `width` elements of `from` to element `at` of `to`. */
interface VectorCopy {
  readonly from: AllocationSlot;
  readonly to: AllocationSlot;
  readonly at: number;
  readonly width: number;
}

/**
 * Fused list with Q/K/V biases: allocates a layer's combined attention vector [dim + qDim + 2 kvDim]
 * (the norm weight, then the biases: the fused Q/K/V kernel's `vec` operand, so that kernel binds eight
 * storage buffers, the WebGPU minimum every device offers) and plans the copies that fill it.
 */
async function attentionVector(
  blank: (dtype: DType, shape: number[]) => Promise<Allocation>,
  copies: VectorCopy[],
  c: ModelConfig,
  sources: readonly WeightTensor[],
): Promise<Allocation> {
  const vec = await blank('f32', [c.dim + c.qDim + 2 * c.kvDim]);
  let at = 0;
  for (const w of sources) {
    vectorOf(w);
    copies.push({ from: w.parts[0]!.allocation, to: vec.allocation, at, width: w.rowElements });
    at += w.rowElements;
  }
  return vec;
}

/**
 * Runs the planned vector copies on the provider (kv_write, exact) in one submission and returns the
 * group. The group is the caller's again only on success; a failure after admission disposes what came
 * back (retired-failed) or leaves it to the runtime (completion-unproven), and throws the cause.
 */
async function fillVectors(runtime: Runtime, group: AllocationGroup, copies: readonly VectorCopy[]): Promise<AllocationGroup> {
  const inputs: Record<string, GraphInput> = {};
  const dispatches: DispatchSpec<never>[] = [];
  copies.forEach((c, i) => {
    const shape = [1, c.width];
    inputs[`from${i}`] = { slot: group.alias(c.from, 'f32', { shape }), dtype: 'f32', shape };
    inputs[`to${i}`] = { slot: group.alias(c.to, 'f32', { shape, byteOffset: c.at * F32_BYTES }), dtype: 'f32', shape };
    dispatches.push({ kernel: kvWrite, bind: [`from${i}`, `to${i}`], params: { count: 1, width: c.width, maxSeq: 1, pos0: 0 } } as unknown as DispatchSpec<never>);
  });
  const graph = runtime.compile({ name: 'attention vectors', inputs, dispatches, outputs: [] });
  try {
    let handle;
    try {
      handle = await runtime.submit(graph, group);
    } catch (err) {
      group.dispose(); // refused before admission: still ours
      throw err;
    }
    const outcome = await handle.wait();
    if (outcome.kind === 'completed') return outcome.bundle.intoGroup().group;
    if (outcome.kind === 'retired-failed') outcome.inputs.dispose();
    throw outcome.cause;
  } finally {
    graph.dispose();
  }
}

/** Activation buffers: name -> [element type, row width] for maxBatch rows. */
function activationWidths(c: ModelConfig, entry: ArchitectureEntry): Record<string, readonly [DType, number]> {
  const widths: Record<string, readonly [DType, number]> = {
    x: ['f32', c.dim],
    xb: ['f32', c.dim],
    xb2: ['f32', c.dim],
    q: ['f32', c.qDim],
    k: ['f32', c.kvDim],
    v: ['f32', c.kvDim],
    att: ['f32', c.qDim],
  };
  if (entry.ffn === 'routed') {
    const used = c.expertsUsed;
    Object.assign(widths, {
      routerLogits: ['f32', c.experts],
      routeIds: ['u32', used],
      routeWeights: ['f32', used],
      expertGate: ['f32', used * c.ffnDim],
      expertUp: ['f32', used * c.ffnDim],
      expertHidden: ['f32', used * c.ffnDim],
      expertOut: ['f32', used * c.dim],
    });
  } else {
    Object.assign(widths, { hb: ['f32', c.ffnDim], hb2: ['f32', c.ffnDim], hb3: ['f32', c.ffnDim] });
  }
  return widths;
}

/** Bounded residency: layer `l`'s weights as the graphs bind them, each part an alias into the layer's slot. */
function slotWeights(model: LoadedModel, l: number, entries: readonly SlotEntry[], at: AllocationSlot, descriptors: readonly DescriptorSlot[]): LayerWeights {
  const out: Partial<Record<LayerRole, WeightTensor>> = {};
  for (const [role, t] of Object.entries(model.layers[l]!) as [LayerRole, ModelTensor][]) {
    const mine = entries.map((e, i) => ({ e, i })).filter(({ e }) => e.role === role);
    const g = t.geometry;
    // An expert tensor served by the expert cache has no part in the window.
    const first = mine[0]?.e ?? { dtype: t.kind.name === 'F32' ? ('f32' as const) : ('u32' as const), matrixRows: g.shape[g.shape.length - 2] ?? 1 };
    out[role] = {
      name: t.name,
      role,
      layer: l,
      kind: t.kind.name,
      packedLayout: t.kind.packedLayout,
      dtype: first.dtype,
      shape: g.shape,
      rows: g.rows,
      rowElements: g.rowElements,
      packedRowWords: g.packedRowWords,
      matrixRows: first.matrixRows,
      packedBytes: g.packedBytes,
      parts: mine.map(({ e, i }) => ({ firstRow: e.firstRow, rows: e.rows, allocation: at, slot: descriptors[i]!, byteLength: e.byteLength })),
    };
  }
  return out;
}

export class LlamaForward {
  readonly model: LoadedModel;
  readonly config: ModelConfig;
  readonly runtime: Runtime;
  readonly maxSeq: number;
  readonly maxBatch: number;
  /** Packed weight bytes in all and by lowering kind. */
  readonly weightBytes: number;
  readonly weightBytesByKind: Readonly<Partial<Record<LoweringKindName, number>>>;
  /** How steps are submitted (the option, or 'plain' for a split embedding). */
  readonly mode: DecodeMode;
  /** The per-layer dispatch list the graphs are built from. */
  readonly kernels: KernelMode;
  /** Bytes of every activation buffer (not the KV caches, not the observation buffer). */
  readonly #activationBytes: number;
  /**
   * Owned between steps while no chain holds it; moved into the runtime during a plain step, and into the
   * newest chain member (#tail) while a chain runs. Undefined once lost.
   */
  #group: AllocationGroup | undefined;
  /** The newest member of the running chain: it holds the group until reclaim() or its settling returns it. */
  #tail: Member | undefined;
  /** Members not settled yet (disposed with the forward). */
  readonly #unsettled = new Set<Member>();
  /** Chained mode: prompt ids staged for step_ids, [maxSeq] u32 in the group, and its host-side copy. */
  readonly #staged: Allocation | undefined;
  readonly #stagedHost: Uint32Array;
  readonly #plan: ForwardPlan;
  readonly #variant: QMatmulVariant;
  readonly #embed: Matrix;
  readonly #classifier: Matrix;
  readonly #outputNorm: DescriptorSlot;
  readonly #layers: readonly LayerSlots[];
  readonly #act: Readonly<Record<string, Allocation>>;
  /** Ids of one step: [maxBatch], or (parts + 1) blocks of maxBatch for a split embedding. */
  readonly #ids: Allocation;
  /** Split embedding: one [maxBatch, dim] block per part. */
  readonly #embedScratch: Allocation | undefined;
  /** Split matrices at M > 1: [maxBatch, rows of the largest part]. */
  readonly #splitScratch: Allocation | undefined;
  readonly #logits: Allocation;
  readonly #next: DescriptorSlot;
  /** Per-row logits [maxBatch, vocab] and argmax [maxBatch] for verification passes. */
  readonly #rowLogits: Allocation;
  readonly #rowNext: Allocation;
  readonly #graphs = new Map<string, GraphEntry>();
  /** #chainGraph's single-token entries of #graphs: [staged, staged sampled, device, device sampled]. */
  readonly #singleGraphs: (GraphEntry | undefined)[] = [undefined, undefined, undefined, undefined];
  /** Observation buffer [nLayers * maxBatch, dim] in the state group; allocated by the first `layers` run. */
  #hidden: Allocation | undefined;
  /** Fused list, cache longer than one split: positions per split and the partials [1, heads, splits, headDim + 2]. */
  readonly #attentionSplit: { readonly len: number; readonly part: Allocation } | undefined;
  #lost: TenonError | undefined;
  /** Bounded residency: the window and each layer's slot descriptors ([layer][entry]); undefined when resident. */
  readonly #window: { readonly window: LayerWindow; readonly descriptors: readonly (readonly DescriptorSlot[])[]; readonly experts: readonly (readonly (readonly DescriptorSlot[])[])[] } | undefined;
  /** Expert cache: an alias of the routed ids [T * used] per token count, for their readback. */
  readonly #routeIdViews = new Map<number, DescriptorSlot>();
  /** Resident: packed bytes of each layer (for the report). */
  readonly #layerPacked: readonly number[];
  /** Tokens the resident forward ran (report). */
  #residentTokens = 0;

  private constructor(
    runtime: Runtime,
    model: LoadedModel,
    weights: MaterializedWeights,
    maxSeq: number,
    maxBatch: number,
    group: AllocationGroup,
    parts: {
      window: { readonly window: LayerWindow; readonly descriptors: readonly (readonly DescriptorSlot[])[]; readonly experts: readonly (readonly (readonly DescriptorSlot[])[])[] } | undefined;
      layerPacked: readonly number[];
      plan: ForwardPlan;
      variant: QMatmulVariant;
      embed: Matrix;
      classifier: Matrix;
      outputNorm: DescriptorSlot;
      layers: LayerSlots[];
      act: Record<string, Allocation>;
      ids: Allocation;
      embedScratch: Allocation | undefined;
      splitScratch: Allocation | undefined;
      logits: Allocation;
      next: DescriptorSlot;
      rowLogits: Allocation;
      rowNext: Allocation;
      staged: Allocation | undefined;
      activationBytes: number;
      kernels: KernelMode;
      attentionSplit: { readonly len: number; readonly part: Allocation } | undefined;
    },
  ) {
    this.runtime = runtime;
    this.model = model;
    this.config = model.config;
    this.maxSeq = maxSeq;
    this.maxBatch = maxBatch;
    this.#window = parts.window;
    this.#layerPacked = parts.layerPacked;
    this.weightBytes = weights.packedBytes + (parts.window === undefined ? 0 : parts.window.window.plan.slots * parts.window.window.plan.slotBytes);
    this.weightBytesByKind = weights.bytesByKind;
    this.#group = group;
    this.#plan = parts.plan;
    this.#variant = parts.variant;
    this.#embed = parts.embed;
    this.#classifier = parts.classifier;
    this.#outputNorm = parts.outputNorm;
    this.#layers = parts.layers;
    this.#act = parts.act;
    this.#ids = parts.ids;
    this.#embedScratch = parts.embedScratch;
    this.#splitScratch = parts.splitScratch;
    this.#logits = parts.logits;
    this.#next = parts.next;
    this.#rowLogits = parts.rowLogits;
    this.#rowNext = parts.rowNext;
    this.#staged = parts.staged;
    this.#stagedHost = new Uint32Array(parts.staged === undefined ? 0 : maxSeq);
    this.mode = parts.staged === undefined ? 'plain' : 'chained';
    this.#activationBytes = parts.activationBytes;
    this.kernels = parts.kernels;
    this.#attentionSplit = parts.attentionSplit;
  }

  /**
   * Uploads every weight of `model` to the runtime's provider (materializeWeights: packed by lowering
   * kind, split by rows under the binding limit), allocates the KV caches and activations, and checks
   * what the kernels need, all before the forward exists. Refusals before any allocation: EINVAL
   * `bad-max-seq` | `bad-max-batch` | `bad-rope-freqs`, ENOMEM `activation-exceeds-binding` (a buffer
   * of maxBatch rows passes the binding limit: use a smaller maxBatch), ENOTSUP `expert-split` (an expert
   * tensor whose parts would cut an expert), and materializeWeights' own. On failure everything allocated
   * so far is released.
   */
  static async create(runtime: Runtime, model: LoadedModel, options: LlamaForwardOptions = {}): Promise<LlamaForward> {
    const op = 'LlamaForward.create';
    const c = model.config;
    const entry = model.architecture;
    const maxSeq = options.maxSeq ?? Math.min(c.contextLength, DEFAULT_MAX_SEQ);
    const maxBatch = Math.min(options.maxBatch ?? DEFAULT_MAX_BATCH, maxSeq);
    if (!Number.isSafeInteger(maxSeq) || maxSeq < 1 || maxSeq > c.contextLength) {
      throw new TenonError('EINVAL', `maxSeq must be in 1..${c.contextLength}`, { op, reason: 'bad-max-seq' });
    }
    if (!Number.isSafeInteger(maxBatch) || maxBatch < 1) throw new TenonError('EINVAL', 'maxBatch must be a positive integer', { op, reason: 'bad-max-batch' });
    const decode = options.decode ?? 'chained';
    if (!DECODE_MODES.includes(decode)) throw new TenonError('EINVAL', `decode must be one of ${DECODE_MODES.join(', ')}`, { op, reason: 'bad-decode-mode' });
    const provider = runtime.provider as HostProvider | WebGPUProvider;
    const residency = checkPolicy(options.residency, op);
    const adapter = provider.kind === 'webgpu' ? classifyAdapter(provider.adapterInfo) : undefined;
    const kernels = options.kernels ?? defaultKernels(adapter, residency.kind === 'bounded');
    if (!KERNEL_MODES.includes(kernels)) throw new TenonError('EINVAL', `kernels must be one of ${KERNEL_MODES.join(', ')}`, { op, reason: 'bad-kernels' });
    const splitLen = options.attentionSplit ?? ATTENTION_SPLIT_POSITIONS;
    if (!Number.isSafeInteger(splitLen) || splitLen < 1) throw new TenonError('EINVAL', 'attentionSplit must be a positive integer', { op, reason: 'bad-attention-split' });
    const fused = kernels === 'fused';
    if (residency.kind === 'bounded' && fused) throw new TenonError('ENOTSUP', 'a bounded window runs the op-by-op kernels', { op, reason: 'bounded-needs-unfused' });
    const splitAttention = fused && maxSeq > splitLen;
    const ropeFactors = await ropeFactorsOf(model);
    const plan: ForwardPlan = { ropeStyle: entry.ropeStyle, ropeFactors, eps: c.rmsEps, theta: c.ropeTheta };
    let fastest = 0;
    for (const f of ropeTable({ count: 1, heads: 1, headDim: c.headDim, pos0: 0, theta: plan.theta, ...(ropeFactors === undefined ? {} : { freqFactors: ropeFactors }) })) fastest = Math.max(fastest, f);
    if ((maxSeq - 1) * fastest > ROPE_MAX_POSITION) {
      throw new TenonError('EINVAL', `RoPE angles past ${ROPE_MAX_POSITION} radians: maxSeq must be smaller`, { op, reason: 'bad-max-seq' });
    }

    // Everything that can be refused is refused before the first allocation.
    const limit = bindingLimit(provider, options.maxBindingBytes);
    const layout = planWeights(model, provider, options.maxBindingBytes === undefined ? {} : { maxBindingBytes: options.maxBindingBytes });
    const partsOf = new Map(layout.tensors.map((t) => [t.name, t.parts]));
    if (entry.ffn === 'routed') {
      for (const t of model.tensors) {
        if (t.geometry.shape.length !== 3) continue;
        const matrixRows = t.geometry.shape[1]!;
        for (const p of partsOf.get(t.name)!) {
          if (p.firstRow % matrixRows !== 0 || p.rows % matrixRows !== 0) {
            unsupported('expert-split', `a binding of ${limit} bytes cannot hold one expert of ${t.name}`, { tensor: t.name, limit });
          }
        }
      }
    }
    const embedParts = partsOf.get(model.globals.tokenEmbedding.name)!.length;
    const chained = decode === 'chained' && embedParts === 1 && residency.kind === 'resident';
    const classifierTensor = c.tiedOutput ? model.globals.tokenEmbedding : model.globals.output;
    let largestSplitPart = 0;
    for (const t of model.tensors) {
      const parts = partsOf.get(t.name)!;
      if (parts.length > 1 && t !== model.globals.tokenEmbedding) for (const p of parts) largestSplitPart = Math.max(largestSplitPart, p.rows);
    }
    if (partsOf.get(classifierTensor.name)!.length > 1) for (const p of partsOf.get(classifierTensor.name)!) largestSplitPart = Math.max(largestSplitPart, p.rows);
    // Fused list: a layer whose Q, K or V matrix is split projects into a qkv scratch first.
    const qkvSplit = fused && model.layers.some((t) => [t.attnQ, t.attnK, t.attnV].some((m) => m !== undefined && partsOf.get(m.name)!.length > 1));
    // The unfused list copies a split matrix's M > 1 rows through a scratch; the fused list writes parts in
    // place (only a routed FFN's router still goes through it).
    const needsSplitScratch = largestSplitPart > 0 && (!fused || entry.ffn === 'routed');
    const widths = activationWidths(c, entry);
    // The unfused list (both providers) projects a one-row step's Q/K/V into a qkv row for fused_rope_kv.
    if (qkvSplit || !fused) widths['qkv'] = ['f32', c.qDim + 2 * c.kvDim];
    const attentionParts = splitAttention ? c.heads * maxSplits(maxSeq, splitLen) * (c.headDim + 2) : 0;
    const buffers: [string, number][] = [
      ...Object.entries(widths).map(([name, [, width]]): [string, number] => [name, maxBatch * width * F32_BYTES]),
      ['ids', (embedParts > 1 ? embedParts + 1 : 1) * maxBatch * U32_BYTES],
      ['rowLogits', maxBatch * c.vocabSize * F32_BYTES],
      ['kvCache', maxSeq * c.kvDim * F32_BYTES],
      ...(chained ? [['staged', maxSeq * U32_BYTES] as [string, number]] : []),
      ...(embedParts > 1 ? [['embedScratch', embedParts * maxBatch * c.dim * F32_BYTES] as [string, number]] : []),
      ...(needsSplitScratch ? [['splitScratch', maxBatch * largestSplitPart * F32_BYTES] as [string, number]] : []),
      ...(splitAttention ? [['attentionParts', attentionParts * F32_BYTES] as [string, number]] : []),
    ];
    for (const [name, bytes] of buffers) {
      if (bytes > limit) {
        throw new TenonError('ENOMEM', `${name} takes ${bytes} bytes, a binding at most ${limit}; use a smaller maxBatch or maxSeq`, { op, reason: 'activation-exceeds-binding', ids: { buffer: name, bytes, limit } });
      }
    }

    // Bounded: the window is planned (EINVAL budget-below-layer) before anything is allocated; only the
    // globals are materialized, the layers are read by range into the window's slots when they are filled.
    const windowPlan = residency.kind === 'bounded' ? planWindow(model, partsOf, residency.bytes, op, residency.experts, residency.overlap !== false) : undefined;
    const window = windowPlan === undefined ? undefined : await LayerWindow.create(model, windowPlan);
    const globalsOnly: LoadedModel = { ...model, tensors: model.tensors.filter((t) => t.layer === undefined), layers: [] };
    const weights = await materializeWeights(window === undefined ? model : globalsOnly, provider, {
      ...(options.maxBindingBytes === undefined ? {} : { maxBindingBytes: options.maxBindingBytes }),
      ...(options.onProgress === undefined ? {} : { onProgress: options.onProgress }),
      ...(options.signal === undefined ? {} : { signal: options.signal }),
    });
    const group = weights.group.take();
    /** The group while create() holds it (undefined while the attention vectors are being filled). */
    let held: AllocationGroup | undefined = group;
    try {
      let activationBytes = 0;
      /** Fused list with biases: copies into each layer's combined attention vector. */
      const copies: VectorCopy[] = [];
      const blank = async (dtype: DType, shape: number[], activation = true): Promise<Allocation> => {
        const r = group.insert(await zeros(provider, dtype, shape));
        if (activation) activationBytes += shape.reduce((a, b) => a * b, 1) * (dtype === 'u32' ? U32_BYTES : F32_BYTES);
        return { allocation: r.allocation, slot: r.descriptor };
      };
      const layers: LayerSlots[] = [];
      const slotAllocations: AllocationSlot[] = [];
      const slotDescriptors: DescriptorSlot[][] = [];
      if (windowPlan !== undefined) {
        for (let s = 0; s < windowPlan.slots; s++) slotAllocations.push((await blank('u32', [windowPlan.slotBytes / U32_BYTES], false)).allocation);
      }
      /** Expert cache: [layer][slot][gate, up, down] descriptors, and the matrices the graphs bind. */
      const expertDescriptors: DescriptorSlot[][][] = [];
      const expertSlots: CachedExpert[][] = [];
      const ep = windowPlan?.experts;
      if (ep !== undefined) {
        for (let l = 0; l < c.layers; l++) {
          const perLayer: DescriptorSlot[][] = [];
          const matrices: CachedExpert[] = [];
          for (let s = 0; s < ep.slotsPerLayer; s++) {
            const at = (await blank('u32', [ep.slotBytes / U32_BYTES], false)).allocation;
            const three = ep.layers[l]!.map((e) => group.alias(at, e.dtype, { shape: [e.rows, e.rowWords], byteOffset: e.offset }));
            perLayer.push(three);
            const [gate, up, down] = ep.layers[l]!.map((e, i): Matrix => {
              const t = model.layers[l]![e.role]!;
              return { name: `${t.name}@slot${s}`, kind: t.kind.name, dtype: e.dtype, rows: e.rows, k: t.geometry.rowElements, matrixRows: e.rows, parts: [{ firstRow: 0, rows: e.rows, slot: three[i]!, shape: [e.rows, e.rowWords] }] };
            });
            matrices.push({ gate: gate!, up: up!, down: down! });
          }
          expertDescriptors.push(perLayer);
          expertSlots.push(matrices);
        }
      }
      for (let l = 0; l < c.layers; l++) {
        let w = weights.layers[l]!;
        if (windowPlan !== undefined) {
          const entries = windowPlan.layers[l]!.entries;
          const at = slotAllocations[l % windowPlan.slots]!;
          const descriptors = entries.map((e) => group.alias(at, e.dtype, { shape: [...e.shape], byteOffset: e.offset }));
          slotDescriptors.push(descriptors);
          w = slotWeights(model, l, entries, at, descriptors);
        }
        const role = (r: LayerRole): WeightTensor => need<WeightTensor>(w[r], `blk.${l} ${r}`);
        const ffn: DenseFfn | RoutedFfn =
          entry.ffn === 'routed'
            ? {
                kind: 'routed',
                router: matrixOf(role('ffnRouter')),
                gate: matrixOf(role('ffnGateExperts')),
                up: matrixOf(role('ffnUpExperts')),
                down: matrixOf(role('ffnDownExperts')),
                experts: c.experts,
                used: c.expertsUsed,
                renormalize: need(entry.routing, 'routing').renormalize,
                ...(ep === undefined ? {} : { cache: expertSlots[l]! }),
              }
            : { kind: 'dense', gate: matrixOf(role('ffnGate')), up: matrixOf(role('ffnUp')), down: matrixOf(role('ffnDown')) };
        layers.push({
          attnNorm: vectorOf(role('attnNorm')),
          q: matrixOf(role('attnQ')),
          k: matrixOf(role('attnK')),
          v: matrixOf(role('attnV')),
          o: matrixOf(role('attnOutput')),
          bias: entry.attentionBias ? { q: vectorOf(role('attnQBias')), k: vectorOf(role('attnKBias')), v: vectorOf(role('attnVBias')) } : undefined,
          attnVec: fused && entry.attentionBias ? await attentionVector(blank, copies, c, [role('attnNorm'), role('attnQBias'), role('attnKBias'), role('attnVBias')]) : undefined,
          ffnNorm: vectorOf(role('ffnNorm')),
          ffn,
          kCache: (await blank('f32', [maxSeq, c.kvDim], false)).slot,
          vCache: (await blank('f32', [maxSeq, c.kvDim], false)).slot,
        });
      }
      const act: Record<string, Allocation> = {};
      for (const [name, [dtype, width]] of Object.entries(widths)) act[name] = await blank(dtype, [maxBatch, width]);
      const embed = matrixOf(weights.globals.tokenEmbedding);
      const classifier = matrixOf(c.tiedOutput ? weights.globals.tokenEmbedding : weights.globals.output);
      const ids = await blank('u32', [(embed.parts.length > 1 ? embed.parts.length + 1 : 1) * maxBatch]);
      const embedScratch = embed.parts.length > 1 ? await blank('f32', [embed.parts.length * maxBatch, c.dim]) : undefined;
      const splitScratch = needsSplitScratch ? await blank('f32', [maxBatch * largestSplitPart]) : undefined;
      const logits = await blank('f32', [1, c.vocabSize]);
      const next = (await blank('u32', [1])).slot;
      const rowLogits = await blank('f32', [maxBatch, c.vocabSize]);
      const rowNext = await blank('u32', [maxBatch]);
      const staged = chained ? await blank('u32', [maxSeq]) : undefined;
      const variant: QMatmulVariant = provider.kind === 'webgpu' ? qmatmulVariant(provider as WebGPUProvider) : 'plain';
      const attentionSplit = splitAttention ? { len: splitLen, part: await blank('f32', [1, c.heads, maxSplits(maxSeq, splitLen), c.headDim + 2]) } : undefined;
      if (copies.length > 0) {
        held = undefined;
        held = await fillVectors(runtime, group, copies);
      }
      const layerPacked = windowPlan === undefined ? weights.layers.map((lw) => Object.values(lw).reduce((n, t) => n + t.packedBytes, 0)) : [];
      return new LlamaForward(runtime, model, weights, maxSeq, maxBatch, held, {
        window: window === undefined ? undefined : { window, descriptors: slotDescriptors, experts: expertDescriptors },
        layerPacked,
        plan,
        variant,
        embed,
        classifier,
        outputNorm: vectorOf(weights.globals.outputNorm),
        layers,
        act,
        ids,
        embedScratch,
        splitScratch,
        logits,
        next,
        rowLogits,
        rowNext,
        staged,
        activationBytes,
        kernels,
        attentionSplit,
      });
    } catch (err) {
      held?.dispose();
      throw err;
    }
  }

  /** Whether the state was lost (a step ended completion-unproven); every later step fails ENODEV. */
  get lost(): boolean {
    return this.#lost !== undefined;
  }

  /** The residency policy chosen at construction. */
  get residencyPolicy(): ResidencyKind {
    return this.#window === undefined ? 'resident' : 'bounded';
  }

  /** Which residency runs, the window's bytes and the bytes uploaded per token (residency.ts). */
  residency(): ResidencyReport {
    return this.#window === undefined ? residentReport(this.#layerPacked, this.#residentTokens) : this.#window.window.report();
  }

  /** The bounded window's fault seam (residency.ts WindowFaults); undefined when resident. */
  get residencyFaults(): LayerWindow['faults'] | undefined {
    return this.#window?.window.faults;
  }

  /** The model state, for callers that inspect or checkpoint it between steps (e.g. KV bytes). */
  get group(): AllocationGroup {
    return this.#live('forward.group');
  }

  /** Descriptor slots of layer `l`'s K and V caches in the state group. */
  cacheSlots(layer: number): { k: DescriptorSlot; v: DescriptorSlot } {
    const l = this.#layers[layer];
    if (l === undefined) throw new TenonError('EINVAL', `no layer ${layer}`, { op: 'forward.cacheSlots', reason: 'bad-layer' });
    return { k: l.kCache, v: l.vCache };
  }

  get layers(): number {
    return this.#layers.length;
  }

  /** Row parts of the token embedding and of the classifier (1 each unless a binding limit split them). */
  get parts(): { readonly embedding: number; readonly classifier: number } {
    return { embedding: this.#embed.parts.length, classifier: this.#classifier.parts.length };
  }

  /** Bytes of the layer-observation buffer: 0 until a run asked for layer outputs. */
  get observationBytes(): number {
    return this.#hidden === undefined ? 0 : this.#layers.length * this.maxBatch * this.config.dim * F32_BYTES;
  }

  /** Bytes of the activation buffers (ids, scratch, logits included) plus the observation buffer. */
  get activationBytes(): number {
    return this.#activationBytes + this.observationBytes;
  }

  /**
   * Dispatches per replay of a step of T tokens whose ids the host writes (T = 1: a decode step), from the
   * `kernels` list in use; compiles that graph if it does not exist yet. Needs the state in hand (EBUSY
   * while a chain holds it); EINVAL `bad-batch` for T outside 1..maxBatch.
   */
  stepDispatches(T = 1): number {
    const op = 'forward.stepDispatches';
    if (!Number.isSafeInteger(T) || T < 1 || T > this.maxBatch) throw new TenonError('EINVAL', `1..${this.maxBatch} tokens per step`, { op, reason: 'bad-batch' });
    return this.#graphFor(T, false, false, 'ids', this.#live(op)).graph.stats().dispatchesPerReplay;
  }

  /**
   * Runs tokens at positions pos0..pos0+T-1 through the model (T <= maxBatch), writing their K/V rows, and
   * returns the last position's logits. Throws TenonError before anything ran for bad input; a failure
   * after admission throws the outcome's cause, with the state returned (retired-failed) or lost
   * (completion-unproven).
   */
  async run(tokens: readonly number[], pos0: number, options: RunOptions = {}): Promise<StepResult> {
    const op = 'forward.run';
    this.#checkStep(op, tokens, pos0, this.maxBatch);
    // A running chain ends first: a plain step needs the group in hand.
    const failure = await this.reclaim();
    if (failure !== undefined) throw failure;
    const group = this.#live(op);
    const T = tokens.length;
    const allRows = options.allRows === true;
    const layers = options.layers === true;
    if (layers && this.#hidden === undefined) {
      const provider = this.runtime.provider as HostProvider | WebGPUProvider;
      const r = group.insert(await zeros(provider, 'f32', [this.#layers.length * this.maxBatch, this.config.dim]));
      this.#hidden = { allocation: r.allocation, slot: r.descriptor };
    }
    // Resident: one submission of every layer. Bounded: one per window of layers, each preceded by the
    // uploads of its layers into their slots (only while the group is in hand: the submission that read a
    // slot before has returned it with a proven outcome).
    const bounded = this.#window;
    const ranges: (LayerRange | undefined)[] = [];
    const cache = bounded?.window.experts;
    if (bounded === undefined) ranges.push(undefined);
    else if (cache !== undefined) {
      for (let l = 0; l < this.#layers.length; l++) for (const phase of ['attn', 'experts', 'combine'] as const) ranges.push({ first: l, end: l + 1, phase });
    } else for (let first = 0, n = bounded.window.plan.layersPerSubmission; first < this.#layers.length; first += n) ranges.push({ first, end: Math.min(first + n, this.#layers.length) });
    let back = group;
    let entry: GraphEntry | undefined;
    if (bounded?.window.plan.overlap === true) {
      ({ back, entry } = await this.#overlapped(ranges as LayerRange[], T, allRows, layers, tokens, pos0, group));
      ranges.length = 0;
    }
    for (const [i, range] of ranges.entries()) {
      entry = this.#graphFor(T, allRows, layers, 'ids', back, false, range);
      if (range?.phase === 'experts') {
        back = await this.#expertRounds(entry.graph, back, pos0, T, range.first);
        continue;
      }
      if (bounded !== undefined && range?.phase !== 'combine') {
        const held = back;
        for (let l = range!.first; l < range!.end; l++) {
          await bounded.window.acquire(l, async (layer, index, _e, data) => {
            using m = held.viewMut(bounded.descriptors[layer]![index]!);
            await m.write(data);
          });
        }
      }
      if (i === 0) {
        using m = back.viewMut<'u32'>(entry.ids);
        await m.write(this.#idsFor(tokens));
      }
      back = await this.#submitPlain(entry.graph, back, pos0);
    }
    if (bounded === undefined) this.#residentTokens += T;
    else bounded.window.countTokens(T);
    const { logits: logitsSlot, next: nextSlot } = entry!;
    let logits: Float32Array = NO_LOGITS;
    let next: Uint32Array = new Uint32Array(0);
    let hidden: Float32Array | undefined;
    {
      if (options.logits !== false) {
        using lv = back.view<'f32'>(logitsSlot);
        logits = await lv.toArray();
        using nv = back.view<'u32'>(nextSlot);
        next = await nv.toArray();
      }
      if (layers) {
        using hv = back.view<'f32'>(this.#hidden!.slot);
        hidden = await hv.toArray();
      }
    }
    const vocab = this.config.vocabSize;
    const result = { logits: logits.subarray(Math.max(0, logits.length - vocab)), argmax: next[next.length - 1] ?? NO_ARGMAX, argmaxRows: Array.from(next), rowLogits: logits };
    if (hidden === undefined) return result;
    const stride = this.maxBatch * this.config.dim;
    const rows = T * this.config.dim;
    return { ...result, layers: this.#layers.map((_, l) => hidden.slice(l * stride, l * stride + rows)) };
  }

  /**
   * Expert cache: reads back the ids the router picked for layer `l` (4 bytes per token and choice), then
   * per round of at most slotsPerLayer distinct experts makes them present in the cache (the group is in
   * hand: every earlier reader of the slots is proven complete) and replays the experts graph with each
   * slot's expert as a step value.
   */
  async #expertRounds(graph: CompiledGraph, group: AllocationGroup, pos0: number, T: number, l: number): Promise<AllocationGroup> {
    const bounded = this.#window!;
    const cache = bounded.window.experts!;
    const used = this.config.expertsUsed;
    let view = this.#routeIdViews.get(T);
    if (view === undefined) {
      view = group.alias(this.#act['routeIds']!.allocation, 'u32', { shape: [T * used] });
      this.#routeIdViews.set(T, view);
    }
    let ids: Uint32Array;
    {
      using v = group.view<'u32'>(view);
      ids = await v.toArray();
    }
    let back = group;
    for (const round of cache.rounds(ids)) {
      const held = back;
      await cache.ensure(l, round, async (layer, slot, index, data) => {
        using m = held.viewMut(bounded.experts[layer]![slot]![index]!);
        await m.write(data);
      });
      const step: Record<string, number> = { pos: pos0 };
      cache.holder(l).forEach((expert, i) => {
        // A slot serves only this round's experts (an earlier round's pairs keep their rows).
        step[slotKey(i)] = expert >= 0 && round.includes(expert) ? expert : this.config.experts;
      });
      back = await this.#submitPlain(graph, back, pos0, step);
    }
    return back;
  }

  /**
   * Bounded, overlapped schedule (WindowPlan.overlap): the step's windows of floor(slots / 2) layers run as
   * members of one chain on the group. The first window's layers are written with the group in hand; every
   * later window's layers are staged (runtime.stageWrite) while the window before it computes: window k+1's
   * slots were last read by window k-1 or earlier (each window takes at most half the slots, layer l in
   * slot l mod slots), so before its first upload the members up to k-1 are waited for (proven, passed
   * on), and the runtime refuses the write (EBUSY slot-in-flight) if any in-flight member may read the
   * slot. A failure part-way (a layer read, a refused member) stops staging; the last admitted member then
   * brings the group back (or the loss fences the forward) and the failure is thrown.
   */
  async #overlapped(ranges: readonly LayerRange[], T: number, allRows: boolean, layers: boolean, tokens: readonly number[], pos0: number, group: AllocationGroup): Promise<{ back: AllocationGroup; entry: GraphEntry }> {
    const bounded = this.#window!;
    const window = bounded.window;
    // Every window's graph is compiled while the group is in hand (the chain holds it afterwards).
    const entries = ranges.map((range) => this.#graphFor(T, allRows, layers, 'ids', group, false, range));
    for (let l = ranges[0]!.first; l < ranges[0]!.end; l++) {
      await window.acquire(l, async (layer, index, _e, data) => {
        using m = group.viewMut(bounded.descriptors[layer]![index]!);
        await m.write(data);
      });
    }
    {
      using m = group.viewMut<'u32'>(entries[0]!.ids);
      await m.write(this.#idsFor(tokens));
    }
    const step = { pos: pos0 };
    this.#group = undefined;
    const handles: ChainHandle[] = [
      await this.runtime.chain(entries[0]!.graph, group, { step }).catch((err: unknown) => {
        this.#group = group; // rejected before admission: still ours, untouched
        throw err;
      }),
    ];
    /** Members whose outcome was taken (in order). */
    let taken = 0;
    const takePassed = async (): Promise<void> => {
      const outcome = await handles[taken++]!.wait();
      if (outcome.kind === 'passed-on') outcome.fresh.dispose();
      else if (outcome.kind === 'completion-unproven') {
        this.#lost = outcome.cause;
        throw outcome.cause;
      }
      // passed-on-failed: the last member carries the chain's failure with the group.
    };
    let failure: unknown;
    try {
      for (let k = 1; k < ranges.length; k++) {
        const current = handles[k - 1]!;
        // The slots of window k were last read by windows <= k-2: before uploading into them, wait until
        // those are proven (outside the upload, which the counters time).
        let uploads = false;
        for (let l = ranges[k]!.first; l < ranges[k]!.end; l++) uploads ||= !window.holds(window.slotOf(l), l);
        if (uploads) while (taken < k - 1) await takePassed();
        for (let l = ranges[k]!.first; l < ranges[k]!.end; l++) {
          await window.acquire(l, (layer, index, _e, data) => this.runtime.stageWrite(current, bounded.descriptors[layer]![index]!, data), true);
        }
        handles.push(await current.chain(entries[k]!.graph, { step }));
      }
    } catch (err) {
      failure = err;
    }
    if (this.#lost !== undefined) throw this.#lost;
    while (taken < handles.length - 1) await takePassed();
    const outcome = await handles[handles.length - 1]!.wait();
    if (outcome.kind === 'completion-unproven') {
      this.#lost = outcome.cause;
      throw outcome.cause;
    }
    if (outcome.kind === 'retired-failed') {
      this.#group = outcome.inputs;
      throw outcome.cause;
    }
    if (outcome.kind !== 'completed') throw new TenonError('EIO', 'the last member of a step passed its group on', { op: 'forward.run', reason: 'chain-passed-on' });
    const back = outcome.bundle.intoGroup().group;
    this.#group = back;
    if (failure !== undefined) throw failure;
    return { back, entry: entries[entries.length - 1]! };
  }

  /** Submits one plain step on the group and waits for its proven outcome; returns the group. */
  async #submitPlain(graph: CompiledGraph, group: AllocationGroup, pos0: number, step: StepValues = { pos: pos0 }): Promise<AllocationGroup> {
    this.#group = undefined;
    const handle = await this.runtime.submit(graph, group, { step }).catch((err: unknown) => {
      this.#group = group; // rejected before admission: still ours, untouched
      throw err;
    });
    const outcome = await handle.wait();
    if (outcome.kind === 'completion-unproven') {
      this.#lost = outcome.cause;
      throw outcome.cause;
    }
    if (outcome.kind === 'retired-failed') {
      this.#group = outcome.inputs;
      throw outcome.cause;
    }
    const back = outcome.bundle.intoGroup().group;
    this.#group = back;
    return back;
  }

  /** Ends the forward: releases every tensor of the state (unless lost) and the compiled graphs. */
  dispose(): void {
    for (const { graph } of this.#graphs.values()) graph.dispose();
    this.#graphs.clear();
    this.#singleGraphs.fill(undefined);
    // Chain members still unsettled stop being observed; the runtime releases what they carry (the group,
    // with the newest one) once each is decided, or retains it if one cannot be proven.
    for (const m of this.#unsettled) m.handle.dispose();
    this.#unsettled.clear();
    this.#tail = undefined;
    this.#group?.dispose();
    this.#group = undefined;
  }

  /**
   * Chained mode: submits one step (T tokens, or the device's last choice) at positions pos0.. as members
   * of the running chain, or of a new one on the group, without waiting for anything; returns the last
   * member. Tokens of a prompt longer than maxBatch are staged once (one writeBuffer, after the running
   * chain ended: its members no longer read the staged ids) and run in chunks of maxBatch, each reading its
   * ids at its offset; earlier chunks read nothing back. A single token travels in the step's uniform. With
   * `readback`, the last member reads back its chosen id (4 bytes) with its proof (see settle). Throws
   * before anything was submitted for bad input (EINVAL `bad-batch` | `context-full` | `bad-token`),
   * ENOTSUP `not-chained` in plain mode, ENODEV once lost, or the runtime's refusal (the chain and the group
   * are then as they were).
   */
  async enqueue(input: StepInput, pos0: number, options: { readonly readback: boolean; readonly choice?: DeviceChoice }): Promise<ChainedStep> {
    const op = 'forward.enqueue';
    if (this.mode !== 'chained') throw new TenonError('ENOTSUP', 'this forward runs plain steps', { op, reason: 'not-chained' });
    const tokens = input.kind === 'tokens' ? input.tokens : undefined;
    if (tokens !== undefined) this.#checkStep(op, tokens, pos0, this.maxSeq);
    else this.#checkStep(op, [0], pos0, 1);
    const n = tokens?.length ?? 1;
    if (tokens !== undefined && n > 1) {
      const failure = await this.reclaim();
      if (failure !== undefined) throw failure;
      const staged = this.#stagedHost;
      staged.set(tokens);
      using m = this.#live(op).viewMut<'u32'>(this.#staged!.slot);
      await m.write(staged);
    }
    // Graphs are compiled while the group is in hand (compiling adds alias descriptors to it); a chain
    // starts only from there, so the single-token graphs exist before any member needs them mid-chain.
    const source: IdsSource = tokens === undefined ? 'device' : 'staged';
    let chunks = ONE_CHUNK;
    if (n > 1) {
      const sizes: number[] = [];
      for (let at = 0; at < n; at += this.maxBatch) sizes.push(Math.min(this.maxBatch, n - at));
      chunks = sizes;
    }
    // The choice: argmax, or the sample op (its options travel in the step's uniform).
    const choice = options.choice?.kind === 'sample' ? options.choice : undefined;
    const sampled = choice !== undefined;
    if (this.#tail !== undefined && chunks.some((T) => this.#chainGraph(T, source, sampled) === undefined)) {
      // A graph this step needs does not exist yet (a first sampled step on a chain of greedy ones): the
      // chain ends so that the group is in hand to compile it.
      const failure = await this.reclaim();
      if (failure !== undefined) throw failure;
    }
    if (this.#tail === undefined) {
      const group = this.#live(op);
      for (const T of chunks === ONE_CHUNK ? chunks : new Set([1, ...chunks])) {
        if (this.#chainGraph(T, 'staged', sampled) === undefined) this.#graphFor(T, false, false, 'staged', group, sampled);
      }
      if (this.#chainGraph(1, 'device', sampled) === undefined) this.#graphFor(1, false, false, 'device', group, sampled);
    }
    let last: Member | undefined;
    for (let c = 0, at = 0; c < chunks.length; at += chunks[c++]!) {
      const T = chunks[c]!;
      const entry = this.#chainGraph(T, source, sampled)!;
      const ids: StepValues = tokens === undefined || n > 1 ? { pos: pos0 + at, at } : { pos: pos0, token: tokens[0]! };
      const step: StepValues = choice === undefined ? ids : { ...ids, temperature: choice.temperature, topP: choice.topP, seed: choice.seed };
      const readback = options.readback && at + T >= n ? [{ slot: this.#next, offset: 0, count: 1 }] : undefined;
      const member = await this.#submitMember(entry.graph, step, readback, pos0 + at, T);
      // An earlier chunk is not settled: the last member's outcome covers it (chain failures are sticky).
      if (last !== undefined) this.#forget(last);
      last = member;
    }
    return last!;
  }

  /**
   * Waits for a step's proven outcome and returns its readback (the chosen id when enqueued with
   * `readback`, else empty). A member followed by another ends passed-on and leaves the group in the
   * chain; the newest one gives the group back. A failure throws its cause (the group comes back with the
   * chain's last member: reclaim); an unprovable member loses the state (ENODEV from then on).
   */
  settle(step: ChainedStep): Promise<Readback> {
    const member = step as Member;
    member.result ??= this.#decide(member);
    return member.result;
  }

  /**
   * Ends the running chain (if any): waits for its newest member and takes the group back. Returns the
   * failure a member reported (the group is back all the same); throws only when the state was lost.
   */
  async reclaim(): Promise<TenonError | undefined> {
    let failure: TenonError | undefined;
    while (this.#tail !== undefined) {
      try {
        await this.settle(this.#tail);
      } catch (err) {
        if (this.#lost !== undefined) throw err;
        failure ??= isTenonError(err) ? err : new TenonError('EIO', String(err), { op: 'forward.reclaim', cause: err });
      }
    }
    return failure;
  }

  /**
   * The logits of the last row the latest step computed and their argmax, downloaded from the group (two
   * readbacks on WebGPU). Call after reclaim(), with no chain running.
   */
  async readLogits(): Promise<StepResult> {
    const op = 'forward.readLogits';
    const group = this.#live(op);
    // try/finally rather than `using` (no lowered disposal stack per decode step); the same releases.
    const lv = group.view<'f32'>(this.#logits.slot);
    let logits: Float32Array;
    try {
      logits = await lv.toArray();
    } finally {
      lv[Symbol.dispose]();
    }
    const nv = group.view<'u32'>(this.#next);
    let next: Uint32Array;
    try {
      next = await nv.toArray();
    } finally {
      nv[Symbol.dispose]();
    }
    return { logits, argmax: next[0]!, argmaxRows: Array.from(next), rowLogits: logits };
  }

  /** Dispatches of a decode step whose token the device chose, once that graph exists (else undefined). */
  get decodeDispatches(): number | undefined {
    return this.#graphs.get(graphKey(1, false, false, 'device'))?.graph.stats().dispatchesPerReplay;
  }

  #checkStep(op: string, tokens: readonly number[], pos0: number, maxTokens: number): void {
    if (this.#lost !== undefined) throw new TenonError('ENODEV', 'the model state was lost with its device', { op, reason: 'state-lost' });
    const T = tokens.length;
    if (T < 1 || T > maxTokens) throw new TenonError('EINVAL', `1..${maxTokens} tokens per step`, { op, reason: 'bad-batch' });
    if (!Number.isSafeInteger(pos0) || pos0 < 0 || pos0 + T > this.maxSeq) {
      throw new TenonError('EINVAL', `positions ${pos0}..${pos0 + T - 1} exceed the cache of ${this.maxSeq}`, { op, reason: 'context-full' });
    }
    for (const t of tokens) {
      if (!Number.isSafeInteger(t) || t < 0 || t >= this.config.vocabSize) throw new TenonError('EINVAL', `token ${t} is outside the vocabulary`, { op, reason: 'bad-token' });
    }
  }

  /** Admits one member: onto the newest member of the running chain, or as the first of a new chain on the group. */
  async #submitMember(graph: CompiledGraph, step: StepValues, readback: { slot: DescriptorSlot; offset: number; count: number }[] | undefined, pos0: number, rows: number): Promise<Member> {
    const options = readback === undefined ? { step } : { step, readback };
    let handle: ChainHandle;
    const tail = this.#tail;
    if (tail !== undefined) {
      // A refusal leaves the tail as it was: still the newest member, still holding the group.
      handle = await tail.handle.chain(graph, options);
    } else {
      const group = this.#live('forward.enqueue');
      this.#group = undefined;
      try {
        handle = await this.runtime.chain(graph, group, options);
      } catch (err) {
        this.#group = group; // rejected before admission: still ours, untouched
        throw err;
      }
    }
    const member: Member = { handle, pos0, rows, result: undefined };
    this.#tail = member;
    this.#unsettled.add(member);
    return member;
  }

  /**
   * The chained-mode graph of T rows (whole-model, last row only), if compiled. Single-token graphs are
   * found again without building their key (one lookup per decode step).
   */
  #chainGraph(T: number, source: IdsSource, sampled: boolean): GraphEntry | undefined {
    if (T !== 1) return this.#graphs.get(graphKey(T, false, false, source, sampled));
    const at = (source === 'device' ? 2 : 0) + (sampled ? 1 : 0);
    let entry = this.#singleGraphs[at];
    if (entry === undefined) {
      entry = this.#graphs.get(graphKey(1, false, false, source, sampled));
      this.#singleGraphs[at] = entry;
    }
    return entry;
  }

  /** Stops observing a member whose successor covers it (its outcome carries nothing of ours). */
  #forget(member: Member): void {
    this.#unsettled.delete(member);
    member.handle.dispose();
  }

  async #decide(member: Member): Promise<Readback> {
    const outcome = await member.handle.wait();
    this.#unsettled.delete(member);
    const newest = this.#tail === member;
    switch (outcome.kind) {
      case 'passed-on':
        return outcome.readback;
      case 'completed':
        this.#group = outcome.bundle.intoGroup().group;
        if (newest) this.#tail = undefined;
        return outcome.readback;
      case 'retired-failed':
        this.#group = outcome.inputs;
        if (newest) this.#tail = undefined;
        throw outcome.cause;
      case 'passed-on-failed':
        throw outcome.cause;
      case 'completion-unproven':
        this.#lost ??= outcome.cause;
        if (newest) this.#tail = undefined;
        throw outcome.cause;
    }
  }

  #live(op: string): AllocationGroup {
    if (this.#lost !== undefined) throw new TenonError('ENODEV', 'the model state was lost with its device', { op, reason: 'state-lost' });
    if (this.#group === undefined) throw new TenonError('EBUSY', 'a step is running', { op, reason: 'step-running' });
    return this.#group;
  }

  /**
   * The ids buffer's contents for one step: the ids themselves, or for an embedding in P parts, P blocks
   * of T ids relative to each part (NO_ROW where the part does not hold the token) and a block of T
   * selections (row p * T + t of the gathered blocks: the block of the part holding token t).
   */
  #idsFor(tokens: readonly number[]): Uint32Array {
    const parts = this.#embed.parts;
    if (parts.length === 1) return Uint32Array.from(tokens);
    const T = tokens.length;
    const out = new Uint32Array((parts.length + 1) * T).fill(NO_ROW);
    tokens.forEach((id, t) => {
      const p = parts.findIndex((part) => id >= part.firstRow && id < part.firstRow + part.rows);
      out[p * T + t] = id - parts[p]!.firstRow;
      out[parts.length * T + t] = p * T + t;
    });
    return out;
  }

  #graphFor(T: number, allRows: boolean, layers: boolean, source: IdsSource, group: AllocationGroup, sampled = false, range?: LayerRange): GraphEntry {
    const key = graphKey(T, allRows, layers, source, sampled, range);
    const head = range === undefined || (range.first === 0 && range.phase !== 'experts' && range.phase !== 'combine');
    const tail = range === undefined || (range.end === this.#layers.length && range.phase !== 'attn' && range.phase !== 'experts');
    const cached = this.#graphs.get(key);
    if (cached !== undefined) return cached;
    const c = this.config;
    const plan = this.#plan;
    const { dim, qDim, kvDim, vocabSize: vocab, heads, kvHeads, headDim } = c;
    const inputs: Record<string, GraphInput> = {};
    const declare = (name: string, slot: DescriptorSlot, dtype: DType, shape: readonly number[]): string => {
      inputs[name] = { slot, dtype, shape };
      return name;
    };
    let aliases = 0;
    /** A new name for `shape` elements of `allocation` starting at element `at` (f32 or u32). */
    const view = (allocation: AllocationSlot, dtype: DType, shape: readonly number[], at: number): string =>
      declare(`view${aliases++}`, group.alias(allocation, dtype, { shape: [...shape], byteOffset: at * F32_BYTES }), dtype, shape);
    // Aliases of the activation buffers with exactly T rows (descriptor slots are append-only and cheap).
    const rows = (name: string, shape: readonly number[]): string => {
      const a = this.#act[name]!;
      const dtype: DType = name === 'routeIds' ? 'u32' : 'f32';
      return declare(name, T === this.maxBatch && shape.length === 2 ? a.slot : group.alias(a.allocation, dtype, { shape: [...shape] }), dtype, shape);
    };
    const d: DispatchSpec<never>[] = [];
    const add = <P>(kernel: DispatchSpec<P>['kernel'], bind: string[], params: DispatchSpec<P>['params']): void => {
      d.push({ kernel, bind, params } as unknown as DispatchSpec<never>);
    };
    const partName = (w: Matrix, p: number): string => {
      const name = `${w.name}#${p}`;
      if (inputs[name] === undefined) declare(name, w.parts[p]!.slot, w.dtype, w.parts[p]!.shape);
      return name;
    };
    /**
     * out = x · Wᵀ for m rows of x; `out` names [m, W.rows] starting at element `outAt` of `outAlloc`.
     * One dispatch per part (see the module comment for how split parts reach their columns).
     */
    const linear = (x: string, w: Matrix, out: string, outAlloc: AllocationSlot, outAt: number, m: number): void => {
      const kernel = w.kind === 'F32' ? matmulNT : qmatmulOp(w.kind, this.#variant);
      if (w.parts.length === 1) {
        add(kernel, [x, partName(w, 0), out], { m, n: w.rows, k: w.k });
        return;
      }
      w.parts.forEach((part, p) => {
        if (m === 1) {
          add(kernel, [x, partName(w, p), view(outAlloc, 'f32', [1, part.rows], outAt + part.firstRow)], { m, n: part.rows, k: w.k });
          return;
        }
        const scratch = this.#splitScratch!.allocation;
        add(kernel, [x, partName(w, p), view(scratch, 'f32', [m, part.rows], 0)], { m, n: part.rows, k: w.k });
        for (let i = 0; i < m; i++) {
          const src = view(scratch, 'f32', [1, part.rows], i * part.rows);
          const dst = view(outAlloc, 'f32', [1, part.rows], outAt + i * w.rows + part.firstRow);
          add(kvWrite, [src, dst], { count: 1, width: part.rows, maxSeq: 1, pos0: 0 });
        }
      });
    };
    /** out[t, j, :] = x[t (, j), :] · W[expert(t, j)]ᵀ, one dispatch per part of whole experts. */
    const expertLinear = (x: string, ids: string, w: Matrix, out: string, used: number, xPerSlot: boolean): void => {
      const kernel = qmatmulExpertOp(w.kind, this.#variant);
      w.parts.forEach((part, p) => {
        add(kernel, [x, ids, partName(w, p), out], {
          tokens: T,
          used,
          experts: part.rows / w.matrixRows,
          expertBase: part.firstRow / w.matrixRows,
          n: w.matrixRows,
          k: w.k,
          xPerSlot,
        });
      });
    };

    const x = rows('x', [T, dim]);
    const xb = rows('xb', [T, dim]);
    const xb2 = rows('xb2', [T, dim]);
    const q = rows('q', [T, qDim]);
    const k = rows('k', [T, kvDim]);
    const v = rows('v', [T, kvDim]);
    const att = rows('att', [T, qDim]);
    const act = (name: string): AllocationSlot => this.#act[name]!.allocation;

    // Token embedding. Chained graphs (one embedding part) take their ids on the device: from `next`
    // (the previous step's choice), or through step_ids from the staged prompt or the step's uniform.
    const embed = this.#embed;
    let idsSlot: DescriptorSlot;
    if (source === 'device') {
      idsSlot = this.#next;
      if (head) declare('ids', idsSlot, 'u32', [T]);
    } else {
      idsSlot = T === this.maxBatch && embed.parts.length === 1 ? this.#ids.slot : group.alias(this.#ids.allocation, 'u32', { shape: [(embed.parts.length > 1 ? embed.parts.length + 1 : 1) * T] });
      if (head) declare('ids', idsSlot, 'u32', [(embed.parts.length > 1 ? embed.parts.length + 1 : 1) * T]);
    }
    if (head && source === 'staged') {
      const staged = this.maxSeq;
      declare('staged', this.#staged!.slot, 'u32', [staged]);
      add(stepIds, ['staged', 'ids'], (s: StepValues): StepIdsParams => {
        const token = s['token'];
        return { count: T, staged, source: token === undefined ? { kind: 'staged', at: s['at'] ?? 0 } : { kind: 'host', token } };
      });
    }
    const lookup = (ids: string, p: number, out: string): void => {
      const part = embed.parts[p]!;
      if (embed.kind === 'F32') add(gather, [ids, partName(embed, p), out], { count: T, vocab: part.rows, dim });
      else add(qgatherOp(embed.kind), [ids, partName(embed, p), out], { count: T, vocab: part.rows, dim });
    };
    if (!head) {
      // A later window of a bounded step: x holds the residual stream the previous submission left.
    } else if (embed.parts.length === 1) lookup('ids', 0, x);
    else {
      const P = embed.parts.length;
      const scratch = this.#embedScratch!.allocation;
      for (let p = 0; p < P; p++) lookup(view(this.#ids.allocation, 'u32', [T], p * T), p, view(scratch, 'f32', [T, dim], p * T * dim));
      add(gather, [view(this.#ids.allocation, 'u32', [T], P * T), view(scratch, 'f32', [P * T, dim], 0), x], { count: T, vocab: P * T, dim });
    }

    const pos = (s: StepValues): number => s['pos'] ?? 0;
    const ropeParams = (count: number, h: number) => (s: StepValues) => ({
      count,
      heads: h,
      headDim,
      pos0: pos(s),
      theta: plan.theta,
      style: plan.ropeStyle,
      ...(plan.ropeFactors === undefined ? {} : { freqFactors: plan.ropeFactors }),
    });
    /** A routed FFN on xb = rmsnorm(x), added into x (both lists). */
    const routedFfn = (f: RoutedFfn): void => {
      const { experts, used, renormalize } = f;
      const ffn = c.ffnDim;
      const routerLogits = rows('routerLogits', [T, experts]);
      const ids = rows('routeIds', [T, used]);
      const weights = rows('routeWeights', [T, used]);
      const gate = rows('expertGate', [T, used, ffn]);
      const up = rows('expertUp', [T, used, ffn]);
      const hidden = rows('expertHidden', [T, used, ffn]);
      const out = rows('expertOut', [T, used, dim]);
      linear(xb, f.router, routerLogits, act('routerLogits'), 0, T);
      add(moeRoute, [routerLogits, ids, weights], { tokens: T, experts, used, renormalize });
      expertLinear(xb, ids, f.gate, gate, used, false);
      expertLinear(xb, ids, f.up, up, used, false);
      add(siluMul, [gate, up, hidden], { n: T * used * ffn });
      expertLinear(hidden, ids, f.down, out, used, true);
      add(moeCombine, [out, weights, x], { tokens: T, used, n: dim, accumulate: true });
    };

    /** Expert cache: one phase of a routed FFN (see LayerRange). */
    const routedPhase = (f: RoutedFfn, phase: 'attn' | 'experts' | 'combine'): void => {
      const { experts, used, renormalize } = f;
      const ffn = c.ffnDim;
      const ids = rows('routeIds', [T, used]);
      const weights = rows('routeWeights', [T, used]);
      const out = rows('expertOut', [T, used, dim]);
      if (phase === 'attn') {
        const routerLogits = rows('routerLogits', [T, experts]);
        linear(xb, f.router, routerLogits, act('routerLogits'), 0, T);
        add(moeRoute, [routerLogits, ids, weights], { tokens: T, experts, used, renormalize });
        return;
      }
      if (phase === 'combine') {
        add(moeCombine, [out, weights, x], { tokens: T, used, n: dim, accumulate: true });
        return;
      }
      const gate = rows('expertGate', [T, used, ffn]);
      const up = rows('expertUp', [T, used, ffn]);
      const hidden = rows('expertHidden', [T, used, ffn]);
      /** One dispatch per cache slot, reading the expert the step names for it (pairs of other experts keep their rows). */
      const cached = (input: string, pick: (e: CachedExpert) => Matrix, output: string, xPerSlot: boolean): void => {
        f.cache!.forEach((slot, i) => {
          const w = pick(slot);
          add(qmatmulExpertOp(w.kind, this.#variant), [input, ids, partName(w, 0), output], (s: StepValues) => ({ tokens: T, used, experts: 1, expertBase: s[slotKey(i)] ?? experts, n: w.matrixRows, k: w.k, xPerSlot }));
        });
      };
      cached(xb, (e) => e.gate, gate, false);
      cached(xb, (e) => e.up, up, false);
      add(siluMul, [gate, up, hidden], { n: T * used * ffn });
      cached(hidden, (e) => e.down, out, true);
    };

    // The fused list (kernels 'fused'; see the module comment).
    const fused = this.kernels === 'fused';
    const variant = this.#variant;
    /** out[:, col + W's rows] = rmsnorm(input) · Wᵀ (rows of `outStride`), one dispatch per part, written in place. */
    const normLinear = (input: string, norm: string, w: Matrix, out: string, outStride: number, col: number, m: number): void => {
      w.parts.forEach((part, p) => {
        add(FUSED_MATVEC.normMatmul[variant], [input, norm, partName(w, p), out], { m, n: part.rows, k: w.k, kind: w.kind, eps: plan.eps, outStride, outCol: col + part.firstRow });
      });
    };
    /** residual[:, W's rows] += input · Wᵀ, one dispatch per part. */
    const addLinear = (input: string, w: Matrix, residual: string): void => {
      w.parts.forEach((part, p) => {
        add(FUSED_MATVEC.matmulAdd[variant], [input, partName(w, p), residual], { m: T, n: part.rows, k: w.k, kind: w.kind, outStride: w.rows, outCol: part.firstRow });
      });
    };
    /** RoPE and KV-cache params of a step (heads, cache, position, theta, pairing, factors), shared by both lists' rotating kernels. */
    const ropeKvOf = (s: StepValues) => ({
      heads,
      kvHeads,
      headDim,
      maxSeq: this.maxSeq,
      pos0: pos(s),
      theta: plan.theta,
      style: plan.ropeStyle,
      ...(plan.ropeFactors === undefined ? {} : { freqFactors: plan.ropeFactors }),
    });
    const sameParts = (a: Matrix, b: Matrix): boolean => a.parts.length === b.parts.length && a.parts.every((part, i) => part.firstRow === b.parts[i]!.firstRow && part.rows === b.parts[i]!.rows);
    const fusedLayer = (L: LayerSlots, l: number, kc: string, vc: string): void => {
      const attnNorm = declare(`attnNorm${l}`, L.attnNorm, 'f32', [dim]);
      const width = qDim + 2 * kvDim;
      const split = this.#attentionSplit;
      const vecOf = (): string => (L.attnVec === undefined ? attnNorm : declare(`attnVec${l}`, L.attnVec.slot, 'f32', [dim + width]));
      const block = useAttentionBlock(T, split !== undefined, [L.q, L.k, L.v].map((w) => w.parts.length), heads, kvHeads, headDim);
      // Both one-part forms read the whole Q, K and V matrices with the same per-step values.
      const qkvOf = (s: StepValues) => ({ k: dim, qKind: L.q.kind, kKind: L.k.kind, vKind: L.v.kind, eps: plan.eps, ...ropeKvOf(s) });
      if (block) {
        // Norm, Q/K/V, RoPE, the KV write and attention in one dispatch (the rule: useAttentionBlock).
        const op = L.attnVec === undefined ? FUSED_ATTENTION_BLOCK.block[variant] : FUSED_ATTENTION_BLOCK.bias[variant];
        add(op, [x, vecOf(), partName(L.q, 0), partName(L.k, 0), partName(L.v, 0), att, kc, vc], qkvOf);
      } else if ([L.q, L.k, L.v].every((w) => w.parts.length === 1)) {
        const op = L.attnVec === undefined ? FUSED_MATVEC.normQkvRope[variant] : FUSED_MATVEC.normQkvRopeBias[variant];
        add(op, [x, vecOf(), partName(L.q, 0), partName(L.k, 0), partName(L.v, 0), q, kc, vc], (s: StepValues) => ({ m: T, ...qkvOf(s) }));
      } else {
        // A split matrix: every part's rows into the qkv scratch at their columns, then biases, RoPE and
        // the KV write (the same arithmetic as the one-pass kernel, so the same bits).
        const qkv = rows('qkv', [T, width]);
        normLinear(x, attnNorm, L.q, qkv, width, 0, T);
        normLinear(x, attnNorm, L.k, qkv, width, qDim, T);
        normLinear(x, attnNorm, L.v, qkv, width, qDim + kvDim, T);
        const params = (s: StepValues) => ({ count: T, ...ropeKvOf(s) });
        if (L.attnVec === undefined) add(fusedRopeKv, [qkv, q, kc, vc], params);
        else add(fusedRopeKvBias, [qkv, view(L.attnVec.allocation, 'f32', [width], dim), q, kc, vc], params);
      }
      const attentionParams = (s: StepValues) => ({ count: T, heads, kvHeads, headDim, maxSeq: this.maxSeq, pos0: pos(s) });
      if (block) {
        // Attention ran in the block above.
      } else if (T === 1 && split !== undefined) {
        const part = declare('attentionParts', split.part.slot, 'f32', [1, heads, maxSplits(this.maxSeq, split.len), headDim + 2]);
        add(fusedAttentionSplit, [q, kc, vc, part], (s: StepValues) => ({ ...attentionParams(s), splitLen: split.len }));
        add(fusedAttentionCombine, [part, att], (s: StepValues) => ({ ...attentionParams(s), splitLen: split.len }));
      } else {
        add(fusedAttention, [q, kc, vc, att], attentionParams);
      }
      addLinear(att, L.o, x);
      const ffnNorm = declare(`ffnNorm${l}`, L.ffnNorm, 'f32', [dim]);
      const f = L.ffn;
      if (f.kind === 'routed') {
        add(rmsnorm, [x, ffnNorm, xb], { rows: T, cols: dim, eps: plan.eps });
        routedFfn(f);
        return;
      }
      const ffn = c.ffnDim;
      const hb3 = rows('hb3', [T, ffn]);
      if (sameParts(f.gate, f.up)) {
        f.gate.parts.forEach((part, p) => {
          add(FUSED_MATVEC.normGlu[variant], [x, ffnNorm, partName(f.gate, p), partName(f.up, p), hb3], {
            m: T,
            n: part.rows,
            k: dim,
            gateKind: f.gate.kind,
            upKind: f.up.kind,
            eps: plan.eps,
            outStride: ffn,
            outCol: part.firstRow,
          });
        });
      } else {
        const hb = rows('hb', [T, ffn]);
        const hb2 = rows('hb2', [T, ffn]);
        normLinear(x, ffnNorm, f.gate, hb, ffn, 0, T);
        normLinear(x, ffnNorm, f.up, hb2, ffn, 0, T);
        add(siluMul, [hb, hb2, hb3], { n: T * ffn });
      }
      addLinear(hb3, f.down, x);
    };
    /** Layer observation: the residual stream after layer l, copied row by row into the layer's block of the buffer. */
    const observe = (l: number): void => {
      if (!layers) return;
      const block = group.alias(this.#hidden!.allocation, 'f32', { shape: [T, dim], byteOffset: l * this.maxBatch * dim * F32_BYTES });
      add(kvWrite, [x, declare(`hidden${l}`, block, 'f32', [T, dim])], { count: T, width: dim, maxSeq: T, pos0: 0 });
    };

    // The unfused list on WebGPU (see the module comment): residual adds in the O and down matmuls'
    // epilogue (F32 weights), and for a one-row step Q/K/V into one qkv row + fused_rope_kv, gate/up/SiLU
    // in one matmul_nt_norm_glu (F32).
    const gpuEpilogues = !fused && this.runtime.provider.kind === 'webgpu';
    const oneRow = gpuEpilogues && T === 1;
    // On the host a one-row step takes the qkv row + fused_rope_kv too (its wasm entry rotates with the
    // rope kernel and copies rows as kv_write does, its host twin is rope + kv_write: the same bits, 3
    // dispatches fewer per layer); the WebGPU-only F32 epilogue kernels have no host kernel of their own.
    const qkvRow = !fused && T === 1;
    /** x += input · Wᵀ: matmul_nt_add into x (one dispatch per part) where it applies, else through xb2 and add_inplace. */
    const residualLinear = (input: string, w: Matrix): void => {
      if (gpuEpilogues && w.kind === 'F32' && (w.parts.length === 1 || T === 1)) {
        w.parts.forEach((part, p) => {
          const out = w.parts.length === 1 ? x : view(act('x'), 'f32', [1, part.rows], part.firstRow);
          add(matmulNTAdd, [input, partName(w, p), out], { m: T, n: part.rows, k: w.k });
        });
        return;
      }
      linear(input, w, xb2, act('xb2'), 0, T);
      add(addInplace, [x, xb2], { n: T * dim });
    };
    this.#layers.forEach((L, l) => {
      if (range !== undefined && (l < range.first || l >= range.end)) return;
      const phase = range?.phase;
      if (phase === 'experts' || phase === 'combine') {
        routedPhase(L.ffn as RoutedFfn, phase);
        if (phase === 'combine') observe(l);
        return;
      }
      const vec = (name: string, slot: DescriptorSlot, width: number) => declare(`${name}${l}`, slot, 'f32', [width]);
      const kc = declare(`kCache${l}`, L.kCache, 'f32', [this.maxSeq, kvDim]);
      const vc = declare(`vCache${l}`, L.vCache, 'f32', [this.maxSeq, kvDim]);
      if (fused) {
        fusedLayer(L, l, kc, vc);
        observe(l);
        return;
      }
      const attnNorm = vec('attnNorm', L.attnNorm, dim);
      if (qkvRow) {
        // Q, K and V side by side in one qkv row (on WebGPU with F32 weights in one part each, the norm
        // folded in: one matmul_nt_norm_qkv), then RoPE of Q and K and the KV-cache write in one pass.
        const qkvAlloc = act('qkv');
        const width = qDim + 2 * kvDim;
        const qkv = rows('qkv', [T, width]);
        const qv = view(qkvAlloc, 'f32', [1, qDim], 0);
        const kv = view(qkvAlloc, 'f32', [1, kvDim], qDim);
        const vv = view(qkvAlloc, 'f32', [1, kvDim], qDim + kvDim);
        if (oneRow && [L.q, L.k, L.v].every((w) => w.kind === 'F32' && w.parts.length === 1) && qDim % QKV_TILE === 0 && kvDim % QKV_TILE === 0) {
          add(matmulNTNormQkv, [x, attnNorm, partName(L.q, 0), partName(L.k, 0), partName(L.v, 0), qkv], { m: T, k: dim, qRows: qDim, kvRows: kvDim, eps: plan.eps });
        } else {
          add(rmsnorm, [x, attnNorm, xb], { rows: T, cols: dim, eps: plan.eps });
          linear(xb, L.q, qv, qkvAlloc, 0, T);
          linear(xb, L.k, kv, qkvAlloc, qDim, T);
          linear(xb, L.v, vv, qkvAlloc, qDim + kvDim, T);
        }
        if (L.bias !== undefined) {
          add(biasAdd, [qv, vec('qBias', L.bias.q, qDim)], { rows: T, cols: qDim });
          add(biasAdd, [kv, vec('kBias', L.bias.k, kvDim)], { rows: T, cols: kvDim });
          add(biasAdd, [vv, vec('vBias', L.bias.v, kvDim)], { rows: T, cols: kvDim });
        }
        // Built per step as one literal (no spreads): every decode step of the host runs it once per layer.
        const maxSeq = this.maxSeq;
        const { theta, ropeStyle: style, ropeFactors } = plan;
        const ropeKv =
          ropeFactors === undefined
            ? (s: StepValues): FusedRopeKvParams => ({ count: T, heads, kvHeads, headDim, maxSeq, pos0: pos(s), theta, style })
            : (s: StepValues): FusedRopeKvParams => ({ count: T, heads, kvHeads, headDim, maxSeq, pos0: pos(s), theta, style, freqFactors: ropeFactors });
        add(gpuEpilogues ? fusedRopeKv : hostRopeKv, [qkv, q, kc, vc], ropeKv);
      } else {
        add(rmsnorm, [x, attnNorm, xb], { rows: T, cols: dim, eps: plan.eps });
        linear(xb, L.q, q, act('q'), 0, T);
        linear(xb, L.k, k, act('k'), 0, T);
        linear(xb, L.v, v, act('v'), 0, T);
        if (L.bias !== undefined) {
          add(biasAdd, [q, vec('qBias', L.bias.q, qDim)], { rows: T, cols: qDim });
          add(biasAdd, [k, vec('kBias', L.bias.k, kvDim)], { rows: T, cols: kvDim });
          add(biasAdd, [v, vec('vBias', L.bias.v, kvDim)], { rows: T, cols: kvDim });
        }
        add(rope, [q], ropeParams(T, heads));
        add(rope, [k], ropeParams(T, kvHeads));
        add(kvWrite, [k, kc], (s: StepValues) => ({ count: T, width: kvDim, maxSeq: this.maxSeq, pos0: pos(s) }));
        add(kvWrite, [v, vc], (s: StepValues) => ({ count: T, width: kvDim, maxSeq: this.maxSeq, pos0: pos(s) }));
      }
      add(attention, [q, kc, vc, att], (s: StepValues) => ({ count: T, heads, kvHeads, headDim, maxSeq: this.maxSeq, pos0: pos(s) }));
      residualLinear(att, L.o);
      const ffnNorm = vec('ffnNorm', L.ffnNorm, dim);
      const f = L.ffn;
      if (f.kind === 'dense' && oneRow && f.gate.kind === 'F32' && f.up.kind === 'F32' && sameParts(f.gate, f.up)) {
        // The FFN norm, gate, up and SiLU·mul in one pass over both weights (one dispatch per part, into its columns).
        const hb3 = rows('hb3', [T, c.ffnDim]);
        f.gate.parts.forEach((part, p) => {
          const out = f.gate.parts.length === 1 ? hb3 : view(act('hb3'), 'f32', [1, part.rows], part.firstRow);
          add(matmulNTNormGlu, [x, ffnNorm, partName(f.gate, p), partName(f.up, p), out], { m: T, n: part.rows, k: dim, eps: plan.eps });
        });
        residualLinear(hb3, f.down);
        observe(l);
        return;
      }
      add(rmsnorm, [x, ffnNorm, xb], { rows: T, cols: dim, eps: plan.eps });
      if (f.kind === 'dense') {
        const ffn = c.ffnDim;
        const hb3 = rows('hb3', [T, ffn]);
        const hb = rows('hb', [T, ffn]);
        const hb2 = rows('hb2', [T, ffn]);
        linear(xb, f.gate, hb, act('hb'), 0, T);
        linear(xb, f.up, hb2, act('hb2'), 0, T);
        add(siluMul, [hb, hb2, hb3], { n: T * ffn });
        residualLinear(hb3, f.down);
      } else if (phase === 'attn') {
        routedPhase(f, 'attn');
        return;
      } else {
        routedFfn(f);
      }
      observe(l);
    });
    /** Both lists end here: the dispatch list compiled under `key`, cached, and returned with its slots. */
    const finish = (outputs: string[], logits: DescriptorSlot, next: DescriptorSlot): GraphEntry => {
      const graph = this.runtime.compile({ name: `${c.architecture} T=${key}`, inputs, dispatches: d, outputs });
      const entry = { graph, ids: idsSlot, logits, next };
      this.#graphs.set(key, entry);
      return entry;
    };
    if (!tail) return finish([], this.#logits.slot, this.#next);
    // The final norm: its own dispatch (unfused), or folded into the classifier (fused; and unfused on
    // WebGPU for a one-row step with an F32 classifier: matmul_nt_norm, one dispatch per part into its columns).
    const outputNorm = declare('outputNorm', this.#outputNorm, 'f32', [dim]);
    const normClassifier = oneRow && this.#classifier.kind === 'F32';
    const normInKernel = fused || normClassifier;
    if (!normInKernel) add(rmsnorm, [x, outputNorm, xb], { rows: T, cols: dim, eps: plan.eps });
    const outRows = allRows ? T : 1;
    const normed = normInKernel ? x : xb;
    const last = allRows ? normed : declare('lastRow', group.alias(act(normInKernel ? 'x' : 'xb'), 'f32', { shape: [1, dim], byteOffset: (T - 1) * dim * F32_BYTES }), 'f32', [1, dim]);
    const logitsAlloc = allRows ? this.#rowLogits.allocation : this.#logits.allocation;
    const logitsSlot = allRows ? group.alias(logitsAlloc, 'f32', { shape: [T, vocab] }) : this.#logits.slot;
    const nextSlot = allRows ? group.alias(this.#rowNext.allocation, 'u32', { shape: [T] }) : this.#next;
    const logits = declare('logits', logitsSlot, 'f32', [outRows, vocab]);
    const next = declare('next', nextSlot, 'u32', [outRows]);
    if (fused) normLinear(last, outputNorm, this.#classifier, logits, vocab, 0, outRows);
    else if (normClassifier) {
      this.#classifier.parts.forEach((part, p) => {
        const out = this.#classifier.parts.length === 1 ? logits : view(logitsAlloc, 'f32', [1, part.rows], part.firstRow);
        add(matmulNTNorm, [last, outputNorm, partName(this.#classifier, p), out], { m: 1, n: part.rows, k: dim, eps: plan.eps });
      });
    } else linear(last, this.#classifier, logits, logitsAlloc, 0, outRows);
    // The step's choice: argmax (or the sample op) writes the chosen u32 id of each row into `next`, which
    // a chained decode step reads as its ids (source 'device'). A draw's counter is the position its token
    // takes (pos + T), so the host twin drawing from the same logits at that position agrees.
    if (sampled) {
      add(sample, [logits, next], (s: StepValues): SampleParams => ({ rows: outRows, cols: vocab, temperature: s['temperature'] ?? 0, topP: s['topP'] ?? 1, seed: s['seed'] ?? 0, step: pos(s) + T }));
    } else add(argmax, [logits, next], { rows: outRows, cols: vocab });
    return finish(['logits', 'next'], logitsSlot, nextSlot);
  }
}

// The architecture table (DESIGN.md "src/model": one entry per architecture says which tensors exist and
// how the forward pass differs). Each entry is plain data: the hyperparameter keys it reads, its tensor
// catalog (names, shapes as functions of the config, which are optional, which must be f32 vectors) and
// the flags a forward pass branches on (rope style, Q/K/V biases, dense or routed FFN, tied output). A new
// architecture is one more entry in ARCHITECTURES, never an `if` in the forward pass.
//
// Contract: pure data and pure functions, any thread, nothing allocated but the returned objects.
// `architectureFor` selects an entry (ENOTSUP `unsupported-architecture` naming what it was asked for);
// `checkConfig` validates hyperparameters into a frozen ModelConfig; `checkCatalog` compares a file's
// tensor list with the entry's catalog exactly. Every refusal is a TenonError with op `model.load` and a
// stable reason (listed at each function); nothing is changed by a failed call.
//
// Shapes here are row-major with the row length last (GGUF lists dimensions innermost first, so a GGUF
// shape is reversed before it is compared): token_embd.weight is [vocab, dim], attn_k.weight
// [kvHeads * headDim, dim], ffn_down_exps.weight [experts, dim, ffn]. A linear layer's weight is
// [out, in], the layout the qmatmul ops read (x · Wᵀ).
import { TenonError } from '../errors.js';
import type { RopeStyle } from '../submit/index.js';

const OP = 'model.load';

/** The FFN of every layer: one SiLU-gated MLP, or routed experts (a router picks top-k expert MLPs). */
export type FfnKind = 'dense' | 'routed';

/** How a routed FFN weighs its experts (Mixtral-style llama: softmax over router logits, top-k, renormalised). */
export interface ExpertRouting {
  /** Router logits become probabilities by softmax over all experts. */
  readonly gating: 'softmax';
  /** The k chosen weights are divided by their sum (so they sum to 1). */
  readonly renormalize: boolean;
}

/** Entry ids. `llama-moe` is `general.architecture = llama` with `llama.expert_count` > 0. */
export type ArchitectureId = 'llama' | 'llama-moe' | 'qwen2';

/** Every hyperparameter a config holds (counts are positive integers, eps and theta positive floats). */
export type HyperparameterField =
  | 'dim'
  | 'layers'
  | 'ffnDim'
  | 'heads'
  | 'kvHeads'
  | 'rmsEps'
  | 'ropeTheta'
  | 'contextLength'
  | 'ropeDim'
  | 'keyLength'
  | 'valueLength'
  | 'experts'
  | 'expertsUsed'
  | 'vocabSizeKey';

/** One hyperparameter an entry reads: `{arch}.{key}` in GGUF metadata. */
export interface HyperparameterSpec {
  readonly field: HyperparameterField;
  /** The key after `{general.architecture}.`. */
  readonly key: string;
  readonly type: 'count' | 'float';
  /** Required keys must be present; an optional one falls back to `fallback` (or stays absent). */
  readonly required: boolean;
  /** Default of an optional key: a constant, or the value of another field. */
  readonly fallback?: number | HyperparameterField;
}

/** Global tensor roles. */
export type GlobalRole = 'tokenEmbedding' | 'outputNorm' | 'output' | 'ropeFreqs';
/** Per-layer tensor roles. */
export type LayerRole =
  | 'attnNorm'
  | 'attnQ'
  | 'attnK'
  | 'attnV'
  | 'attnQBias'
  | 'attnKBias'
  | 'attnVBias'
  | 'attnOutput'
  | 'ffnNorm'
  | 'ffnGate'
  | 'ffnUp'
  | 'ffnDown'
  | 'ffnRouter'
  | 'ffnGateExperts'
  | 'ffnUpExperts'
  | 'ffnDownExperts';
export type TensorRole = GlobalRole | LayerRole;

/** One tensor of the catalog. */
export interface TensorSpec<R extends TensorRole = TensorRole> {
  readonly role: R;
  /** The GGUF name: the whole name of a global tensor, the part after `blk.{layer}.` of a layer tensor. */
  readonly name: string;
  /** Expected row-major shape. */
  shape(config: ModelConfig): readonly number[];
  /**
   * `required`, or `optional`: an absent optional tensor changes the forward pass as the entry says (an
   * absent `output.weight` ties the classifier to `token_embd.weight`; no `rope_freqs.weight`, no scaling).
   */
  readonly presence: 'required' | 'optional';
  /** Vectors (norm weights, biases, rope factors) are read element-wise by f32 ops: they must be F32. */
  readonly vector: boolean;
}

/** One architecture. */
export interface ArchitectureEntry {
  readonly id: ArchitectureId;
  /** The `general.architecture` value it serves, and the prefix of its hyperparameter keys. */
  readonly gguf: string;
  /**
   * How RoPE pairs a head's elements (the rope op's styles): `normal` turns adjacent pairs (2i, 2i+1)
   * (llama.cpp LLAMA_ROPE_TYPE_NORM, llama2.c), `neox` turns element i with i + headDim / 2 (Qwen2).
   */
  readonly ropeStyle: RopeStyle;
  /** Q, K and V projections add a bias (`attn_{q,k,v}.bias`). */
  readonly attentionBias: boolean;
  readonly ffn: FfnKind;
  /** Present exactly when ffn is `routed`. */
  readonly routing: ExpertRouting | undefined;
  /** Whether the file may omit `output.weight` (the classifier is then `token_embd.weight`). */
  readonly tiedOutputAllowed: boolean;
  readonly hyperparameters: readonly HyperparameterSpec[];
  readonly globals: readonly TensorSpec<GlobalRole>[];
  readonly layer: readonly TensorSpec<LayerRole>[];
}

/** A validated configuration. Derived sizes are included so no consumer recomputes them. */
export interface ModelConfig {
  readonly architecture: ArchitectureId;
  readonly dim: number;
  readonly layers: number;
  /** Hidden width of the MLP (of each expert, for routed FFNs). */
  readonly ffnDim: number;
  readonly heads: number;
  readonly kvHeads: number;
  /** dim / heads; even (RoPE turns pairs). */
  readonly headDim: number;
  /** heads * headDim: width of Q and of the attention output. */
  readonly qDim: number;
  /** kvHeads * headDim: width of one position of K or V. */
  readonly kvDim: number;
  /** Elements of each head that RoPE rotates (= headDim: partial rotary is not supported). */
  readonly ropeDim: number;
  readonly ropeTheta: number;
  /** RMSNorm epsilon, as the f32 the file stores (llama2.c: f32 1e-5). */
  readonly rmsEps: number;
  /** Positions the model was trained for. */
  readonly contextLength: number;
  /** Rows of token_embd.weight, equal to the tokenizer's vocabulary. */
  readonly vocabSize: number;
  /** Routed FFNs: experts per layer and experts used per token; 0 for dense FFNs. */
  readonly experts: number;
  readonly expertsUsed: number;
  /** True when the file has no output.weight: the classifier is the token embedding. */
  readonly tiedOutput: boolean;
  /** True when the file has rope_freqs.weight (per-frequency RoPE scaling, as Llama 3.1+ ships). */
  readonly ropeFreqs: boolean;
}

// ---------------------------------------------------------------------------------------------------
// Catalog pieces, shared by the entries below.

/** llama.cpp's default RoPE base when a file does not set `rope.freq_base`. */
export const DEFAULT_ROPE_THETA = 10_000;
/** Largest context length accepted: 2^24 positions, above every published model, and exact in f32 positions. */
export const MAX_CONTEXT_LENGTH = 2 ** 24;

const spec = <R extends TensorRole>(role: R, name: string, shape: (c: ModelConfig) => readonly number[], presence: 'required' | 'optional' = 'required', vector = false): TensorSpec<R> =>
  Object.freeze({ role, name, shape, presence, vector });
const vectorSpec = <R extends TensorRole>(role: R, name: string, shape: (c: ModelConfig) => readonly number[], presence: 'required' | 'optional' = 'required'): TensorSpec<R> =>
  spec(role, name, shape, presence, true);

const HYPER_COMMON: readonly HyperparameterSpec[] = [
  { field: 'dim', key: 'embedding_length', type: 'count', required: true },
  { field: 'layers', key: 'block_count', type: 'count', required: true },
  { field: 'ffnDim', key: 'feed_forward_length', type: 'count', required: true },
  { field: 'heads', key: 'attention.head_count', type: 'count', required: true },
  { field: 'kvHeads', key: 'attention.head_count_kv', type: 'count', required: false, fallback: 'heads' },
  { field: 'rmsEps', key: 'attention.layer_norm_rms_epsilon', type: 'float', required: true },
  { field: 'ropeTheta', key: 'rope.freq_base', type: 'float', required: false, fallback: DEFAULT_ROPE_THETA },
  { field: 'contextLength', key: 'context_length', type: 'count', required: true },
  { field: 'ropeDim', key: 'rope.dimension_count', type: 'count', required: false },
  { field: 'keyLength', key: 'attention.key_length', type: 'count', required: false },
  { field: 'valueLength', key: 'attention.value_length', type: 'count', required: false },
  { field: 'vocabSizeKey', key: 'vocab_size', type: 'count', required: false },
];
const HYPER_EXPERTS: readonly HyperparameterSpec[] = [
  { field: 'experts', key: 'expert_count', type: 'count', required: true },
  { field: 'expertsUsed', key: 'expert_used_count', type: 'count', required: true },
];

const GLOBALS_LLAMA: readonly TensorSpec<GlobalRole>[] = [
  spec('tokenEmbedding', 'token_embd.weight', (c) => [c.vocabSize, c.dim]),
  vectorSpec('outputNorm', 'output_norm.weight', (c) => [c.dim]),
  spec('output', 'output.weight', (c) => [c.vocabSize, c.dim], 'optional'),
  vectorSpec('ropeFreqs', 'rope_freqs.weight', (c) => [c.ropeDim / 2], 'optional'),
];
const GLOBALS_QWEN2: readonly TensorSpec<GlobalRole>[] = GLOBALS_LLAMA.filter((s) => s.role !== 'ropeFreqs');

const ATTENTION: readonly TensorSpec<LayerRole>[] = [
  vectorSpec('attnNorm', 'attn_norm.weight', (c) => [c.dim]),
  spec('attnQ', 'attn_q.weight', (c) => [c.qDim, c.dim]),
  spec('attnK', 'attn_k.weight', (c) => [c.kvDim, c.dim]),
  spec('attnV', 'attn_v.weight', (c) => [c.kvDim, c.dim]),
  spec('attnOutput', 'attn_output.weight', (c) => [c.dim, c.qDim]),
];
const QKV_BIASES: readonly TensorSpec<LayerRole>[] = [
  vectorSpec('attnQBias', 'attn_q.bias', (c) => [c.qDim]),
  vectorSpec('attnKBias', 'attn_k.bias', (c) => [c.kvDim]),
  vectorSpec('attnVBias', 'attn_v.bias', (c) => [c.kvDim]),
];
const DENSE_FFN: readonly TensorSpec<LayerRole>[] = [
  vectorSpec('ffnNorm', 'ffn_norm.weight', (c) => [c.dim]),
  spec('ffnGate', 'ffn_gate.weight', (c) => [c.ffnDim, c.dim]),
  spec('ffnUp', 'ffn_up.weight', (c) => [c.ffnDim, c.dim]),
  spec('ffnDown', 'ffn_down.weight', (c) => [c.dim, c.ffnDim]),
];
const ROUTED_FFN: readonly TensorSpec<LayerRole>[] = [
  vectorSpec('ffnNorm', 'ffn_norm.weight', (c) => [c.dim]),
  spec('ffnRouter', 'ffn_gate_inp.weight', (c) => [c.experts, c.dim]),
  spec('ffnGateExperts', 'ffn_gate_exps.weight', (c) => [c.experts, c.ffnDim, c.dim]),
  spec('ffnUpExperts', 'ffn_up_exps.weight', (c) => [c.experts, c.ffnDim, c.dim]),
  spec('ffnDownExperts', 'ffn_down_exps.weight', (c) => [c.experts, c.dim, c.ffnDim]),
];

/** The table. */
export const ARCHITECTURES: readonly ArchitectureEntry[] = Object.freeze([
  Object.freeze({
    id: 'llama',
    gguf: 'llama',
    ropeStyle: 'normal',
    attentionBias: false,
    ffn: 'dense',
    routing: undefined,
    tiedOutputAllowed: true,
    hyperparameters: HYPER_COMMON,
    globals: GLOBALS_LLAMA,
    layer: [...ATTENTION, ...DENSE_FFN],
  }),
  Object.freeze({
    id: 'llama-moe',
    gguf: 'llama',
    ropeStyle: 'normal',
    attentionBias: false,
    ffn: 'routed',
    routing: Object.freeze({ gating: 'softmax', renormalize: true }),
    tiedOutputAllowed: true,
    hyperparameters: [...HYPER_COMMON, ...HYPER_EXPERTS],
    globals: GLOBALS_LLAMA,
    layer: [...ATTENTION, ...ROUTED_FFN],
  }),
  Object.freeze({
    id: 'qwen2',
    gguf: 'qwen2',
    ropeStyle: 'neox',
    attentionBias: true,
    ffn: 'dense',
    routing: undefined,
    tiedOutputAllowed: true,
    hyperparameters: HYPER_COMMON,
    globals: GLOBALS_QWEN2,
    layer: [...ATTENTION.slice(0, 4), ...QKV_BIASES, ...ATTENTION.slice(4), ...DENSE_FFN],
  }),
] satisfies ArchitectureEntry[]);

function invalid(reason: string, message: string, ids: Record<string, string | number>): never {
  throw new TenonError('EINVAL', message, { op: OP, reason, ids });
}

function unsupported(reason: string, message: string, ids: Record<string, string | number>): never {
  throw new TenonError('ENOTSUP', message, { op: OP, reason, ids });
}

/** The entry with this id. */
export function architectureById(id: ArchitectureId): ArchitectureEntry {
  const entry = ARCHITECTURES.find((a) => a.id === id);
  if (entry === undefined) unsupported('unsupported-architecture', `no architecture entry ${String(id)}`, { architecture: String(id) });
  return entry;
}

/**
 * The entry for a file's `general.architecture` and FFN kind (`routed` when `{arch}.expert_count` > 0).
 * ENOTSUP `unsupported-architecture` naming the architecture (and `routed experts` when only the dense
 * form is known).
 */
export function architectureFor(gguf: string, ffn: FfnKind): ArchitectureEntry {
  const entry = ARCHITECTURES.find((a) => a.gguf === gguf && a.ffn === ffn);
  if (entry !== undefined) return entry;
  const known = ARCHITECTURES.some((a) => a.gguf === gguf);
  const supported = [...new Set(ARCHITECTURES.map((a) => a.gguf))].join(', ');
  unsupported(
    'unsupported-architecture',
    known ? `architecture ${gguf} with routed experts is not supported` : `architecture ${JSON.stringify(gguf)} is not supported (${supported} are)`,
    { architecture: gguf, ffn },
  );
}

/** Raw hyperparameter values as a file gives them (absent keys absent). */
export type HyperparameterValues = Partial<Record<HyperparameterField, number>>;

/** Hyperparameters read or derived that checkConfig does not take from `values`. */
export interface ConfigFacts {
  /** Rows of token_embd.weight. */
  readonly vocabSize: number;
  readonly tiedOutput: boolean;
  readonly ropeFreqs: boolean;
}

/**
 * Validates hyperparameter values into a ModelConfig. Refusals (op `model.load`): EINVAL
 * `bad-hyperparameter` (a count that is not a positive safe integer, an epsilon or theta that is not a
 * positive finite number, a context length past MAX_CONTEXT_LENGTH, a required value missing),
 * `inconsistent-heads` (dim not a multiple of heads, heads not a multiple of kvHeads), `odd-head-size`,
 * `bad-experts` (used experts not in 1..experts), `vocab-mismatch` (`{arch}.vocab_size` differs from the
 * embedding rows), `tied-output` (no output.weight where the entry needs one); ENOTSUP `partial-rope`
 * (rope.dimension_count other than headDim), `unsupported-head-size` (key/value length other than
 * headDim), `unsupported-rope-freqs` (rope_freqs.weight in an entry without it).
 */
export function checkConfig(entry: ArchitectureEntry, values: HyperparameterValues, facts: ConfigFacts): ModelConfig {
  const resolved: HyperparameterValues = {};
  for (const h of entry.hyperparameters) {
    let value = values[h.field];
    if (value === undefined && h.fallback !== undefined) value = typeof h.fallback === 'number' ? h.fallback : resolved[h.fallback];
    if (value === undefined) {
      if (h.required) invalid('bad-hyperparameter', `hyperparameter ${entry.gguf}.${h.key} is missing`, { key: `${entry.gguf}.${h.key}`, value: 'missing' });
      continue;
    }
    const ok = h.type === 'count' ? Number.isSafeInteger(value) && value > 0 : Number.isFinite(value) && value > 0;
    if (!ok) invalid('bad-hyperparameter', `hyperparameter ${entry.gguf}.${h.key} must be a positive ${h.type === 'count' ? 'integer' : 'number'}, got ${value}`, { key: `${entry.gguf}.${h.key}`, value });
    resolved[h.field] = value;
  }
  const { dim, layers, ffnDim, heads, kvHeads, rmsEps, ropeTheta, contextLength } = resolved as Required<HyperparameterValues>;
  if (contextLength > MAX_CONTEXT_LENGTH) invalid('bad-hyperparameter', `context length ${contextLength} passes ${MAX_CONTEXT_LENGTH}`, { key: `${entry.gguf}.context_length`, value: contextLength });
  if (dim % heads !== 0) invalid('inconsistent-heads', `embedding length ${dim} is not a multiple of ${heads} heads`, { dim, heads });
  if (kvHeads > heads || heads % kvHeads !== 0) invalid('inconsistent-heads', `${heads} heads are not a multiple of ${kvHeads} KV heads`, { heads, kvHeads });
  const headDim = dim / heads;
  if (headDim % 2 !== 0) invalid('odd-head-size', `RoPE rotates pairs: head size ${headDim} must be even`, { headDim });
  const ropeDim = resolved.ropeDim ?? headDim;
  if (ropeDim !== headDim) unsupported('partial-rope', `rope.dimension_count ${ropeDim} differs from the head size ${headDim} (partial rotary is not supported)`, { ropeDim, headDim });
  for (const field of ['keyLength', 'valueLength'] as const) {
    const v = resolved[field];
    if (v !== undefined && v !== headDim) unsupported('unsupported-head-size', `${field} ${v} differs from embedding length / heads = ${headDim}`, { [field]: v, headDim });
  }
  let experts = 0;
  let expertsUsed = 0;
  if (entry.ffn === 'routed') {
    experts = resolved.experts!;
    expertsUsed = resolved.expertsUsed!;
    if (expertsUsed > experts) invalid('bad-experts', `${expertsUsed} experts used per token, only ${experts} exist`, { experts, expertsUsed });
  }
  if (!Number.isSafeInteger(facts.vocabSize) || facts.vocabSize < 1) invalid('bad-hyperparameter', `vocabulary size ${facts.vocabSize} is not a positive integer`, { key: 'vocabSize', value: facts.vocabSize });
  if (resolved.vocabSizeKey !== undefined && resolved.vocabSizeKey !== facts.vocabSize) {
    invalid('vocab-mismatch', `${entry.gguf}.vocab_size is ${resolved.vocabSizeKey}, the embedding has ${facts.vocabSize} rows`, { key: resolved.vocabSizeKey, embedding: facts.vocabSize });
  }
  if (facts.tiedOutput && !entry.tiedOutputAllowed) invalid('tied-output', `architecture ${entry.id} needs output.weight`, { architecture: entry.id });
  if (facts.ropeFreqs && !entry.globals.some((g) => g.role === 'ropeFreqs')) {
    unsupported('unsupported-rope-freqs', `architecture ${entry.id} has no per-frequency RoPE scaling`, { architecture: entry.id });
  }
  return Object.freeze({
    architecture: entry.id,
    dim,
    layers,
    ffnDim,
    heads,
    kvHeads,
    headDim,
    qDim: heads * headDim,
    kvDim: kvHeads * headDim,
    ropeDim,
    ropeTheta,
    rmsEps,
    contextLength,
    vocabSize: facts.vocabSize,
    experts,
    expertsUsed,
    tiedOutput: facts.tiedOutput,
    ropeFreqs: facts.ropeFreqs,
  });
}

/** What checkCatalog reads of a stored tensor. */
export interface CatalogTensor {
  readonly name: string;
  /** Row-major shape. */
  readonly shape: readonly number[];
  /** Lowering kind name (GGML type name). */
  readonly kind: string;
}

/** Where a stored tensor sits in the catalog. */
export interface CatalogSlot {
  readonly spec: TensorSpec;
  /** The layer of a layer tensor; undefined for a global one. */
  readonly layer: number | undefined;
}

/** Layer tensor names: `blk.{layer}.{name}`. */
export function layerTensorName(layer: number, name: string): string {
  return `blk.${layer}.${name}`;
}

const sameShape = (a: readonly number[], b: readonly number[]): boolean => a.length === b.length && a.every((d, i) => d === b[i]);

/**
 * Every tensor the entry expects for this config, by name, in catalog order (globals, then layer 0, 1, ...),
 * optional ones included.
 */
export function expectedTensors(entry: ArchitectureEntry, config: ModelConfig): Map<string, CatalogSlot> {
  const out = new Map<string, CatalogSlot>();
  for (const g of entry.globals) out.set(g.name, { spec: g, layer: undefined });
  for (let l = 0; l < config.layers; l++) for (const s of entry.layer) out.set(layerTensorName(l, s.name), { spec: s, layer: l });
  return out;
}

/**
 * Checks a file's tensors against the catalog exactly and returns each one's slot, in the file's order.
 * Refusals (op `model.load`, ids naming the tensor): EINVAL `duplicate-tensor`, `unexpected-tensor` (a
 * name the catalog does not have for this config, e.g. a layer past block_count), `missing-tensor` (a
 * required one absent), `bad-tensor-shape` (ids expected and actual); ENOTSUP `unsupported-tensor-kind`
 * (a vector stored in a kind other than F32).
 */
export function checkCatalog(entry: ArchitectureEntry, config: ModelConfig, tensors: readonly CatalogTensor[]): CatalogSlot[] {
  const expected = expectedTensors(entry, config);
  const seen = new Set<string>();
  const slots: CatalogSlot[] = [];
  for (const t of tensors) {
    if (seen.has(t.name)) invalid('duplicate-tensor', `tensor ${t.name} appears twice`, { tensor: t.name });
    seen.add(t.name);
    const slot = expected.get(t.name);
    if (slot === undefined) invalid('unexpected-tensor', `architecture ${entry.id} with ${config.layers} layers has no tensor ${t.name}`, { tensor: t.name, architecture: entry.id });
    slots.push(slot);
  }
  for (const [name, slot] of expected) {
    if (slot.spec.presence === 'required' && !seen.has(name)) invalid('missing-tensor', `tensor ${name} is missing`, { tensor: name, architecture: entry.id });
  }
  tensors.forEach((t, i) => {
    const want = slots[i]!.spec.shape(config);
    if (!sameShape(t.shape, want)) {
      invalid('bad-tensor-shape', `tensor ${t.name} has shape [${t.shape.join(', ')}], expected [${want.join(', ')}]`, { tensor: t.name, expected: `[${want.join(', ')}]`, actual: `[${t.shape.join(', ')}]` });
    }
    if (slots[i]!.spec.vector && t.kind !== 'F32') unsupported('unsupported-tensor-kind', `tensor ${t.name} is ${t.kind}; vectors must be F32`, { tensor: t.name, kind: t.kind });
  });
  return slots;
}

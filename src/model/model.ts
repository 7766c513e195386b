// What a model is, independent of how it runs (DESIGN.md "src/model"). `loadModel` turns a model file (GGUF,
// or a llama2.c checkpoint with its tokenizer file) into a LoadedModel: the architecture entry, a validated
// config, every tensor checked against the entry's catalog with its lowering kind and packed geometry, the
// tokenizer, chat template and end-of-generation ids, and the model identity. No weight is read: tensors
// are read later, by rows, through the same range source (materialize.ts uploads them; identity() hashes
// them).
//
// Contract.
// - Everything is validated before loadModel resolves, and nothing is allocated but the description: the
//   file's header (GGUF reader, llama2.c plan), the architecture (ENOTSUP `unsupported-architecture`
//   naming it), every hyperparameter (architecture.ts checkConfig), the tensor catalog exactly (missing,
//   unexpected, repeated, wrong shape, unsupported kind: architecture.ts checkCatalog), each tensor's
//   block geometry and byte count (lowering kinds), the tokenizer, and the vocabulary: the embedding's
//   rows, `{arch}.vocab_size` when present and the tokenizer's size must agree (EINVAL `vocab-mismatch`).
//   Refusals are TenonErrors with a stable code and reason (op `model.load` for the checks here; the
//   reader's and tokenizer's own ops for theirs); a failed load leaves nothing behind.
// - The LoadedModel keeps a reference to the source and never closes it (the caller owns the Blob,
//   descriptor or file handle). It is immutable; `identity()` computes once and remembers.
// - llama2.c checkpoints map onto the `llama` entry (all tensors F32, classifier tied when the file shares
//   it, RMSNorm eps f32 1e-5, RoPE base 10000, context = seq_len) with GGUF tensor names, layer by layer.
// Thread: any.
import { TenonError } from '../errors.js';
import { architectureById, architectureFor, checkCatalog, checkConfig, layerTensorName } from './architecture.js';
import type { ArchitectureEntry, CatalogSlot, FfnKind, GlobalRole, HyperparameterValues, LayerRole, ModelConfig, TensorRole } from './architecture.js';
import { parseGguf } from './gguf.js';
import type { GgufFile } from './gguf.js';
import { computeIdentity } from './identity.js';
import type { IdentityTensor, ModelIdentity } from './identity.js';
import { LLAMA_MAX_HEADER_BYTES, planLlamaModel } from './llama2c-checkpoint.js';
import type { LlamaFileFormat, LlamaModelFile, LlamaTensorInfo, LlamaTensorName } from './llama2c-checkpoint.js';
import { loweringKind, tensorGeometry } from './lowering/index.js';
import type { LoweredGeometry, LoweringKind } from './lowering/index.js';
import { bytesSource } from './source.js';
import type { ByteSource } from './source.js';
import { parseTokenizer, tokenizerFromGguf } from './tokenizer/index.js';
import type { Tokenizer } from './tokenizer/index.js';

const OP = 'model.load';

/** "GGUF" read as the first four bytes of a file. */
const GGUF_MAGIC = [0x47, 0x47, 0x55, 0x46] as const;
/** llama2.c computes RMSNorm with this epsilon (as a C float). */
export const LLAMA2C_RMS_EPS = Math.fround(1e-5);
/** llama2.c's RoPE base. */
export const LLAMA2C_ROPE_THETA = 10_000;
const F32_BYTES = 4;

export type ModelFormat = 'gguf' | LlamaFileFormat;

/** One stored tensor of a model: where it is in the catalog, how it is encoded, and its bytes by rows. */
export interface ModelTensor {
  /** GGUF name (`token_embd.weight`, `blk.3.attn_q.weight`); llama2.c tensors get the same names. */
  readonly name: string;
  readonly role: TensorRole;
  /** The layer of a layer tensor; undefined for a global one. */
  readonly layer: number | undefined;
  readonly kind: LoweringKind;
  /** Row-major shape, rows, GGUF row and tensor bytes, packed row words and packed bytes. */
  readonly geometry: LoweredGeometry;
  /** Byte offset of the tensor's first row in the model's range source; undefined when the model has none. */
  readonly sourceOffset: number | undefined;
  /** Stored bytes of rows [firstRow, firstRow + rowCount), read by range. EINVAL `range` outside its rows. */
  readRows(firstRow: number, rowCount: number): Promise<Uint8Array>;
}

export type GlobalTensors = {
  readonly tokenEmbedding: ModelTensor;
  readonly outputNorm: ModelTensor;
  /** The classifier: `output.weight`, or the token embedding itself when the file ties them. */
  readonly output: ModelTensor;
  readonly ropeFreqs: ModelTensor | undefined;
};

/** One layer's tensors by role; which roles exist is the architecture entry's catalog. */
export type LayerTensors = Readonly<Partial<Record<LayerRole, ModelTensor>>>;

export interface LoadedModel {
  readonly format: ModelFormat;
  /** `general.name`, or the source's name. */
  readonly name: string | undefined;
  readonly architecture: ArchitectureEntry;
  readonly config: ModelConfig;
  readonly tokenizer: Tokenizer;
  /** `tokenizer.chat_template`, when the file has one. */
  readonly chatTemplate: string | undefined;
  /** Token ids that end a generated turn (ascending). */
  readonly endOfGeneration: readonly number[];
  /** Stored tensors in catalog order (a tied classifier is not stored twice). */
  readonly tensors: readonly ModelTensor[];
  readonly globals: GlobalTensors;
  readonly layers: readonly LayerTensors[];
  /** Bytes of all stored tensors as the file holds them, and once repacked for the kernels. */
  readonly storedBytes: number;
  readonly packedBytes: number;
  /** The range source the tensors are read from (owned by the caller). */
  readonly source: ByteSource | undefined;
  /** The stored tensor named `name`; EINVAL `missing-tensor`. */
  tensor(name: string): ModelTensor;
  /** Model identity (identity.ts); computed on first call by reading every tensor once, then remembered. */
  identity(): Promise<ModelIdentity>;
}

export interface LoadModelOptions {
  /**
   * The tokenizer: required for llama2.c checkpoints (a parsed Tokenizer or the tokenizer.bin bytes);
   * for GGUF it replaces the file's own vocabulary (which must then still match the embedding).
   */
  readonly tokenizer?: Tokenizer | Uint8Array;
  readonly signal?: AbortSignal;
}

function invalid(reason: string, message: string, ids?: Record<string, string | number>): never {
  throw new TenonError('EINVAL', message, ids === undefined ? { op: OP, reason } : { op: OP, reason, ids });
}

function checkAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted === true) throw new TenonError('ECANCELED', 'model load aborted', { op: OP, reason: 'aborted', cause: signal.reason });
}

/** Where a tensor's bytes come from: `read(offset, length)` relative to the tensor's first byte. */
type TensorReader = (offset: number, length: number) => Promise<Uint8Array>;

interface Described {
  readonly name: string;
  readonly slot: CatalogSlot;
  readonly kind: LoweringKind;
  readonly geometry: LoweredGeometry;
  /** Byte offset of the tensor in the source (`read` is relative to it); undefined without a source. */
  readonly offset: number | undefined;
  readonly read: TensorReader;
}

function makeTensor(d: Described): ModelTensor {
  const g = d.geometry;
  return Object.freeze({
    name: d.name,
    role: d.slot.spec.role,
    layer: d.slot.layer,
    kind: d.kind,
    geometry: g,
    sourceOffset: d.offset,
    readRows(firstRow: number, rowCount: number): Promise<Uint8Array> {
      if (!Number.isSafeInteger(firstRow) || !Number.isSafeInteger(rowCount) || firstRow < 0 || rowCount < 0 || firstRow + rowCount > g.rows) {
        return Promise.reject(new TenonError('EINVAL', `rows [${firstRow}, +${rowCount}) lie outside the ${g.rows} rows of ${d.name}`, { op: 'model.readRows', reason: 'range', ids: { tensor: d.name, rows: g.rows } }));
      }
      return d.read(firstRow * g.rowBytes, rowCount * g.rowBytes);
    },
  });
}

function checkVocab(tokenizer: Tokenizer, config: ModelConfig): void {
  if (tokenizer.vocabSize !== config.vocabSize) {
    invalid('vocab-mismatch', `the tokenizer has ${tokenizer.vocabSize} tokens, the embedding ${config.vocabSize} rows`, { tokenizer: tokenizer.vocabSize, embedding: config.vocabSize });
  }
}

/** Assembles the description once every check has passed. */
function assemble(format: ModelFormat, name: string | undefined, entry: ArchitectureEntry, config: ModelConfig, described: readonly Described[], tokenizer: Tokenizer, source: ByteSource | undefined): LoadedModel {
  // Catalog order: globals in entry order, then each layer in entry order.
  const order = (d: Described): number => {
    const s = d.slot;
    return s.layer === undefined ? entry.globals.indexOf(s.spec as (typeof entry.globals)[number]) : entry.globals.length + s.layer * entry.layer.length + entry.layer.indexOf(s.spec as (typeof entry.layer)[number]);
  };
  const sorted = [...described].sort((a, b) => order(a) - order(b));
  const tensors = Object.freeze(sorted.map(makeTensor));
  const byName = new Map(tensors.map((t) => [t.name, t]));
  const globalOf = (role: GlobalRole): ModelTensor | undefined => tensors.find((t) => t.layer === undefined && t.role === role);
  const tokenEmbedding = globalOf('tokenEmbedding')!;
  const globals: GlobalTensors = Object.freeze({
    tokenEmbedding,
    outputNorm: globalOf('outputNorm')!,
    output: globalOf('output') ?? tokenEmbedding,
    ropeFreqs: globalOf('ropeFreqs'),
  });
  const layers: LayerTensors[] = Array.from({ length: config.layers }, () => ({}));
  for (const t of tensors) if (t.layer !== undefined) (layers[t.layer] as Record<string, ModelTensor>)[t.role] = t;
  let identity: Promise<ModelIdentity> | undefined;
  const identityTensors = (): IdentityTensor[] => {
    // Every catalog role the forward pass reads, the tied classifier under its own name.
    const out: IdentityTensor[] = [];
    const add = (catalogName: string, t: ModelTensor): void => {
      out.push({ name: catalogName, kind: t.kind.name, packedLayout: t.kind.packedLayout, shape: t.geometry.shape, source: t, bytes: () => t.readRows(0, t.geometry.rows) });
    };
    for (const g of entry.globals) {
      const t = g.role === 'output' ? globals.output : globalOf(g.role);
      if (t !== undefined) add(g.name, t);
    }
    layers.forEach((layer, l) => {
      for (const s of entry.layer) {
        const t = layer[s.role as LayerRole];
        if (t !== undefined) add(layerTensorName(l, s.name), t);
      }
    });
    return out;
  };
  return Object.freeze({
    format,
    name,
    architecture: entry,
    config,
    tokenizer,
    chatTemplate: tokenizer.chatTemplate,
    endOfGeneration: tokenizer.endOfGeneration,
    tensors,
    globals,
    layers: Object.freeze(layers.map((l) => Object.freeze(l))),
    storedBytes: tensors.reduce((n, t) => n + t.geometry.byteLength, 0),
    packedBytes: tensors.reduce((n, t) => n + t.geometry.packedBytes, 0),
    source,
    tensor(tensorName: string): ModelTensor {
      const t = byName.get(tensorName);
      if (t === undefined) invalid('missing-tensor', `the model has no tensor ${tensorName}`, { tensor: tensorName });
      return t;
    },
    identity(): Promise<ModelIdentity> {
      identity ??= computeIdentity(entry, config, identityTensors(), tokenizer);
      return identity;
    },
  });
}

function asSource(input: ByteSource | Uint8Array): ByteSource {
  if (input instanceof Uint8Array) return bytesSource(input);
  if (input === null || typeof input !== 'object' || typeof input.read !== 'function' || !Number.isSafeInteger(input.size) || input.size < 0) {
    invalid('bad-argument', 'loadModel reads a ByteSource or a Uint8Array');
  }
  return input;
}

/**
 * Loads a model description from a GGUF file or a llama2.c checkpoint (told apart by the GGUF magic).
 * See the module contract for what is checked; nothing is allocated for weights.
 */
export async function loadModel(input: ByteSource | Uint8Array, options: LoadModelOptions = {}): Promise<LoadedModel> {
  const source = asSource(input);
  checkAborted(options.signal);
  const head = await source.read(0, Math.min(GGUF_MAGIC.length, source.size));
  const isGguf = head.length === GGUF_MAGIC.length && GGUF_MAGIC.every((b, i) => head[i] === b);
  return isGguf ? loadGguf(source, options) : loadLlama2c(source, options);
}

function tokenizerOption(option: Tokenizer | Uint8Array | undefined, vocabSize: number): Tokenizer | undefined {
  if (option === undefined) return undefined;
  if (option instanceof Uint8Array) return parseTokenizer(option, vocabSize);
  if (typeof option !== 'object' || option === null || typeof option.encode !== 'function') invalid('bad-argument', 'options.tokenizer must be a Tokenizer or tokenizer file bytes');
  return option;
}

// ---------------------------------------------------------------------------------------------------
// GGUF

async function loadGguf(source: ByteSource, options: LoadModelOptions): Promise<LoadedModel> {
  const file: GgufFile = await parseGguf(source, options.signal === undefined ? {} : { signal: options.signal });
  const arch = file.architecture;
  if (arch === undefined) invalid('no-architecture', 'the file has no general.architecture');
  const meta = file.metadata;
  const ffn: FfnKind = (meta.optInt(`${arch}.expert_count`) ?? 0) > 0 ? 'routed' : 'dense';
  const entry = architectureFor(arch, ffn);

  const values: HyperparameterValues = {};
  for (const h of entry.hyperparameters) {
    const key = `${arch}.${h.key}`;
    const value = h.type === 'count' ? meta.optInt(key) : meta.optFloat(key);
    if (value !== undefined) values[h.field] = value;
  }
  const infos = file.tensors.map((info) => ({ info, kind: loweringKind(info.type.name), geometry: tensorGeometry(info) }));
  const embedding = infos.find((t) => t.info.name === 'token_embd.weight');
  if (embedding === undefined) invalid('missing-tensor', 'tensor token_embd.weight is missing', { tensor: 'token_embd.weight', architecture: entry.id });
  if (embedding.geometry.shape.length !== 2) {
    invalid('bad-tensor-shape', `token_embd.weight has rank ${embedding.geometry.shape.length}, expected 2`, { tensor: 'token_embd.weight', actual: `[${embedding.geometry.shape.join(', ')}]` });
  }
  const has = (name: string): boolean => infos.some((t) => t.info.name === name);
  const config = checkConfig(entry, values, { vocabSize: embedding.geometry.shape[0]!, tiedOutput: !has('output.weight'), ropeFreqs: has('rope_freqs.weight') });
  const slots = checkCatalog(entry, config, infos.map((t) => ({ name: t.info.name, shape: t.geometry.shape, kind: t.kind.name })));
  const tokenizer = tokenizerOption(options.tokenizer, config.vocabSize) ?? tokenizerFromGguf(meta);
  checkVocab(tokenizer, config);
  checkAborted(options.signal);
  const described = infos.map((t, i): Described => ({
    name: t.info.name,
    slot: slots[i]!,
    kind: t.kind,
    geometry: t.geometry,
    offset: t.info.offset,
    read: (offset, length) => source.read(t.info.offset + offset, length),
  }));
  return assemble('gguf', meta.optString('general.name') ?? source.name, entry, config, described, tokenizer, source);
}

// ---------------------------------------------------------------------------------------------------
// llama2.c checkpoints

/** How llama2.c's stacked tensors map onto GGUF names: global, or one slice per layer. */
const LLAMA2C_NAMES: Readonly<Record<LlamaTensorName, { readonly name: string; readonly perLayer: boolean }>> = {
  tokenEmbedding: { name: 'token_embd.weight', perLayer: false },
  rmsAtt: { name: 'attn_norm.weight', perLayer: true },
  wq: { name: 'attn_q.weight', perLayer: true },
  wk: { name: 'attn_k.weight', perLayer: true },
  wv: { name: 'attn_v.weight', perLayer: true },
  wo: { name: 'attn_output.weight', perLayer: true },
  rmsFfn: { name: 'ffn_norm.weight', perLayer: true },
  w1: { name: 'ffn_gate.weight', perLayer: true },
  w2: { name: 'ffn_down.weight', perLayer: true },
  w3: { name: 'ffn_up.weight', perLayer: true },
  rmsFinal: { name: 'output_norm.weight', perLayer: false },
  wcls: { name: 'output.weight', perLayer: false },
};

interface LlamaPiece {
  readonly name: string;
  readonly shape: readonly number[];
  /** Byte offset of the piece inside the stacked tensor. */
  readonly within: number;
  readonly info: LlamaTensorInfo;
}

/** The GGUF-named pieces of a llama2.c checkpoint: per-layer slices of the stacked tensors. */
function llamaPieces(infos: readonly LlamaTensorInfo[], layers: number): LlamaPiece[] {
  const pieces: LlamaPiece[] = [];
  for (const info of infos) {
    const map = LLAMA2C_NAMES[info.name];
    if (!map.perLayer) {
      pieces.push({ name: map.name, shape: info.shape, within: 0, info });
      continue;
    }
    const shape = info.shape.slice(1);
    const bytes = (info.elements / layers) * F32_BYTES;
    for (let l = 0; l < layers; l++) pieces.push({ name: layerTensorName(l, map.name), shape, within: l * bytes, info });
  }
  return pieces;
}

function llamaDescribe(
  config: { readonly dim: number; readonly hiddenDim: number; readonly nLayers: number; readonly nHeads: number; readonly nKvHeads: number; readonly vocabSize: number; readonly seqLen: number },
  sharedClassifier: boolean,
  infos: readonly LlamaTensorInfo[],
  readerOf: (piece: LlamaPiece) => { readonly offset: number | undefined; readonly read: TensorReader },
): { entry: ArchitectureEntry; config: ModelConfig; described: Described[] } {
  const entry = architectureById('llama');
  const values: HyperparameterValues = {
    dim: config.dim,
    layers: config.nLayers,
    ffnDim: config.hiddenDim,
    heads: config.nHeads,
    kvHeads: config.nKvHeads,
    rmsEps: LLAMA2C_RMS_EPS,
    ropeTheta: LLAMA2C_ROPE_THETA,
    contextLength: config.seqLen,
  };
  const modelConfig = checkConfig(entry, values, { vocabSize: config.vocabSize, tiedOutput: sharedClassifier, ropeFreqs: false });
  const pieces = llamaPieces(infos, config.nLayers);
  const f32 = loweringKind('F32');
  const geometries = pieces.map((p) => f32.geometry(p.shape, (p.shape.reduce((a, b) => a * b, 1)) * F32_BYTES));
  const slots = checkCatalog(entry, modelConfig, pieces.map((p, i) => ({ name: p.name, shape: geometries[i]!.shape, kind: 'F32' })));
  const described = pieces.map((p, i): Described => ({ name: p.name, slot: slots[i]!, kind: f32, geometry: geometries[i]!, ...readerOf(p) }));
  return { entry, config: modelConfig, described };
}

async function loadLlama2c(source: ByteSource, options: LoadModelOptions): Promise<LoadedModel> {
  const head = await source.read(0, Math.min(LLAMA_MAX_HEADER_BYTES, source.size));
  const plan = planLlamaModel(head, source.size);
  if (options.tokenizer === undefined) invalid('no-tokenizer', 'a llama2.c checkpoint needs its tokenizer (options.tokenizer)');
  const { entry, config, described } = llamaDescribe(plan.config, plan.sharedClassifier, plan.tensors, (p) => ({ offset: p.info.byteOffset + p.within, read: (offset, length) => source.read(p.info.byteOffset + p.within + offset, length) }));
  const tokenizer = tokenizerOption(options.tokenizer, config.vocabSize)!;
  checkVocab(tokenizer, config);
  checkAborted(options.signal);
  return assemble(plan.format, source.name, entry, config, described, tokenizer, source);
}

/**
 * The description of an already parsed llama2.c checkpoint (its weights are the tensor bytes: views, no
 * copy). Throws as loadModel (EINVAL `vocab-mismatch` for a tokenizer of another size).
 */
export function modelFromLlamaFile(file: LlamaModelFile, tokenizer: Tokenizer): LoadedModel {
  const { entry, config, described } = llamaDescribe(file.config, file.sharedClassifier, file.tensors, (p) => {
    const w = file.weights[p.info.name];
    return { offset: undefined, read: (offset, length) => Promise.resolve(new Uint8Array(w.buffer, w.byteOffset + p.within + offset, length)) };
  });
  checkVocab(tokenizer, config);
  return assemble(file.format, undefined, entry, config, described, tokenizer, undefined);
}

/**
 * Identity of a parsed llama2.c checkpoint with its tokenizer: the same as
 * `loadModel(checkpoint, { tokenizer }).identity()`. Rejects with EINVAL `vocab-mismatch` when the
 * tokenizer was not parsed for this model's vocabulary size.
 */
export async function modelIdentity(file: LlamaModelFile, tokenizer: Tokenizer): Promise<ModelIdentity> {
  return modelFromLlamaFile(file, tokenizer).identity();
}

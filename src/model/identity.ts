// Model and tokenizer identity (DESIGN.md "src/model": a SHA-256 over config, weights and tokenizer).
// Prompt caches record the ids and load only into the model and tokenizer that made them.
//
// Definitions (stable; changing them invalidates every saved cache):
// - tokenizerId = hex SHA-256 of the tokenizer's identity bytes (tokenizerIdentityBytes: a llama2.c
//   tokenizer's file, so it equals `sha256sum tok512.bin`; a canonical encoding of a GGUF vocabulary).
// - weightsId = hex SHA-256 over the model's tensors in catalog order (the architecture entry's globals,
//   then layer 0, 1, ...: every role the forward pass reads, the tied classifier included under the name
//   `output.weight`), each contributing
//     its catalog name (UTF-8) and a zero byte, its lowering kind name and a zero byte, the kind's packed
//     layout tag and a zero byte, its rank and row-major dimensions as little-endian u32,
//     the 32-byte SHA-256 of its bytes exactly as the file stores them.
//   So a re-quantized file, a file whose tensors are read through another lowering kind or packed layout,
//   and any changed weight give another weightsId; where a tensor came from (file format, offset,
//   residency, provider) does not enter it.
// - modelId = hex SHA-256 of the ASCII tag `tenon/model/2`, a zero byte, the canonical config (below) as
//   UTF-8 JSON preceded by its byte length as a little-endian u32, the 32-byte weights digest and the
//   32-byte tokenizer digest.
// The canonical config is the JSON array of [field, value] pairs in CONFIG_FIELDS order: the architecture
// entry's id and forward-pass flags, then every hyperparameter (floats as the f32 the file stores).
//
// Decision (tested in contracts/model/identity.test.ts): stories260K.bin and stories260K-f32.gguf hold the
// same weights and have the same weightsId, but different modelIds: the GGUF conversion declares a context
// of 128 positions where the checkpoint says 512, and its vocabulary is a GGUF vocabulary (another
// tokenizer identity) rather than tok512.bin. Identity is what the files declare, not a numerical proof
// that two files compute the same thing; a cache refused by a lookalike model is rebuilt, a cache accepted
// by a different one would be silently wrong.
//
// Uses WebCrypto (`crypto.subtle`, present in Node 20 and in secure browser contexts); without it the
// functions reject with ENOTSUP 'no-webcrypto'. Tensor digests need each tensor's bytes once (read by
// range, one tensor at a time); nothing here writes its inputs. Thread: any.
import { TenonError } from '../errors.js';
import type { ArchitectureEntry, ModelConfig } from './architecture.js';
import type { Tokenizer } from './tokenizer/index.js';
import { tokenizerIdentityBytes } from './tokenizer/index.js';

const OP = 'model.identity';
const MODEL_TAG = 'tenon/model/2';
const U32_BYTES = 4;

export interface ModelIdentity {
  /** Hex SHA-256 over config, weights and tokenizer (see the definition above). */
  readonly modelId: string;
  /** Hex SHA-256 of the tokenizer's identity bytes. */
  readonly tokenizerId: string;
  /** Hex SHA-256 over the tensors: their names, lowering kinds, packed layouts, shapes and stored bytes. */
  readonly weightsId: string;
}

/** One tensor as identity sees it. */
export interface IdentityTensor {
  /** Catalog name (`output.weight` for a tied classifier too). */
  readonly name: string;
  readonly kind: string;
  readonly packedLayout: string;
  /** Row-major shape. */
  readonly shape: readonly number[];
  /** The stored bytes of the whole tensor. */
  bytes(): Promise<Uint8Array>;
  /** Tensors with the same source share one digest (a tied classifier is the embedding's bytes). */
  readonly source: object;
}

/** Config fields that enter the model id, in this order. */
export const IDENTITY_CONFIG_FIELDS = [
  'architecture',
  'ropeStyle',
  'attentionBias',
  'ffn',
  'routing',
  'dim',
  'layers',
  'ffnDim',
  'heads',
  'kvHeads',
  'headDim',
  'ropeDim',
  'ropeTheta',
  'rmsEps',
  'contextLength',
  'vocabSize',
  'experts',
  'expertsUsed',
] as const;

function subtle(op: string): SubtleCrypto {
  const s = (globalThis as { crypto?: Crypto }).crypto?.subtle;
  if (s === undefined) throw new TenonError('ENOTSUP', 'WebCrypto (crypto.subtle) is not available here (a secure context is needed)', { op, reason: 'no-webcrypto' });
  return s;
}

/** WebCrypto takes only ArrayBuffer-backed data: SharedArrayBuffer views are copied first. */
function digestable(bytes: Uint8Array): Uint8Array<ArrayBuffer> {
  return bytes.buffer instanceof ArrayBuffer ? (bytes as Uint8Array<ArrayBuffer>) : new Uint8Array(bytes);
}

async function sha256(op: string, bytes: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await subtle(op).digest('SHA-256', digestable(bytes)));
}

function hex(bytes: Uint8Array): string {
  let s = '';
  for (const b of bytes) s += b.toString(16).padStart(2, '0');
  return s;
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

const utf8 = new TextEncoder();
const ZERO = Uint8Array.of(0);

function u32s(values: readonly number[]): Uint8Array {
  const view = new DataView(new ArrayBuffer(values.length * U32_BYTES));
  values.forEach((v, i) => view.setUint32(i * U32_BYTES, v, true));
  return new Uint8Array(view.buffer);
}

/** Hex SHA-256 of the tokenizer's identity bytes. */
export async function tokenizerIdentity(tokenizer: Tokenizer): Promise<string> {
  return hex(await sha256(OP, tokenizerIdentityBytes(tokenizer)));
}

/** The canonical config JSON (see the definition above). */
export function canonicalConfig(entry: ArchitectureEntry, config: ModelConfig): string {
  const values: Record<(typeof IDENTITY_CONFIG_FIELDS)[number], unknown> = {
    architecture: entry.id,
    ropeStyle: entry.ropeStyle,
    attentionBias: entry.attentionBias,
    ffn: entry.ffn,
    routing: entry.routing === undefined ? null : [entry.routing.gating, entry.routing.renormalize],
    dim: config.dim,
    layers: config.layers,
    ffnDim: config.ffnDim,
    heads: config.heads,
    kvHeads: config.kvHeads,
    headDim: config.headDim,
    ropeDim: config.ropeDim,
    ropeTheta: Math.fround(config.ropeTheta),
    rmsEps: Math.fround(config.rmsEps),
    contextLength: config.contextLength,
    vocabSize: config.vocabSize,
    experts: config.experts,
    expertsUsed: config.expertsUsed,
  };
  return JSON.stringify(IDENTITY_CONFIG_FIELDS.map((field) => [field, values[field]]));
}

/** The identity of a model description (see the definitions above). */
export async function computeIdentity(entry: ArchitectureEntry, config: ModelConfig, tensors: readonly IdentityTensor[], tokenizer: Tokenizer): Promise<ModelIdentity> {
  const tokenizerDigest = await sha256(OP, tokenizerIdentityBytes(tokenizer));
  const digests = new Map<object, Uint8Array>();
  const weightParts: Uint8Array[] = [];
  for (const t of tensors) {
    let digest = digests.get(t.source);
    if (digest === undefined) {
      digest = await sha256(OP, await t.bytes());
      digests.set(t.source, digest);
    }
    weightParts.push(utf8.encode(t.name), ZERO, utf8.encode(t.kind), ZERO, utf8.encode(t.packedLayout), ZERO, u32s([t.shape.length, ...t.shape]), digest);
  }
  const weightsDigest = await sha256(OP, concat(weightParts));
  const configBytes = utf8.encode(canonicalConfig(entry, config));
  const message = concat([utf8.encode(MODEL_TAG), ZERO, u32s([configBytes.length]), configBytes, weightsDigest, tokenizerDigest]);
  return Object.freeze({ modelId: hex(await sha256(OP, message)), tokenizerId: hex(tokenizerDigest), weightsId: hex(weightsDigest) });
}

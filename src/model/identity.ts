// Model and tokenizer identity (DESIGN.md "src/model": a SHA-256 over config, weights and
// tokenizer). Prompt caches record both ids and load only into the model and tokenizer they came from.
//
// Definitions (stable; changing them invalidates every saved cache):
// - tokenizerId = hex SHA-256 of the tokenizer file bytes (so it equals `sha256sum tok512.bin`).
// - modelId = hex SHA-256 of the concatenation of
//     the ASCII tag "tenon/llama2c-model/1" and one zero byte,
//     8 little-endian int32: dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len,
//       shared_classifier (0 or 1),
//     for each stored tensor in canonical order (model.tensors: legacy llama2.c order, wcls only when the
//       classifier is separate) the 32-byte SHA-256 of its little-endian fp32 bytes,
//     the 32-byte tokenizer digest.
//   Hashing each tensor separately means no copy of the whole model is ever made; the RoPE tables of
//   legacy files are not part of the model (tenon computes RoPE), so a version 0 file and the version 1
//   export of the same weights have the same modelId.
// Uses WebCrypto (`crypto.subtle`, present in Node 20 and in secure browser contexts); without it the
// functions reject with ENOTSUP 'no-webcrypto'. Nothing here writes its inputs.
import { TenonError } from '../errors.js';
import type { LlamaModelFile } from './llama2c-checkpoint.js';
import type { Tokenizer } from './tokenizer/index.js';
import { tokenizerIdentityBytes } from './tokenizer/index.js';

const OP = 'session.modelIdentity';
const MODEL_TAG = 'tenon/llama2c-model/1';
const DIGEST_BYTES = 32;

export interface ModelIdentity {
  /** Hex SHA-256 over config, weights and tokenizer (see the definition above). */
  readonly modelId: string;
  /** Hex SHA-256 of the tokenizer file. */
  readonly tokenizerId: string;
}

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

/** Hex SHA-256 of the tokenizer file. */
export async function tokenizerIdentity(tokenizer: Tokenizer): Promise<string> {
  return hex(await sha256('session.tokenizerIdentity', tokenizerIdentityBytes(tokenizer)));
}

/**
 * Identity of a model together with its tokenizer. Rejects with EINVAL 'vocab-mismatch' when the
 * tokenizer was not parsed for this model's vocabulary size.
 */
export async function modelIdentity(model: LlamaModelFile, tokenizer: Tokenizer): Promise<ModelIdentity> {
  const c = model.config;
  if (tokenizer.vocabSize !== c.vocabSize) {
    throw new TenonError('EINVAL', 'the tokenizer was parsed for another vocabulary size', { op: OP, reason: 'vocab-mismatch', ids: { model: c.vocabSize, tokenizer: tokenizer.vocabSize } });
  }
  const tag = new TextEncoder().encode(MODEL_TAG);
  const configBytes = new DataView(new ArrayBuffer(8 * 4));
  [c.dim, c.hiddenDim, c.nLayers, c.nHeads, c.nKvHeads, c.vocabSize, c.seqLen, model.sharedClassifier ? 1 : 0].forEach((v, i) => configBytes.setInt32(4 * i, v, true));
  const tokenizerDigest = await sha256(OP, tokenizerIdentityBytes(tokenizer));
  const tensorDigests: Uint8Array[] = [];
  for (const info of model.tensors) {
    const w = model.weights[info.name];
    tensorDigests.push(await sha256(OP, new Uint8Array(w.buffer, w.byteOffset, w.byteLength)));
  }
  const message = new Uint8Array(tag.length + 1 + configBytes.byteLength + DIGEST_BYTES * (tensorDigests.length + 1));
  let at = 0;
  const put = (bytes: Uint8Array): void => {
    message.set(bytes, at);
    at += bytes.length;
  };
  put(tag);
  put(Uint8Array.of(0));
  put(new Uint8Array(configBytes.buffer));
  for (const d of tensorDigests) put(d);
  put(tokenizerDigest);
  return Object.freeze({ modelId: hex(await sha256(OP, message)), tokenizerId: hex(tokenizerDigest) });
}

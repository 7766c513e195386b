// Prompt-cache blobs: the committed KV state of a prefix plus a manifest, stored as one data-plane blob.
//
// Layout (little-endian): "TNPC" | u32 format version | u32 manifest byte length | manifest JSON (UTF-8)
// | zero padding to 4 bytes | KV rows as f32 (layer 0 K, layer 0 V, layer 1 K, ... each `length` rows of
// kvDim) | SHA-256 of every byte before it. The trailing digest makes any flipped or missing byte
// detectable before a single field is trusted. Pure encoding and validation; no I/O, no session state.
import { TenonError } from '../errors.js';
import type { StepOutcome } from './session.js';

export const PROMPT_CACHE_MAGIC = 0x4350_4e54; // "TNPC" read as a little-endian u32
export const PROMPT_CACHE_FORMAT = 1;
/** Manifest schema version (inside the JSON). */
export const PROMPT_CACHE_SCHEMA = 1;
const HEADER_BYTES = 12;
const DIGEST_BYTES = 32;
/** A manifest longer than this is refused before parsing (a 32,000-position prefix fits easily). */
const MAX_MANIFEST_BYTES = 1 << 22;

export interface PromptCacheManifest {
  readonly schema: number;
  readonly modelId: string;
  readonly tokenizerId: string;
  readonly layout: { readonly layers: number; readonly kvDim: number; readonly dtype: 'f32'; readonly order: 'layer-k-v' };
  /** The prefix token ids whose state the blob holds (length = committed positions). */
  readonly tokens: readonly number[];
  /** Epoch and outcome of the last step committed before the save. */
  readonly epoch: number;
  readonly lastOutcome: StepOutcome | null;
}

const OP = 'promptCache';

function bad(reason: string, message: string, code: 'EINVAL' | 'ESTALE' = 'EINVAL'): never {
  throw new TenonError(code, message, { op: OP, reason });
}

async function sha256(bytes: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>));
}

/** Encodes manifest + KV rows into one blob. */
export async function encodePromptCache(manifest: PromptCacheManifest, kv: Float32Array): Promise<Uint8Array> {
  const json = new TextEncoder().encode(JSON.stringify(manifest));
  const padded = Math.ceil((HEADER_BYTES + json.byteLength) / 4) * 4;
  const total = padded + kv.byteLength + DIGEST_BYTES;
  const out = new Uint8Array(total);
  const view = new DataView(out.buffer);
  view.setUint32(0, PROMPT_CACHE_MAGIC, true);
  view.setUint32(4, PROMPT_CACHE_FORMAT, true);
  view.setUint32(8, json.byteLength, true);
  out.set(json, HEADER_BYTES);
  out.set(new Uint8Array(kv.buffer, kv.byteOffset, kv.byteLength), padded);
  out.set(await sha256(out.subarray(0, total - DIGEST_BYTES)), total - DIGEST_BYTES);
  return out;
}

/** What a session must match for a cache to load into it. */
export interface PromptCacheExpectation {
  readonly modelId: string;
  readonly tokenizerId: string;
  readonly layers: number;
  readonly kvDim: number;
  readonly maxSeq: number;
}

/**
 * Validates a blob completely (digest, header, manifest, identity, layout, sizes) and returns the manifest
 * and a view of its KV rows. Throws before anything else can happen; never returns partial data.
 */
export async function decodePromptCache(bytes: Uint8Array, expect: PromptCacheExpectation): Promise<{ manifest: PromptCacheManifest; kv: Float32Array }> {
  if (bytes.byteLength < HEADER_BYTES + DIGEST_BYTES) bad('truncated', 'blob is shorter than a prompt cache');
  const body = bytes.subarray(0, bytes.byteLength - DIGEST_BYTES);
  const digest = bytes.subarray(bytes.byteLength - DIGEST_BYTES);
  const actual = await sha256(body);
  if (!actual.every((b, i) => b === digest[i])) bad('checksum', 'prompt cache digest does not match its bytes');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.getUint32(0, true) !== PROMPT_CACHE_MAGIC) bad('not-a-cache', 'not a tenon prompt cache');
  if (view.getUint32(4, true) !== PROMPT_CACHE_FORMAT) bad('format', `unsupported prompt-cache format ${view.getUint32(4, true)}`);
  const jsonLength = view.getUint32(8, true);
  if (jsonLength > MAX_MANIFEST_BYTES || HEADER_BYTES + jsonLength > body.byteLength) bad('truncated', 'manifest runs past the blob');
  let manifest: PromptCacheManifest;
  try {
    manifest = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(HEADER_BYTES, HEADER_BYTES + jsonLength))) as PromptCacheManifest;
  } catch {
    return bad('manifest', 'manifest is not valid JSON');
  }
  if (manifest === null || typeof manifest !== 'object' || manifest.schema !== PROMPT_CACHE_SCHEMA) bad('schema', 'unsupported manifest schema');
  // The model id covers the tokenizer too, so the more specific tokenizer check comes first.
  if (manifest.tokenizerId !== expect.tokenizerId) bad('tokenizer-mismatch', 'cache was made with another tokenizer');
  if (manifest.modelId !== expect.modelId) bad('model-mismatch', 'cache was made by another model');
  const layout = manifest.layout;
  if (layout?.layers !== expect.layers || layout.kvDim !== expect.kvDim || layout.dtype !== 'f32' || layout.order !== 'layer-k-v') {
    bad('layout-mismatch', 'cache state layout differs from this session');
  }
  const tokens = manifest.tokens;
  if (!Array.isArray(tokens) || !tokens.every((t) => Number.isSafeInteger(t) && t >= 0)) bad('manifest', 'prefix tokens are malformed');
  if (tokens.length > expect.maxSeq) bad('too-long', `cache holds ${tokens.length} positions, the session ${expect.maxSeq}`);
  if (!Number.isSafeInteger(manifest.epoch) || manifest.epoch < 0) bad('manifest', 'epoch is malformed');
  const kvStart = Math.ceil((HEADER_BYTES + jsonLength) / 4) * 4;
  const kvBytes = 2 * layout.layers * tokens.length * layout.kvDim * 4;
  if (kvStart + kvBytes !== body.byteLength) bad('truncated', 'KV rows do not match the manifest');
  const copy = body.slice(kvStart);
  return { manifest, kv: new Float32Array(copy.buffer, 0, kvBytes / 4) };
}

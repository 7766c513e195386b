// LoRA adapter blobs: a trainer's adapters plus a manifest naming the base model, stored as one data-plane
// blob and published all-or-nothing (like prompt caches, src/session/prompt-cache.ts).
//
// Layout (little-endian): "TNLA" | u32 format version | u32 manifest byte length | manifest JSON (UTF-8)
// | zero padding to 4 bytes | every adapter as f32 in the manifest's order | SHA-256 of every byte before
// it. The digest is checked before any field is trusted; the manifest must match the loading trainer's
// base model identity, dims, rank and adapter shapes before a single value is written into it.
//
// Saving: the blob's SHA-256 is declared when the data plane staging opens (writeBlob's digest); the
// publication of the sealed, verified bytes is the single commit point, so readers see the previous
// revision or the new one, never a part. A failed save publishes nothing and changes no trainer state.
// Loading: readBlob, full validation, then one write per adapter tensor into the trainer's state; a
// refused load changes nothing. Thread: the trainer's runtime.
import { readBlob, sha256Hex, writeBlob } from '../dataplane/index.js';
import type { Session as PlaneSession } from '../dataplane/index.js';
import { TenonError } from '../errors.js';

export const ADAPTER_MAGIC = 0x414c_4e54; // "TNLA" read as a little-endian u32
export const ADAPTER_FORMAT = 1;
export const ADAPTER_SCHEMA = 1;
const HEADER_BYTES = 12;
const DIGEST_BYTES = 32;
const F32_BYTES = 4;
/** A manifest longer than this is refused before parsing. */
const MAX_MANIFEST_BYTES = 1 << 20;

export interface AdapterManifest {
  readonly schema: number;
  /** modelId of the base model the adapters were trained on (src/model identity). */
  readonly baseModelId: string;
  readonly rank: number;
  readonly alpha: number;
  /** Steps the trainer had taken when it saved. */
  readonly steps: number;
  /** Adapter tensors in blob order. */
  readonly tensors: readonly { readonly name: string; readonly shape: readonly number[] }[];
}

const OP = 'train.adapters';

function bad(op: string, reason: string, message: string, code: 'EINVAL' | 'ESTALE' = 'EINVAL'): never {
  throw new TenonError(code, message, { op, reason });
}

async function sha256(bytes: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>));
}

const count = (shape: readonly number[]): number => shape.reduce((a, b) => a * b, 1);

/** Encodes the manifest and the adapter values (one array per manifest tensor, in order) into one blob. */
export async function encodeAdapters(manifest: AdapterManifest, values: readonly Float32Array[]): Promise<Uint8Array> {
  const json = new TextEncoder().encode(JSON.stringify(manifest));
  const padded = Math.ceil((HEADER_BYTES + json.byteLength) / F32_BYTES) * F32_BYTES;
  const dataBytes = values.reduce((s, v) => s + v.byteLength, 0);
  const total = padded + dataBytes + DIGEST_BYTES;
  const out = new Uint8Array(total);
  const view = new DataView(out.buffer);
  view.setUint32(0, ADAPTER_MAGIC, true);
  view.setUint32(4, ADAPTER_FORMAT, true);
  view.setUint32(8, json.byteLength, true);
  out.set(json, HEADER_BYTES);
  let at = padded;
  for (const v of values) {
    out.set(new Uint8Array(v.buffer, v.byteOffset, v.byteLength), at);
    at += v.byteLength;
  }
  out.set(await sha256(out.subarray(0, total - DIGEST_BYTES)), total - DIGEST_BYTES);
  return out;
}

/** What a trainer must match for a blob to load into it. */
export interface AdapterExpectation {
  readonly baseModelId: string;
  readonly rank: number;
  readonly tensors: readonly { readonly name: string; readonly shape: readonly number[] }[];
}

/**
 * Checks digest, header, manifest, base model identity, rank and every tensor's name and shape, then
 * returns the manifest and one copy per tensor. EINVAL `corrupt` (digest, header, manifest, sizes),
 * ESTALE `wrong-model` (another base model), EINVAL `layout-mismatch` (rank, names or shapes).
 */
export async function decodeAdapters(bytes: Uint8Array, expect: AdapterExpectation, op = `${OP}.decode`): Promise<{ manifest: AdapterManifest; values: Float32Array[] }> {
  if (bytes.byteLength < HEADER_BYTES + DIGEST_BYTES) bad(op, 'corrupt', 'the adapter blob is too short');
  const body = bytes.subarray(0, bytes.byteLength - DIGEST_BYTES);
  const digest = await sha256(body);
  const stored = bytes.subarray(bytes.byteLength - DIGEST_BYTES);
  if (digest.some((b, i) => b !== stored[i])) bad(op, 'corrupt', 'the adapter blob does not match its digest');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.getUint32(0, true) !== ADAPTER_MAGIC || view.getUint32(4, true) !== ADAPTER_FORMAT) bad(op, 'corrupt', 'not an adapter blob of this format');
  const jsonBytes = view.getUint32(8, true);
  if (jsonBytes > MAX_MANIFEST_BYTES || HEADER_BYTES + jsonBytes > body.byteLength) bad(op, 'corrupt', 'manifest length out of range');
  let manifest: AdapterManifest;
  try {
    manifest = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(HEADER_BYTES, HEADER_BYTES + jsonBytes))) as AdapterManifest;
  } catch (err) {
    throw new TenonError('EINVAL', 'the adapter manifest is not valid JSON', { op, reason: 'corrupt', cause: err });
  }
  if (manifest === null || typeof manifest !== 'object' || manifest.schema !== ADAPTER_SCHEMA || !Array.isArray(manifest.tensors)) bad(op, 'corrupt', 'the adapter manifest has an unknown schema');
  if (manifest.baseModelId !== expect.baseModelId) bad(op, 'wrong-model', 'the adapters were trained on another base model', 'ESTALE');
  if (manifest.rank !== expect.rank || manifest.tensors.length !== expect.tensors.length) bad(op, 'layout-mismatch', 'the adapters have another rank or tensor list');
  manifest.tensors.forEach((t, i) => {
    const want = expect.tensors[i]!;
    if (t.name !== want.name || !Array.isArray(t.shape) || t.shape.length !== want.shape.length || t.shape.some((d: number, j: number) => d !== want.shape[j])) bad(op, 'layout-mismatch', `adapter ${i} is not ${want.name} [${want.shape.join(', ')}]`);
  });
  const padded = Math.ceil((HEADER_BYTES + jsonBytes) / F32_BYTES) * F32_BYTES;
  const dataBytes = expect.tensors.reduce((s, t) => s + count(t.shape) * F32_BYTES, 0);
  if (padded + dataBytes !== body.byteLength) bad(op, 'corrupt', 'the adapter data has the wrong size');
  const values: Float32Array[] = [];
  let at = padded;
  for (const t of expect.tensors) {
    const n = count(t.shape);
    const copy = new Float32Array(n);
    new Uint8Array(copy.buffer).set(bytes.subarray(at, at + n * F32_BYTES));
    values.push(copy);
    at += n * F32_BYTES;
  }
  return { manifest, values };
}

/** Writes `bytes` to `path` through the data plane, verified against its SHA-256, all-or-nothing. */
export async function publishAdapters(store: PlaneSession, path: string, bytes: Uint8Array): Promise<void> {
  const writer = await writeBlob(store, path, bytes.byteLength, { digest: await sha256Hex(bytes) });
  try {
    await writer.write(bytes);
    await writer.seal();
  } catch (err) {
    if (writer.descriptor.info().state === 'open') await writer.abort();
    throw err;
  }
}

/** Reads the blob at `path`. */
export function fetchAdapters(store: PlaneSession, path: string): Promise<Uint8Array> {
  return readBlob(store, path);
}

// Export of a Trainer's current weights as a llama2.c model (issue 15: generate with the adapted model).
//
// `exportCheckpoint` writes the trainer's weights as one llama2.c "version 1" checkpoint (256-byte header,
// then rms_att, rms_ffn, rms_final, token_embedding, wq, wk, wv, wo, w1, w2, w3 and wcls when untied, all
// little-endian f32) with the base model's config (context length included). Full fine-tuning: every
// weight as the trainer holds it. LoRA: every adapted projection merged on the host as
// W + (alpha / rank) · B · A (A [rank, in], B [out, rank]), which is what the trainer's forward computes as
// x · Wᵀ + (alpha / rank) · (x · Aᵀ) · Bᵀ, up to f32 rounding. `exportModel` parses those bytes
// (parseLlamaModel: zero copy, finite scan), so the returned LlamaModelFile's weights are views of that
// one buffer: `TextSession.create({ runtime, model, tokenizer })` runs it, and its identity (a hash over
// the weights) is not the base model's, so the base's prompt caches are refused by a session over it.
//
// Ownership: the checkpoint buffer is new and belongs to the caller; the trainer's state is only read
// (host copies of one parameter at a time, dropped after they are written into the buffer). Weights that
// are not finite (a diverged run) are refused by the parse with EINVAL `non-finite`. Thread: the
// trainer's runtime's.
import { LLAMA_MAGIC, LLAMA_V1_HEADER_BYTES, parseLlamaModel } from '../model/index.js';
import type { LlamaConfig, LlamaModelFile } from '../model/index.js';
import type { LlamaDims, LoraConfig } from './llama-grad.js';
import { LORA_TARGETS } from './llama-grad.js';

const F32_BYTES = 4;
const CHECKPOINT_VERSION = 1;
/** Header layout of a version 1 checkpoint: magic, version, 7 int32 fields, the shared-classifier byte. */
const VERSION_OFFSET = 4;
const FIELDS_OFFSET = 8;
const SHARED_FLAG_OFFSET = FIELDS_OFFSET + 7 * 4;

/** Layer tensors in version 1 order after the norms and the embedding. */
const LAYER_MATRICES = ['wq', 'wk', 'wv', 'wo', 'w1', 'w2', 'w3'] as const;

/** What the export reads from a trainer: its dims, LoRA settings and one parameter at a time. */
export interface ExportSource {
  readonly dims: LlamaDims;
  readonly lora: LoraConfig | undefined;
  parameter(name: string): Promise<Float32Array>;
}

/** `w` (row-major [out, inp]) plus s · B · A, in place; B [out, rank], A [rank, inp]. */
function mergeLora(w: Float32Array, a: Float32Array, b: Float32Array, out: number, inp: number, rank: number, s: number): void {
  for (let o = 0; o < out; o++) {
    for (let i = 0; i < inp; i++) {
      let acc = 0;
      for (let r = 0; r < rank; r++) acc += b[o * rank + r]! * a[r * inp + i]!;
      w[o * inp + i] = w[o * inp + i]! + s * acc;
    }
  }
}

/** The trainer's weights as llama2.c version 1 checkpoint bytes with the base model's `config`. */
export async function exportCheckpoint(source: ExportSource, config: LlamaConfig): Promise<Uint8Array> {
  const d = source.dims;
  const L = d.layers;
  const per: Record<string, number> = { wq: d.dim * d.dim, wk: d.kvDim * d.dim, wv: d.kvDim * d.dim, wo: d.dim * d.dim, w1: d.hidden * d.dim, w2: d.dim * d.hidden, w3: d.hidden * d.dim };
  const shapeOf: Record<string, [number, number]> = { wq: [d.dim, d.dim], wk: [d.kvDim, d.dim], wv: [d.kvDim, d.dim], wo: [d.dim, d.dim], w1: [d.hidden, d.dim], w2: [d.dim, d.hidden], w3: [d.hidden, d.dim] };
  const floats = 2 * L * d.dim + d.dim + d.vocab * d.dim + LAYER_MATRICES.reduce((n, m) => n + L * per[m]!, 0) + (d.tied ? 0 : d.vocab * d.dim);
  const bytes = new Uint8Array(LLAMA_V1_HEADER_BYTES + floats * F32_BYTES);
  const header = new DataView(bytes.buffer);
  header.setUint32(0, LLAMA_MAGIC, true);
  header.setInt32(VERSION_OFFSET, CHECKPOINT_VERSION, true);
  [config.dim, config.hiddenDim, config.nLayers, config.nHeads, config.nKvHeads, config.vocabSize, config.seqLen].forEach((v, i) => header.setInt32(FIELDS_OFFSET + 4 * i, v, true));
  header.setUint8(SHARED_FLAG_OFFSET, d.tied ? 1 : 0);
  const body = new Float32Array(bytes.buffer, LLAMA_V1_HEADER_BYTES, floats);
  let at = 0;
  const put = (values: Float32Array): void => {
    body.set(values, at);
    at += values.length;
  };
  for (let l = 0; l < L; l++) put(await source.parameter(`rmsAtt.${l}`));
  for (let l = 0; l < L; l++) put(await source.parameter(`rmsFfn.${l}`));
  put(await source.parameter('rmsFinal'));
  put(await source.parameter('tokenEmbedding'));
  const lora = source.lora;
  const adapted = new Set<string>(lora === undefined ? [] : LORA_TARGETS);
  for (const m of LAYER_MATRICES) {
    for (let l = 0; l < L; l++) {
      const w = await source.parameter(`${m}.${l}`);
      if (lora !== undefined && adapted.has(m)) {
        const [out, inp] = shapeOf[m]!;
        mergeLora(w, await source.parameter(`loraA:${m}.${l}`), await source.parameter(`loraB:${m}.${l}`), out, inp, lora.rank, lora.alpha / lora.rank);
      }
      put(w);
    }
  }
  if (!d.tied) put(await source.parameter('wcls'));
  return bytes;
}

/** The trainer's weights as a parsed llama2.c model (views of one new checkpoint buffer). */
export async function exportModel(source: ExportSource, config: LlamaConfig): Promise<LlamaModelFile> {
  return parseLlamaModel(await exportCheckpoint(source, config));
}

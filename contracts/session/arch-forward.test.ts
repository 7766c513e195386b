// Plan: the forward pass reads every architecture difference from the entry and config (MD-arch-forward-*),
// checked on synthetic F32 GGUF models written by the test writer against an independent f64 reference
// of llama.cpp's definitions written here (embedding, RMSNorm, Q/K/V with optional biases, RoPE in either
// pairing with optional frequency divisors, grouped-query causal attention, SiLU-gated MLP or routed
// experts with softmax top-k and renormalised weights, final norm, tied or separate classifier). Each case
// runs a batched pass (per-row logits) and a decode step on every provider of the lane, and first shows
// that its flag matters: the reference with the flag turned the other way differs from the reference by
// far more than the tolerance, so a forward that ignored the flag could not pass.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LlamaForward, createRuntime, loadModel } from '../../src/index.js';
import type { GgufValue, HostProvider, Runtime, WebGPUProvider } from '../../src/index.js';
import { gv, writeGguf } from '../support/gguf-writer.js';
import type { WriterTensor } from '../support/gguf-writer.js';
import { providerCases } from '../support/providers.js';

const DIM = 32;
const HEADS = 4;
const KV_HEADS = 2;
const HEAD_DIM = DIM / HEADS;
const KV_DIM = HEAD_DIM * KV_HEADS;
const FFN = 48;
const LAYERS = 2;
const VOCAB = 24;
const EXPERTS = 4;
const USED = 2;
const EPS = Math.fround(1e-5);
const THETA = 10_000;
const TOKENS = [1, 7, 19, 3, 11, 22];
const NEXT = 5;
/** |ours - reference| on logits of magnitude ~1: f32 sums of 32-48 terms and f32 RoPE angles. */
const TOL = 1e-4;
/** A flag "matters" when turning it the other way moves some logit by at least this. */
const MATTERS = 100 * TOL;

type Style = 'normal' | 'neox';

interface Spec {
  readonly arch: 'llama' | 'qwen2';
  readonly bias: boolean;
  readonly routed: boolean;
  readonly tied: boolean;
  readonly factors?: readonly number[];
}

interface LayerWeights {
  readonly attnNorm: Float32Array;
  readonly wq: Float32Array;
  readonly wk: Float32Array;
  readonly wv: Float32Array;
  readonly bq?: Float32Array;
  readonly bk?: Float32Array;
  readonly bv?: Float32Array;
  readonly wo: Float32Array;
  readonly ffnNorm: Float32Array;
  readonly gate: Float32Array;
  readonly up: Float32Array;
  readonly down: Float32Array;
  readonly router?: Float32Array;
}

interface Weights {
  readonly emb: Float32Array;
  readonly outNorm: Float32Array;
  readonly out: Float32Array | undefined;
  readonly layers: readonly LayerWeights[];
}

/** Knobs of the reference: the model's own flags, or one turned the other way. */
interface Flags {
  readonly style: Style;
  readonly bias: boolean;
  readonly renormalize: boolean;
  readonly factors: readonly number[] | undefined;
  /** Use the embedding as classifier even when `out` exists. */
  readonly classifierIsEmbedding: boolean;
}

function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function filled(next: () => number, n: number, scale: number, offset = 0): Float32Array {
  return Float32Array.from({ length: n }, () => offset + (next() * 2 - 1) * scale);
}

function bytesOf(a: Float32Array): Uint8Array {
  return new Uint8Array(a.buffer.slice(a.byteOffset, a.byteOffset + a.byteLength));
}

/** ggml-order shape of a row-major shape. */
const ggml = (shape: readonly number[]): number[] => [...shape].reverse();

function build(spec: Spec, seed: number): { bytes: Uint8Array; weights: Weights } {
  const next = rng(seed);
  const m = (rows: number, cols: number) => filled(next, rows * cols, 1.5 / Math.sqrt(cols));
  const ffnRows = spec.routed ? EXPERTS * FFN : FFN;
  const layers: LayerWeights[] = Array.from({ length: LAYERS }, () => ({
    attnNorm: filled(next, DIM, 0.2, 1),
    wq: m(DIM, DIM),
    wk: m(KV_DIM, DIM),
    wv: m(KV_DIM, DIM),
    ...(spec.bias ? { bq: filled(next, DIM, 0.8), bk: filled(next, KV_DIM, 0.8), bv: filled(next, KV_DIM, 0.8) } : {}),
    wo: m(DIM, DIM),
    ffnNorm: filled(next, DIM, 0.2, 1),
    ...(spec.routed ? { router: m(EXPERTS, DIM) } : {}),
    gate: m(ffnRows, DIM),
    up: m(ffnRows, DIM),
    down: spec.routed ? filled(next, EXPERTS * DIM * FFN, 1.5 / Math.sqrt(FFN)) : m(DIM, FFN),
  }));
  const weights: Weights = { emb: filled(next, VOCAB * DIM, 1), outNorm: filled(next, DIM, 0.2, 1), out: spec.tied ? undefined : m(VOCAB, DIM), layers };
  const t = (name: string, shape: readonly number[], data: Float32Array): WriterTensor => ({ name, shape: ggml(shape), type: 'F32', data: bytesOf(data) });
  const tensors: WriterTensor[] = [t('token_embd.weight', [VOCAB, DIM], weights.emb), t('output_norm.weight', [DIM], weights.outNorm)];
  if (weights.out !== undefined) tensors.push(t('output.weight', [VOCAB, DIM], weights.out));
  if (spec.factors !== undefined) tensors.push(t('rope_freqs.weight', [HEAD_DIM / 2], Float32Array.from(spec.factors)));
  layers.forEach((L, l) => {
    const b = `blk.${l}.`;
    tensors.push(t(`${b}attn_norm.weight`, [DIM], L.attnNorm), t(`${b}attn_q.weight`, [DIM, DIM], L.wq), t(`${b}attn_k.weight`, [KV_DIM, DIM], L.wk), t(`${b}attn_v.weight`, [KV_DIM, DIM], L.wv));
    if (L.bq !== undefined) tensors.push(t(`${b}attn_q.bias`, [DIM], L.bq), t(`${b}attn_k.bias`, [KV_DIM], L.bk!), t(`${b}attn_v.bias`, [KV_DIM], L.bv!));
    tensors.push(t(`${b}attn_output.weight`, [DIM, DIM], L.wo), t(`${b}ffn_norm.weight`, [DIM], L.ffnNorm));
    if (spec.routed) {
      tensors.push(
        t(`${b}ffn_gate_inp.weight`, [EXPERTS, DIM], L.router!),
        t(`${b}ffn_gate_exps.weight`, [EXPERTS, FFN, DIM], L.gate),
        t(`${b}ffn_up_exps.weight`, [EXPERTS, FFN, DIM], L.up),
        t(`${b}ffn_down_exps.weight`, [EXPERTS, DIM, FFN], L.down),
      );
    } else tensors.push(t(`${b}ffn_gate.weight`, [FFN, DIM], L.gate), t(`${b}ffn_up.weight`, [FFN, DIM], L.up), t(`${b}ffn_down.weight`, [DIM, FFN], L.down));
  });
  const tokens = ['<unk>', '<s>', '</s>', ...Array.from({ length: VOCAB - 3 }, (_, i) => `t${i}`)];
  const hyper: Record<string, GgufValue> = {
    embedding_length: gv.u32(DIM),
    block_count: gv.u32(LAYERS),
    feed_forward_length: gv.u32(FFN),
    'attention.head_count': gv.u32(HEADS),
    'attention.head_count_kv': gv.u32(KV_HEADS),
    'attention.layer_norm_rms_epsilon': gv.f32(EPS),
    'rope.freq_base': gv.f32(THETA),
    context_length: gv.u32(64),
    ...(spec.routed ? { expert_count: gv.u32(EXPERTS), expert_used_count: gv.u32(USED) } : {}),
  };
  const bytes = writeGguf({
    metadata: [
      ['general.architecture', gv.str(spec.arch)],
      ...Object.entries(hyper).map(([k, v]): [string, GgufValue] => [`${spec.arch}.${k}`, v]),
      ['tokenizer.ggml.model', gv.str('llama')],
      ['tokenizer.ggml.tokens', gv.strings(tokens)],
      ['tokenizer.ggml.scores', gv.f32s(tokens.map((_, i) => -i))],
      ['tokenizer.ggml.token_type', gv.i32s(tokens.map((_, i) => (i === 0 ? 2 : i < 3 ? 3 : 1)))],
    ],
    tensors,
  }).bytes;
  return { bytes, weights };
}

// ---------------------------------------------------------------------------------------------------
// The f64 reference (llama.cpp's definitions).

function rmsnorm(x: Float64Array, w: Float32Array, eps: number): Float64Array {
  let ss = 0;
  for (const v of x) ss += v * v;
  const s = 1 / Math.sqrt(ss / x.length + eps);
  return Float64Array.from(x, (v, i) => v * s * w[i]!);
}

/** y = W x for W [rows, cols] starting at row `first`, plus an optional bias. */
function matvec(w: Float32Array, x: Float64Array, rows: number, first = 0, bias?: Float32Array): Float64Array {
  const cols = x.length;
  const y = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    let s = bias === undefined ? 0 : bias[r]!;
    for (let c = 0; c < cols; c++) s += w[(first + r) * cols + c]! * x[c]!;
    y[r] = s;
  }
  return y;
}

function rope(v: Float64Array, heads: number, pos: number, flags: Flags): void {
  const half = HEAD_DIM / 2;
  for (let h = 0; h < heads; h++) {
    for (let i = 0; i < half; i++) {
      const freq = Math.pow(THETA, (-2 * i) / HEAD_DIM) / (flags.factors?.[i] ?? 1);
      const a = h * HEAD_DIM + (flags.style === 'neox' ? i : 2 * i);
      const b = flags.style === 'neox' ? a + half : a + 1;
      const [x0, x1] = [v[a]!, v[b]!];
      const [c, s] = [Math.cos(pos * freq), Math.sin(pos * freq)];
      v[a] = x0 * c - x1 * s;
      v[b] = x0 * s + x1 * c;
    }
  }
}

const silu = (g: number): number => g / (1 + Math.exp(-g));

/** Logits after each of `tokens` (teacher-forced from position 0). */
function reference(spec: Spec, w: Weights, tokens: readonly number[], flags: Flags): Float64Array[] {
  const keys: Float64Array[][] = w.layers.map(() => []);
  const values: Float64Array[][] = w.layers.map(() => []);
  const out: Float64Array[] = [];
  tokens.forEach((token, pos) => {
    let x = Float64Array.from(w.emb.subarray(token * DIM, (token + 1) * DIM));
    w.layers.forEach((L, l) => {
      const h = rmsnorm(x, L.attnNorm, EPS);
      const q = matvec(L.wq, h, DIM, 0, flags.bias ? L.bq : undefined);
      const k = matvec(L.wk, h, KV_DIM, 0, flags.bias ? L.bk : undefined);
      const v = matvec(L.wv, h, KV_DIM, 0, flags.bias ? L.bv : undefined);
      rope(q, HEADS, pos, flags);
      rope(k, KV_HEADS, pos, flags);
      keys[l]!.push(k);
      values[l]!.push(v);
      const att = new Float64Array(DIM);
      for (let hd = 0; hd < HEADS; hd++) {
        const kv = Math.floor(hd / (HEADS / KV_HEADS));
        const scores = keys[l]!.map((kr) => {
          let s = 0;
          for (let i = 0; i < HEAD_DIM; i++) s += q[hd * HEAD_DIM + i]! * kr[kv * HEAD_DIM + i]!;
          return s / Math.sqrt(HEAD_DIM);
        });
        const mx = Math.max(...scores);
        const e = scores.map((s) => Math.exp(s - mx));
        const sum = e.reduce((a, b) => a + b, 0);
        values[l]!.forEach((vr, j) => {
          for (let i = 0; i < HEAD_DIM; i++) att[hd * HEAD_DIM + i]! += (e[j]! / sum) * vr[kv * HEAD_DIM + i]!;
        });
      }
      x = Float64Array.from(matvec(L.wo, att, DIM), (v2, i) => v2 + x[i]!);
      const f = rmsnorm(x, L.ffnNorm, EPS);
      const mlp = (first: number, downFirst: number): Float64Array => {
        const g = matvec(L.gate, f, FFN, first);
        const u = matvec(L.up, f, FFN, first);
        const hid = Float64Array.from(g, (gv2, i) => silu(gv2) * u[i]!);
        return matvec(L.down, hid, DIM, downFirst);
      };
      if (!spec.routed) {
        const y = mlp(0, 0);
        x = Float64Array.from(x, (v2, i) => v2 + y[i]!);
        return;
      }
      const logits = matvec(L.router!, f, EXPERTS);
      const mx = Math.max(...logits);
      const p = Array.from(logits, (z) => Math.exp(z - mx));
      const total = p.reduce((a, b) => a + b, 0);
      const picks = [...p.keys()].sort((a, b) => p[b]! - p[a]! || a - b).slice(0, USED);
      const norm = flags.renormalize ? picks.reduce((s, e2) => s + p[e2]!, 0) : total;
      const next = Float64Array.from(x);
      for (const e2 of picks) {
        const y = mlp(e2 * FFN, e2 * DIM);
        for (let i = 0; i < DIM; i++) next[i]! += (p[e2]! / norm) * y[i]!;
      }
      x = next;
    });
    const hf = rmsnorm(x, w.outNorm, EPS);
    out.push(matvec(flags.classifierIsEmbedding || w.out === undefined ? w.emb : w.out, hf, VOCAB));
  });
  return out;
}

function maxDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i]! - b[i]!));
  return worst;
}

interface Case {
  readonly spec: Spec;
  /**
   * The reference's own flags, and the same with the flag under test turned the other way (none for a
   * tied classifier: such a file has no other tensor to read it from).
   */
  readonly flags: Flags;
  readonly flipped: Flags | undefined;
  readonly seed: number;
}

const BASE: Flags = { style: 'normal', bias: false, renormalize: true, factors: undefined, classifierIsEmbedding: false };
const FACTORS = [1, 2, 8, 40];
const LLAMA: Spec = { arch: 'llama', bias: false, routed: false, tied: false };

const QWEN2_BIAS: Case = { spec: { arch: 'qwen2', bias: true, routed: false, tied: false }, flags: { ...BASE, style: 'neox', bias: true }, flipped: { ...BASE, style: 'neox' }, seed: 1001 };
const QWEN2_NEOX: Case = {
  spec: { arch: 'qwen2', bias: true, routed: false, tied: true },
  flags: { ...BASE, style: 'neox', bias: true, classifierIsEmbedding: true },
  flipped: { ...BASE, bias: true, classifierIsEmbedding: true },
  seed: 1002,
};
const LLAMA_NORMAL: Case = { spec: LLAMA, flags: BASE, flipped: { ...BASE, style: 'neox' }, seed: 1003 };
const LLAMA_FACTORS: Case = { spec: { ...LLAMA, factors: FACTORS }, flags: { ...BASE, factors: FACTORS }, flipped: BASE, seed: 1004 };
const LLAMA_ROUTED: Case = { spec: { ...LLAMA, routed: true }, flags: BASE, flipped: { ...BASE, renormalize: false }, seed: 1005 };
const LLAMA_TIED: Case = { spec: { ...LLAMA, tied: true }, flags: { ...BASE, classifierIsEmbedding: true }, flipped: undefined, seed: 1006 };
const LLAMA_UNTIED: Case = { spec: LLAMA, flags: BASE, flipped: { ...BASE, classifierIsEmbedding: true }, seed: 1007 };

for (const pc of providerCases()) {
  describe(`architecture flags in the forward pass on ${pc.name}`, () => {
    let provider: HostProvider | WebGPUProvider;
    let runtime: Runtime;
    beforeAll(async () => {
      provider = await pc.make();
      runtime = createRuntime(provider);
    });
    afterAll(() => {
      if (provider?.kind === 'webgpu') (provider as WebGPUProvider).destroy();
    });

    /** Runs `c` on this provider and compares with the reference (see the plan). */
    async function check(c: Case): Promise<void> {
      const { bytes, weights } = build(c.spec, c.seed);
      const seq = [...TOKENS, NEXT];
      const want = reference(c.spec, weights, seq, c.flags);
      // The flag matters for this model: the other way moves the logits far past the tolerance.
      const flat = (rows: readonly Float64Array[]): number[] => rows.flatMap((r) => Array.from(r));
      if (c.flipped !== undefined) expect(maxDiff(flat(reference(c.spec, weights, seq, c.flipped)), flat(want))).toBeGreaterThan(MATTERS);
      const model = await loadModel(bytes);
      expect(model.architecture.ropeStyle).toBe(c.flags.style);
      expect(model.architecture.attentionBias).toBe(c.spec.bias);
      expect(model.architecture.ffn).toBe(c.spec.routed ? 'routed' : 'dense');
      expect(model.config.tiedOutput).toBe(c.spec.tied);
      expect(model.config.ropeFreqs).toBe(c.spec.factors !== undefined);
      const forward = await LlamaForward.create(runtime, model, { maxSeq: 16, maxBatch: 8 });
      try {
        const mark = provider.ledgerMark();
        const batch = await forward.run(TOKENS, 0, { allRows: true });
        // One submission, nothing read back but the logits and their argmax (WebGPU; the host crosses no
        // boundary): routing and everything else stay on the provider.
        expect(provider.ledgerSince(mark).filter((e) => e.kind === 'copy' && e.to === 'host').length).toBe(provider.kind === 'webgpu' ? 2 : 0);
        TOKENS.forEach((_, t) => {
          const d = maxDiff(batch.rowLogits.subarray(t * VOCAB, (t + 1) * VOCAB), want[t]!);
          if (!(d <= TOL)) expect.fail(`row ${t}: logits differ from the reference by ${d}`);
        });
        const step = await forward.run([NEXT], TOKENS.length);
        expect(maxDiff(step.logits, want[TOKENS.length]!)).toBeLessThanOrEqual(TOL);
      } finally {
        forward.dispose();
      }
    }

    it('[MD-arch-forward-bias] qwen2 adds its Q, K and V biases after the projections: logits equal the f64 reference', () => check(QWEN2_BIAS));
    it('[MD-arch-forward-rope-style] qwen2 turns NEOX pairs (i, i + headDim/2): logits equal the f64 reference', () => check(QWEN2_NEOX));
    it('[MD-arch-forward-rope-style] llama turns adjacent pairs (2i, 2i + 1): logits equal the f64 reference', () => check(LLAMA_NORMAL));
    it('[MD-arch-forward-rope-freqs] llama with rope_freqs divides each pair\'s frequency by its factor: logits equal the f64 reference', () => check(LLAMA_FACTORS));
    it('[MD-arch-forward-routed] routed experts: router softmax, top-2, weights renormalised to sum 1: logits equal the f64 reference', () => check(LLAMA_ROUTED));
    it('[MD-arch-forward-tied] a file without output.weight reads its classifier from token_embd.weight: logits equal the f64 reference', () => check(LLAMA_TIED));
    it('[MD-arch-forward-tied] a file with output.weight reads its classifier from output.weight: logits equal the f64 reference', () => check(LLAMA_UNTIED));

    it('[MD-arch-forward-rope-freqs] factors of 1 give bit-identical logits to a file without rope_freqs', async () => {
      const plain = build({ arch: 'llama', bias: false, routed: false, tied: false }, 77).bytes;
      const ones = build({ arch: 'llama', bias: false, routed: false, tied: false, factors: [1, 1, 1, 1] }, 77).bytes;
      const logits = async (bytes: Uint8Array) => {
        const forward = await LlamaForward.create(runtime, await loadModel(bytes), { maxSeq: 16, maxBatch: 8 });
        try {
          return Array.from((await forward.run(TOKENS, 0, { allRows: true })).rowLogits);
        } finally {
          forward.dispose();
        }
      };
      expect(await logits(ones)).toEqual(await logits(plain));
    });
  });
}

// The architecture table (src/model/architecture.ts), without any file.
// Plan:
// (1) the table: llama, llama-moe and qwen2 declare the forward-pass flags their architectures have
//     (rope style, Q/K/V biases, dense or routed FFN with softmax top-k renormalised routing, tied output
//     allowed) and read the documented {arch}.* keys; their layer catalogs list exactly the roles and GGUF
//     names of each architecture, with shapes computed by hand for one config;
// (2) selection by general.architecture and FFN kind; anything else is ENOTSUP naming it;
// (3) checkConfig derives head sizes and defaults (KV heads = heads, RoPE base 10000, rope dims = head
//     size) and refuses each bad hyperparameter with its reason (boundaries N and N - 1 where they exist);
// (4) checkCatalog accepts the exact catalog (optional tensors present or absent) and refuses repeated,
//     unexpected, missing, misshapen and quantized-vector tensors.
import { describe, expect, it } from 'vitest';
import { ARCHITECTURES, DEFAULT_ROPE_THETA, MAX_CONTEXT_LENGTH, architectureById, architectureFor, checkCatalog, checkConfig, expectedTensors } from '../../src/model/index.js';
import type { ArchitectureEntry, CatalogTensor, HyperparameterValues, ModelConfig } from '../../src/model/index.js';
import { expectCode } from '../support/expect-error.js';

const VALUES: HyperparameterValues = { dim: 64, layers: 2, ffnDim: 96, heads: 8, kvHeads: 2, rmsEps: 1e-6, ropeTheta: 1e6, contextLength: 256 };
const FACTS = { vocabSize: 40, tiedOutput: false, ropeFreqs: false };

describe('the architecture table', () => {
  it('[MD-arch-table] each entry declares its forward-pass flags and the keys it reads', () => {
    expect(ARCHITECTURES.map((a) => a.id)).toEqual(['llama', 'llama-moe', 'qwen2']);
    const flags = (a: ArchitectureEntry) => ({ gguf: a.gguf, ropeStyle: a.ropeStyle, attentionBias: a.attentionBias, ffn: a.ffn, routing: a.routing, tiedOutputAllowed: a.tiedOutputAllowed });
    expect(flags(architectureById('llama'))).toEqual({ gguf: 'llama', ropeStyle: 'normal', attentionBias: false, ffn: 'dense', routing: undefined, tiedOutputAllowed: true });
    expect(flags(architectureById('llama-moe'))).toEqual({ gguf: 'llama', ropeStyle: 'normal', attentionBias: false, ffn: 'routed', routing: { gating: 'softmax', renormalize: true }, tiedOutputAllowed: true });
    expect(flags(architectureById('qwen2'))).toEqual({ gguf: 'qwen2', ropeStyle: 'neox', attentionBias: true, ffn: 'dense', routing: undefined, tiedOutputAllowed: true });
    const keys = (a: ArchitectureEntry) => Object.fromEntries(a.hyperparameters.map((h) => [h.key, h.required]));
    const common = {
      embedding_length: true, block_count: true, feed_forward_length: true, 'attention.head_count': true, 'attention.head_count_kv': false,
      'attention.layer_norm_rms_epsilon': true, 'rope.freq_base': false, context_length: true, 'rope.dimension_count': false,
      'attention.key_length': false, 'attention.value_length': false, vocab_size: false,
    };
    expect(keys(architectureById('llama'))).toEqual(common);
    expect(keys(architectureById('qwen2'))).toEqual(common);
    expect(keys(architectureById('llama-moe'))).toEqual({ ...common, expert_count: true, expert_used_count: true });
  });

  it('[MD-arch-table] the catalogs: names, presence and shapes for one config, computed by hand', () => {
    const shapes = (a: ArchitectureEntry, c: ModelConfig) => [
      ...a.globals.map((g) => [g.name, g.presence, g.vector, g.shape(c)]),
      ...a.layer.map((s) => [s.name, s.presence, s.vector, s.shape(c)]),
    ];
    const dense = checkConfig(architectureById('llama'), VALUES, FACTS);
    // dim 64, 8 heads of 8, 2 KV heads: kvDim 16; ffn 96; vocab 40.
    const globals = [
      ['token_embd.weight', 'required', false, [40, 64]],
      ['output_norm.weight', 'required', true, [64]],
      ['output.weight', 'optional', false, [40, 64]],
    ];
    const attention = [
      ['attn_norm.weight', 'required', true, [64]],
      ['attn_q.weight', 'required', false, [64, 64]],
      ['attn_k.weight', 'required', false, [16, 64]],
      ['attn_v.weight', 'required', false, [16, 64]],
    ];
    const output = [['attn_output.weight', 'required', false, [64, 64]]];
    const ffn = [
      ['ffn_norm.weight', 'required', true, [64]],
      ['ffn_gate.weight', 'required', false, [96, 64]],
      ['ffn_up.weight', 'required', false, [96, 64]],
      ['ffn_down.weight', 'required', false, [64, 96]],
    ];
    expect(shapes(architectureById('llama'), dense)).toEqual([...globals, ['rope_freqs.weight', 'optional', true, [4]], ...attention, ...output, ...ffn]);
    const qwen = checkConfig(architectureById('qwen2'), VALUES, FACTS);
    const biases = [
      ['attn_q.bias', 'required', true, [64]],
      ['attn_k.bias', 'required', true, [16]],
      ['attn_v.bias', 'required', true, [16]],
    ];
    expect(shapes(architectureById('qwen2'), qwen)).toEqual([...globals, ...attention, ...biases, ...output, ...ffn]);
    const moe = checkConfig(architectureById('llama-moe'), { ...VALUES, experts: 6, expertsUsed: 2 }, FACTS);
    expect(shapes(architectureById('llama-moe'), moe)).toEqual([
      ...globals,
      ['rope_freqs.weight', 'optional', true, [4]],
      ...attention,
      ...output,
      ['ffn_norm.weight', 'required', true, [64]],
      ['ffn_gate_inp.weight', 'required', false, [6, 64]],
      ['ffn_gate_exps.weight', 'required', false, [6, 96, 64]],
      ['ffn_up_exps.weight', 'required', false, [6, 96, 64]],
      ['ffn_down_exps.weight', 'required', false, [6, 64, 96]],
    ]);
    // Layer names carry the layer index; globals come first.
    expect([...expectedTensors(architectureById('llama'), dense).keys()].slice(3, 7)).toEqual(['rope_freqs.weight', 'blk.0.attn_norm.weight', 'blk.0.attn_q.weight', 'blk.0.attn_k.weight']);
    expect(expectedTensors(architectureById('llama'), dense).size).toBe(4 + 2 * 9);
  });

  it('[MD-arch-select] entries are chosen by general.architecture and FFN kind; anything else is ENOTSUP naming it', () => {
    expect(architectureFor('llama', 'dense').id).toBe('llama');
    expect(architectureFor('llama', 'routed').id).toBe('llama-moe');
    expect(architectureFor('qwen2', 'dense').id).toBe('qwen2');
    expect(expectCode(() => architectureFor('qwen2', 'routed'), 'ENOTSUP', 'unsupported-architecture').ids).toEqual({ architecture: 'qwen2', ffn: 'routed' });
    expect(expectCode(() => architectureFor('gemma3', 'dense'), 'ENOTSUP', 'unsupported-architecture').ids).toEqual({ architecture: 'gemma3', ffn: 'dense' });
    expectCode(() => architectureFor('Llama', 'dense'), 'ENOTSUP', 'unsupported-architecture');
    expectCode(() => architectureById('gpt2' as never), 'ENOTSUP', 'unsupported-architecture');
  });
});

describe('hyperparameters', () => {
  const llama = architectureById('llama');

  it('[MD-arch-config] derived sizes and defaults', () => {
    const c = checkConfig(llama, VALUES, FACTS);
    expect(c).toEqual({
      architecture: 'llama', dim: 64, layers: 2, ffnDim: 96, heads: 8, kvHeads: 2, headDim: 8, qDim: 64, kvDim: 16, ropeDim: 8, ropeTheta: 1e6,
      rmsEps: 1e-6, contextLength: 256, vocabSize: 40, experts: 0, expertsUsed: 0, tiedOutput: false, ropeFreqs: false,
    });
    const defaults = checkConfig(llama, { ...VALUES, kvHeads: undefined, ropeTheta: undefined }, FACTS);
    expect([defaults.kvHeads, defaults.ropeTheta, defaults.kvDim]).toEqual([8, DEFAULT_ROPE_THETA, 64]);
    expect(checkConfig(llama, { ...VALUES, ropeDim: 8, keyLength: 8, valueLength: 8, vocabSizeKey: 40 }, FACTS).ropeDim).toBe(8);
    expect(checkConfig(llama, { ...VALUES, contextLength: MAX_CONTEXT_LENGTH }, FACTS).contextLength).toBe(MAX_CONTEXT_LENGTH);
    const moe = checkConfig(architectureById('llama-moe'), { ...VALUES, experts: 4, expertsUsed: 4 }, FACTS);
    expect([moe.experts, moe.expertsUsed]).toEqual([4, 4]);
    expect(checkConfig(llama, VALUES, { ...FACTS, tiedOutput: true, ropeFreqs: true })).toMatchObject({ tiedOutput: true, ropeFreqs: true });
  });

  const BAD: readonly [string, HyperparameterValues, 'EINVAL' | 'ENOTSUP', string, ArchitectureEntry?][] = [
    ['a missing required key', { ...VALUES, dim: undefined }, 'EINVAL', 'bad-hyperparameter'],
    ['zero layers', { ...VALUES, layers: 0 }, 'EINVAL', 'bad-hyperparameter'],
    ['a fractional FFN width', { ...VALUES, ffnDim: 95.5 }, 'EINVAL', 'bad-hyperparameter'],
    ['negative heads', { ...VALUES, heads: -8 }, 'EINVAL', 'bad-hyperparameter'],
    ['a zero epsilon', { ...VALUES, rmsEps: 0 }, 'EINVAL', 'bad-hyperparameter'],
    ['an infinite RoPE base', { ...VALUES, ropeTheta: Infinity }, 'EINVAL', 'bad-hyperparameter'],
    ['a context one past the cap', { ...VALUES, contextLength: MAX_CONTEXT_LENGTH + 1 }, 'EINVAL', 'bad-hyperparameter'],
    ['heads not dividing dim', { ...VALUES, heads: 7 }, 'EINVAL', 'inconsistent-heads'],
    ['KV heads not dividing heads', { ...VALUES, kvHeads: 3 }, 'EINVAL', 'inconsistent-heads'],
    ['more KV heads than heads', { ...VALUES, kvHeads: 16 }, 'EINVAL', 'inconsistent-heads'],
    ['an odd head size', { ...VALUES, dim: 72, heads: 8, kvHeads: 8 }, 'EINVAL', 'odd-head-size'],
    ['partial rotary dims', { ...VALUES, ropeDim: 4 }, 'ENOTSUP', 'partial-rope'],
    ['a key length other than the head size', { ...VALUES, keyLength: 16 }, 'ENOTSUP', 'unsupported-head-size'],
    ['a vocab_size key other than the embedding rows', { ...VALUES, vocabSizeKey: 41 }, 'EINVAL', 'vocab-mismatch'],
    ['more experts used than exist', { ...VALUES, experts: 4, expertsUsed: 5 }, 'EINVAL', 'bad-experts', architectureById('llama-moe')],
    ['a routed model without expert_used_count', { ...VALUES, experts: 4 }, 'EINVAL', 'bad-hyperparameter', architectureById('llama-moe')],
  ];
  for (const [title, values, code, reason, entry] of BAD) {
    it(`[MD-arch-config] ${title}: ${code} ${reason}`, () => {
      expectCode(() => checkConfig(entry ?? llama, values, FACTS), code, reason);
    });
  }

  it('[MD-arch-config] rope_freqs.weight in qwen2 is ENOTSUP; a vocabulary of no rows is EINVAL', () => {
    expectCode(() => checkConfig(architectureById('qwen2'), VALUES, { ...FACTS, ropeFreqs: true }), 'ENOTSUP', 'unsupported-rope-freqs');
    expectCode(() => checkConfig(llama, VALUES, { ...FACTS, vocabSize: 0 }), 'EINVAL', 'bad-hyperparameter');
  });
});

describe('the tensor catalog', () => {
  const llama = architectureById('llama');
  const config = checkConfig(llama, VALUES, FACTS);
  const exact = (): CatalogTensor[] => [...expectedTensors(llama, config)].filter(([name]) => name !== 'rope_freqs.weight').map(([name, slot]) => ({ name, shape: slot.spec.shape(config), kind: slot.spec.vector ? 'F32' : 'Q4_K' }));

  it('[MD-arch-catalog] the exact catalog is accepted, optional tensors present or absent; slots follow the file order', () => {
    const tensors = exact().reverse();
    const slots = checkCatalog(llama, config, tensors);
    expect(slots.map((s) => s.spec.name)).toEqual(tensors.map((t) => t.name.replace(/^blk\.\d+\./, '')));
    expect(slots[0]!.layer).toBe(1);
    expect(slots.at(-1)!.layer).toBeUndefined();
    expect(checkCatalog(llama, config, [...exact(), { name: 'rope_freqs.weight', shape: [4], kind: 'F32' }])).toHaveLength(exact().length + 1);
    expect(checkCatalog(llama, config, exact().filter((t) => t.name !== 'output.weight'))).toHaveLength(exact().length - 1);
  });

  it('[MD-arch-catalog] repeated, unexpected, missing, misshapen and quantized-vector tensors are refused naming the tensor', () => {
    const t = exact();
    expect(expectCode(() => checkCatalog(llama, config, [...t, t[5]!]), 'EINVAL', 'duplicate-tensor').ids?.['tensor']).toBe(t[5]!.name);
    expect(expectCode(() => checkCatalog(llama, config, [...t, { name: 'blk.2.attn_norm.weight', shape: [64], kind: 'F32' }]), 'EINVAL', 'unexpected-tensor').ids?.['tensor']).toBe('blk.2.attn_norm.weight');
    expect(expectCode(() => checkCatalog(llama, config, [...t, { name: 'blk.0.attn_q.bias', shape: [64], kind: 'F32' }]), 'EINVAL', 'unexpected-tensor').ids?.['tensor']).toBe('blk.0.attn_q.bias');
    expect(expectCode(() => checkCatalog(llama, config, t.filter((x) => x.name !== 'blk.1.ffn_down.weight')), 'EINVAL', 'missing-tensor').ids?.['tensor']).toBe('blk.1.ffn_down.weight');
    expect(expectCode(() => checkCatalog(llama, config, t.map((x) => (x.name === 'blk.0.ffn_down.weight' ? { ...x, shape: [96, 64] } : x))), 'EINVAL', 'bad-tensor-shape').ids).toMatchObject({ tensor: 'blk.0.ffn_down.weight', expected: '[64, 96]', actual: '[96, 64]' });
    expect(expectCode(() => checkCatalog(llama, config, t.map((x) => (x.name === 'output_norm.weight' ? { ...x, shape: [1, 64] } : x))), 'EINVAL', 'bad-tensor-shape').ids?.['tensor']).toBe('output_norm.weight');
    expect(expectCode(() => checkCatalog(llama, config, t.map((x) => (x.name === 'blk.1.ffn_norm.weight' ? { ...x, kind: 'F16' } : x))), 'ENOTSUP', 'unsupported-tensor-kind').ids).toEqual({ tensor: 'blk.1.ffn_norm.weight', kind: 'F16' });
    // qwen2 needs its biases.
    const qwen = architectureById('qwen2');
    const qc = checkConfig(qwen, VALUES, FACTS);
    const qt = [...expectedTensors(qwen, qc)].map(([name, slot]) => ({ name, shape: slot.spec.shape(qc), kind: 'F32' }));
    expect(checkCatalog(qwen, qc, qt)).toHaveLength(qt.length);
    expect(expectCode(() => checkCatalog(qwen, qc, qt.filter((x) => x.name !== 'blk.1.attn_v.bias')), 'EINVAL', 'missing-tensor').ids?.['tensor']).toBe('blk.1.attn_v.bias');
  });
});

// Suite: the per-layer dispatch list a forward gets when its options name none (TS-kernels-default;
// src/session/llama.ts defaultKernels).
// Plan: (1) the rule over adapter classes that classifyAdapter makes from adapter identities: a hardware
// identity gives 'fused'; a SwiftShader or llvmpipe identity, a fallback adapter and the host (no adapter)
// give 'unfused'; a bounded residency window gives 'unfused' even on hardware; (2) on every provider of
// the lane (the host, and the WebGPU adapter of this lane, checked to be a software one so the case
// means what it says), a forward over stories260K built without the option reports 'unfused' (the field
// its graph builder reads to pick the list), as does a TextSession's report, and one given 'fused' reports
// 'fused'. The hardware branch of a real forward runs only where a real GPU is (the hardware lane); here
// the rule itself is checked.
import { describe, expect, it } from 'vitest';
import { LlamaForward, TextSession, classifyAdapter, createRuntime, defaultKernels, loadModel } from '../../src/index.js';
import type { AdapterIdentity, HostProvider, WebGPUProvider } from '../../src/index.js';
import { readModelFixture } from '../support/models.js';
import { providerCases } from '../support/providers.js';

const stories = await readModelFixture('stories260K.bin');
const tok512 = await readModelFixture('tok512.bin');
const TIMEOUT = 120_000;

const identity = (fields: Partial<AdapterIdentity>): AdapterIdentity => ({ vendor: '', architecture: '', device: '', description: '', ...fields });

describe('the dispatch list a forward gets by default', () => {
  it('[TS-kernels-default] fused on a hardware adapter; unfused on a software or fallback adapter, on the host, and under a bounded window', () => {
    const nvidia = classifyAdapter(identity({ vendor: 'nvidia', architecture: 'hopper', description: 'NVIDIA H200' }));
    const swiftshader = classifyAdapter(identity({ vendor: 'google', architecture: 'swiftshader', description: 'SwiftShader Device (Subzero)' }));
    const llvmpipe = classifyAdapter(identity({ vendor: 'mesa', description: 'llvmpipe (LLVM 15.0.6, 256 bits)' }));
    const fallback = classifyAdapter(identity({ vendor: 'apple', isFallbackAdapter: true }));
    expect(defaultKernels(nvidia, false)).toBe('fused');
    expect(defaultKernels(nvidia, true)).toBe('unfused');
    expect(defaultKernels(swiftshader, false)).toBe('unfused');
    expect(defaultKernels(llvmpipe, false)).toBe('unfused');
    expect(defaultKernels(fallback, false)).toBe('unfused');
    expect(defaultKernels(undefined, false)).toBe('unfused');
  });

  for (const pc of providerCases()) {
    it.skipIf(stories === undefined || tok512 === undefined)(`[TS-kernels-default] ${pc.name}: a forward built without the option runs the op-by-op list; one given 'fused' runs the fused list`, async () => {
      const model = await loadModel(stories!, { tokenizer: tok512! });
      const provider: HostProvider | WebGPUProvider = await pc.make();
      try {
        if (provider.kind === 'webgpu') expect(classifyAdapter(provider.adapterInfo).software).toBe(true);
        const runtime = createRuntime(provider);
        const plain = await LlamaForward.create(runtime, model, { maxSeq: 8 });
        const fused = await LlamaForward.create(runtime, model, { maxSeq: 8, kernels: 'fused' });
        const session = await TextSession.create({ runtime, model, maxSeq: 8 });
        try {
          expect(plain.kernels).toBe('unfused');
          expect(fused.kernels).toBe('fused');
          // A session (and the CLI's --json, which prints this report) says which list it runs.
          expect(session.report().decode.kernels).toBe('unfused');
        } finally {
          plain.dispose();
          fused.dispose();
          session.dispose();
        }
      } finally {
        if (provider.kind === 'webgpu') provider.destroy();
      }
    }, TIMEOUT);
  }
});

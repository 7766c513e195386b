// Training benchmark (issue 15, acceptance point 5): `npm run bench:train`, one Node process: fine-tuning
// of stories260K (llama2.c checkpoint, ../shared/models) with the Trainer (AdamW; every weight, then LoRA
// rank-4 adapters with the base frozen) on a fixed short text, on the host provider and on WebGPU through
// Dawn. Per row: steps/s and tokens/s (T predicted tokens per step) over the timed steps, the trainer's
// resident state (parameters, gradients, AdamW moments and saved activations: live bytes after create
// minus before), what each step allocates (storage roots and runtime buffers created per step), queue
// submissions per step, and the loss of the text's first window before and after the steps (the issue's
// 200-step figure; TENON_TRAIN_STEPS changes the count). JSON in bench/results/train.json, a printed
// table; Dawn on this machine is a software adapter (SwiftShader) and labelled so. Nothing here asserts
// anything about time.
import os from 'node:os';
import { it } from 'vitest';
import { create, globals } from 'webgpu';
import { Trainer, createHostProvider, createRuntime, createWebGPUProvider, parseLlamaModel, parseTokenizer } from '../src/index.js';
import type { HostProvider, LlamaModelFile, WebGPUProvider } from '../src/index.js';
import { readModelFixture } from '../contracts/support/models.js';
import { SOFTWARE_ADAPTER_NOTE, describeAdapter, hardwareColumn, hardwareLabel, machineInfo } from './report.js';
import type { HardwareLabel, Where } from './report.js';

const TEXT = 'Tom had a blue kite. The wind took the kite up to the sky, and Tom ran after it with a big smile. Then the kite came down in a tree, and his mom helped him get it back.';
const T = 16;
const STEPS = Number(process.env['TENON_TRAIN_STEPS'] ?? 200);
const SEED = 7;
const OPTIMIZER = { lr: 3e-3 };

interface Row extends HardwareLabel {
  readonly provider: string;
  /** 'full' (every weight) or 'lora r4' (adapters only). */
  readonly mode: string;
  readonly seqLen: number;
  readonly steps: number;
  readonly stepsPerSecond: number;
  readonly tokensPerSecond: number;
  readonly stateBytes: number;
  readonly rootsCreatedPerStep: number;
  readonly buffersCreatedPerStep: number;
  readonly submitsPerStep: number;
  readonly lossBefore: number;
  readonly lossAfter: number;
  readonly liveBytesAfterDispose: number;
}

/** LoRA rows: rank 4 adapters on the seven projections (lr 1e-2 diverged within 200 steps here; 3e-3 did not). */
const LORA = { rank: 4, alpha: 8, seed: 3 };
const LORA_OPTIMIZER = { lr: 3e-3 };

async function measure(file: LlamaModelFile, tokens: number[], provider: HostProvider | WebGPUProvider, where: Where, lora: boolean): Promise<Row> {
  const runtime = createRuntime(provider);
  const base = provider.counters();
  const trainer = await Trainer.create(runtime, file, lora ? { seqLen: T, seed: SEED, optimizer: LORA_OPTIMIZER, lora: LORA } : { seqLen: T, seed: SEED, optimizer: OPTIMIZER });
  const first = tokens.slice(0, T + 1);
  try {
    const state = provider.counters().liveBytes - base.liveBytes;
    const lossBefore = await trainer.step(first);
    const c0 = provider.counters();
    const s0 = runtime.stats();
    const t0 = performance.now();
    await trainer.train(tokens, STEPS);
    const seconds = (performance.now() - t0) / 1000;
    const c1 = provider.counters();
    const s1 = runtime.stats();
    const lossAfter = await trainer.step(first);
    return {
      provider: provider.kind === 'host' ? 'host' : 'WebGPU (Dawn)',
      mode: lora ? `lora r${LORA.rank}` : 'full',
      seqLen: T,
      steps: STEPS,
      stepsPerSecond: STEPS / seconds,
      tokensPerSecond: (STEPS * T) / seconds,
      stateBytes: state,
      rootsCreatedPerStep: (c1.rootsCreated - c0.rootsCreated) / STEPS,
      buffersCreatedPerStep: (s1.buffersCreated - s0.buffersCreated) / STEPS,
      submitsPerStep: (s1.queueSubmits - s0.queueSubmits) / STEPS,
      lossBefore,
      lossAfter,
      liveBytesAfterDispose: Number.NaN,
      ...hardwareLabel(where),
    };
  } finally {
    trainer.dispose();
  }
}

it('bench:train — Trainer steps/s, tokens/s and memory per step, host vs WebGPU (Dawn)', async () => {
  const loadAtStart = os.loadavg();
  const model = await readModelFixture('stories260K.bin');
  const vocab = await readModelFixture('tok512.bin');
  if (model === undefined || vocab === undefined) throw new Error('the training benchmark needs ../shared/models (stories260K.bin, tok512.bin)');
  const file = parseLlamaModel(model);
  const tokens = parseTokenizer(vocab, file.config.vocabSize).encode(TEXT);
  Object.assign(globalThis, globals);
  const gpu = await createWebGPUProvider({ gpu: create([]) });
  const adapter = describeAdapter(gpu.adapterInfo, gpu.device);
  const rows: Row[] = [];
  try {
    for (const lora of [false, true]) {
      for (const [provider, where] of [[createHostProvider(), 'host'], [gpu, adapter]] as const) {
        const before = provider.counters().liveBytes;
        const row = await measure(file, tokens, provider, where, lora);
        rows.push({ ...row, liveBytesAfterDispose: provider.counters().liveBytes - before });
      }
    }
  } finally {
    gpu.destroy();
  }
  const header = ['provider', 'mode', 'measured on', 'T', 'steps', 'steps/s', 'tokens/s', 'state KiB', 'roots/step', 'buffers/step', 'submits/step', 'loss before', 'loss after', 'leaked B'];
  const lines = rows.map((r) => [r.provider, r.mode, hardwareColumn(r), String(r.seqLen), String(r.steps), r.stepsPerSecond.toFixed(2), r.tokensPerSecond.toFixed(1), (r.stateBytes / 1024).toFixed(0), r.rootsCreatedPerStep.toFixed(2), r.buffersCreatedPerStep.toFixed(2), r.submitsPerStep.toFixed(2), r.lossBefore.toFixed(4), r.lossAfter.toFixed(4), String(r.liveBytesAfterDispose)]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const fmt = (cells: string[]): string => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ');
  const note = `full fine-tuning of stories260K with AdamW (lr ${OPTIMIZER.lr}, seed ${SEED}) on a ${tokens.length}-token text, windows of ${T} tokens; one compiled graph per step (forward, loss, backward, AdamW), submits/step as the runtime counts queue submissions; loss = mean cross-entropy of the text's first window before and after the timed steps; state = parameters, gradients, two moments and saved activations; lora rows: rank ${LORA.rank}, alpha ${LORA.alpha}, lr ${LORA_OPTIMIZER.lr}, base weights frozen (no gradients or moments for them)`;
  const software = rows.some((r) => r.softwareAdapter);
  console.log(['', 'training (Trainer, stories260K)', fmt(header), ...lines.map(fmt), '', `note: ${note}`, ...(software ? [`note: ${SOFTWARE_ADAPTER_NOTE}`] : [])].join('\n'));
  const fs = process.getBuiltinModule('node:fs');
  fs.mkdirSync('bench/results', { recursive: true });
  fs.writeFileSync('bench/results/train.json', JSON.stringify({ benchmark: 'train', date: new Date().toISOString(), machine: machineInfo(loadAtStart), adapter, note, ...(software ? { softwareAdapterNote: SOFTWARE_ADAPTER_NOTE } : {}), rows }, null, 2) + '\n');
});

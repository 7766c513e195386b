// A probe, not a benchmark of record (bench/host.bench.ts is that): greedy decode tokens/s of the
// tiny-llama GGUF fixtures with the q8-activation kernels (hostKernels 'wasm-q8') in one process, for
// A/B runs of wasm/quant.wat against another tree and for CPU profiles (node --cpu-prof) of a decode.
// Run: npx vitest run --config bench/host-quant-probe.config.ts (PROBE_KINDS=Q4_0,Q8_0 picks models;
// PROBE_ROUNDS, PROBE_STEPS; PROBE_CPU_PROF=PREFIX writes a V8 CPU profile of each model's decodes to PREFIX.KIND.cpuprofile). Prints one line
// per model: median and best tokens/s over the rounds, by the wall clock and per second of this process's CPU
// time (steadier on a shared machine).
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import v8 from 'node:v8';
import { it } from 'vitest';
import { TextSession, createHostProvider, createRuntime, loadModel } from '../src/index.js';
import type { HostKernelChoice } from '../src/index.js';
import { readGgufFixture } from '../contracts/support/gguf-fixtures.js';

if (process.env['PROBE_RELAXED'] === '1') v8.setFlagsFromString('--experimental-wasm-relaxed-simd');

const FILES: Record<string, string> = {
  Q8_0: 'tiny-llama-Q8_0.gguf',
  Q4_0: 'tiny-llama-Q4_0.gguf',
  Q4_K_M: 'tiny-llama-Q4_K_M.gguf',
  Q6_K: 'tiny-llama-Q6_K.gguf',
};
const KINDS = (process.env['PROBE_KINDS'] ?? 'Q8_0,Q4_0,Q4_K_M,Q6_K').split(',');
const ROUNDS = Number(process.env['PROBE_ROUNDS'] ?? 5);
const STEPS = Number(process.env['PROBE_STEPS'] ?? 200);
const CHOICE = (process.env['PROBE_CHOICE'] ?? 'wasm-q8') as HostKernelChoice;
const PROMPT = 'Once upon a time';

it('host quant probe', async () => {
  const lines: string[] = [];
  const profFile = process.env['PROBE_CPU_PROF'];
  const inspector = profFile === undefined ? undefined : new Session();
  inspector?.connect();
  await inspector?.post('Profiler.enable');
  await inspector?.post('Profiler.setSamplingInterval', { interval: 100 });
  for (const kind of KINDS) {
    const bytes = await readGgufFixture(FILES[kind] as never);
    if (bytes === undefined) continue;
    const runtime = createRuntime(createHostProvider(), { hostKernels: CHOICE });
    const session = await TextSession.create({ runtime, model: await loadModel(bytes), maxSeq: 512 });
    const prompt = session.tokenizer.encode(PROMPT, { bos: true });
    const rates: number[] = [];
    const cpuRates: number[] = [];
    let ids = '';
    // Only the decode rounds are profiled (not the model's load and repacking).
    await inspector?.post('Profiler.start');
    for (let r = 0; r <= ROUNDS; r++) {
      await session.reset();
      let next = (await session.prefill(prompt)).argmax;
      const out = [next];
      const t0 = performance.now();
      const c0 = process.cpuUsage();
      for (let i = 0; i < STEPS; i++) out.push((next = (await session.decode(next)).argmax));
      const ms = performance.now() - t0;
      const cpu = process.cpuUsage(c0);
      if (r > 0) {
        rates.push((STEPS * 1000) / ms);
        cpuRates.push((STEPS * 1e6) / (cpu.user + cpu.system));
      }
      ids = out.slice(0, 12).join(',');
    }
    if (inspector !== undefined) {
      const { profile } = await inspector.post('Profiler.stop');
      writeFileSync(`${profFile!}.${kind}.cpuprofile`, JSON.stringify(profile));
    }
    rates.sort((a, b) => a - b);
    cpuRates.sort((a, b) => a - b);
    lines.push(`${kind.padEnd(7)} ${CHOICE} ${runtime.hostKernels()!.kernelSet}/${runtime.hostKernels()!.activations}  median ${rates[rates.length >> 1]!.toFixed(0)} tok/s  best ${rates[rates.length - 1]!.toFixed(0)}  per CPU second: median ${cpuRates[cpuRates.length >> 1]!.toFixed(0)} best ${cpuRates[cpuRates.length - 1]!.toFixed(0)}  ids ${ids}`);
    session.dispose();
  }
  inspector?.disconnect();
  console.log(lines.join('\n'));
});

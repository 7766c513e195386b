// Plan: every GGUF model fixture (../shared/models/gguf, the vocabulary-only llama3-vocab excepted) runs
// through the architecture-driven forward pass on every provider of the lane (node: host + Dawn; browser:
// Chromium WebGPU + host over SharedArrayBuffer), checked against the independent references:
// (1) TS-gguf-logits: teacher-forced on llama.cpp's sequence, the logits of every reference step are
//     within 0.02 of exact-numpy.json (f64 numpy with the weights dequantized exactly) for each of the
//     reference's top-8 ids; f32 activations throughout;
// (2) TS-gguf-greedy: our tokenizer gives llama.cpp's prompt ids (BOS where the model adds one, special
//     tokens parsed), and along llama.cpp's own greedy sequence our argmax equals llama.cpp's choice at
//     every step where llama.cpp's top two logits are more than 0.5 apart (closer calls are not a fair
//     oracle for quantized files: llama.cpp rounds activations to 8 bits there). One step of the
//     references breaks that rule for any exact implementation: tiny-moe-Q4_K_M, prompt 1, step 6, where
//     llama.cpp's rounded activations change the routing (its logit of id 84 is 15.10, exact numpy's
//     13.75) and its gap is 0.51; exact numpy's argmax there is 472. So a step where exact numpy shows
//     that llama.cpp's choice is not the argmax is held to exact numpy's argmax instead, and the test
//     counts such steps (exactly that one in the fixtures);
// (3) TS-gguf-stories-equal: stories260K-f32.gguf and stories260K.bin + tok512.bin give bit-identical
//     logits and the same greedy ids through TextSession, equal to llama2.c's published continuation.
// One pass per prompt covers (1) and (2): the prompt and llama.cpp's first 31 generated ids run as one
// teacher-forced batch with per-row logits (the references' 16 forced ids are llama.cpp's first 16
// generated ones; checked). For a vocabulary of LARGE_VOCAB ids or more (tiny-qwen2: 151,936) the prompt
// but its last id runs first as a plain prefill and the batch starts at the prompt's last id: a prompt row
// before the last is no step of the references, and there each row's classifier is most of the pass on
// SwiftShader (both prompts' batches then have 32 rows and share a graph). The smaller vocabularies keep
// the batch from position 0: there an extra prefill graph costs more compiles than its rows save. The decode path (a prefill, then one
// row per step) is checked against exact numpy too, on the host provider for every model and on WebGPU for
// the dense all-F32 models (their matrices run on matmul_nt): on SwiftShader (the only adapter here) a quantized model's decode steps cost
// seconds each (tiny-qwen2: ~15 s per step under load), so WebGPU's quantized cases run the batched pass
// only (qmatmul's one-row path is checked by its own op suites). Loaded models are shared by the
// provider cases of the file.
// Host rows run with the WebAssembly SIMD kernels (issue 12, acceptance 2): the runtime is made with
// hostKernels 'wasm' (refused where the engine lacks them), and every host test checks the runtime's
// per-op counters: each op with a WebAssembly kernel ran there every time (no scalar fallback), and the
// model's matrix products (matmul_nt or a qmatmul kind) and attention were among them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LlamaForward, TextSession, createRuntime, loadModel, parseLlamaModel, parseTokenizer } from '../../src/index.js';
import type { HostKernelStats, HostProvider, LoadedModel, Runtime, WebGPUProvider } from '../../src/index.js';
import { WASM_OPS } from '../../src/submit/wasm/ops.js';
import { GGUF_FIXTURE_NAMES, readGgufFixture, readGgufReference } from '../support/gguf-fixtures.js';
import type { GgufFixture } from '../support/gguf-fixtures.js';
import { readModelFixture } from '../support/models.js';
import { providerCases } from '../support/providers.js';

/** Acceptance: |logit - exact| for the reference's top-8 ids of every step. */
const LOGIT_TOLERANCE = 0.02;
/** Acceptance: llama.cpp's greedy choice is an oracle where its top two logits are further apart than this. */
const GREEDY_GAP = 0.5;
/**
 * Per-test limits: the batched pass of a quantized model takes tens of seconds on SwiftShader, tiny-qwen2's
 * (151,936 classifier rows) minutes.
 */
const HOST_TIMEOUT = 180_000;
const WEBGPU_TIMEOUT = 600_000;
const WEBGPU_LARGE_VOCAB_TIMEOUT = 1_500_000;
/** Vocabulary size from which the batched pass starts at the prompt's last id (after a prefill). */
const LARGE_VOCAB = 65_536;
/** llama2.c's greedy continuation of "Once upon a time" with stories260K (../shared/models/README.md). */
const KNOWN_CONTINUATION = [432, 383, 286, 261, 376, 298, 315, 421, 395, 317];

interface Step {
  readonly top: readonly (readonly [number, number])[];
}
interface ExactCase {
  readonly prompt: string;
  readonly prompt_ids: readonly number[];
  readonly forced: readonly number[];
  readonly steps: readonly Step[];
}
interface GreedyCase {
  readonly prompt: string;
  readonly prompt_ids: readonly number[];
  readonly steps: readonly Step[];
  readonly generated: readonly number[];
}

type ModelFixture = Exclude<GgufFixture, 'llama3-vocab.gguf'>;
const MODELS = GGUF_FIXTURE_NAMES.filter((n): n is ModelFixture => n !== 'llama3-vocab.gguf');

const exact = (await readGgufReference('exact-numpy.json')) as Record<ModelFixture, ExactCase[]> | undefined;
const greedy = (await readGgufReference('greedy-llamacpp.json')) as Record<ModelFixture, GreedyCase[]> | undefined;
const files = new Map<ModelFixture, Uint8Array | undefined>();
for (const name of MODELS) files.set(name, await readGgufFixture(name));
const stories = await readModelFixture('stories260K.bin');
const tok512 = await readModelFixture('tok512.bin');

const loaded = new Map<ModelFixture, Promise<LoadedModel>>();
/** The file's LoadedModel, loaded once for the whole file. */
function model(name: ModelFixture): Promise<LoadedModel> {
  let m = loaded.get(name);
  if (m === undefined) {
    m = loadModel(files.get(name)!);
    loaded.set(name, m);
  }
  return m;
}

/** The documented reference disagreement (see the plan): file, prompt index, step. */
const LLAMACPP_ROUTING_FLIPS: readonly (readonly [ModelFixture, number, number])[] = [['tiny-moe-Q4_K_M.gguf', 1, 6]];

/** Largest |ours[id] - logit| over a reference step's top-8. */
function worstOf(row: Float32Array, step: Step): number {
  let worst = 0;
  for (const [id, logit] of step.top) worst = Math.max(worst, Math.abs(row[id]! - logit));
  return worst;
}

/** Names of the ops that have a WebAssembly kernel. */
const WASM_OP_NAMES = new Set([...WASM_OPS.keys()].map((op) => op.name));

/** Host runs between two readings of runtime.hostKernels(): every op with a WebAssembly kernel ran only there. */
function expectWasmKernelsRan(before: HostKernelStats, after: HostKernelStats, label: string): void {
  expect(after.kind, label).toBe('wasm-simd');
  const ran: string[] = [];
  for (const [name, count] of Object.entries(after.byKernel)) {
    const wasm = count.wasm - (before.byKernel[name]?.wasm ?? 0);
    const scalar = count.scalar - (before.byKernel[name]?.scalar ?? 0);
    if (WASM_OP_NAMES.has(name)) expect(scalar, `${label}: ${name} fell back to its scalar twin`).toBe(0);
    if (wasm > 0) ran.push(name);
  }
  expect(ran, `${label}: ops that ran WebAssembly kernels`).toContain('attention');
  expect(ran.some((name) => name === 'matmul_nt' || name.startsWith('qmatmul_')), `${label}: matrix products on WebAssembly (${ran.join(', ')})`).toBe(true);
}

/** Measured figures, printed once per provider (the report quotes them). */
const measured: string[] = [];

for (const pc of providerCases()) {
  describe(`GGUF models on ${pc.name}`, () => {
    let provider: HostProvider | WebGPUProvider;
    let runtime: Runtime;
    beforeAll(async () => {
      provider = await pc.make();
      runtime = createRuntime(provider, pc.kind === 'host' ? { hostKernels: 'wasm' } : {});
    });
    afterAll(() => {
      if (measured.length > 0) console.info(measured.splice(0).join('\n'));
      if (provider?.kind === 'webgpu') (provider as WebGPUProvider).destroy();
    });

    for (const name of MODELS) {
      const absent = files.get(name) === undefined || exact === undefined || greedy === undefined;
      const timeout = pc.kind === 'host' ? HOST_TIMEOUT : name.startsWith('tiny-qwen2') ? WEBGPU_LARGE_VOCAB_TIMEOUT : WEBGPU_TIMEOUT;
      it.skipIf(absent)(`[TS-gguf-logits][TS-gguf-greedy] ${name}: teacher-forced logits within ${LOGIT_TOLERANCE} of exact numpy, argmax = llama.cpp where its gap > ${GREEDY_GAP}`, async () => {
        const m = await model(name);
        const kernelsBefore = runtime.hostKernels();
        const exactCases = exact![name];
        const greedyCases = greedy![name];
        expect(exactCases.length).toBe(2);
        expect(greedyCases.length).toBe(2);
        const longest = Math.max(...greedyCases.map((g) => g.prompt_ids.length + g.generated.length));
        const forward = await LlamaForward.create(runtime, m, { maxSeq: longest, maxBatch: longest });
        // WebGPU: only models whose matrices all run on matmul_nt (F32, dense) take the decode path.
        const decodePath = pc.kind === 'host' || (m.architecture.ffn === 'dense' && m.tensors.every((t) => t.kind.name === 'F32'));
        let worstBatched = 0;
        let worstDecode = 0;
        let oracleSteps = 0;
        const flips: (readonly [ModelFixture, number, number])[] = [];
        try {
          for (const [i, g] of greedyCases.entries()) {
            const e = exactCases[i]!;
            expect(e.prompt_ids).toEqual(g.prompt_ids);
            expect(e.forced).toEqual(g.generated.slice(0, e.forced.length));
            expect(m.tokenizer.encode(g.prompt, { parseSpecial: true })).toEqual(g.prompt_ids);
            const P = g.prompt_ids.length;
            const vocab = m.config.vocabSize;
            // One teacher-forced batch from position `from`: row from + k holds the logits after the prompt's
            // first from + k + 1 ids, so row P - 1 + s follows the prompt and s generated ids. A large
            // vocabulary prefills the prompt but its last id first (see the plan).
            const from = vocab >= LARGE_VOCAB && P > 1 ? P - 1 : 0;
            if (from > 0) await forward.run(g.prompt_ids.slice(0, from), 0);
            const seq = [...g.prompt_ids, ...g.generated.slice(0, g.generated.length - 1)].slice(from);
            const r = await forward.run(seq, from, { allRows: true });
            expect(r.argmaxRows.length).toBe(seq.length);
            e.steps.forEach((step, s) => {
              const row = r.rowLogits.subarray((P - 1 - from + s) * vocab, (P - from + s) * vocab);
              const worst = worstOf(row, step);
              worstBatched = Math.max(worstBatched, worst);
              if (!(worst <= LOGIT_TOLERANCE)) expect.fail(`${name} prompt ${i} step ${s}: a top-8 logit is ${worst} from exact numpy`);
            });
            g.steps.forEach((step, s) => {
              const gap = step.top[0]![1] - step.top[1]![1];
              if (gap <= GREEDY_GAP) return;
              oracleSteps++;
              expect(step.top[0]![0]).toBe(g.generated[s]);
              const ours = r.argmaxRows[P - 1 - from + s];
              const exactTop = e.steps[s]?.top[0]![0];
              if (exactTop !== undefined && exactTop !== g.generated[s]) {
                // llama.cpp's choice is not the exact argmax: held to exact numpy (see the plan).
                flips.push([name, i, s]);
                if (ours !== exactTop) expect.fail(`${name} prompt ${i} step ${s}: argmax ${ours}, exact numpy ${exactTop}`);
                return;
              }
              if (ours !== g.generated[s]) expect.fail(`${name} prompt ${i} step ${s}: argmax ${ours}, llama.cpp ${g.generated[s]} (gap ${gap})`);
            });
            // The decode path: the prompt as one prefill, then one forced id per step.
            if (!decodePath) continue;
            let step = await forward.run(g.prompt_ids, 0);
            for (let s = 0; s < e.steps.length; s++) {
              if (s > 0) step = await forward.run([e.forced[s - 1]!], P + s - 1);
              const worst = worstOf(step.logits, e.steps[s]!);
              worstDecode = Math.max(worstDecode, worst);
              if (!(worst <= LOGIT_TOLERANCE)) expect.fail(`${name} prompt ${i} decode step ${s}: a top-8 logit is ${worst} from exact numpy`);
            }
          }
        } finally {
          forward.dispose();
        }
        // The oracle constrained most steps (a vacuous comparison would pass anything), and the only steps
        // held to exact numpy instead are the documented ones.
        expect(oracleSteps).toBeGreaterThan(40);
        expect(flips).toEqual(LLAMACPP_ROUTING_FLIPS.filter(([file]) => file === name));
        if (pc.kind === 'host') expectWasmKernelsRan(kernelsBefore!, runtime.hostKernels()!, `${pc.name} ${name}`);
        measured.push(`${pc.name} ${name}: max |logit - exact| batched ${worstBatched.toExponential(2)}, decode ${decodePath ? worstDecode.toExponential(2) : 'not run'}; ${oracleSteps} greedy steps checked`);
      }, timeout);
    }

    it.skipIf(files.get('stories260K-f32.gguf') === undefined || stories === undefined || tok512 === undefined)(
      '[TS-gguf-stories-equal] stories260K-f32.gguf and stories260K.bin + tok512.bin: bit-identical logits and the same greedy ids as llama2.c',
      async () => {
        const gguf = await model('stories260K-f32.gguf');
        const kernelsBefore = runtime.hostKernels();
        const file = parseLlamaModel(stories!);
        const tokenizer = parseTokenizer(tok512!, file.config.vocabSize);
        const fromBin = await TextSession.create({ runtime, model: file, tokenizer, maxSeq: 64, maxBatch: 16 });
        const fromGguf = await TextSession.create({ runtime, model: gguf, maxSeq: 64, maxBatch: 16 });
        try {
          expect(gguf.format).toBe('gguf');
          expect(fromBin.model.format).not.toBe('gguf');
          // The same weights: the model layer says so, and so does every logit.
          expect((await fromGguf.identity()).weightsId).toBe((await fromBin.identity()).weightsId);
          const prompt = tokenizer.encode('Once upon a time', { bos: true });
          expect(gguf.tokenizer.encode('Once upon a time')).toEqual(prompt);
          const a = await fromBin.prefill(prompt);
          const b = await fromGguf.prefill(prompt);
          expect(Array.from(b.logits)).toEqual(Array.from(a.logits));
          const ids = async (s: TextSession): Promise<number[]> => {
            const out: number[] = [];
            for await (const t of s.generate(prompt, { maxTokens: 32, stopTokens: [] })) out.push(t.token);
            return out;
          };
          const binIds = await ids(fromBin);
          expect(await ids(fromGguf)).toEqual(binIds);
          expect(binIds.slice(0, KNOWN_CONTINUATION.length)).toEqual(KNOWN_CONTINUATION);
          expect(Array.from(await fromGguf.exportState(fromGguf.length))).toEqual(Array.from(await fromBin.exportState(fromBin.length)));
          if (pc.kind === 'host') expectWasmKernelsRan(kernelsBefore!, runtime.hostKernels()!, `${pc.name} stories260K`);
        } finally {
          fromBin.dispose();
          fromGguf.dispose();
        }
      },
      pc.kind === 'host' ? HOST_TIMEOUT : WEBGPU_TIMEOUT,
    );
  });
}
